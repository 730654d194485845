"""Checks of the measure commands' options that mirror the probe's own, so that a value the probe
would refuse (or die on) is refused before any step runs and before a run is recorded.

The probe's limits (native/probe/stream.cpp, device.cpp, collab.cpp, region.cpp) are copied here as
constants; each check raises :class:`BadValue` with one line naming the option, the value and what
is allowed."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Optional

from ..errors import BadValue
from ..system import inventory as inv
from ..units import format_size

HUGE = 2 * 2**20           # the probe rounds its mappings up to this (region.cpp's kHuge)
STREAM_OFFSET = 4096 + 64  # the probe's default --offset between arrays (stream.cpp)
STREAM_SIZE = (4096, 2**46)
STREAM_ITERATIONS = (2, 1000)
PROBE_THREADS = 4096
TRANSFER_ITERATIONS = (1, 1_000_000)
TRANSFER_MIN_TIME = 3600.0
LAUNCH_COUNT = (1, 100_000_000)
CHUNK_BYTES = (1, 2**40)
COLLAB_ITERATIONS = (0, 2**20)
COLLAB_REPEATS = (1, 100_000)
COLLAB_WARMUPS = (0, 100_000)
COLLAB_TASKS = 2**30
LONGEST_TIMEOUT = 7 * 24 * 3600.0
DEVICE_INDEX = (0, 1023)     # the probe's --device and --peer (network.cpp, kernels.cpp)


def in_range(value: int, where: str, lo: int, hi: int, what: str = "a whole number") -> int:
    """``value`` (an int from the command line: typer gives any size) within lo..hi."""
    if not lo <= value <= hi:
        raise BadValue(f"{where} {value} is out of range; allowed: {what} in {lo:,}..{hi:,}")
    return value


def thread_cap(usable_cpus: int) -> int:
    """The most threads a run may ask for: 4 per CPU it may use (oversubscription beyond that only
    measures the scheduler), and never past the probe's limit."""
    return min(PROBE_THREADS, 4 * max(1, usable_cpus))


def stream_mapping_bytes(array_bytes: int) -> int:
    """Bytes the probe maps for three STREAM arrays of ``array_bytes`` (stream.cpp + region.cpp)."""
    n = array_bytes // 8 * 8
    stride = -(-n // HUGE) * HUGE + STREAM_OFFSET
    return -(-(3 * stride + HUGE) // HUGE) * HUGE


def memory_node(node: int, where: str = "--node") -> None:
    """``node`` must exist and have memory."""
    nodes = {n["node"]: n for n in inv.numa_nodes()}
    if node not in nodes:
        raise BadValue(f"{where} {node} does not exist; nodes: {', '.join(map(str, nodes))}")
    if not nodes[node]["memory_total_bytes"]:
        raise BadValue(f"{where} {node} has no memory (a CPU-only node); nodes with memory: "
                       f"{', '.join(str(n) for n, d in nodes.items() if d['memory_total_bytes'])}")


def _huge_page_counts(node: Optional[int]) -> tuple[int, int, str]:
    """(page size in bytes, free pages, where they are reserved) for the default huge page size."""
    size = inv._meminfo(Path("/proc/meminfo")).get("Hugepagesize", HUGE) or HUGE
    if node is None:
        free = inv._meminfo(Path("/proc/meminfo")).get("HugePages_Free", 0)
        return size, free, "/proc/sys/vm/nr_hugepages"
    folder = inv.SYS_NODE / f"node{node}" / "hugepages" / f"hugepages-{size // 1024}kB"
    try:
        free = int((folder / "free_hugepages").read_text().strip())
    except (OSError, ValueError):
        free = 0
    return size, free, str(folder / "nr_hugepages")


def hugetlb(mapping_bytes: int, nodes: list[Optional[int]]) -> None:
    """--hugepages hugetlb: the probe's mapping must find enough free reserved huge pages (on the
    node, when one is named); without them the kernel kills the probe with SIGBUS mid-run."""
    for node in nodes:
        size, free, where = _huge_page_counts(node)
        need = -(-mapping_bytes // size)
        if free < need:
            on = "" if node is None else f" on node {node}"
            raise BadValue(f"--hugepages hugetlb: the arrays need {need} huge pages of {format_size(size)}{on}, "
                           f"{free} are free; reserve them (as root) in {where}, or use --hugepages thp")


def _dax_device(path: Path) -> bool:
    """Whether a character device is a device-DAX one (/sys/dev/char/MAJ:MIN/subsystem is the dax class)."""
    st = path.stat()
    link = Path(f"/sys/dev/char/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/subsystem")
    try:
        return Path(os.path.realpath(link)).name == "dax"
    except OSError:
        return False


def pmem_path(path: Path, mapping_bytes: int) -> None:
    """--pmem: a writable directory, a new file in a writable directory, or a DAX character device,
    with room for the mapping (the probe reserves it with posix_fallocate). Writability is tried
    (outputs.py: /proc and a read-only mount pass os.access for root), not read from mode bits."""
    from ..outputs import check_folder

    try:
        path.exists()
    except OSError as error:  # a name too long, a loop of links
        raise BadValue(f"--pmem '{path}' cannot be used: {error.strerror or error}") from None
    if path.is_dir():
        folder = check_folder(path, "--pmem")
    elif path.is_char_device():
        if not _dax_device(path):
            raise BadValue(f"--pmem '{path}' is a character device that is not device-DAX; allowed: a directory, "
                           "a new file name in a writable directory, or a DAX device such as /dev/dax0.0")
        if not os.access(path, os.R_OK | os.W_OK):
            raise BadValue(f"--pmem '{path}': the device is not readable and writable by this user")
        return
    elif str(path.parent) == "/dev" or re.fullmatch(r"dax\d+\.\d+", path.name):
        raise BadValue(f"--pmem '{path}' is not a device-DAX device (no such character device); allowed: a directory, "
                       "a new file name in a writable directory, or a DAX device such as /dev/dax0.0")
    elif path.exists():
        raise BadValue(f"--pmem '{path}' is an existing file; give a directory (xferlab creates and removes its own "
                       "file there), a new file name, or a DAX device")
    elif not path.parent.is_dir():
        raise BadValue(f"--pmem '{path}': cannot create a file in '{path.parent}' (missing or not a folder)")
    else:
        folder = check_folder(path.parent, f"--pmem '{path}': its folder")
    fs = os.statvfs(folder)
    room = fs.f_bavail * fs.f_frsize
    if room < mapping_bytes:
        raise BadValue(f"--pmem '{path}': the mapping needs {format_size(mapping_bytes)}, the file system of "
                       f"'{folder}' has {format_size(room)} free")


def plot_dir(path: Optional[Path]) -> None:
    """--plots DIR: an existing folder xferlab can write in, or one that can be created (tried, not read
    from mode bits: see outputs.py), checked before any step runs."""
    if path is None:
        return
    from ..outputs import check_folder

    check_folder(path, "--plots")


def timeout_seconds(value: float, where: str = "--timeout") -> float:
    """A probe timeout: positive (parse_time checks that) and at most a week."""
    if not 0 < value <= LONGEST_TIMEOUT or math.isnan(value):
        raise BadValue(f"{where} {value:g} s is out of range; allowed: a time above 0 and at most 7 days")
    return value

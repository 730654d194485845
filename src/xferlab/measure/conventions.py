"""What each bandwidth counts, and the units every figure is written in: one table that the tables'
footers, ``--json`` (its ``conventions`` object and each row's ``counting``) and the report read, so
that they cannot disagree.

The rules follow the tools whose figures users compare xferlab's with:

* a copy is counted once, bytes copied / time, never read + write (nvbandwidth's rule; NVIDIA
  nvbandwidth README, "bandwidth" of a copy; the question in its issue #48);
* memory STREAM counts bytes as McCalpin's STREAM does: copy and scale 2 words per element, add and
  triad 3, the arrays read plus the array written, write-allocate traffic not counted (J. D.
  McCalpin, STREAM: Sustainable Memory Bandwidth in High Performance Computers, "Counting Bytes and
  FLOPS", cs.virginia.edu/stream/ref.html);
* device STREAM counts as BabelStream: copy, mul 2 arrays, add, triad 3, dot 2 (T. Deakin, J. Price,
  M. Martineau, S. McIntosh-Smith, "GPU-STREAM v2.0: Benchmarking the achievable memory bandwidth of
  many-core processors across diverse parallel programming models", PMBS/ISC 2016);
* network bandwidth as the OSU Micro-Benchmarks count it: the bytes of a window of messages / the
  window's time, OSU's figure the total bytes / the total time; osu_bibw counts both directions'
  windows (the sum); OSU prints MB/s = 10^6 B/s (osu_bw.c, osu_bibw.c, osu_mbw_mr.c of OMB 7).

Where both directions of a copy run at once in one timed window (``bidir`` copies, ``bibw``), the row's
bandwidth is the sum, and ``direction_*_bytes_per_second`` gives each direction: its bytes / the same
window (the two are not timed apart, so each is half the sum).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Optional

from .sizeclass import DEVICE_ARRAYS, HOST_ARRAYS

#: How figures are written: rates in decimal prefixes, sizes in binary ones unless written otherwise.
UNITS = {
    "rates": "GB/s = 10^9 B/s, MB/s = 10^6 B/s (decimal, as vendors, STREAM and OSU quote rates); JSON fields in "
             "bytes per second",
    "sizes": "KiB = 1024 B, MiB = 2^20 B, GiB = 2^30 B (binary); kB, MB, GB = 10^3, 10^6, 10^9 B where a size is "
             "written so (seed 004's 80 kB chunks); JSON fields in bytes",
    "times": "s, ms, µs, ns; JSON fields in seconds",
    "fractions": "fraction_of_peak: the measured bandwidth / the peak it is held against, 1 = 100 %",
}
UNITS_LINE = "units: GB/s = 10^9 B/s (decimal); sizes KiB/MiB/GiB = 1024-based; fraction_of_peak 1 = 100 %"


def _words(arrays: dict[str, int]) -> str:
    """``copy 2, scale 2, …``: the arrays each kernel moves, from measure/sizeclass.py's one table."""
    return ", ".join(f"{kernel} {count}" for kernel, count in arrays.items())


@dataclass(frozen=True)
class Convention:
    """One counting rule: the figures it covers, how bytes are counted, the statistic shown first, a source."""

    figure: str
    counting: str
    statistic: str
    source: str


CONVENTIONS: dict[str, Convention] = {
    "copy": Convention(
        "a host-device or device-device copy (h2d, d2h, d2d)",
        "counted once: bytes copied / time (a copy of n bytes counts n, not n read + n written)",
        "median over the timed copies (nvbandwidth's); best = the fastest copy", "nvbandwidth (NVIDIA), README"),
    "bidir": Convention(
        "a bidirectional copy (bidir: h2d and d2h at once)",
        "both directions in one timed window: the row's bandwidth is the sum, 2n / the window; each direction "
        "(direction_*_bytes_per_second) is its n bytes / the same window, half the sum (not timed apart)",
        "median over the timed windows", "nvbandwidth (NVIDIA): bidirectional copies, per direction and summed"),
    "chunks": Convention(
        "one total moved in chunks (seed 004)", "counted once: the total bytes / the time for all of the chunks",
        "median over the repeats", "seed 004"),
    "stream": Convention(
        "memory STREAM kernels (copy, scale, add, triad; read, write)",
        "McCalpin's counting: bytes of the arrays read + the array written per element (8-byte words): "
        f"{_words(HOST_ARRAYS)}; write-allocate traffic is not counted (recorded apart as write_allocate_bytes)", "best of the timed iterations (STREAM's figure); median beside it",
        "J. D. McCalpin, STREAM, 'Counting Bytes and FLOPS'"),
    "loaded": Convention(
        "loaded latency's traffic (the generators of each read/write mix, measure memory --loaded)",
        "each cache line a generator read or wrote counted once, 64 B, in the chase's own window: read + written "
        "bytes / the window; write-allocate traffic (the read for ownership of a line written with ordinary stores) "
        "is not counted, as STREAM does not count it, and is given apart (write_allocate_median_bytes_per_second); a "
        "non-temporal store has none; every point's count checked against memory by the probe",
        "median over the windows (latency and bandwidth of the same windows); best window beside it",
        "Intel Memory Latency Checker, --loaded_latency -W modes; Esmaili-Dokht et al., Mess, MICRO 2024"),
    "babelstream": Convention(
        "device STREAM kernels (copy, mul, add, triad, dot; read)",
        f"BabelStream's counting: the arrays read + written per element: {_words(DEVICE_ARRAYS)}",
        "best of the timed iterations; median beside it", "Deakin et al., GPU-STREAM v2.0 (BabelStream), PMBS 2016"),
    "osu-bw": Convention(
        "MPI bandwidth (bw) and multi-pair bandwidth (mbw_mr)",
        "OSU's counting: the bytes of a window of messages (size x 64, times the pairs for mbw_mr) / the window's time; "
        "bandwidth (OSU) = total bytes / total time; OSU prints MB/s = 10^6 B/s",
        "mean (OSU's figure); median and best window beside it", "OSU Micro-Benchmarks 7: osu_bw.c, osu_mbw_mr.c"),
    "osu-bibw": Convention(
        "MPI bidirectional bandwidth (bibw)",
        "OSU's counting: both ranks send a window at once; the row's bandwidth is the sum, 2 x size x 64 / the "
        "window's time; each direction (direction_*_bytes_per_second) half of it (not timed apart)",
        "mean (OSU's figure); median and best window beside it", "OSU Micro-Benchmarks 7: osu_bibw.c"),
}

#: (suite, test) → the convention's key; a test of a suite not named here has none (a latency).
_BY_TEST = {
    **{("device", t): "copy" for t in ("h2d", "d2h", "d2d")}, ("device", "bidir"): "bidir",
    ("device", "chunks"): "chunks",
    **{("memory", t): "stream" for t in ("copy", "scale", "add", "triad", "read", "write")},
    ("memory", "loaded-latency"): "loaded",
    **{("kernels", t): "babelstream" for t in ("copy", "mul", "add", "triad", "dot", "read")},
    **{("kernels", t): "copy" for t in ("h2d", "d2h", "d2d", "d2d-devices")},
    ("network", "bw"): "osu-bw", ("network", "mbw_mr"): "osu-bw", ("network", "bibw"): "osu-bibw",
}
#: The tests whose row's bandwidth is the sum of two directions timed in one window.
BOTH_WAYS = {("device", "bidir"), ("network", "bibw")}


def counting(suite: str, test: Optional[str]) -> Optional[str]:
    """The key of the rule a (suite, test)'s bandwidth is counted by (None: the test is not a bandwidth)."""
    return _BY_TEST.get((suite, str(test)))


def both_ways(suite: str, test: Optional[str]) -> bool:
    return (suite, str(test)) in BOTH_WAYS


def metadata(suite: str, tests: Iterable[Any]) -> dict[str, Any]:
    """The ``conventions`` object of a ``--json`` output: the units, and each rule its rows' ``counting`` names."""
    keys = dict.fromkeys(k for k in (counting(suite, t) for t in tests) if k)
    return {"units": UNITS, "counting": {k: asdict(CONVENTIONS[k]) for k in keys}}


def footer(suite: str, tests: Iterable[Any]) -> list[str]:
    """The lines under a table: each rule its rows follow, then the units."""
    keys = dict.fromkeys(k for k in (counting(suite, t) for t in tests) if k)
    return [f"counting ({k}): {CONVENTIONS[k].counting}" for k in keys] + [UNITS_LINE]


def with_counting(suite: str, rows: list[dict[str, Any]], test_key: str = "test") -> list[dict[str, Any]]:
    """``rows`` (changed in place and returned), each with the ``counting`` rule of its bandwidth (None: not one)."""
    for row in rows:
        row["counting"] = counting(suite, row.get(test_key))
    return rows

"""What this machine is, read from Linux's /proc and /sys, recorded with every measurement run.

CPU model and counts, caches per level, NUMA nodes with their CPUs and memory (a node with memory
and no CPU is memory-only: CXL only where a CXL region backs it, system/backing.py), the CXL devices
and regions (system/cxl.py) and persistent-memory namespaces (system/pmem.py), huge pages, the
frequency governor, the kernel, persistent-memory devices. Nothing here is timed.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_NODE = Path("/sys/devices/system/node")


def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default


def parse_cpu_list(text: str) -> list[int]:
    """``0-3,6`` → ``[0, 1, 2, 3, 6]``."""
    cpus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _size(text: str) -> int:
    """sysfs cache sizes (``32K``, ``1024K``, ``32M``) in bytes."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not m:
        return 0
    return int(m[1]) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m[2]]


def caches(cpu: int = 0) -> list[dict[str, Any]]:
    """The caches CPU ``cpu`` sees, by level (L1d, L1i, L2, L3 …)."""
    found = []
    for index in sorted((SYS_CPU / f"cpu{cpu}" / "cache").glob("index*")):
        found.append({
            "level": int(_read(index / "level", "0") or 0),
            "type": _read(index / "type"),
            "size_bytes": _size(_read(index / "size", "0")),
            "line_bytes": int(_read(index / "coherency_line_size", "0") or 0),
            "shared_cpus": _read(index / "shared_cpu_list"),
        })
    return found


def data_cache_sizes(cpu: int = 0, found: list[dict[str, Any]] | None = None) -> list[tuple[int, int]]:
    """(level, bytes) of the caches that hold data, innermost first: of CPU ``cpu`` of this machine,
    or of ``found`` (a recorded inventory's ``caches``)."""
    return sorted((c["level"], c["size_bytes"]) for c in (caches(cpu) if found is None else found)
                  if c.get("type") in ("Data", "Unified"))


def last_level_cache_bytes() -> int:
    sizes = data_cache_sizes()
    return sizes[-1][1] if sizes else 0


def _meminfo(path: Path) -> dict[str, int]:
    """``MemTotal`` etc. in bytes from /proc/meminfo or a node's meminfo."""
    out: dict[str, int] = {}
    for line in _read(path).splitlines():
        m = re.match(r"(?:Node \d+ )?([\w()]+):\s+(\d+)(?:\s*kB)?", line)
        if m:
            out[m[1]] = int(m[2]) * (1024 if line.rstrip().endswith("kB") else 1)
    return out


def numa_nodes() -> list[dict[str, Any]]:
    """NUMA nodes with their CPUs and memory; ``kind`` says cpu+memory, memory-only or cpu-only."""
    nodes = []
    for path in sorted(SYS_NODE.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        cpus = parse_cpu_list(_read(path / "cpulist"))
        mem = _meminfo(path / "meminfo")
        total = mem.get("MemTotal", 0)
        kind = "cpu+memory" if cpus and total else "memory-only" if total else "cpu-only"
        nodes.append({"node": int(path.name[4:]), "cpus": cpus, "memory_total_bytes": total,
                      "memory_free_bytes": mem.get("MemFree", 0), "kind": kind,
                      "distances": [int(d) for d in _read(path / "distance").split()]})
    if not nodes:  # no NUMA support in the kernel: one node with everything
        mem = _meminfo(Path("/proc/meminfo"))
        nodes.append({"node": 0, "cpus": sorted(os.sched_getaffinity(0)), "memory_total_bytes": mem.get("MemTotal", 0),
                      "memory_free_bytes": mem.get("MemFree", 0), "kind": "cpu+memory", "distances": [10]})
    return nodes


def memory_nodes() -> list[int]:
    """Nodes that have memory (measurement targets)."""
    return [n["node"] for n in numa_nodes() if n["memory_total_bytes"] > 0]


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    for line in _read(Path("/proc/cpuinfo")).splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key and key not in info:
            info[key] = value.strip()
    return info


def inventory() -> dict[str, Any]:
    """Everything recorded about the machine with a run."""
    cpu = _cpuinfo()
    online = parse_cpu_list(_read(SYS_CPU / "online", "0"))
    cores = {(_read(SYS_CPU / f"cpu{c}" / "topology" / "physical_package_id"), _read(SYS_CPU / f"cpu{c}" / "topology" / "core_id"))
             for c in online}
    mem = _meminfo(Path("/proc/meminfo"))
    governor = _read(SYS_CPU / "cpu0" / "cpufreq" / "scaling_governor") or "unavailable (no cpufreq interface)"
    from . import backing  # CXL regions and KMEM-DAX devices say what a memory-only node is

    memory = backing.read(numa_nodes())
    os_name = next((line.split("=", 1)[1].strip('"') for line in _read(Path("/etc/os-release")).splitlines()
                    if line.startswith("PRETTY_NAME=")), "")
    return {
        "hostname": platform.node(),
        # the node a campaign names (`xferlab campaign`: $XFERLAB_NODE), else the host's name
        "node": os.environ.get("XFERLAB_NODE") or platform.node(),
        "cpu_model": cpu.get("model name", platform.processor()),
        "cpu_vendor": cpu.get("vendor_id", ""),
        "architecture": platform.machine(),
        "hypervisor": "hypervisor" in cpu.get("flags", "").split(),
        "cpus_online": online,
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "cores": len(cores),
        "threads": len(online),
        "caches": caches(),
        "numa_nodes": memory["numa_nodes"],
        "cxl": memory["cxl"],
        "pmem": memory["pmem"],
        "memory_total_bytes": mem.get("MemTotal", 0),
        "hugepages": {"size_bytes": mem.get("Hugepagesize", 0), "total": mem.get("HugePages_Total", 0),
                      "free": mem.get("HugePages_Free", 0),
                      "transparent": _read(Path("/sys/kernel/mm/transparent_hugepage/enabled"))},
        "frequency_governor": governor,
        "kernel": platform.release(),
        "os": os_name,
        "pmem_devices": sorted(str(p) for p in Path("/dev").glob("dax*")) + sorted(str(p) for p in Path("/dev").glob("pmem*")),
        "cpu_flags_persistence": [f for f in ("clwb", "clflushopt", "clflush") if f in cpu.get("flags", "").split()],
    }


def memory_available() -> int:
    """Bytes of memory the kernel says can be had without swapping (MemAvailable), 0 if unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0

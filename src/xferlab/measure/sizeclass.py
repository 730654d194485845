"""Array-size classes: whether a bandwidth figure is the memory's or a cache's.

STREAM's run rule (McCalpin, "STREAM: Sustainable Memory Bandwidth in High Performance Computers",
https://www.cs.virginia.edu/stream/ref.html, "Rules for running STREAM": each array must be at least
4 times the size of the available cache memory) and BabelStream's advice for devices (Deakin et al.,
"Evaluating attainable memory bandwidth of parallel programming models via BabelStream", IJCSE 2018:
arrays must not fit the device's last-level cache) say when a STREAM figure is memory bandwidth. A
figure whose arrays are smaller may be served, wholly or partly, by a cache, and is not compared
with memory figures. Each figure gets one class, decided from its array bytes against the last-level
cache (LLC) that can hold them:

* ``memory``: each array at least :data:`RULE` x the LLC (STREAM's rule);
* ``cache-resident``: the arrays the kernel touches fit the LLC together;
* ``mixed``: between the two (part of the traffic may hit the cache: neither figure);
* None (shown "unknown"): the LLC is not known.

Which LLC: host memory (host STREAM, a copy's host buffer, the pointer chase) against the host's;
a device kernel against its device's: the host's for a CPU device (an OpenCL CPU device's
CL_DEVICE_GLOBAL_MEM_CACHE_SIZE is one core's L2 on PoCL, not the LLC its arrays stream through),
else the L2 its driver reports (CUDA's ``l2_cache_bytes``, OpenCL's ``global_mem_cache_bytes``).
The class is a function of ``size_bytes`` (a column the store's statistics group by) and the run's
inventory, so it needs no column of its own in one run; across runs (a campaign) it is part of
what makes two figures the same figure."""

from __future__ import annotations

from typing import Any, Optional

from ..system import inventory as inv
from ..units import format_size

RULE = 4  # each array at least 4 x the last-level cache (STREAM's run rule)
MEMORY, MIXED, CACHE = "memory", "mixed", "cache-resident"
CLASSES = (MEMORY, MIXED, CACHE)
#: Arrays a kernel reads or writes, as STREAM and BabelStream count bytes (host and device kernels).
HOST_ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "read": 1, "write": 1}
DEVICE_ARRAYS = {"copy": 2, "mul": 2, "add": 3, "triad": 3, "dot": 2, "read": 1}
COPIES = ("h2d", "d2h", "d2d", "bidir")  # a copy: its source and its destination


def size_class(array_bytes: Optional[int], llc_bytes: Optional[int], arrays: int = 3) -> Optional[str]:
    """The class of a figure over ``arrays`` arrays of ``array_bytes`` each, against an LLC of
    ``llc_bytes`` (None when either is unknown)."""
    if not array_bytes or not llc_bytes:
        return None
    if array_bytes >= RULE * llc_bytes:
        return MEMORY
    if arrays * array_bytes <= llc_bytes:
        return CACHE
    return MIXED


def rule_bytes(llc_bytes: int) -> int:
    """The smallest array that STREAM's rule accepts for an LLC of ``llc_bytes``."""
    return RULE * llc_bytes


def rule_size(llc_bytes: int, limit: int, least: int = 0) -> int:
    """Bytes per array by STREAM's rule: 4x ``llc_bytes`` in whole MiB, at least ``least``, at most
    ``limit`` (a device's largest allocation)."""
    return min(limit, max(least, -(-rule_bytes(llc_bytes) // 2**20) * 2**20))


def host_llc(inventory: Optional[dict[str, Any]] = None) -> int:
    """The host's last-level cache in bytes: of a recorded inventory (its ``caches``), or of this
    machine when none is given; 0 when unknown."""
    if inventory is None:
        return inv.last_level_cache_bytes()
    sizes = inv.data_cache_sizes(found=inventory.get("caches") or [])
    return sizes[-1][1] if sizes else 0


def device_llc(accelerator: Optional[dict[str, Any]], host: int) -> tuple[int, str]:
    """(bytes, what they are) of the cache a device kernel's arrays must outgrow: ``host`` (the
    host's LLC) for a CPU device, else the L2 the device's driver reports (0 when it reports none)."""
    accelerator = accelerator or {}
    if accelerator.get("type") == "cpu":
        return host, "the host's last-level cache (a CPU device)"
    l2 = accelerator.get("l2_cache_bytes") or accelerator.get("global_mem_cache_bytes") or 0
    return int(l2), "the device's L2 cache, as its driver reports it"


def llc_of(inventory: Optional[dict[str, Any]], suite: str) -> int:
    """The LLC that decides the class of a ``suite`` figure of a run with ``inventory``."""
    host = host_llc(inventory or {})
    if suite == "kernels":
        return device_llc((inventory or {}).get("accelerator"), host)[0]
    return host


def arrays_of(suite: str, test: str) -> Optional[int]:
    """How many arrays of ``size_bytes`` a figure of ``suite`` and ``test`` touches; None: the figure
    has no array size (a message, a launch, a chunked flow …)."""
    if suite == "memory":
        return 1 if test in ("latency", "loaded-latency") else HOST_ARRAYS.get(test)
    if suite == "kernels":
        return DEVICE_ARRAYS.get(test)
    if suite == "device" and test in COPIES:
        return 2
    return None


def class_of(inventory: Optional[dict[str, Any]], suite: str, test: str, size_bytes: Optional[int]) -> Optional[str]:
    """The class of one figure of a recorded run (its inventory, suite, test and size); None where a
    figure has no array size or the LLC is not known."""
    arrays = arrays_of(suite, test)
    return None if arrays is None else size_class(size_bytes, llc_of(inventory, suite), arrays)


def describe(array_bytes: Optional[int], llc_bytes: Optional[int], arrays: int = 3) -> str:
    """'16 MiB per array, 0.06x the 256 MiB LLC: cache-resident' (the class with its reason)."""
    cls = size_class(array_bytes, llc_bytes, arrays)
    if cls is None:
        return f"{format_size(array_bytes) if array_bytes else '?'} per array: LLC unknown"
    return f"{format_size(array_bytes)} per array, {array_bytes / llc_bytes:.2g}x the {format_size(llc_bytes)} LLC: {cls}"

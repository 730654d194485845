"""STREAM-PMem on PMDK (`measure memory --pmem PATH --pmdk`): seed 003's benchmark (Technion/Intel, "CXL
Memory as Persistent Memory for Disaggregated HPC", the STREAM-PMem slide: STREAM's arrays allocated as
objects of a libpmemobj pool and reached through pmemobj_direct pointers), beside the raw App-Direct mapping on
the same file system in the same run, so that PMDK's overhead is a figure (the seed's observation: 10-15 %).

The modes, one probe run each (native/probe/stream.cpp, pmdk.cpp):

* ``app-direct``: the raw shared mapping, stores not made persistent;
* ``app-direct+persist``: the raw mapping, each kernel's stores written back (clwb/clflushopt/clflush and
  sfence on DAX or under PMDK's emulation, else msync): the reference;
* ``pmdk``: the arrays in a pool, each thread's chunk persisted with pmemobj_persist after each kernel;
* ``pmdk-tx``: each thread's chunk in a transaction (pmemobj_tx_begin, pmemobj_tx_add_range_direct of what it
  writes, the kernel, commit).

``pmdk_overhead`` = 1 - best(mode) / best(app-direct+persist), per kernel at the same thread count, node and
array size: the share of the raw persisted mapping's bandwidth that PMDK costs (negative: PMDK was faster).
libpmemobj is loaded at run time ($XFERLAB_PMEMOBJ_LIB, else libpmemobj.so.1, Debian's libpmemobj1)."""

from __future__ import annotations

import ctypes
import os
from typing import Any

from ..errors import BadValue

REFERENCE = "app-direct+persist"
MODES = ("pmdk", "pmdk-tx")
FORCE = "PMEM_IS_PMEM_FORCE"


def library() -> str:
    """The libpmemobj the probe will load; refuses (one line) when it cannot be loaded, before any run."""
    name = os.environ.get("XFERLAB_PMEMOBJ_LIB") or "libpmemobj.so.1"
    try:
        ctypes.CDLL(name)
    except OSError as error:
        raise BadValue(f"--pmdk: PMDK's libpmemobj is not available ({error}); install it (Debian: libpmemobj1) "
                       "or set XFERLAB_PMEMOBJ_LIB") from None
    return name


def pool_bytes(array_bytes: int, offset: int) -> int:
    """The bytes of the largest pool the probe makes for arrays of ``array_bytes`` (pmdk.cpp: three objects,
    the transaction's undo log of one array, 1/64 of that and 16 MiB for the heap's own)."""
    objects = 3 * (array_bytes // 8 * 8 + offset) + array_bytes // 8 * 8
    return max(objects + objects // 64 + 16 * 2**20, 8 * 2**20)


def emulated() -> bool:
    """Whether PMDK's pmem emulation is forced for the probe (PMEM_IS_PMEM_FORCE=1 in the environment)."""
    return os.environ.get(FORCE) == "1"


def annotate(bandwidth: list[dict[str, Any]], samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Marks the App-Direct and PMDK bandwidth rows ``emulated`` (from their samples' setup), gives each PMDK
    row its ``pmdk_overhead`` against the raw persisted mapping's row of the same kernel, threads, node and
    size, and returns those comparisons, one row each (the overhead table)."""
    emulation = {r.get("mode"): bool(r.get("emulated")) for r in samples if r.get("mode") in (*MODES, "app-direct",
                                                                                               REFERENCE)}
    for row in bandwidth:
        if row.get("mode") in emulation:
            row["emulated"] = emulation[row["mode"]]
    reference = {(r["test"], r.get("threads"), r.get("node"), r.get("size_bytes")): r for r in bandwidth
                 if r.get("mode") == REFERENCE}
    out = []
    for row in bandwidth:
        if row.get("mode") not in MODES:
            continue
        ref = reference.get((row["test"], row.get("threads"), row.get("node"), row.get("size_bytes")))
        row["reference_mode"] = REFERENCE
        row["reference_best_bytes_per_second"] = ref["best_bytes_per_second"] if ref else None
        row["pmdk_overhead"] = 1 - row["best_bytes_per_second"] / ref["best_bytes_per_second"] if ref else None
        out.append({k: row.get(k) for k in ("test", "mode", "reference_mode", "threads", "size_bytes",
                                            "best_bytes_per_second", "reference_best_bytes_per_second",
                                            "pmdk_overhead", "emulated")})
    return out


def note(rows: list[dict[str, Any]]) -> list[str]:
    """How the overhead is counted, and what an emulated row is, as lines under the tables."""
    if not rows:
        return []
    lines = [f"pmdk_overhead = 1 - best(pmdk mode) / best({REFERENCE}), same kernel, threads and arrays, same run "
             "(seed 003: PMDK's App-Direct overhead 10-15 %)"]
    if any(r.get("emulated") for r in rows):
        lines.append(f"emulated: {FORCE}=1 and not a DAX mapping: a page-cache file persisted as PMDK's emulation "
                     "does (cache-line write-back and fence), not persistent memory")
    return lines

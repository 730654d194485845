"""One-sided communication in ``measure network``: MPI_Put and MPI_Get with the OSU Micro-Benchmarks'
definitions (osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw, osu_put_bibw of OMB 7; seed 001
measures one-sided RDMA beside the two-sided transfers). The timing loops are the probe's
(``native/probe/network_rma.cpp``); here are the names, the options and the checks made before any rank
starts.

* ``--rma-sync`` is OSU's ``-s``: lock, flush, flush_local, lock_all (passive target: only the origin
  synchronizes), fence, pscw (active target: both ranks take part). Unset, each test takes OSU's default:
  flush, and pscw for put_bibw (which, as OSU's, takes only fence and pscw).
* ``--rma-window`` is OSU's ``-w``: allocate (MPI_Win_allocate, OSU's default) or create
  (MPI_Win_create over the probe's page-aligned host buffer, bound to ``--node``).
* One-sided tests run on host memory only; device buffers are refused with them.
* The MPI must export the one-sided calls the probe makes (:data:`ENTRY_POINTS`); one that does not is
  refused in one line before anything runs (the probe checks again where it loads the library)."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue
from ..units import shown

ONE_SIDED = ("put_latency", "get_latency", "put_bw", "get_bw", "put_bibw")
#: The one-sided tests that time a window of ops (bytes over time, as the two-sided bw tests).
ONE_SIDED_BANDWIDTH = ("put_bw", "get_bw", "put_bibw")
SYNCS = ("lock", "flush", "flush_local", "lock_all", "fence", "pscw")
ACTIVE = ("fence", "pscw")
WINDOWS = ("allocate", "create")
#: What the probe's one-sided tests call (native/loaders/mpi_loader.cpp resolves them as optional).
ENTRY_POINTS = ("MPI_Comm_split", "MPI_Comm_group", "MPI_Group_incl", "MPI_Group_free", "MPI_Win_create",
                "MPI_Win_allocate", "MPI_Win_free", "MPI_Win_set_errhandler", "MPI_Put", "MPI_Get", "MPI_Win_lock",
                "MPI_Win_unlock", "MPI_Win_lock_all", "MPI_Win_unlock_all", "MPI_Win_flush", "MPI_Win_flush_local",
                "MPI_Win_fence", "MPI_Win_post", "MPI_Win_start", "MPI_Win_complete", "MPI_Win_wait")


def sync_of(test: str, sync: Optional[str]) -> str:
    """The synchronization ``test`` runs with: ``sync``, else OSU's default for it."""
    return sync or ("pscw" if test == "put_bibw" else "flush")


def moved(test: str, size: int, window: int) -> int:
    """Bytes of one sample: one op (latency tests), a window of ops (put_bw, get_bw), both ranks' (put_bibw)."""
    if test == "put_bibw":
        return 2 * size * window
    return size * window if test in ONE_SIDED_BANDWIDTH else size


def check_options(tests: list[str], sync: Optional[str], window: str, buffers: list[str]) -> None:
    """``--rma-sync``, ``--rma-window`` and the buffers, against the one-sided tests asked for."""
    mine = [t for t in tests if t in ONE_SIDED]
    if sync is not None and sync not in SYNCS:
        raise BadValue(f"--rma-sync {shown(sync)} is not allowed; allowed: {', '.join(SYNCS)}")
    if window not in WINDOWS:
        raise BadValue(f"--rma-window {shown(window)} is not allowed; allowed: {', '.join(WINDOWS)}")
    if not mine:
        return
    if "put_bibw" in mine and sync is not None and sync not in ACTIVE:
        raise BadValue(f"--rma-sync {sync}: put_bibw takes fence or pscw (as OSU's osu_put_bibw: both ranks put "
                       f"at once); allowed: {' or '.join(ACTIVE)} with put_bibw")
    if "device" in buffers:
        raise BadValue(f"--buffers {','.join(buffers)}: the one-sided tests ({', '.join(mine)}) run on host memory "
                       "only; allowed: --buffers host with them")


def missing_entry_points(library: Path) -> Optional[list[str]]:
    """The one-sided calls ``library`` (a standard-ABI MPI, or xferlab's shim, whose names start with
    ``xferlab_``) does not export; None when it cannot be opened here (the probe will say why)."""
    try:
        lib = ctypes.CDLL(str(library), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError:
        return None
    prefix = "xferlab_" if hasattr(lib, "xferlab_shim_abi") else ""
    return [prefix + name for name in ENTRY_POINTS if not hasattr(lib, prefix + name)]


def check_support(tests: list[str], library: Path, choice: str) -> None:
    """Refuses, in one line, an MPI without the one-sided calls when a one-sided test is asked for."""
    if not any(t in ONE_SIDED for t in tests):
        return
    missing = missing_entry_points(library)
    if missing:
        raise BadValue(f"--mpi {shown(choice)}: {library} has no one-sided communication (it does not export "
                       f"{', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}); allowed: an MPI with MPI-3 "
                       f"one-sided calls, or --tests without {', '.join(t for t in tests if t in ONE_SIDED)}")


def memory_per_rank(tests: list[str], sizes: list[int], window: int) -> int:
    """Bytes one rank holds at the largest one-sided point: its buffer and its window, a window of ops each."""
    mine = [t for t in tests if t in ONE_SIDED]
    if not mine or not sizes:
        return 0
    ops = window if any(t in ONE_SIDED_BANDWIDTH for t in mine) else 1
    return 2 * max(sizes) * ops


def probe_args(tests: list[str], sync: Optional[str], window: str) -> list[str]:
    if not any(t in ONE_SIDED for t in tests):
        return []
    return (["--rma-sync", sync] if sync else []) + ["--rma-window", window]


def params(tests: list[str], sync: Optional[str], window: str) -> dict[str, Any]:
    mine = [t for t in tests if t in ONE_SIDED]
    return {"rma_sync": {t: sync_of(t, sync) for t in mine}, "rma_window": window} if mine else {}

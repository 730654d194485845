"""The network between processes: MPI point-to-point and collectives with the OSU Micro-Benchmarks'
definitions (seed 001 judges the AC922 by OSU's latency and bandwidth, host to host and GPU to GPU).

The timing loops are in the probe (``native/probe/network.cpp``), started as MPI ranks:

* on one machine, ``xferlab measure network`` starts them with the launcher of the MPI it found
  (the ``mpich`` wheel's ``mpiexec``, a dependency of xferlab, or ``$XFERLAB_MPIEXEC``);
* on a cluster, the command itself is started under the site's launcher (``srun -N2 xferlab
  measure network``): every rank runs the probe with the launcher's environment, rank 0 gathers
  every sample and every rank's inventory and alone writes the store.

MPI is reached through the MPI 5 standard ABI (``libmpi_abi.so``), loaded at run time: one probe
runs on any MPI that ships it, and on an MPI that does not (the MPICH ABI, Open MPI) through a
shim compiled with that MPI's own mpicc. ``--mpi auto|wheel|PATH`` chooses (measure/mpi_site.py):
the mpicc on PATH, else the ``mpich`` wheel beside this Python; ``$XFERLAB_MPI_LIB`` names the
standard-ABI library outright.

Rows: ``suite`` network, ``test`` the OSU benchmark's name (latency, bw, bibw, mbw_mr, multi_lat)
or the collective's, one per sample: ``seconds`` is a one-way latency (a batch of ping-pong round
trips / its iterations / 2: the loop is timed as OSU times it, ``per_sample`` iterations per clock
read), a window's time (bandwidth tests) or one call (collectives, a row per rank; for the
non-blocking ones the overall time of start, compute and wait, with ``params.compute_seconds`` and
the pure communication time of the same iteration, ``params.pure_seconds``). ``params``
hold the pair kind (intra-node / inter-node), the ranks, the buffer (host / device / mixed), the
buffers per side in OSU's notation (``H D``: the sender's host memory, the receiver's device
memory; a collective's ``H`` or ``D``) and the path (host, staged through pinned host memory, or
direct: device memory given to a GPU-aware MPI).
The one-sided tests (put_latency, get_latency, put_bw, get_bw, put_bibw; measure/network_rma.py) are
asked for by name and add the synchronization and window they ran with (``rma_sync``, ``rma_window``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import BadValue
from ..system.inventory import memory_available
from ..units import format_size, parse_list, parse_size, shown
from .mpi_site import Mpi, choose as choose_mpi, launch_command
from . import network_rma as rma
from .network_rma import ONE_SIDED, ONE_SIDED_BANDWIDTH
from .probe import ProbeRun
from .steps import Step, good_time, step_failure

POINT_TO_POINT = ("latency", "bw", "bibw", "mbw_mr", "multi_lat")
#: The non-blocking collectives (OSU's osu_iallreduce …: pure communication, then overlapped with a compute
#: phase; native/probe/network_nbc.cpp), each the blocking operation of its name without the "i".
NONBLOCKING = ("iallreduce", "ialltoall", "ibcast", "iallgather", "ireduce", "igather", "iscatter", "ibarrier")
COLLECTIVES = ("allreduce", "alltoall", "bcast", "allgather", "reduce", "barrier",
               "gather", "scatter", "reduce_scatter", "alltoallv", "allgatherv") + NONBLOCKING
TESTS = POINT_TO_POINT + COLLECTIVES
#: Collectives that move no data: one point, no size.
NO_DATA = ("barrier", "ibarrier")
#: Collectives whose buffers at some rank hold a block of every rank (alltoall's both sides, a gather's output,
#: a scatter's input): ranks x size bytes.
EVERY_RANKS_BLOCK = ("alltoall", "allgather", "gather", "scatter", "alltoallv", "allgatherv", "ialltoall", "iallgather",
                     "igather", "iscatter")
BANDWIDTH = ("bw", "bibw", "mbw_mr")
#: The smallest message each test takes (the probe skips smaller ones, native/probe/network.cpp): OSU
#: starts the bandwidth tests at 1 B, and a reduction needs one float.
SMALLEST = {**{t: 1 for t in BANDWIDTH}, "allreduce": 4, "reduce": 4, "iallreduce": 4, "ireduce": 4, "reduce_scatter": 4,
            **{t: 1 for t in ONE_SIDED_BANDWIDTH}}
#: Every test --tests takes: TESTS (the default set) and the one-sided tests, asked for by name.
ALL_TESTS = TESTS + ONE_SIDED
#: The tests whose samples are a window's time and whose figure is bytes over time.
RATES = BANDWIDTH + ONE_SIDED_BANDWIDTH
BUFFERS = ("host", "device")
PATHS = ("auto", "staged", "direct")

# OSU's defaults (osu_util.h of the OSU Micro-Benchmarks 7): message sizes, and (timed, warm-up)
# iterations at or below LARGE_MESSAGE_SIZE (8 KiB) and above it.
LARGE_FROM = 8192
LATENCY_COUNTS = ((10_000, 100), (1_000, 10))
BANDWIDTH_COUNTS = ((100, 10), (20, 2))
COLLECTIVE_COUNTS = ((1_000, 100), (100, 10))
WINDOW = 64
SIZES = "0,1..4Mi"
COLLECTIVE_SIZES = "1..1Mi"
LARGEST_MESSAGE = 2**30          # MPI counts are ints; a GiB message is far past any knee
MEMORY_SHARE = 0.5               # of MemAvailable, for every rank's buffers together
MAX_LOCAL_RANKS_PER_CPU = 1      # each rank polls: more ranks than CPUs measures the scheduler

#: Environment variables a launcher sets in each rank (rank, size), first match wins: Hydra's and
#: Slurm's PMI, Open MPI's, and Slurm's own for a task of a job step (SLURM_STEP_NUM_TASKS is set by
#: srun only, so the batch script itself, which has SLURM_PROCID 0, is not taken for a rank).
RANK_ENV = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
            ("PMIX_RANK", "SLURM_STEP_NUM_TASKS"), ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS"))


def launched_rank() -> Optional[tuple[int, int]]:
    """(rank, ranks) when this process was started by an MPI launcher (srun, mpiexec), else None."""
    for rank_key, size_key in RANK_ENV:
        if rank_key in os.environ and size_key in os.environ:
            try:
                return int(os.environ[rank_key]), int(os.environ[size_key])
            except ValueError:
                continue
    return None


def _size_item(text: str, where: str) -> int:
    return parse_size(text, where, allow_zero=True)


@dataclass
class NetworkPlan:
    tests: list[str] = field(default_factory=lambda: list(TESTS))
    sizes: list[int] = field(default_factory=lambda: parse_list(SIZES, _size_item))
    collective_sizes: list[int] = field(default_factory=lambda: parse_list(COLLECTIVE_SIZES, _size_item))
    ranks: int = 2
    latency_counts: tuple[tuple[int, int], tuple[int, int]] = LATENCY_COUNTS
    bandwidth_counts: tuple[tuple[int, int], tuple[int, int]] = BANDWIDTH_COUNTS
    collective_counts: tuple[tuple[int, int], tuple[int, int]] = COLLECTIVE_COUNTS
    large_from: int = LARGE_FROM
    window: int = WINDOW
    buffers: list[str] = field(default_factory=lambda: ["host"])
    backend: str = "opencl"
    device: int = 0
    path: str = "auto"
    node: Optional[int] = None
    bind: Optional[str] = None       # core | none; default: core when xferlab starts the ranks
    budget: Optional[float] = None
    inside: Optional[tuple[int, int]] = None  # (rank, ranks) when started by a launcher
    device_info: dict[str, Any] = field(default_factory=dict)
    mpi: str = "auto"                # --mpi: auto | wheel | PATH (an mpicc or a library)
    site: Optional[Mpi] = None       # the MPI it names, once checked
    rma_sync: Optional[str] = None   # --rma-sync (one-sided tests; None: OSU's default per test)
    rma_window: str = "allocate"     # --rma-window
    hosts: list[tuple[str, int]] = field(default_factory=list)  # --hosts: (name, slots); empty: this machine
    agent: Optional[str] = None      # --launch-agent: called as ssh is (None: the launcher's ssh)

    def chosen_mpi(self) -> Mpi:
        if self.site is None:
            self.site = choose_mpi(self.mpi)
        return self.site

    @staticmethod
    def parse_tests(text: str) -> list[str]:
        tests = [t.strip() for t in text.split(",") if t.strip()]
        if not tests:
            raise BadValue(f"--tests {shown(text)} is empty; allowed: {', '.join(ALL_TESTS)}")
        for t in tests:
            if t not in ALL_TESTS:
                raise BadValue(f"--tests {shown(t)} is not a test; allowed: point-to-point {', '.join(POINT_TO_POINT)}; "
                               f"collectives {', '.join(COLLECTIVES)}; one-sided {', '.join(ONE_SIDED)}")
        return list(dict.fromkeys(tests))

    @staticmethod
    def parse_sizes(text: str, where: str) -> list[int]:
        sizes = sorted(set(int(s) for s in parse_list(text, _size_item, where, max_items=64)))
        for s in sizes:
            if s > LARGEST_MESSAGE:
                raise BadValue(f"{where} {format_size(s)} is above the largest message, {format_size(LARGEST_MESSAGE)}; "
                               f"allowed: 0..{format_size(LARGEST_MESSAGE)}")
        return sizes

    @property
    def world(self) -> int:
        return self.inside[1] if self.inside else self.ranks

    def memory_per_rank(self) -> int:
        """Bytes of buffers one rank holds at once at the largest point (the probe allocates per point):
        a send and a receive buffer (a collective's receive side holds every rank's block for
        alltoall and allgather), and for device buffers as much again in device memory plus the
        pinned staging slots (a window's worth for the bandwidth tests)."""
        staged = "device" in self.buffers
        need = 0
        p2p = [t for t in self.tests if t in POINT_TO_POINT]
        if p2p and self.sizes:
            slots = self.window if any(t in BANDWIDTH for t in p2p) else 1
            need = max(need, 2 * max(self.sizes) * (1 + (slots if staged else 0)))
        coll = [t for t in self.tests if t in COLLECTIVES and t not in NO_DATA]
        if coll and self.collective_sizes:
            many = any(t in EVERY_RANKS_BLOCK for t in coll)
            need = max(need, 2 * max(self.collective_sizes) * (self.world if many else 1) * (2 if staged else 1))
        return max(need, rma.memory_per_rank(self.tests, self.sizes, self.window))

    def check(self, cpus: int, probe_devices: bool = True) -> None:
        if self.inside is None:
            if self.ranks < 2:
                raise BadValue(f"--ranks {self.ranks}: at least 2 (the point-to-point tests need a pair)")
            if self.hosts:
                from .mpi_hosts import slots

                if self.ranks > slots(self.hosts):
                    raise BadValue(f"--ranks {self.ranks}: --hosts gives {slots(self.hosts)} slot(s); allowed: "
                                   f"2..{slots(self.hosts)} (or more slots: NAME:N)")
            elif self.ranks > cpus * MAX_LOCAL_RANKS_PER_CPU:
                raise BadValue(f"--ranks {self.ranks}: this machine lets xferlab use {cpus} CPU(s); allowed: 2..{cpus} "
                               "(every rank polls a CPU; start more ranks across nodes with the site's launcher)")
        elif self.inside[1] < 2 and any(t in POINT_TO_POINT or t in ONE_SIDED for t in self.tests):
            raise BadValue(f"the launcher started {self.inside[1]} rank; the point-to-point tests need at least 2")
        for test in self.tests:  # a test none of whose sizes it takes would run and fail with no samples
            option, sizes = ("--collective-sizes", self.collective_sizes) if test in COLLECTIVES else ("--sizes", self.sizes)
            least = SMALLEST.get(test, 0) * (self.world if test == "reduce_scatter" else 1)
            if test not in NO_DATA and sizes and max(sizes) < least:
                why = ("one float per rank" if test == "reduce_scatter" else "one float" if least == 4
                       else "where OSU starts it")
                raise BadValue(f"{option} {','.join(format_size(s) for s in sizes)}: {test} takes messages of at least "
                               f"{format_size(least)} ({why}), and none of these is; allowed: sizes from "
                               f"{format_size(least)} to {format_size(LARGEST_MESSAGE)}")
        if self.window < 1 or self.window > 4096:
            raise BadValue(f"--window {self.window}: messages in flight per iteration must be in 1..4096")
        for name, counts in (("--iterations", self.latency_counts), ("--bw-iterations", self.bandwidth_counts),
                             ("--collective-iterations", self.collective_counts)):
            for timed, warm in counts:
                if not 1 <= timed <= 10**8 or not 0 <= warm <= 10**8:
                    raise BadValue(f"{name} {timed} (warm-up {warm}): timed iterations in 1..10^8, warm-up in 0..10^8")
        if not self.buffers:
            raise BadValue(f"--buffers is empty; allowed: {', '.join(BUFFERS)}")
        from .checks import DEVICE_INDEX, in_range

        in_range(self.device, "--device", *DEVICE_INDEX, "a device index")
        for b in self.buffers:
            if b not in BUFFERS:
                raise BadValue(f"--buffers {shown(b)} is not a buffer kind; allowed: {', '.join(BUFFERS)}")
        if self.path not in PATHS:
            raise BadValue(f"--path {shown(self.path)} is not allowed; allowed: {', '.join(PATHS)}")
        if self.backend not in ("opencl", "cuda"):
            raise BadValue(f"--backend {shown(self.backend)} is not allowed; allowed: opencl, cuda")
        rma.check_options(self.tests, self.rma_sync, self.rma_window, self.buffers)
        if self.bind not in (None, "core", "none"):
            raise BadValue(f"--bind {shown(self.bind)} is not allowed; allowed: core, none")
        if self.node is not None:
            from .checks import memory_node

            memory_node(self.node)
        available = memory_available()
        need = self.memory_per_rank() * (self.world if self.inside is None else 1)
        if available and need > MEMORY_SHARE * available:
            raise BadValue(f"--sizes {format_size(max(self.sizes or [0]))} / --collective-sizes "
                           f"{format_size(max(self.collective_sizes or [0]))} need {format_size(need)} of buffers "
                           f"({self.world if self.inside is None else 1} rank(s) here), above half of the "
                           f"{format_size(available)} available; allowed: smaller sizes")
        rma.check_support(self.tests, self.chosen_mpi().library, self.mpi)
        if "device" in self.buffers and probe_devices:
            from .device import find_device

            self.device_info = find_device(self.backend, self.device)

    def probe_args(self, inventory_file: Optional[str] = None) -> list[str]:
        (lat, lat_w), (lat_l, lat_lw) = self.latency_counts
        (bw, bw_w), (bw_l, bw_lw) = self.bandwidth_counts
        (co, co_w), (co_l, co_lw) = self.collective_counts
        args = ["network", "--tests", ",".join(self.tests),
                "--sizes", ",".join(map(str, self.sizes or [0])),
                "--collective-sizes", ",".join(map(str, self.collective_sizes or [0])),
                "--iterations", str(lat), "--warmup", str(lat_w), "--iterations-large", str(lat_l),
                "--warmup-large", str(lat_lw), "--bw-iterations", str(bw), "--bw-warmup", str(bw_w),
                "--bw-iterations-large", str(bw_l), "--bw-warmup-large", str(bw_lw),
                "--collective-iterations", str(co), "--collective-warmup", str(co_w),
                "--collective-iterations-large", str(co_l), "--collective-warmup-large", str(co_lw),
                "--large-from", str(self.large_from), "--window", str(self.window),
                "--buffers", ",".join(self.buffers), "--backend", self.backend, "--device", str(self.device),
                "--path", self.path, "--bind", self.bind or ("none" if self.inside else "core")]
        if self.node is not None:
            args += ["--node", str(self.node)]
        args += rma.probe_args(self.tests, self.rma_sync, self.rma_window)
        if self.budget:
            args += ["--budget", repr(float(self.budget))]
        if inventory_file:
            args += ["--inventory", inventory_file]
        return args

    def estimate_seconds(self) -> float:
        """A rough time for the progress bar: ~2 µs per small message, ~0.1 ns per byte, on this kind of machine."""
        total = 0.0
        for t in self.tests:
            counts = self.bandwidth_counts if t in RATES else self.collective_counts if t in COLLECTIVES else self.latency_counts
            for s in ([0] if t in NO_DATA else self.collective_sizes if t in COLLECTIVES else self.sizes):
                timed, warm = counts[1] if s > self.large_from else counts[0]
                per = (self.window if t in RATES else 6 if t in NONBLOCKING else 2) * (2e-6 + s * 1e-10)
                total += (timed + warm) * per
        return 2.0 + total * len(self.buffers)

    def params(self) -> dict[str, Any]:
        return {"tests": self.tests, "sizes": self.sizes, "collective_sizes": self.collective_sizes, "ranks": self.world,
                "latency_counts": self.latency_counts, "bandwidth_counts": self.bandwidth_counts,
                "collective_counts": self.collective_counts, "large_from": self.large_from, "window": self.window,
                "buffers": self.buffers, "backend": self.backend if "device" in self.buffers else None,
                "device": self.device if "device" in self.buffers else None,
                "platform": self.device_info.get("platform") if "device" in self.buffers else None,
                "path": self.path, "node": self.node,
                "launched_by": "site launcher" if self.inside else "xferlab (mpiexec)",
                "hosts": [{"host": h, "slots": n} for h, n in self.hosts] or None, "launch_agent": self.agent,
                "mpi": self.chosen_mpi().params(), **rma.params(self.tests, self.rma_sync, self.rma_window)}


def step(plan: NetworkPlan, inventory_file: Optional[str] = None) -> Step:
    """The one probe run: every rank runs the probe once (MPI is initialized once per process)."""
    mpi = plan.chosen_mpi()
    env = {"XFERLAB_MPI_LIB": str(mpi.library), **mpi.env}
    label = f"MPI network, {plan.world} ranks"
    args = plan.probe_args(inventory_file)
    if plan.inside:
        # Already a rank: the probe joins the launcher's job through the environment (and, for a
        # PMI-1 launcher such as Hydra, the PMI socket, which must stay open in the child).
        fds = tuple(int(os.environ[k]) for k in ("PMI_FD",) if os.environ.get(k, "").isdigit())
        return Step(label, "network", args, {"node": plan.node}, plan.estimate_seconds(), launcher=[], env=env,
                    pass_fds=fds)
    return Step(label, "network", args, {"node": plan.node}, plan.estimate_seconds(),
                launcher=launch_command(mpi, plan.ranks, plan.hosts, plan.agent, forward=forwarded(env)), env=env)


def forwarded(env: dict[str, str]) -> tuple[str, ...]:
    """The variables ranks on other hosts need from this one (Open MPI's launcher passes none unless named):
    the probe's, and the fault injection of the tests where it is set."""
    return (*env, *(k for k in ("XFERLAB_PROBE_FAULT", "XFERLAB_PROBE_FAULT_RANK") if os.environ.get(k)))


def write_inventory() -> str:
    """This rank's inventory in a temporary file for the probe to gather (removed by the caller)."""
    from ..system.inventory import inventory

    handle, name = tempfile.mkstemp(prefix="xferlab-rank-", suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(inventory(), out, default=str)
    return name


# -- rows ---------------------------------------------------------------------------------------

def _metric(test: str) -> str:
    return "bandwidth_bytes_per_second" if test in RATES else "latency_seconds"


def _moved(record: dict[str, Any]) -> int:
    """Bytes one sample moved: a message (latency tests, collectives), a window (bw, mbw_mr: per pair,
    times the pairs), both directions' windows (bibw)."""
    size, test = record["size_bytes"], record["test"]
    if test in ONE_SIDED:
        return rma.moved(test, size, record.get("window", WINDOW))
    if test == "bibw":
        return 2 * size * record.get("window", WINDOW)
    if test in ("bw", "mbw_mr"):
        return size * record.get("window", WINDOW) * record.get("pairs", 1)
    return size


def _nbc_params(record: dict[str, Any], i: int) -> dict[str, Any]:
    """A non-blocking collective's row: its iteration's compute time and the pure communication time of the
    same iteration of the first phase (``seconds`` is the overall time, OSU's "Overall")."""
    if record["test"] not in NONBLOCKING:
        return {}
    compute, pure = record.get("compute_seconds") or [], record.get("pure_seconds") or []
    return {"compute_seconds": compute[i] if i < len(compute) else None, "pure_seconds": pure[i] if i < len(pure) else None}


def _key(r: dict[str, Any]) -> tuple:
    return (r.get("test"), r.get("size_bytes"), r.get("pair"), r.get("path"), r.get("buffers"))


def rows_of(step_: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """Tidy rows of the probe's records, and why the run failed (None if it did not).

    A point's rows are ``validated`` once rank 0 printed its validation record, right: every
    receiver held the bytes sent. A point whose check failed keeps its rows, unvalidated, and fails
    the step with the rank and offset; rows printed before a rank died are kept, unvalidated."""
    setup = run.first("setup")
    step_.learned["setup"] = setup
    step_.learned["stopped"] = run.first("stopped") or None
    checks = run.of("validation")
    good = {_key(r) for r in checks if r.get("ok")}
    bad = [r for r in checks if not r.get("ok")]
    rows: list[dict[str, Any]] = []
    dropped: list[str] = []
    for r in run.of("samples"):
        moved = _moved(r)
        for i, s in enumerate(r.get("seconds") or []):
            if not good_time(s):
                dropped.append(f"{r['test']} {r['size_bytes']} B #{i}: {s} s")
                continue
            value = moved / s if r["test"] in RATES else s
            rows.append({"suite": "network", "test": r["test"], "metric": _metric(r["test"]), "value": value,
                         "size_bytes": r["size_bytes"], "iteration": i, "warmup": False, "seconds": s, "bytes": moved,
                         "node": step_.placement.get("node") if r.get("path") == "host" else None,
                         "validated": _key(r) in good,
                         "params": {"pair": r.get("pair"), "ranks": ",".join(map(str, r.get("ranks", []))),
                                    "rank": r.get("rank"), "buffer": r.get("buffer"), "path": r.get("path"),
                                    "window": r.get("window"), "pairs": r.get("pairs"), **_nbc_params(r, i),
                                    **({"rma_sync": r.get("rma_sync"), "rma_window": r.get("rma_window")}
                                       if r["test"] in ONE_SIDED else {}),
                                    "buffers": r.get("buffers"), "per_sample": r.get("per_sample"),
                                    # the store's groups (results show) keep a mixed pair apart from D D
                                    "variant": r.get("buffers") if r.get("buffer") == "mixed" else None}})
    failure = run.failure
    if bad:
        first = bad[0]
        failure = failure or (f"validation failed at {len(bad)} point(s), first {first['test']} {first['size_bytes']} B "
                              f"({first.get('path')}): {first.get('what')}")
    return rows, step_failure(rows, failure, dropped)


def run_summary(results) -> dict[str, Any]:
    """What the run's summary keeps from the probe's setup record: the MPI, the ranks' hosts and
    CPUs (and each rank's inventory when the ranks sent one), the paths device buffers took."""
    for result in results:
        setup = result.step.learned.get("setup")
        if setup:
            return {"mpi": {k: setup.get(k) for k in ("library", "library_path", "mpi_library", "abi", "mpi_version", "abi_version", "gpu_aware",
                                                      "memory_alloc_kinds", "paths", "bind", "clock")},
                    "hosts": setup.get("hosts"), "device": setup.get("device"),
                    "buffer_node": {"node": setup.get("node"), "pages": setup.get("node_pages"),
                             "binding_error": setup.get("node_binding_error") or None},
                    "points_skipped": (result.step.learned.get("stopped") or {}).get("points_skipped", 0)}
    return {}

"""The memory-tier suite: STREAM bandwidth, App-Direct STREAM with and without persistence,
pointer-chase latency and loaded latency, on chosen CPUs and memory nodes.

Each *step* is one run of the native probe (``stream``, ``latency`` or ``loaded``) for one
placement. Its timed iterations become tidy sample rows for the store; the step's statistics are
computed here, over the non-warm-up samples. A step whose probe fails, hangs past its timeout, or
whose arrays fail validation is recorded as a failure with its reason, and the suite goes on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue
from ..system import inventory as inv
from ..units import format_rate, format_size, format_time
from . import checks, loaded as loaded_mixes, pmdk
from .precision import annotate, estimate, probe_args, stopped_of
from .probe import ProbeRun
from .steps import Step, dropped_reason, good_time, planned_limit
from ..stats import summarize

KERNELS = ("copy", "scale", "add", "triad", "read", "write")
DEFAULT_KERNELS = ("copy", "scale", "add", "triad")
MIN_ARRAY = 64 * 2**20


@dataclass
class MemoryPlan:
    """What `xferlab measure memory` will run, validated against this machine."""

    kernels: list[str] = field(default_factory=lambda: list(DEFAULT_KERNELS))
    size_bytes: Optional[int] = None  # per array; default max(4 x LLC, 64 MiB)
    threads: list[int] = field(default_factory=list)  # default: every allowed CPU
    cpus: Optional[list[int]] = None
    nodes: list[Optional[int]] = field(default_factory=lambda: [None])  # None: the OS's default policy
    first_touch: bool = True
    hugepages: str = "none"
    iterations: int = 10
    precision: Optional[float] = None  # --precision: repeat until each median's 95 % CI is this narrow
    max_time: Optional[float] = None   # --max-time: seconds of timed work per kernel or working set, at most
    pmem: Optional[Path] = None
    persist: bool = False
    pmdk: bool = False  # --pmdk: STREAM-PMem in a PMDK pool beside the raw mapping (measure/pmdk.py)
    stream_pmem: bool = False  # the tiers study's App-Direct classes: STREAM-PMem alone (the pmdk mode)
    pin: bool = True  # False: threads confined to --cpus as a set, placed by the scheduler (the probe's --no-pin)
    latency: bool = False
    loaded: bool = False
    mixes: list[str] = field(default_factory=lambda: list(loaded_mixes.DEFAULT_MIXES))  # --loaded's read/write mixes
    latency_sizes: Optional[list[int]] = None
    bandwidth: bool = True
    timeout: float = 600.0
    #: the lab's plan (measure/sizing.py's Sizing): STREAM's arrays and timed work, the latency sweep's working sets,
    #: timing and --budget, loaded latency's chase, each step's estimate and timeout; None: the options above
    sized: Optional[Any] = None

    def check(self) -> None:
        """Refuse, with the value named, what this machine (or the probe) cannot run: every value
        the probe would refuse or die on is caught here, before a run is recorded."""
        allowed = sorted(os.sched_getaffinity(0))
        if not self.kernels:
            raise BadValue(f"--kernels is empty; allowed: {', '.join(KERNELS)}")
        for k in self.kernels:
            if k not in KERNELS:
                raise BadValue(f"kernel '{k}' is not known; allowed: {', '.join(KERNELS)}")
        if self.cpus is not None:
            for c in self.cpus:
                if c not in allowed:
                    raise BadValue(f"--cpus: CPU {c} does not exist or is not allowed; allowed: {_ranges(allowed)}")
        usable = len(set(self.cpus)) if self.cpus is not None else len(allowed)
        cap = checks.thread_cap(usable)
        for t in self.threads:
            if t < 1:
                raise BadValue(f"--threads {t}: at least one thread is needed")
            if t > cap:
                raise BadValue(f"--threads {t} is more than {cap}, 4 per usable CPU ({usable}); allowed: 1..{cap}")
        for node in self.nodes:
            if node is not None:
                checks.memory_node(node)
        if self.iterations < 2:
            raise BadValue(f"--iterations {self.iterations}: at least 2 (the first is a discarded warm-up)")
        checks.in_range(self.iterations, "--iterations", *checks.STREAM_ITERATIONS,
                        what="a whole number of timed iterations (the first a warm-up)")
        if self.size_bytes is not None:
            lo, hi = checks.STREAM_SIZE
            if not lo <= self.size_bytes <= hi:
                raise BadValue(f"--size {format_size(self.size_bytes)} ({self.size_bytes} B) per array is out of range; "
                               f"allowed: {format_size(lo)}..{format_size(hi)}")
            for node in self.nodes:
                capacity = node_capacity(node)
                if 3 * self.size_bytes > capacity:
                    raise BadValue(f"--size {format_size(self.size_bytes)} per array needs {format_size(3 * self.size_bytes)} "
                                   f"for three arrays, more than the {format_size(capacity)} of memory node "
                                   f"{'(default)' if node is None else node}")
        if self.hugepages not in ("none", "thp", "hugetlb"):
            raise BadValue(f"--hugepages '{self.hugepages}' is not allowed; allowed: none, thp, hugetlb")
        if self.persist and self.pmem is None:
            raise BadValue("--persist needs --pmem PATH: persistence applies to an App-Direct mapping")
        if (self.pmdk or self.stream_pmem) and self.pmem is None:
            raise BadValue("--pmdk needs --pmem PATH: the pool is made there, beside the raw mapping")
        if self.pmem is not None:
            if any(n is not None for n in self.nodes):
                raise BadValue("--node binds ordinary memory; an App-Direct mapping (--pmem) lives where its device is")
            if self.hugepages != "none":
                raise BadValue(f"--hugepages {self.hugepages} applies to ordinary memory, not to an App-Direct "
                               "mapping (--pmem)")
            if self.pmdk or self.stream_pmem:
                pmdk.library()
            if self.bandwidth:
                need = checks.stream_mapping_bytes(self.array_bytes)
                checks.pmem_path(self.pmem, max(need, pmdk.pool_bytes(self.array_bytes, checks.STREAM_OFFSET))
                                 if self.pmdk or self.stream_pmem else need)
        elif self.hugepages == "hugetlb" and self.bandwidth:
            checks.hugetlb(checks.stream_mapping_bytes(self.array_bytes), self.nodes)
        if self.loaded and usable < 2:
            raise BadValue(f"--loaded needs at least two CPUs: one chases pointers while the others load memory "
                           f"(mixes {','.join(self.mixes)}); {usable} usable")
        if self.loaded:
            loaded_mixes.parse_mixes(",".join(self.mixes))

    @property
    def array_bytes(self) -> int:
        return self.size_bytes or max(4 * inv.last_level_cache_bytes(), MIN_ARRAY)

    def thread_counts(self) -> list[int]:
        return self.threads or [len(self.cpus) if self.cpus is not None else len(os.sched_getaffinity(0))]


def _ranges(cpus: list[int]) -> str:
    return ",".join(map(str, cpus))


def node_capacity(node: Optional[int]) -> int:
    """Bytes of memory on ``node`` (or the machine's, for the default policy). On a single-node
    machine the node's meminfo can lag memory added later (seen on a VM), so the larger counts."""
    system = inv._meminfo(Path("/proc/meminfo")).get("MemTotal", 0)
    nodes = inv.numa_nodes()
    if node is None or len(nodes) == 1:
        return max(system, *(n["memory_total_bytes"] for n in nodes))
    return next(n["memory_total_bytes"] for n in nodes if n["node"] == node)


def steps(plan: MemoryPlan) -> list[Step]:
    """The probe runs of ``plan``, in order."""
    out: list[Step] = []
    size = plan.array_bytes
    cpu_arg = ["--cpus", ",".join(map(str, plan.cpus))] if plan.cpus is not None else []
    common = ["--first-touch", "on" if plan.first_touch else "off"]
    # A rough cost for progress estimates: every kernel moves about 3 arrays per iteration at ~10 GB/s.
    stream_estimate = plan.iterations * len(plan.kernels) * 3 * size / 10e9 + 3 * size / 2e9
    modes: list[tuple[str, list[str], Optional[int]]] = []
    if plan.bandwidth:
        if plan.pmem is None:
            modes += [("memory", ["--node", str(n)] if n is not None else [], n) for n in plan.nodes]
        elif plan.stream_pmem:
            modes.append(("pmdk", ["--pmem", str(plan.pmem), "--pmdk", "persist"], None))
        else:
            modes.append(("app-direct", ["--pmem", str(plan.pmem)], None))
            if plan.persist or plan.pmdk:  # the raw mapping persisted: PMDK's reference
                modes.append(("app-direct+persist", ["--pmem", str(plan.pmem), "--persist"], None))
            if plan.pmdk:
                modes += [("pmdk", ["--pmem", str(plan.pmem), "--pmdk", "persist"], None),
                          ("pmdk-tx", ["--pmem", str(plan.pmem), "--pmdk", "tx"], None)]
    sized = plan.sized
    stream_time = plan.max_time
    if sized is not None:
        size, stream_time = sized.stream_bytes or size, sized.stream_max_time
        stream_estimate = sized.stream_estimate
        if sized.stream_bytes is None:
            modes = []  # skipped by the plan, which says why
    for mode, where, node in modes:
        for threads in plan.thread_counts():
            args = ["stream", "--kernels", ",".join(plan.kernels), "--size", str(size), "--iterations",
                    str(plan.iterations), "--threads", str(threads), *cpu_arg, *where, *common,
                    *probe_args(plan.precision, stream_time)]
            if plan.pmem is None:
                args += ["--hugepages", plan.hugepages]
            if not plan.pin:
                args.append("--no-pin")
            node_text = "default" if node is None else str(node)
            label = f"stream {mode} node {node_text}, {threads} thread{'s' * (threads > 1)}"
            placement = {"node": node_text, "mode": mode, "threads": threads}
            if sized is not None:
                out.append(Step(label, "stream", args, placement, stream_estimate, limit=planned_limit(stream_estimate)))
                continue
            out.append(Step(label, "stream", args, placement,
                            estimate(stream_estimate * (1 if mode in ("memory", "app-direct") else 20), len(plan.kernels),
                                     plan.precision, plan.max_time)))
    llc = inv.last_level_cache_bytes() or 32 * 2**20
    for node in plan.nodes if plan.pmem is None else [None]:
        where = ["--node", str(node)] if node is not None else []
        node_text = "default" if node is None else str(node)
        label = f"latency node {node_text}"
        if plan.latency and (sized is None or sized.latency_sizes):
            sizes = sized.latency_sizes if sized is not None else plan.latency_sizes or latency_sizes(llc)
            first_cpu = (plan.cpus or sorted(os.sched_getaffinity(0)))[0]
            args = ["latency", "--sizes", ",".join(map(str, sizes)), "--cpu", str(first_cpu), *where]
            if sized is None:
                out.append(Step(label, "latency", args + probe_args(plan.precision, plan.max_time),
                                {"node": node_text, "mode": "memory", "threads": 1},
                                estimate(0.15 * len(sizes), len(sizes), plan.precision, plan.max_time),
                                progress=lambda r, label=label: latency_progress(label, r), budget_flag="--budget"))
            else:
                args += ["--min-time", repr(sized.latency_min_time), "--budget", repr(sized.latency_budget),
                         *probe_args(plan.precision, sized.latency_max_time)]
                out.append(Step(label, "latency", args, {"node": node_text, "mode": "memory", "threads": 1},
                                sized.latency_estimate, limit=planned_limit(sized.latency_budget),
                                progress=lambda r, label=label: latency_progress(label, r)))
        if plan.loaded and (sized is None or sized.loaded_bytes):
            args = ["loaded", *cpu_arg, *where, *loaded_mixes.probe_args(plan.mixes)]
            seconds, most = 2.0 * len(plan.mixes), None
            if sized is not None:
                args += ["--size", str(sized.loaded_bytes), "--min-time", repr(sized.loaded_min_time)]
                seconds, most = sized.loaded_estimate, planned_limit(sized.loaded_estimate)
            label = f"loaded latency node {node_text}"
            out.append(Step(label, "loaded", args,
                            {"node": node_text, "mode": "memory",
                             "threads": len(plan.cpus) if plan.cpus else len(os.sched_getaffinity(0))}, seconds,
                            limit=most, progress=LoadedProgress(label)))
    return out


class LoadedProgress:
    """A line as each (mix, delay) point of loaded latency ends: its median latency and traffic, and
    whether the probe's check of the traffic held."""

    def __init__(self, label: str) -> None:
        self.label, self.windows = label, []

    def __call__(self, record: dict[str, Any]) -> Optional[str]:
        if record.get("record") == "sample" and good_time(record.get("latency_seconds")):
            self.windows.append(record)
        if record.get("record") != "check":
            return None
        windows, self.windows = self.windows, []
        if not windows:
            return None
        latency = summarize(w["latency_seconds"] for w in windows)["median"]
        traffic = summarize(w.get("traffic_bandwidth_bytes_per_second") or 0 for w in windows)["median"]
        checked = "traffic checked" if record.get("ok") else f"traffic check FAILED: {record.get('detail')}"
        return (f"{self.label}: mix {record.get('mix')}, delay {record.get('delay')}: {format_time(latency)} a load "
                f"(median) under {format_rate(traffic)} of traffic, {checked}")


def latency_progress(label: str, record: dict[str, Any]) -> Optional[str]:
    """A line as each working set of the sweep ends (or is left out for the sweep's --budget)."""
    if record.get("record") == "point":
        took = f" ({record['seconds']:.1f} s)" if record.get("seconds") is not None else ""
        return (f"{label}: {format_size(record.get('size_bytes', 0))}: {format_time(record['median_seconds']) if record.get('median_seconds') else '–'} "
                f"a load{took}")
    if record.get("record") == "skipped":
        return (f"{label}: {format_size(record.get('size_bytes', 0))} skipped: needs about "
                f"{record.get('estimate_seconds', 0):.1f} s, {record.get('left_seconds', 0):.1f} s of its budget left")
    return None


def latency_sizes(llc: int) -> list[int]:
    """Working sets from 4 KiB to 8 x the last-level cache, two points per doubling."""
    sizes, s = [], 4096
    while s <= 8 * llc:
        sizes += [s, s * 3 // 2]
        s *= 2
    return sizes


def rows_of(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """Tidy sample rows of one probe run, and the reason it failed (None if it did not).

    ``validated`` says whether the probe vouched for a row: a STREAM row once the probe's
    validation record came out right; a latency row (nothing to validate) once the probe ended
    cleanly; a loaded-latency row once, too, its point's traffic check held (measure/loaded.py).
    Rows of a probe that crashed or was killed first are kept, unvalidated, and left out of
    statistics. Samples with a non-positive or non-finite time are dropped."""
    setup = run.first("setup")
    base = {"suite": "memory", **step.placement}
    rows: list[dict[str, Any]] = []
    dropped: list[str] = []
    failure = run.failure
    samples = run.of("sample")
    if step.test == "stream":
        validation = next((r for r in run.records if r.get("record") == "validation"), None)
        if validation is None:
            failure = failure or "the probe ended before validating its arrays"
        elif not validation.get("ok"):
            return [], f"validation failed: {validation.get('detail')}"
        extra = {k: setup.get(k) for k in ("first_touch", "hugepages", "dax", "map_sync", "persist_mechanism",
                                           "page_nodes", "pinned", "emulated", "affinity")}
        for r in samples:
            if not good_time(r.get("seconds")):
                dropped.append(f"{r.get('kernel')} iteration {r.get('iteration')}: {r.get('seconds')} s")
                continue
            rows.append({**base, "test": r["kernel"], "metric": "bandwidth_bytes_per_second",
                         "value": r["bytes"] / r["seconds"], "size_bytes": setup.get("array_bytes"),
                         "cpus": setup.get("thread_cpus"), "iteration": r["iteration"], "warmup": r["warmup"],
                         "seconds": r["seconds"], "bytes": r["bytes"], "validated": validation is not None,
                         "write_allocate_bytes": r["write_allocate_bytes"], **extra})
    elif step.test == "latency":
        # working sets the probe did not start for its --budget: said by the lab, not failures
        step.learned["skipped"] = [{k: r.get(k) for k in ("size_bytes", "estimate_seconds", "left_seconds")}
                                   for r in run.of("skipped")]
        for r in samples:
            if not good_time(r.get("latency_seconds")):
                dropped.append(f"{r.get('size_bytes')} B repeat {r.get('repeat')}: {r.get('latency_seconds')} s")
                continue
            rows.append({**base, "test": "latency", "metric": "latency_seconds", "value": r["latency_seconds"],
                         "size_bytes": r["size_bytes"], "cpus": str(setup.get("cpu")), "iteration": r["repeat"],
                         "warmup": False, "loads": r["loads"], "hugepages": setup.get("hugepages"),
                         "page_nodes": setup.get("page_nodes"), "validated": run.ok})
    else:  # loaded latency, one curve per read/write mix (measure/loaded.py)
        rows, dropped, refused = loaded_mixes.rows(base, run)
        if refused:
            failure = failure or f"traffic check failed (those points left out): {'; '.join(refused)}"
    annotate(step.test, run.records, rows)  # how each kernel's or working set's repetition stopped
    return rows, failure or dropped_reason(dropped)


def summaries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Statistics per (test, metric, node, mode, threads, size) over validated non-warm-up samples, with the
    headline named: STREAM's best rate (the fastest iteration) for bandwidth, the median for latency."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("warmup") or r["test"] == "loaded-latency" or r.get("validated") is False:
            continue
        key = (r["test"], r["metric"], r.get("node"), r.get("mode"), r.get("threads"), r.get("size_bytes"))
        groups.setdefault(key, []).append(r)
    out = []
    for (test, metric, node, mode, threads, size), members in groups.items():
        stats = summarize(m["value"] for m in members)  # with the median's 95 % interval
        bandwidth = metric == "bandwidth_bytes_per_second"
        out.append({"test": test, "metric": metric, "node": node, "mode": mode, "threads": threads, "size_bytes": size,
                    "cpus": members[0].get("cpus"), "headline": "best" if bandwidth else "median",
                    "headline_value": stats["max"] if bandwidth else stats["median"], **stats,
                    "stopped": stopped_of(members)})
    return out

"""The host–accelerator suite: copies over a size sweep for each host memory kind, kernel launch
latency, and one total moved in small or large chunks, on any OpenCL device, CUDA GPU or SYCL device
(USM through dpctl; its launches beside OpenCL's on the same device, seed 004's DPC++ against OpenCL).

Each step is one run of the probe's ``transfer``, ``launch`` or ``chunks`` subcommand; rows carry
both clocks: ``seconds`` is the host steady clock around submit + wait, ``device_seconds`` (in the
params) the device's own timestamps. Summaries name their headline: the median, as nvbandwidth
reports, for copies and launches.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import BadValue, Unavailable
from ..units import shown, format_size
from . import checks, sycl
from .precision import ADAPTIVE_ITERATIONS, annotate, ci_fields, estimate, probe_args, stopped_counts, stopped_of
from .probe import ProbeRun, run_probe
from .programs import check_program, program_args, refused
from .samples import kept, value_of
from ..stats import summarize
from ..system.locality import check_allowed, cpu_text, with_locality
from .steps import Step, good_time, step_failure

BACKENDS = ("opencl", "cuda", "sycl")
KINDS = ("pageable", "pinned", "svm-coarse", "svm-fine", "managed", "managed-prefetch", "usm-host", "usm-shared")
EXPLICIT_KINDS = ("pageable", "pinned", "usm-host")  # copied by explicit calls; the others are shared memory
DIRECTIONS = ("h2d", "d2h", "d2d", "bidir")
ORDERS = ("sequential", "interleaved")
SEED_CHUNKS = (80_000, 8_000_000)  # seed 004: 80 kB x 100,000 against 8 MB x 1,000


def devices(backend: str) -> tuple[list[dict[str, Any]], Optional[str]]:
    """The devices ``backend`` sees, each with its ``locality`` (system/locality.py), or ([], why not)
    when its runtime is not available."""
    run = run_probe(["devices", "--backend", backend], timeout=60)
    if run.returncode == 3:
        return [], (run.failure or "").split("not available: ", 1)[-1]
    if not run.ok:
        return [], run.failure
    return with_locality([r["device"] for r in run.records if r.get("probe") == "device"]), None


def find_device(backend: str, index: int) -> dict[str, Any]:
    """The inventory of device ``index`` of ``backend``; the errors a user gets when it is not there."""
    found, why = devices(backend)
    if why is not None:
        raise Unavailable(f"the {backend} backend is not available: {why}")
    if not 0 <= index < len(found):
        raise BadValue(f"--device {index} does not exist; {backend} devices: 0..{len(found) - 1}")
    return found[index]


def platform_device(backend: str, platform: Optional[str], index: int) -> int:
    """The probe's device number (every platform's devices in turn) of device ``index`` of OpenCL platform
    ``platform`` (its index in the order the probe lists platforms, or a part of its name, any case);
    ``index`` itself without a platform. An unknown platform is refused naming the platforms there are."""
    if platform is None:
        return index
    if backend != "opencl":
        raise BadValue(f"--platform {shown(platform)} is for --backend opencl, not {shown(backend)}")
    found, why = devices(backend)
    if why is not None:
        raise Unavailable(f"the {backend} backend is not available: {why}")
    names = list(dict.fromkeys(d.get("platform", "") for d in found))
    listed = "; ".join(f"{i}: {n}" for i, n in enumerate(names))
    text = platform.strip()
    if text.isdigit():
        chosen = [names[int(text)]] if int(text) < len(names) else []
    else:
        chosen = [n for n in names if text and text.lower() in n.lower()]
    if len(chosen) != 1:
        what = "names several" if chosen else "is not one"
        raise BadValue(f"--platform {shown(platform)} {what} of the OpenCL platforms; platforms: {listed}")
    mine = [d["index"] for d in found if d.get("platform") == chosen[0]]
    if not 0 <= index < len(mine):
        raise BadValue(f"--device {index} does not exist on platform {shown(chosen[0])}; its devices: 0..{len(mine) - 1}")
    return mine[index]


def supported_kinds(backend: str, device: dict[str, Any]) -> list[str]:
    if backend == "sycl":  # pageable, and the USM host kinds the device has the aspects for
        return list(device.get("host_kinds") or ["pageable"])
    if backend == "cuda":
        return ["pageable", "pinned", "managed"] + (["managed-prefetch"] if device.get("concurrent_managed_access") else [])
    kinds = ["pageable", "pinned"]
    if device.get("svm_coarse_grain"):
        kinds.append("svm-coarse")
    if device.get("svm_fine_grain"):
        kinds.append("svm-fine")
    return kinds


@dataclass
class DevicePlan:
    backend: str = "opencl"
    device: int = 0
    kinds: Optional[list[str]] = None        # default: every kind the device supports
    sizes: Optional[list[int]] = None        # default: 1 B, 2 B … up to min(1 GiB, max allocation)
    max_size: Optional[int] = None
    directions: list[str] = field(default_factory=lambda: list(DIRECTIONS))
    iterations: int = 5
    max_iterations: int = 200
    min_time: float = 0.02
    precision: Optional[float] = None       # --precision: repeat each point until its median's 95 % CI is this narrow
    max_time: Optional[float] = None        # --max-time: seconds of timed work per point, at most
    order: Optional[str] = None             # --order: sequential or interleaved (default: interleaved with a precision)
    node: Optional[int] = None
    transfers: bool = True
    launch: bool = False
    launch_count: int = 10_000
    launch_args: list[int] = field(default_factory=lambda: [0, 1, 4, 8])
    pin: Optional[int] = None               # also measure launches pinned to this CPU
    cpus: Optional[list[int]] = None        # the host thread (copies, chunks, launches) placed on these CPUs (None: the OS's choice)
    chunks: list[int] = field(default_factory=list)
    chunk_total: int = 256 * 2**20
    chunk_directions: list[str] = field(default_factory=lambda: ["h2d"])
    info: dict[str, Any] = field(default_factory=dict)
    opencl_twin: Optional[int] = None       # sycl: the same device's OpenCL index, whose launches run beside
    program: Optional[Path] = None          # --program: the empty kernels from a binary (measure/programs.py)

    def check(self) -> None:
        """Validate against the device itself; an unavailable backend is an error the user asked for."""
        if self.backend not in BACKENDS:
            raise BadValue(f"--backend '{self.backend}' is not allowed; allowed: {', '.join(BACKENDS)}")
        self.info = find_device(self.backend, self.device)
        if self.backend == "sycl":
            self.opencl_twin = sycl.check(self.device, self.info, self.launch, self.program, devices)
        self.program = check_program(self.program, self.backend, self.info)
        allowed = supported_kinds(self.backend, self.info)
        for kind in self.kinds or []:
            if kind not in KINDS:
                raise BadValue(f"memory kind '{kind}' is not known; allowed: {', '.join(KINDS)}")
            if kind not in allowed:
                raise BadValue(f"memory kind '{kind}' is not supported by {self.info.get('name')}; it supports: "
                               f"{', '.join(allowed)}")
        for d in self.directions:
            if d not in DIRECTIONS:
                raise BadValue(f"direction '{d}' is not known; allowed: {', '.join(DIRECTIONS)}")
        limit = int(self.info.get("max_allocation_bytes") or 2**62)
        for s in (self.sizes or []) + self.chunks + ([self.max_size] if self.max_size else []):
            if s > limit:
                raise BadValue(f"size {format_size(s)} ({s} B) is above the device's largest allocation, "
                               f"{format_size(limit)}")
            if s < 1:
                raise BadValue(f"size {s} B: copies move at least 1 byte")
        if self.order is not None and self.order not in ORDERS:
            raise BadValue(f"--order '{self.order}' is not allowed; allowed: {', '.join(ORDERS)}")
        if self.transfers and not self.directions:
            raise BadValue(f"--directions is empty; allowed: {', '.join(DIRECTIONS)}")
        if self.iterations < 1:
            raise BadValue(f"--iterations {self.iterations}: at least 1")
        checks.in_range(self.iterations, "--iterations", *checks.TRANSFER_ITERATIONS,
                        what="a whole number of timed copies per point")
        if not 0 <= self.min_time <= checks.TRANSFER_MIN_TIME:
            raise BadValue(f"--min-time {self.min_time:g} s is out of range; allowed: 0 s..1 h per point")
        if self.node is not None:
            checks.memory_node(self.node)
        if self.chunks and not 1 <= self.chunk_total <= checks.CHUNK_BYTES[1]:
            raise BadValue(f"--total {format_size(self.chunk_total)} is out of range; allowed: 1 B..1 TiB")
        if self.launch_count < 1:
            raise BadValue(f"--count {self.launch_count}: at least 1 launch")
        checks.in_range(self.launch_count, "--count", *checks.LAUNCH_COUNT, what="launches per argument count")
        if self.launch and not self.launch_args:
            raise BadValue("--args is empty; allowed: buffer argument counts 0..8")
        for a in self.launch_args:
            if not 0 <= a <= 8:
                raise BadValue(f"--args {a}: the empty kernels take 0 to 8 buffer arguments")
        if self.cpus is not None:
            check_allowed(self.cpus)
        if self.pin is not None and self.pin not in os.sched_getaffinity(0):
            raise BadValue(f"--pin {self.pin}: CPU does not exist or is not allowed; allowed: "
                           f"{','.join(map(str, sorted(os.sched_getaffinity(0))))}")

    def fit_launches(self, seconds: float) -> int:
        """Scale the launch count so that the launch steps take about ``seconds``: 200 calibration
        launches give the time of one; the count is capped by the one asked for, and at least 1,000."""
        run = run_probe(["launch", "--backend", self.backend, "--device", str(self.device), "--count", "200",
                         "--warmup", "20", *program_args(self.program)], timeout=120)
        refused(run)
        times = sorted(t for r in run.records if r.get("record") == "samples" for t in r["host_seconds"])
        if not times:
            return self.launch_count
        per_launch = times[len(times) // 2]
        runs = len(self.launch_args) * (2 if self.pin is not None else 1) * (2 if self.opencl_twin is not None else 1)
        self.launch_count = max(1000, min(self.launch_count, int(seconds / (runs * per_launch))))
        return self.launch_count

    def transfer_order(self) -> str:
        """How the probe orders a kind's points: each whole in turn (sequential), or in rounds of short
        batches (interleaved), the default with a precision target, so that drift reaches every size."""
        return self.order or ("sequential" if self.precision is None else "interleaved")

    def kind_list(self) -> list[str]:
        return self.kinds or supported_kinds(self.backend, self.info)

    def size_list(self) -> list[int]:
        if self.sizes:
            return self.sizes
        limit = min(self.max_size or 2**30, int(self.info.get("max_allocation_bytes") or 2**30), 2**30)
        return [2**i for i in range(int(math.log2(limit)) + 1)]


def steps(plan: DevicePlan) -> list[Step]:
    where = ["--backend", plan.backend, "--device", str(plan.device)]
    place = {"node": "default" if plan.node is None else str(plan.node)}
    # --cpus: the host thread of every step placed on the set (a launch step pinned to --pin's CPU instead)
    where_cpus = None if plan.cpus is None else cpu_text(plan.cpus)
    placed = [] if where_cpus is None else ["--cpus", where_cpus]
    out: list[Step] = []
    if plan.transfers:
        sizes = plan.size_list()
        moved = sum(sizes) * len(plan.directions)
        for kind in plan.kind_list():
            args = ["transfer", *where, "--kinds", kind, "--sizes", ",".join(map(str, sizes)),
                    "--directions", ",".join(plan.directions), "--iterations", str(plan.iterations),
                    "--max-iterations", str(max(plan.iterations, plan.max_iterations if plan.precision is None
                                                else ADAPTIVE_ITERATIONS)), "--min-time", str(plan.min_time),
                    *probe_args(plan.precision, plan.max_time)]
            if plan.transfer_order() == "interleaved":  # sequential is the probe's default
                args += ["--order", "interleaved"]
            if plan.node is not None:
                args += ["--node", str(plan.node)]
            out.append(Step(f"{plan.backend} transfers, {kind} host memory", "transfer", [*args, *placed],
                            {**place, "host_kind": kind, "cpus": where_cpus},
                            estimate(len(sizes) * len(plan.directions) * (plan.min_time + 0.001) + plan.iterations * moved / 5e9,
                                     len(sizes) * len(plan.directions), plan.precision, plan.max_time)))
    if plan.chunks:
        # Buffers against shared memory (seed 004's USM vs buffers): the explicit kinds and one shared kind.
        kinds = plan.kind_list()
        shared = [k for k in kinds if k not in EXPLICIT_KINDS]
        for kind in [k for k in kinds if k in EXPLICIT_KINDS] + shared[-1:]:
            args = ["chunks", *where, "--kinds", kind, "--total", str(plan.chunk_total),
                    "--chunks", ",".join(map(str, plan.chunks)), "--directions", ",".join(plan.chunk_directions),
                    *probe_args(plan.precision, plan.max_time), *placed]
            out.append(Step(f"{plan.backend} {format_size(plan.chunk_total)} in chunks, {kind}", "chunks", args,
                            {**place, "host_kind": kind, "cpus": where_cpus}, estimate(4 * len(plan.chunk_directions) *
                                                                   sum(plan.chunk_total / c * 60e-6 for c in plan.chunks),
                                                              len(plan.chunks), plan.precision, plan.max_time)))
    if plan.launch:
        # a SYCL run's launches alternate with the same device's through OpenCL (seed 004's DPC++ against OpenCL)
        for pin in [None] + ([plan.pin] if plan.pin is not None else []):
            for api, api_where, count, first in sycl.launch_rounds(plan.backend, where, plan.opencl_twin,
                                                                   plan.launch_count):
                args = ["launch", *api_where, "--count", str(count), "--args", ",".join(map(str, plan.launch_args)),
                        *probe_args(plan.precision, plan.max_time), *program_args(plan.program)]
                args += ["--pin", str(pin)] if pin is not None else placed
                label = (f", pinned to CPU {pin}" if pin is not None else "" if where_cpus is None
                         else f", on CPUs {where_cpus}") + ("" if count == plan.launch_count
                                                          else f", launches {first}–{first + count - 1}")
                out.append(Step(f"{api} launch latency{label}", "launch", args,
                                {**place, "cpus": str(pin) if pin is not None else where_cpus, "first_iteration": first},
                                estimate(count * len(plan.launch_args) * 80e-6, len(plan.launch_args),
                                         None, plan.max_time)))  # with a target --count stays the cap
    return out


def rows_of(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """Tidy rows of one probe run, and why it failed (None if it did not).

    ``validated``: a copy's samples once the probe printed its point's (kind, direction, size)
    validation record, right; launch and chunk samples (the probe checks nothing there) once the
    probe ended cleanly. Unvalidated rows are kept for the record and left out of statistics;
    samples with a non-positive or non-finite host time are dropped."""
    setup = run.first("setup")
    device = setup.get("device", {})
    base = {"suite": "device", "node": step.placement.get("node"), "backend": setup.get("backend"),
            "device_name": device.get("name"), "device_index": device.get("index")}
    rows: list[dict[str, Any]] = []
    dropped: list[str] = []
    failure = run.failure
    if step.test == "transfer":
        checks = run.of("validation")
        bad = [r for r in checks if not r.get("ok")]
        if bad:
            first = bad[0]
            return [], (f"validation failed: {len(bad)} copies wrong, first {first['kind']} {first['direction']} "
                        f"{first['size_bytes']} B at byte {first['first_wrong_byte']}")
        checked = {(r["kind"], r["direction"], r["size_bytes"]) for r in checks}
        for r in run.of("sample"):
            if not good_time(r.get("host_seconds")):
                dropped.append(f"{r.get('kind')} {r.get('direction')} {r.get('size_bytes')} B: {r.get('host_seconds')} s")
                continue
            dev = r["device_seconds"] if good_time(r.get("device_seconds")) else None
            rows.append({**base, "test": r["direction"], "metric": "bandwidth_bytes_per_second",
                         "value": r["size_bytes"] / r["host_seconds"], "host_kind": r["kind"], "size_bytes": r["size_bytes"],
                         "iteration": r["iteration"], "warmup": False, "seconds": r["host_seconds"],
                         "bytes": r["size_bytes"] * (2 if r["direction"] == "bidir" else 1), "device_seconds": dev,
                         "cpus": step.placement.get("cpus"),
                         "validated": (r["kind"], r["direction"], r["size_bytes"]) in checked})
    elif step.test == "launch":
        for r in run.records:
            if r.get("record") == "samples":
                for i, (h, d) in enumerate(zip(r["host_seconds"], r["device_seconds"])):
                    if not good_time(h):
                        dropped.append(f"{r['args']} args launch {r['first_iteration'] + i}: {h} s")
                        continue
                    rows.append({**base, "test": "launch", "metric": "latency_seconds", "value": h,
                                 "kernel_args": r["args"], "cpus": step.placement.get("cpus"),
                                 "iteration": step.placement.get("first_iteration", 0) + r["first_iteration"] + i, "warmup": False, "seconds": h,
                                 "device_seconds": d if good_time(d) else None, "validated": run.ok})
    else:
        for r in run.records:
            if r.get("record") == "sample":
                if not good_time(r.get("host_seconds")):
                    dropped.append(f"{r.get('kind')} chunk {r.get('chunk_bytes')} B: {r.get('host_seconds')} s")
                    continue
                total = setup.get("total_bytes")
                rows.append({**base, "test": "chunks", "metric": "bandwidth_bytes_per_second",
                             "value": total / r["host_seconds"], "host_kind": r["kind"], "size_bytes": r["chunk_bytes"],
                             "iteration": r["repeat"], "warmup": r["warmup"], "seconds": r["host_seconds"],
                             "bytes": total, "transfers": r["transfers"], "device_seconds": r["device_seconds"],
                             "direction": r.get("direction", "h2d"), "cpus": step.placement.get("cpus"),
                             "transfer_median_seconds": r.get("transfer_median_seconds"),
                             "transfer_p99_seconds": r.get("transfer_p99_seconds"),
                             "transfer_max_seconds": r.get("transfer_max_seconds"), "validated": run.ok})
    failure = step_failure(rows, failure, dropped, "copies")
    annotate(step.test, run.records, rows)  # how each point's repetition stopped
    return rows, failure


def transfer_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kind, direction, size): median latency and bandwidth by both clocks."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r["test"] in DIRECTIONS:
            groups.setdefault((r["host_kind"], r["test"], r["size_bytes"], value_of(r, "cpus")), []).append(r)
    out = []
    for (kind, direction, size, cpus), members in groups.items():
        secs = [m["seconds"] for m in members]
        host = summarize(secs)
        devs = [m["device_seconds"] for m in members if m.get("device_seconds")]
        dev_median = summarize(devs)["median"] if devs else None
        moved = members[0]["bytes"]
        out.append({"host_kind": kind, "direction": direction, "size_bytes": size, "count": host["count"],
                    "headline": "median", "median_seconds": host["median"], "min_seconds": host["min"],
                    "cov": host["cov"], "median_bytes_per_second": moved / host["median"],
                    "best_bytes_per_second": moved / host["min"],
                    "device_median_seconds": dev_median,
                    "device_median_bytes_per_second": moved / dev_median if dev_median else None,
                    "pinned_cpu": cpus,  # the CPUs --cpus placed the host thread on (None: where the OS put it)
                    **ci_fields(secs), **ci_fields(secs, "bytes_per_second", moved), "stopped": stopped_of(members)})
    return out


def transfer_overview(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kind, direction): latency of the smallest copy, bandwidth of the largest, and n½, the
    smallest size reaching half of that bandwidth (Hockney's half-performance length)."""
    out = []
    for key in dict.fromkeys((s["host_kind"], s["direction"]) for s in summary):
        points = sorted((s for s in summary if (s["host_kind"], s["direction"]) == key), key=lambda s: s["size_bytes"])
        peak = max(p["median_bytes_per_second"] for p in points)
        half = next((p["size_bytes"] for p in points if p["median_bytes_per_second"] >= peak / 2), None)
        out.append({"host_kind": key[0], "direction": key[1], "smallest_bytes": points[0]["size_bytes"],
                    "latency_seconds": points[0]["median_seconds"], "largest_bytes": points[-1]["size_bytes"],
                    "latency_ci_low_seconds": points[0].get("median_ci_low_seconds"),
                    "latency_ci_high_seconds": points[0].get("median_ci_high_seconds"),
                    "bandwidth_bytes_per_second": points[-1]["median_bytes_per_second"],
                    "bandwidth_ci_low_bytes_per_second": points[-1].get("median_ci_low_bytes_per_second"),
                    "bandwidth_ci_high_bytes_per_second": points[-1].get("median_ci_high_bytes_per_second"),
                    "peak_bytes_per_second": peak, "half_bandwidth_bytes": half,
                    "stopped_points": stopped_counts(points),
                    "device_bandwidth_bytes_per_second": points[-1]["device_median_bytes_per_second"]})
    return out


def chunk_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kind, direction, chunk): the total's median time and bandwidth, and the spread of the single
    transfers (seed 004 looks past the median): the median over repeats of each repeat's median and p99
    transfer, and the slowest transfer of all."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r["test"] == "chunks" and not r["warmup"]:
            groups.setdefault((r["host_kind"], value_of(r, "direction", "h2d"), r["size_bytes"]), []).append(r)
    out = []
    for (kind, direction, chunk), members in groups.items():
        secs = [m["seconds"] for m in members]
        s = summarize(secs)
        tails = {k: [v for v in (value_of(m, k) for m in members) if v is not None]
                 for k in ("transfer_median_seconds", "transfer_p99_seconds", "transfer_max_seconds")}
        transfers = value_of(members[0], "transfers")
        out.append({"host_kind": kind, "direction": direction, "chunk_bytes": chunk, "transfers": transfers,
                    "total_bytes": members[0]["bytes"], "count": s["count"], "headline": "median",
                    "median_seconds": s["median"], "max_seconds": s["max"],
                    "median_bytes_per_second": members[0]["bytes"] / s["median"], "cov": s["cov"],
                    "transfer_median_seconds": summarize(tails["transfer_median_seconds"])["median"]
                    if tails["transfer_median_seconds"] else None,
                    "transfer_p99_seconds": summarize(tails["transfer_p99_seconds"])["median"]
                    if tails["transfer_p99_seconds"] else None,
                    "transfer_max_seconds": max(tails["transfer_max_seconds"]) if tails["transfer_max_seconds"] else None,
                    **ci_fields(secs), **ci_fields(secs, "bytes_per_second", members[0]["bytes"]),
                    "stopped": stopped_of(members)})
    return out

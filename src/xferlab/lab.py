"""The lab: the main job, as a library call. It checks the native probe, characterizes every memory
node and every accelerator of this machine (recorded in the store), runs the offload runtime, runs
every packaged scenario, fits link and tier profiles to the measurements and writes the HTML report
with the advice, everything under one results folder. ``xferlab lab`` (cli/lab.py) parses its
options, calls :func:`run` and prints what it returns.

The folder holds every output: the store (``xferlab.duckdb``, unless one is given), the profiles the
lab fits (``profiles/``, named ``lab-…``; profiles an earlier lab left there are moved into
``profiles/previous-<UTC time>/``, never overwritten), one JSON file per stage, the plots and the
report.

The budget bounds every stage. The memory stage may use half of it, each accelerator 60 % of what
is left, its collaboration patterns and the runtime what is left after, the 2-rank MPI network
step and DecEval (seed 000's application measured against the simulator) at most 5 % of the whole each; a stage that would start
with too little time is skipped and said so. Each stage's share is passed down as the time budget
of its steps, and the memory and device points repeat until their median's 95 % interval is within
:data:`PRECISION` (2 %) of it, for at most the timed seconds per point that the share allows
(:data:`MAX_TIME_MEMORY` / :data:`MAX_TIME_DEVICE` at most), so the steps end within their share.

How the memory stage is sized (:func:`memory_stage`, measure/sizing.py): what to measure follows
from the machine's caches and memory (STREAM's arrays 4 x the last-level cache, the latency sweep
to 8 x it, the loaded chase over 8 x it, each within half the available memory), what a point
costs from a calibration run first (a 16 MiB chase whose warm-up pass reads from memory), and what
is measured from the stage's share: STREAM and loaded latency each up to a part of it, the sweep the
rest, its timed work cut first, then the sets below the cache thinned, then the largest left out,
each thing left out named. The sweep's probe gets its share as ``--budget`` and starts no working
set it estimates would end past it, so a slower machine than calibrated gives fewer points, never
a kill; each step's timeout follows from its estimate (steps.planned_limit).

A stage that fails (the probe's clock, memory, an accelerator, its collaboration patterns, the
runtime, the network, a scenario, the report) is noted and the others go on; the exit code is that of the
measure commands: 0 every stage ran, 3 some failed (what was measured is in the store and the
report), 1 nothing could be measured. Every file is written whole or not at all."""

from __future__ import annotations

import json
import os
import platform
import shutil
import time as _time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from . import __version__, scenarios
from .errors import BadFile, XferlabError
from .links import PRESETS, profiles, resolve
from .measure.collab import CollabPlan
from .measure.collab import rows_of as collab_rows
from .measure.collab import steps as collab_steps
from .measure.collab import summary as collab_summary
from .measure.device import BACKENDS, SEED_CHUNKS, DevicePlan, devices
from .measure.device import rows_of as device_rows
from .measure.device import steps as device_steps
from .lab_memory import MAX_TIME_MEMORY, MIN_TIME_PER_POINT, PRECISION, memory_stage, quick_memory_plan  # noqa: F401
from .measure.probe import run_probe
from .measure.results import device_results
from .measure.run import measure
from .report.paths import check_folder, write_text
from .system import inventory as inv

DEFAULT_OUT = Path("xferlab-results")
STORE_NAME = "xferlab.duckdb"
MAX_TIME_DEVICE = 0.25  # seconds of timed work per device point (size x direction, chunk size), at most
NETWORK_SHARE = 0.05  # of the budget, at most, for the 2-rank network step
DECEVAL_SHARE = 0.05  # of the budget, at most, for DecEval measured and simulated (16 MiB: about 2 s here)
#: The lab saves its fitted links and tiers as profiles lab-<direction>-<kind> and lab-node<N>.
PROFILE_PREFIX = "lab"
MEMORY_SHARE = 0.5  # of the budget, at most
DEVICE_SHARE = 0.6  # of what is left, per accelerator
FALLBACK_RATE = 1e9  # bytes/s: device STREAM is sized with this when no host copy rate was measured


@dataclass
class LabResult:
    """What a lab run produced: the folder, the summary written as lab.json, the scenario rows, the
    memory and device results, the failed stages and the exit code."""

    folder: Path
    store: Path
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    memory: dict[str, Any]
    memory_run: Optional[str]
    device_runs: list[dict[str, Any]]
    clock: Any
    failed: list[tuple[str, str]] = field(default_factory=list)
    report: Optional[Path] = None
    profiles: list[str] = field(default_factory=list)
    kept_profiles: Optional[Path] = None
    code: int = 0


def prepare(out: Optional[Path], started: datetime) -> Path:
    """The results folder (checked, created): ``out``, else ./xferlab-results/lab-<UTC time>."""
    folder = out or DEFAULT_OUT / f"lab-{started:%Y%m%d-%H%M%S}"
    check_folder(folder, "--out")  # before anything runs
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"--out '{folder}' cannot be created: {error.strerror or error}") from None
    return folder


def keep_previous_profiles(folder: Path, started: datetime) -> Optional[Path]:
    """Move the profiles an earlier lab left in ``folder`` into ``previous-<UTC time>/`` (kept, not
    overwritten); returns that folder, or None when there were none."""
    old = sorted(folder.glob(f"{PROFILE_PREFIX}-*.yaml")) if folder.is_dir() else []
    if not old:
        return None
    kept = folder / f"previous-{started:%Y%m%d-%H%M%S}"
    kept.mkdir(parents=True, exist_ok=True)
    for path in old:
        shutil.move(str(path), kept / path.name)
    return kept


def run(seconds: float, out: Optional[Path] = None, store: Optional[Path] = None,
        say: Callable[[str], None] = lambda line: None) -> LabResult:
    """The whole lab within ``seconds``; ``say`` gets a line as each stage starts."""
    started = datetime.now(timezone.utc)
    from .store import check_store

    if store is not None or out is None:  # else the store goes into --out, whose folder prepare checks
        check_store(store)  # before the results folder is made (a damaged store is refused too)
    elif os.path.isfile(out / STORE_NAME):  # (isfile: False for a name no file can have)
        check_store(out / STORE_NAME)  # a damaged store left in --out by an earlier lab: refused first
    folder = prepare(out, started)
    store = store or (folder / STORE_NAME if out is not None else None)
    kept = keep_previous_profiles(folder / "profiles", started)
    with profiles.using(folder / "profiles"):
        result = _stages(seconds, folder, store, started, say)
    result.kept_profiles = kept
    return result


def _stages(seconds: float, folder: Path, store: Optional[Path], started: datetime,
            say: Callable[[str], None]) -> LabResult:
    failed: list[tuple[str, str]] = []  # (stage, why), one per failed step of a stage
    t0 = _time.monotonic()

    def left() -> float:
        return seconds - (_time.monotonic() - t0)

    summary: dict = {"xferlab_version": __version__, "started_utc": started.isoformat(), "budget_seconds": seconds,
                     "python": platform.python_version(), "machine": platform.machine(), "kernel": platform.release(),
                     "stages_started_seconds": {}}  # when each stage began, from the lab's start: where the time went
    tell = say

    def say(line: str) -> None:  # noqa: F811 - the caller's, with each stage's start noted
        if line.startswith("["):
            summary["stages_started_seconds"][line.split(":")[0]] = round(_time.monotonic() - t0, 2)
        tell(line)

    say("[1/7] native probe: clock")
    clock = run_probe(["clock"], timeout=min(60.0, seconds))
    summary["probe"] = {"ok": clock.ok, "failure": clock.failure, "records": clock.records}
    if not clock.ok:
        failed.append(("probe", str(clock.failure)))

    say("[2/7] memory: bandwidth, latency and loaded latency of every memory node")
    outcome, memory, summary["memory_run"] = memory_stage(MEMORY_SHARE * left(), store, folder, seconds, say)
    recorded = [outcome.run_id] if outcome.rows else []  # the runs the report shows
    measured = bool(outcome.rows)
    store_path = Path(outcome.store_path)
    failed += _stage_failures("memory", memory["failures"], bool(outcome.rows))

    say("[3/7] accelerators: copies, granularity, launch latency, collaboration and device STREAM of every device found")
    device_runs = []
    plans, missing = quick_device_plans()
    for plan in plans:
        if left() < 0.15 * seconds:
            summary.setdefault("skipped_devices", []).append(f"{plan.backend} #{plan.device}: time budget used up")
            continue
        share = DEVICE_SHARE * left()
        plan.max_time = per_point(share, device_points(plan), MAX_TIME_DEVICE)
        run = measure("lab", device_steps(plan), device_rows, "device", {"backend": plan.backend, "device": plan.device},
                      store, timeout=max(60.0, seconds), budget=share, extra_inventory={"accelerator": plan.info})
        result = device_results(run, folder / f"{plan.backend}{plan.device}")
        recorded += [run.run_id] if run.rows else []
        measured = measured or bool(run.rows)
        failed += _stage_failures(f"{plan.backend} #{plan.device}", result["failures"], bool(run.rows))
        entry = {"backend": plan.backend, "device": plan.device, "name": plan.info.get("name"), "run_id": run.run_id,
                 **{k: v for k, v in result.items() if k not in ("transfers", "plots")}}
        collab_plan = CollabPlan(backend=plan.backend, device=plan.device, size=4 * 2**20, repeats=3, info=plan.info)
        if plan.backend == "opencl" and collab_plan.shared_memory():
            if left() < 0.1 * seconds:
                summary.setdefault("skipped_collab", []).append(f"{plan.backend} #{plan.device}: time budget used up")
            else:
                collab_plan.check()
                run = measure("lab", collab_steps(collab_plan), collab_rows, "device", {"collab": True}, store,
                              timeout=max(60.0, seconds), budget=0.5 * left(), extra_inventory={"accelerator": plan.info})
                entry["collab"] = collab_summary(run.rows)
                recorded += [run.run_id] if run.rows else []
                failed += _stage_failures(f"{plan.backend} #{plan.device} collaboration",
                                          [{"step": r.step.label, "reason": r.failure} for r in (run.results or [])
                                           if r.failure], bool(run.rows))
                if entry["collab"]:
                    from .report.plots import plot_collab  # matplotlib only when there is something to plot

                    plot_collab(entry["collab"], folder / f"{plan.backend}{plan.device}" / "collab.png")
        if plan.backend in ("opencl", "cuda"):
            if left() < 0.1 * seconds:
                summary.setdefault("skipped_kernels", []).append(f"{plan.backend} #{plan.device}: time budget used up")
            else:
                entry["kernels"], run_id, kernel_failures = kernels_stage(plan, 0.5 * left(), store, seconds,
                                                                          copy_rate(memory, entry))
                recorded += [run_id] if run_id else []
                failed += _stage_failures(f"{plan.backend} #{plan.device} kernels", kernel_failures, bool(run_id))
        device_runs.append(entry)
    summary["devices"] = [{"backend": d["backend"], "device": d["device"], "run_id": d["run_id"]} for d in device_runs]
    summary["accelerators_not_available"] = missing
    _json(folder / "devices.json", device_runs)

    say("[4/7] offload runtime: every workload in sync and forward, emulated 1 us round trip and the first OpenCL device")
    summary["runtime_runs"], summary["runtime_failures"] = [], []
    for backend in ["emulated"] + (["opencl"] if plans and any(p.backend == "opencl" for p in plans) else []):
        if left() < 0.1 * seconds:
            summary["runtime_failures"].append(f"{backend}: time budget used up")
            continue
        try:
            run_id, failure = runtime_stage(backend, store)
        except XferlabError as error:  # the runtime cannot open this device: say so and go on
            run_id, failure = None, str(error)
        if run_id:
            summary["runtime_runs"].append(run_id)
            recorded.append(run_id)
        if failure:
            summary["runtime_failures"].append(f"{backend}: {failure}")
            failed.append((f"runtime on {backend}", failure))

    say("[5/7] network: MPI latency, bandwidth and allreduce between 2 ranks on this machine")
    if left() < 0.05 * seconds:
        summary["network"] = {"skipped": "time budget used up"}
    else:
        run_id, failure = network_stage(min(NETWORK_SHARE * seconds, left()), store)
        summary["network"] = {"run_id": run_id, "failure": failure}
        if run_id:
            recorded.append(run_id)
        if failure and not failure.startswith("skipped:"):
            failed.append(("network", failure))

    say("[5/7] DecEval for real (seed 000): zlib decompression feeding pi on the OpenCL device, measured and simulated")
    if not any(p.backend == "opencl" for p in plans):
        summary["deceval"] = {"skipped": "no OpenCL device"}
    elif left() < DECEVAL_SHARE * seconds:
        summary["deceval"] = {"skipped": "time budget used up"}
    else:
        summary["deceval"], failure = deceval_stage(min(DECEVAL_SHARE * seconds, left()), store)
        recorded += summary["deceval"].get("run_ids", [])
        if summary["deceval"].get("note"):
            say(f"[5/7] DecEval: {summary['deceval']['note']}")
        if failure:
            failed.append(("deceval", failure))
    _json(folder / "deceval-measured.json", summary["deceval"])

    say("[6/7] link presets")
    presets = [{"name": name, **resolve(name).parameters(), "peak_write_bytes_per_second": resolve(name).peak_rate("write"),
                "description": resolve(name).summary()} for name in PRESETS]
    _json(folder / "presets.json", presets)

    rows = []
    names = scenarios.names()
    for i, name in enumerate(names, 1):
        say(f"[6/7] scenario {name} ({i}/{len(names)})")
        try:
            scenario = scenarios.load(name)
            result = scenario.run()
            plots = [str(p) for p in scenario.plot(folder)]
            _json(folder / f"{name}.json", {**result, "plots": plots})
        except Exception as error:  # noqa: BLE001 - one scenario that fails is noted; the others go on
            failed.append((f"scenario {name}", str(error)))
            continue
        for check in result["checks"]:
            rows.append({"scenario": name, "figure": check["figure"], "seed": check["seed"], "xferlab": check["xferlab"],
                         "unit": check["unit"], "status": check["status"], "status_reason": check["status_reason"]})
    say("[7/7] fits, advice and the report")
    summary["elapsed_seconds"] = _time.monotonic() - t0
    summary["failed_stages"] = _as_json(failed)
    _json(folder / "lab.json", summary)  # kept if the report fails
    report_path = None
    try:
        from .report.html import write_report

        report_path, line = write_report(recorded, folder / "report.html", "pcie3x16", PROFILE_PREFIX, store,
                                         title=f"xferlab lab report, {started:%Y-%m-%d %H:%M} UTC")
        say(line)
    except XferlabError as error:
        failed.append(("report", str(error)))
    summary["report"] = str(report_path) if report_path else None
    summary["elapsed_seconds"] = _time.monotonic() - t0
    summary["scenarios"] = names
    summary["store"] = str(store_path)
    summary["profiles_folder"] = str(profiles.folder())
    code = 0 if not failed else 3 if measured else 1
    summary["failed_stages"], summary["exit_code"] = _as_json(failed), code
    _json(folder / "lab.json", summary)
    saved = [n for n in profiles.names() if n.startswith(PROFILE_PREFIX + "-")]
    return LabResult(folder, store_path, summary, rows, memory, outcome.run_id, device_runs, clock, failed, report_path,
                     saved, code=code)


def per_point(share: float, points: int, most: float) -> float:
    """The timed seconds each of ``points`` points may take so that they fit in ``share`` (half of it:
    the rest is kept for the fixed repetitions, the probe's set-up, the store, and a machine busier
    than when the share was set), between MIN_TIME_PER_POINT and ``most``."""
    return max(MIN_TIME_PER_POINT, min(most, 0.5 * share / max(1, points)))


def device_points(plan: DevicePlan) -> int:
    """The adaptive points of a device plan: size x direction x host kind, chunk sizes, launch argument counts."""
    return (len(plan.size_list()) * len(plan.directions) * len(plan.kind_list()) + len(plan.chunks or [])
            + len(plan.launch_args or []))


def kernels_stage(plan: DevicePlan, share: float, store: Optional[Path], seconds: float,
                  rate: Optional[float] = None) -> tuple[dict[str, Any], Optional[str], list[dict]]:
    """Device STREAM (copy, triad, dot; widths 1 and 4 on OpenCL) on device memory and on host memory
    (pinned; fine-grained SVM where an OpenCL device has it, managed memory on CUDA), and the first
    touch of shared memory, within ``share`` seconds. The arrays are sized for STREAM's rule first
    (4x the device's last-level cache: measure/sizeclass.py) and for the share second
    (measure/kernel_sizing.py, from ``rate``, the host STREAM copy rate this lab measured,
    :data:`FALLBACK_RATE` without one): where the share cannot hold rule-sized arrays they are
    cache-resident, and labelled so. Returns {"overview": per memory kind, "sizing": what was chosen
    and why}, the run id (None: nothing measured) and the failed steps."""
    from .measure.kernel_results import overview, stream_summary
    from .measure.kernel_sizing import size_for_rule
    from .measure.kernels import KernelPlan, rows_of as kernel_rows, steps as kernel_steps

    if plan.backend == "cuda":
        memories, widths, faults = ["device", "pinned", "managed"], [1], True
    else:
        shared = bool(plan.info.get("svm_fine_grain"))
        memories, widths, faults = ["device", "pinned"] + (["svm-fine"] if shared else []), [1, 4], shared
    kplan = KernelPlan(backend=plan.backend, device=plan.device, kernels=["copy", "triad", "dot"], memories=memories,
                       widths=widths, iterations=10, faults=faults, fault_repeats=3)
    kplan.max_time = per_point(share, len(memories) * 6, MAX_TIME_DEVICE)
    kplan.check()
    sizing = size_for_rule(kplan, share, rate or FALLBACK_RATE, inv.memory_available())
    kplan.check()
    run = measure("lab", kernel_steps(kplan), kernel_rows, "kernels", {"kernels": True, "sizing": sizing}, store,
                  timeout=max(60.0, seconds), budget=share, extra_inventory={"accelerator": plan.info})
    return ({"overview": overview(stream_summary(run.rows)), "sizing": sizing}, run.run_id if run.rows else None,
            [{"step": r.step.label, "reason": r.failure} for r in (run.results or []) if r.failure])


def copy_rate(memory: dict[str, Any], device: dict[str, Any]) -> Optional[float]:
    """The rate device STREAM's set-up is sized with: the host STREAM copy's best (this lab's memory
    run) or the device run's host-to-device copies, whichever is slower; None when neither ran."""
    rates = [r.get("best_bytes_per_second") for r in memory.get("bandwidth", []) if r.get("test") == "copy"]
    rates += [r.get("bandwidth_bytes_per_second") for r in device.get("overview", []) if r.get("direction") == "h2d"]
    rates = [r for r in rates if r]
    return min(rates) if rates else None


def deceval_stage(share: float, store: Optional[Path]) -> tuple[dict[str, Any], Optional[str]]:
    """`xferlab study deceval` at 16 MiB on OpenCL device 0, both configurations (decompress-bound and
    device-bound) when ``share`` holds them, else the decompress-bound one alone (said in ``note``): its
    table (measured against the simulator and the naive baselines per flow), its verdicts and the runs, and
    why it failed if it did."""
    from .studies import find
    from .studies.deceval import notes
    from .studies.run import run_study

    study = find("deceval")
    options = {**study.options, "total": 16 * 2**20, "repeats": 2}
    note = None
    try:
        for evaluations in (options["evaluations"], options["evaluations"][:1]):
            needed = sum(step.estimate_seconds for s in study.plan({**options, "evaluations": evaluations}).steps
                         for step in s.steps)
            if needed <= share:
                break
        else:
            return {"skipped": f"needs about {needed:.0f} s, its share of the budget is {share:.0f} s"}, None
        if evaluations != options["evaluations"]:
            note = (f"only the x{evaluations[0]} configuration: both need more than DecEval's {share:.0f} s share of the "
                    "budget (a larger --budget runs the device-bound one too)")
        options["evaluations"] = evaluations
        result = run_study(study, options, store, share, timeout=max(60.0, 4 * share))
    except XferlabError as error:
        return {"failure": str(error)}, str(error)
    flows = [r for r in result.table if r["part"] == "flow"]
    entry = {"group": result.group, "run_ids": [s["run_id"] for s in result.steps if s["run_id"]], "flows": flows,
             "largest_error": max((abs(r["relative_error"]) for r in flows if "relative_error" in r), default=None),
             "verdicts": notes(result.table), "note": note}
    failure = "; ".join(s["failure"] for s in result.failed) or None
    return entry, failure


def network_stage(share: float, store: Optional[Path]) -> tuple[Optional[str], Optional[str]]:
    """Two ranks of the MPI installed with xferlab, on this machine: latency, bandwidth, bi-directional
    bandwidth, message rate and allreduce, OSU's sizes with a tenth of OSU's iterations, within
    ``share`` seconds (the probe stops starting points when it is spent). Returns (run id, failure)."""
    from .measure.network import NetworkPlan, rows_of as network_rows, run_summary, step as network_step

    plan = NetworkPlan(tests=["latency", "bw", "bibw", "mbw_mr", "allreduce"], latency_counts=((1000, 10), (100, 2)),
                       bandwidth_counts=((20, 2), (5, 1)), collective_counts=((100, 10), (20, 2)), budget=share)
    if len(os.sched_getaffinity(0)) < 2:
        return None, "skipped: one CPU (two ranks would share it)"
    try:
        plan.check(len(os.sched_getaffinity(0)))
        run = measure("lab", [network_step(plan)], network_rows, "network", {"network": plan.params()}, store,
                      timeout=max(60.0, 4 * share), extra_summary=run_summary)
    except XferlabError as error:  # no MPI here: say so and go on
        return None, str(error)
    failure = next((r.failure for r in run.results if r.failure), None)
    return (run.run_id if run.rows else None), failure


def runtime_stage(backend: str, store: Optional[Path]) -> tuple[str, Optional[str]]:
    """`xferlab runtime bench` in small: every workload, sync and forward, one run each (seed 002's ~1 us
    round trip on the emulated bus: 500 ns a leg), recorded row by row. Returns the run id and why it
    stopped early (a wrong result, a device error), None if it did not."""
    from .runtime import LATENCY_PRESETS, workload_names
    from .runtime.bench import bench, recording

    lats = [LATENCY_PRESETS["ccip"]] if backend == "emulated" else [None]
    argv = ["runtime", "bench", "--backend", backend, "--mode", "sync,forward", "--repeats", "1"]
    argv += ["--latency", "ccip"] if backend == "emulated" else []
    failure = None
    try:
        with recording({"backend": backend, "latencies_seconds": lats, "modes": ["sync", "forward"], "repeats": 1,
                        "lab": True}, store, argv) as (run_id, _, add):
            bench(backend, lats, workload_names(), ["sync", "forward"], repeats=1, on_row=add)
    except RuntimeError as error:  # recorded as failed, with every row finished before it
        failure = str(error)
    return run_id, failure


def quick_device_plans() -> tuple[list[DevicePlan], list[str]]:
    """Every accelerator found: copies from 1 B to 64 MiB in every host memory kind it supports, the
    seed's granularity study on 64 MiB, 2,000 launches with 0 and 4 arguments; and the backends that
    are not available, with why."""
    plans, missing = [], []
    for backend in BACKENDS:
        found, why = devices(backend)
        if why:
            missing.append(f"{backend}: not available: {why}")
        for index in range(len(found)):
            plan = DevicePlan(backend=backend, device=index, max_size=64 * 2**20, min_time=0.005, max_iterations=50,
                              launch=True, launch_count=2000, launch_args=[0, 4], chunks=list(SEED_CHUNKS),
                              chunk_total=64 * 2**20, precision=PRECISION, max_time=MAX_TIME_DEVICE, order="interleaved")
            plan.check()
            plans.append(plan)
    return plans, missing


def landmark_sizes(latency_rows: list[dict]) -> set[int]:
    """The latency table of the lab shows a few working sets: half and four times each cache size."""
    measured = sorted({r["size_bytes"] for r in latency_rows})
    wanted = [size // 2 for _, size in inv.data_cache_sizes()] + [4 * size for _, size in inv.data_cache_sizes()]
    return {min(measured, key=lambda m: abs(m - w)) for w in wanted} if measured else set()


def _json(path: Path, data) -> None:
    """One of the lab's JSON files, written whole or not at all."""
    write_text(path, json.dumps(data, indent=1, default=str), "lab file")


def _stage_failures(stage: str, failures: list[dict], any_rows: bool) -> list[tuple[str, str]]:
    """(stage, 'step: reason') for each failed step of a measuring stage (skipped ones, for want of
    time, are not failures); a stage with no rows at all and no failure listed failed too."""
    out = [(stage, f"{f['step']}: {f['reason']}") for f in failures if not str(f["reason"]).startswith("skipped:")]
    if not out and not any_rows:
        out.append((stage, "nothing was measured"))
    return out


def _as_json(failed: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"stage": stage, "reason": reason} for stage, reason in failed]

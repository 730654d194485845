"""`xferlab lab`: the main job. Checks the native probe, characterizes every memory node and every
accelerator of this machine (recorded in the store), evaluates the link presets, runs every packaged
scenario, fits link and tier profiles to the measurements (saved as profiles named ``lab-…``), and
writes the HTML report with the advice; everything lands under one results folder.

The memory and device steps repeat each point until its median's 95 % interval is within
:data:`PRECISION` (2 %) of it, at most :data:`MAX_TIME_MEMORY` / :data:`MAX_TIME_DEVICE` seconds of
timed work per point. ``--out`` is checked before anything runs. A stage that fails (the probe's
clock, memory, an accelerator, its collaboration patterns, the runtime, a scenario, the report) is
noted and the others go on; the exit code is that of the measure commands: 0 every stage ran, 3 some
failed (what was measured is in the store and the report), 1 nothing could be measured. The last
line names the stages that failed (``lab.json``'s ``failed_stages``: stage and reason of each
failure). Every file is written whole or not at all."""

from __future__ import annotations

import json
import os
import platform
import time as _time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

from .. import __version__, scenarios
from ..errors import BadFile, XferlabError
from ..links import PRESETS, resolve
from ..measure.probe import run_probe
from ..units import parse_time
from ..measure.collab import CollabPlan
from ..measure.collab import rows_of as collab_rows
from ..measure.collab import steps as collab_steps
from ..measure.collab import summary as collab_summary
from ..measure.device import BACKENDS, SEED_CHUNKS, DevicePlan, devices
from ..report.plots import plot_collab
from ..measure.device import rows_of as device_rows
from ..measure.device import steps as device_steps
from ..measure.memory import MemoryPlan, rows_of, steps
from ..measure.run import measure
from ..system import inventory as inv
from .common import JSON
from .common import STORE
from ..measure.results import memory_params, memory_results
from .measure import print_tables
from .measure_collab import COLUMNS as COLLAB_COLUMNS
from ..measure.results import device_results
from .measure_device import print_device_tables
from ..measure.results import notes as failure_notes
from ..links.profiles import names as profile_names
from .output import Column, emit, stderr, stdout
from .report import write_report
from ..report.paths import check_folder, write_text

DEFAULT_OUT = Path("xferlab-results")
#: The lab's target for every memory and device point: its median's 95 % interval within 2 % of it.
PRECISION = 0.02
MAX_TIME_MEMORY = 0.5  # seconds of timed work per memory point (kernel x threads, working set), at most
MAX_TIME_DEVICE = 0.25  # seconds of timed work per device point (size x direction, chunk size), at most
#: The lab saves its fitted links and tiers as profiles lab-<direction>-<kind> and lab-node<N>.
PROFILE_PREFIX = "lab"


def lab(budget: str = typer.Option("5m", "--budget", help="Time the whole job may take, e.g. 5m.", metavar="TIME"),
        out: Optional[Path] = typer.Option(None, "--out", help=f"Results folder (default: ./{DEFAULT_OUT}/lab-<UTC time>).",
                                           metavar="DIR"),
        store: Optional[Path] = STORE,
        json_: bool = JSON) -> None:
    """The main job: characterize memory and accelerators, recompute the seeds' figures, fit profiles, advise, write the report."""
    seconds = parse_time(budget, "--budget", allow_zero=False)
    started = datetime.now(timezone.utc)
    folder = out or DEFAULT_OUT / f"lab-{started:%Y%m%d-%H%M%S}"
    check_folder(folder, "--out")  # before anything runs
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"--out '{folder}' cannot be created: {error.strerror or error}") from None
    failed: list[tuple[str, str]] = []  # (stage, why), one per failed step of a stage
    t0 = _time.monotonic()
    summary: dict = {"xferlab_version": __version__, "started_utc": started.isoformat(), "budget_seconds": seconds,
                     "python": platform.python_version(), "machine": platform.machine(), "kernel": platform.release()}

    stderr.print("[1/6] native probe: clock", highlight=False)
    clock = run_probe(["clock"], timeout=min(60.0, seconds))
    summary["probe"] = {"ok": clock.ok, "failure": clock.failure, "records": clock.records}
    if not clock.ok:
        failed.append(("probe", str(clock.failure)))

    stderr.print("[2/6] memory: bandwidth, latency and loaded latency of every memory node", highlight=False)
    plan = quick_memory_plan()
    # The memory steps may use most of the budget; the model stages take seconds.
    outcome = measure("lab", steps(plan), rows_of, "memory", {"budget_seconds": seconds, "memory": memory_params(plan)}, store,
                      timeout=max(60.0, seconds), budget=0.5 * seconds)
    memory = memory_results(outcome, folder)
    recorded = [outcome.run_id] if outcome.rows else []  # the runs the report shows
    measured = bool(outcome.rows)
    summary["memory_run"] = {"run_id": outcome.run_id, "store": str(outcome.store_path),
                             "failures": memory["failures"]}
    failed += _stage_failures("memory", memory["failures"], bool(outcome.rows))
    _json(folder / "memory.json", {k: v for k, v in memory.items() if k != "plots"})

    stderr.print("[3/6] accelerators: copies, granularity and launch latency of every device found", highlight=False)
    device_runs = []
    plans, missing = quick_device_plans()
    for plan in plans:
        left = seconds - (_time.monotonic() - t0)
        if left < 0.15 * seconds:
            summary.setdefault("skipped_devices", []).append(f"{plan.backend} #{plan.device}: time budget used up")
            continue
        run = measure("lab", device_steps(plan), device_rows, "device", {"backend": plan.backend, "device": plan.device},
                      store, timeout=max(60.0, seconds), budget=0.6 * left, extra_inventory={"accelerator": plan.info})
        result = device_results(run, folder / f"{plan.backend}{plan.device}")
        recorded += [run.run_id] if run.rows else []
        measured = measured or bool(run.rows)
        failed += _stage_failures(f"{plan.backend} #{plan.device}", result["failures"], bool(run.rows))
        entry = {"backend": plan.backend, "device": plan.device, "name": plan.info.get("name"), "run_id": run.run_id,
                 **{k: v for k, v in result.items() if k not in ("transfers", "plots")}}
        collab_plan = CollabPlan(backend=plan.backend, device=plan.device, size=4 * 2**20, repeats=3, info=plan.info)
        if plan.backend == "opencl" and collab_plan.shared_memory():
            collab_plan.check()
            run = measure("lab", collab_steps(collab_plan), collab_rows, "device", {"collab": True}, store,
                          timeout=max(60.0, seconds), extra_inventory={"accelerator": plan.info})
            entry["collab"] = collab_summary(run.rows)
            recorded += [run.run_id] if run.rows else []
            failed += _stage_failures(f"{plan.backend} #{plan.device} collaboration",
                                      [{"step": r.step.label, "reason": r.failure} for r in (run.results or [])
                                       if r.failure and not r.failure.startswith("skipped:")], bool(run.rows))
            if entry["collab"]:
                plot_collab(entry["collab"], folder / f"{plan.backend}{plan.device}" / "collab.png")
        device_runs.append(entry)
    summary["devices"] = [{"backend": d["backend"], "device": d["device"], "run_id": d["run_id"]} for d in device_runs]
    summary["accelerators_not_available"] = missing
    _json(folder / "devices.json", device_runs)

    stderr.print("[4/6] offload runtime: every workload in sync and forward, emulated 1 us round trip and "
                 "the first OpenCL device", highlight=False)
    summary["runtime_runs"], summary["runtime_failures"] = [], []
    for backend in ["emulated"] + (["opencl"] if plans and any(p.backend == "opencl" for p in plans) else []):
        if seconds - (_time.monotonic() - t0) < 0.1 * seconds:
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

    stderr.print("[5/6] link presets", highlight=False)
    presets = [{"name": name, **resolve(name).parameters(), "peak_write_bytes_per_second": resolve(name).peak_rate("write"),
                "description": resolve(name).summary()} for name in PRESETS]
    _json(folder / "presets.json", presets)

    rows = []
    names = scenarios.names()
    for i, name in enumerate(names, 1):
        stderr.print(f"[5/6] scenario {name} ({i}/{len(names)})", highlight=False)
        try:
            scenario = scenarios.load(name)
            result = scenario.run()
            plots = [str(p) for p in scenario.plot(folder)]
            _json(folder / f"{name}.json", {**result, "plots": plots})
        except Exception as error:  # noqa: BLE001 - one scenario that fails is noted; the others go on
            failed.append((f"scenario {name}", str(error)))
            continue
        for check in result["checks"]:
            seed, ours = scenarios.describe_check(check)
            rows.append({"scenario": name, "figure": check["figure"], "seed": seed, "xferlab": ours,
                         "status": check["status"]})
    stderr.print("[6/6] fits, advice and the report", highlight=False)
    summary["elapsed_seconds"] = _time.monotonic() - t0
    summary["failed_stages"] = _as_json(failed)
    _json(folder / "lab.json", summary)  # kept if the report fails
    report_path = None
    try:
        report_path = write_report(recorded, folder / "report.html", "pcie3x16", PROFILE_PREFIX, store,
                                   title=f"xferlab lab report, {started:%Y-%m-%d %H:%M} UTC")
    except XferlabError as error:
        failed.append(("report", str(error)))
    summary["report"] = str(report_path) if report_path else None
    summary["elapsed_seconds"] = _time.monotonic() - t0
    summary["scenarios"] = names
    code = 0 if not failed else 3 if measured else 1
    summary["failed_stages"], summary["exit_code"] = _as_json(failed), code
    _json(folder / "lab.json", summary)

    if json_:
        emit("lab", rows, [], "json", extra={"folder": str(folder), "report": summary["report"],
                                             "probe": summary["probe"], "devices": device_runs,
                                             "memory": {k: v for k, v in memory.items() if k != "plots"},
                                             "run_id": outcome.run_id, "store": str(outcome.store_path),
                                             "failed_stages": _as_json(failed), "exit_code": code})
        _conclude(failed, code)
        return
    print_tables(memory["bandwidth"], [r for r in memory["latency"] if r["size_bytes"] in landmark_sizes(memory["latency"])],
                 memory["loaded"])
    for d in device_runs:
        stdout.print(f"{d['backend']} device {d['device']}: {d['name']} (run {d['run_id']})", highlight=False)
        print_device_tables(d)
        if d.get("collab"):
            emit("lab", d["collab"], COLLAB_COLUMNS, "table", title="CHAI-style collaboration, normalized to D (seed 001, Figure 4)")
    for line in summary["accelerators_not_available"]:
        stdout.print(line, highlight=False)
    emit("lab", rows, [Column("scenario", "scenario", justify="left"), Column("figure", "figure", justify="left"),
                       Column("seed", "seed"), Column("xferlab", "xferlab"),
                       Column("status", "status", justify="left")], "table",
         title="Seed figures recomputed by xferlab's models")
    for line in failure_notes(memory["failures"]):  # the skipped ones (for want of time); _conclude lists failures
        if line.startswith("skipped:"):
            stderr.print(line, highlight=False)
    if clock.ok and clock.records:
        record = clock.records[0]
        stdout.print(f"probe: steady clock ticks every {record['observed_tick_seconds'] * 1e9:.0f} ns, "
                     f"one read costs {record['call_overhead_seconds'] * 1e9:.1f} ns (median)", highlight=False)
    else:
        stdout.print(f"probe: failed: {clock.failure}", highlight=False)
    stdout.print(f"memory run {outcome.run_id} recorded in {outcome.store_path} (`xferlab results show {outcome.run_id}`)",
                 highlight=False)
    stdout.print(f"results: {folder}/ (lab.json, memory.json and plots, devices.json and a plot folder per device, "
                 "presets.json, one JSON and two plots per scenario); profiles: "
                 f"{', '.join(n for n in profile_names() if n.startswith(PROFILE_PREFIX + '-'))}", highlight=False)
    stdout.print(f"report: {report_path or 'not written'} ({summary['elapsed_seconds']:.0f} s in all)", highlight=False)
    _conclude(failed, code)


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


def _conclude(failed: list[tuple[str, str]], code: int) -> None:
    """A line per failure, then the last line: which stages failed (stderr); the exit code (0, 3 or 1)."""
    if not failed:
        stderr.print("lab: every stage succeeded", highlight=False)
        return
    for stage, reason in failed:
        stderr.print(f"failed: {stage}: {reason}", highlight=False)
    stages: dict[str, int] = {}
    for stage, _ in failed:
        stages[stage] = stages.get(stage, 0) + 1
    named = ", ".join(f"{stage} ({n} steps)" if n > 1 else stage for stage, n in stages.items())
    stderr.print(f"error: lab stages failed: {named}; "
                 + ("nothing could be measured" if code == 1 else "the report shows what was measured")
                 + " (details above and in lab.json)", highlight=False)
    raise typer.Exit(code)


def runtime_stage(backend: str, store: Optional[Path]) -> tuple[str, Optional[str]]:
    """`xferlab runtime bench` in small: every workload, sync and forward, one run each (seed 002's ~1 us
    round trip on the emulated bus: 500 ns a leg), recorded row by row. Returns the run id and why it
    stopped early (a wrong result, a device error), None if it did not."""
    from ..runtime import LATENCY_PRESETS, workload_names
    from ..runtime.bench import bench, recording

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


def quick_memory_plan() -> MemoryPlan:
    """Every memory node: STREAM's four kernels (5 iterations), the latency sweep, loaded latency."""
    cpus = len(os.sched_getaffinity(0))
    plan = MemoryPlan(nodes=list(inv.memory_nodes()), iterations=5, latency=True, loaded=cpus >= 2,
                      precision=PRECISION, max_time=MAX_TIME_MEMORY)
    plan.check()
    return plan


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

"""`xferlab lab`: the main job (the work is :mod:`xferlab.lab`; this parses and prints)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import lab as labrun
from ..measure.results import notes as failure_notes
from ..scenarios import describe_check
from ..units import parse_time
from .common import JSON, LAB_BUDGET, LAB_MPI, LAB_PROGRAM, LAB_STORE
from .measure import print_tables
from .measure_collab import COLUMNS as COLLAB_COLUMNS
from .measure_device import print_device_tables
from .output import Column, emit, stderr, stdout


def lab(budget: str = LAB_BUDGET,
        out: Optional[Path] = typer.Option(None, "--out", help=f"Results folder, holding every output: profiles, JSON, "
                                           f"plots, report, and the store unless --store or $XFERLAB_STORE names one "
                                           f"(default: ./{labrun.DEFAULT_OUT}/lab-<UTC time>).", metavar="DIR"),
        store: Optional[Path] = LAB_STORE, program: Optional[Path] = LAB_PROGRAM, mpi: str = LAB_MPI,
        json_: bool = JSON) -> None:
    """The main job: characterize memory and accelerators, recompute the seeds' figures, fit profiles, advise, write the report."""
    seconds = parse_time(budget, "--budget", allow_zero=False)
    result = labrun.run(seconds, out, store, say=lambda line: stderr.print(line, highlight=False), program=program,
                        mpi=mpi)
    summary, memory, failed, code = result.summary, result.memory, result.failed, result.code
    if json_:
        emit("lab", result.rows, [], "json", extra={
            "folder": str(result.folder), "report": summary["report"], "probe": summary["probe"],
            "devices": result.device_runs, "memory_summary": {k: v for k, v in memory.items() if k != "plots"},
            "run_id": result.memory_run, "store": str(result.store), "profiles": result.profiles,
            "profiles_folder": summary["profiles_folder"],
            "previous_profiles": str(result.kept_profiles) if result.kept_profiles else None,
            "failed_stages": summary["failed_stages"], "exit_code": code})
        _conclude(failed, code)
        return
    print_tables(memory["bandwidth"], [r for r in memory["latency"] if r["size_bytes"] in labrun.landmark_sizes(memory["latency"])],
                 memory["loaded"])
    for d in result.device_runs:
        stdout.print(f"{d['backend']} device {d['device']}: {d['name']} (run {d['run_id']})", highlight=False)
        print_device_tables(d)
        if d.get("collab"):
            emit("lab", d["collab"], COLLAB_COLUMNS, "table", title="CHAI-style collaboration, normalized to D (seed 001, Figure 4)")
    for line in summary["accelerators_not_available"]:
        stdout.print(line, highlight=False)
    shown = [{**r, **dict(zip(("seed", "xferlab"), describe_check(r)))} for r in result.rows]  # JSON: numbers
    emit("lab", shown, [Column("scenario", "scenario", justify="left"), Column("figure", "figure", justify="left"),
                              Column("seed", "seed"), Column("xferlab", "xferlab"),
                              Column("status", "status", justify="left")], "table",
         title="Seed figures recomputed by xferlab's models (status: docs/models.md)")
    for line in failure_notes(memory["failures"]):  # the skipped ones (for want of time); _conclude lists failures
        if line.startswith("skipped:"):
            stderr.print(line, highlight=False)
    for line in summary.get("skipped_devices", []) + summary.get("skipped_collab", []):
        stderr.print(f"skipped: {line}", highlight=False)
    clock = result.clock
    if clock.ok and clock.records:
        record = clock.records[0]
        stdout.print(f"probe: steady clock ticks every {record['observed_tick_seconds'] * 1e9:.0f} ns, "
                     f"one read costs {record['call_overhead_seconds'] * 1e9:.1f} ns (median)", highlight=False)
    else:
        stdout.print(f"probe: failed: {clock.failure}", highlight=False)
    stdout.print(f"memory run {result.memory_run} recorded in {result.store} (`xferlab results show {result.memory_run}`)",
                 highlight=False)
    stdout.print(f"results: {result.folder}/ (lab.json, memory.json and plots, devices.json and a plot folder per device, "
                 "deceval-measured.json, presets.json, one JSON and two plots per scenario)", highlight=False)
    stdout.print(f"profiles: {', '.join(result.profiles) or 'none'} in {summary['profiles_folder']} (use them as links with "
                 f"XFERLAB_PROFILES={summary['profiles_folder']})"
                 + (f"; the previous lab's were moved to {result.kept_profiles}" if result.kept_profiles else ""),
                 highlight=False)
    stdout.print(f"report: {result.report or 'not written'} ({summary['elapsed_seconds']:.0f} s in all)", highlight=False)
    _conclude(failed, code)


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

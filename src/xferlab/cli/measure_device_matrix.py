"""`xferlab measure device --matrix`: nvbandwidth's matrices (measure/device_matrix.py), a table per direction with
its sum, min and max, and the runtime's copy beside the copy kernel on each device."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import BadValue
from ..measure import device_matrix as dm, peak
from ..measure.conventions import footer, metadata
from ..measure.results import failures, notes as failure_notes, unvalidated_total
from ..measure.run import measure
from ..units import format_rate, format_size, parse_list, parse_size, shown
from .common import budget_seconds, only_with, timeout_seconds
from .measure_outcome import conclude
from .output import Column, emit, stderr, stdout

#: the options `measure device` has that the matrix cannot honour (it runs one size and kind on every device)
NOT_WITH_MATRIX = ("device_", "directions", "order", "node", "cpus", "chunks", "total", "launch", "precision",
                   "max_time", "plot", "_old_plot")


def run_matrix(ctx: typer.Context, backend: str, platform: Optional[str], kinds: Optional[str], sizes: Optional[str],
               iterations: int, min_time: float, fmt: str, budget: Optional[str], timeout: str,
               store: Optional[Path]) -> None:
    only_with(ctx, [(name, False, "without --matrix (the matrix runs every device at one size and host memory kind)")
                    for name in NOT_WITH_MATRIX])
    kind = None
    if kinds is not None:
        listed = [k.strip() for k in kinds.split(",")]
        if len(listed) != 1:
            raise BadValue(f"--kinds {shown(kinds)}: --matrix takes one host memory kind")
        kind = listed[0]
    size = None  # the plan sizes it from the devices' caches (device_matrix.default_size)
    if sizes is not None:
        listed = parse_list(sizes, parse_size, "--sizes")
        if len(listed) != 1:
            raise BadValue(f"--sizes {shown(sizes)}: --matrix takes one copy size")
        size = int(listed[0])
    plan = dm.MatrixPlan(backend=backend, platform=platform, kind=kind, size=size, iterations=iterations,
                         min_time=min_time)
    plan.check()
    timeout_s, budget_s = timeout_seconds(timeout), budget_seconds(budget)
    outcome = measure("measure device --matrix", dm.steps(plan), dm.rows_of, "device",
                      params={"backend": plan.backend, "platform": platform, "devices": plan.indices(), "matrix": True,
                              "kinds": [plan.kind], "sizes": [plan.size], "size_rule": plan.size_rule, "directions": list(dm.MATRIX_DIRECTIONS)},
                      store_path=store, timeout=timeout_s, budget=budget_s,
                      extra_inventory={"accelerator": plan.devices[0], "accelerators": plan.devices})
    peaks = peak.of(outcome)
    cells = dm.with_peaks(dm.cells(plan, outcome.rows, dm.failure_keys(outcome.results)), peaks)
    totals = dm.totals(cells)
    listed = ", ".join(f"{plan.backend} #{d['index']} {d.get('name')}" for d in plan.devices)
    notes = [f"devices: {listed}; "
             f"run {outcome.run_id} recorded in {outcome.store_path}",
             f"copy size: {format_size(plan.size)}, {plan.size_rule}"]
    notes += footer("device", list(dm.MATRIX_DIRECTIONS))
    notes += peak.lines(peaks)
    notes += [f"N/A {c['src']} -> {c['dst']} ({c['direction']}): {c['reason']}" for c in cells if c["status"] != "measured"]
    notes += failure_notes(failures(outcome))
    if fmt != "table":
        emit("measure device --matrix", cells, [Column(k, k) for k in sorted({k for c in cells for k in c})], fmt,
             notes=notes, extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                                 "machine_state": outcome.machine_state, "devices": plan.devices, "totals": totals,
                                 "peaks": peaks, "conventions": metadata("device", list(dm.MATRIX_DIRECTIONS)),
                                 "failures": failures(outcome), "unvalidated_samples": unvalidated_total(outcome)})
    else:
        print_matrix(cells, totals, plan)
        for note in notes:
            (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False)
    conclude(outcome, fmt)


def print_matrix(cells: list[dict], totals: list[dict], plan: dm.MatrixPlan) -> None:
    for direction in dm.MATRIX_DIRECTIONS:
        columns, rows = dm.shown_grid(cells, direction)  # each cell with its % of the link's peak, as the report
        t = next(t for t in totals if t["direction"] == direction)
        emit("measure device --matrix", rows, [Column("src", "from \\ to", justify="left"),
                                                *[Column(c, c, no_wrap=True) for c in columns]], "table",
             title=f"{dm.title(direction, plan)} ({dm.totals_text(t)})")
    own = [c for c in cells if c["direction"] == "d2d" and c["src"] == c["dst"]]
    if any(c.get("kernel_median_bytes_per_second") for c in own):
        emit("measure device --matrix", own, [
            Column("src", "device", justify="left"),
            Column("median_bytes_per_second", "runtime copy (median)", format_rate, no_wrap=True),
            Column("best_bytes_per_second", "runtime copy (best)", format_rate, no_wrap=True),
            Column("kernel_median_bytes_per_second", "copy kernel (median)", format_rate, no_wrap=True),
            Column("kernel_best_bytes_per_second", "copy kernel (best)", format_rate, no_wrap=True),
        ], "table", title=dm.kernel_title(plan.backend))

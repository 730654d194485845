"""The report's matrices (issue 28, "Matrices"): a stored `measure memory --matrix` run as Intel MLC prints its
latency and bandwidth matrices (rows: CPU nodes, columns: memory nodes), a stored `measure device --matrix` run
as nvbandwidth prints its host-to-device, device-to-host and device-to-device matrices (rows: sources, columns:
destinations), each grid with its sum, min and max, each bandwidth cell with its % of the peak where one is
known, a heat map of each, and the command that reproduces it.

Nothing is measured here: the grids are rebuilt from the run's stored samples by the functions the two
commands print with (measure/memory_matrix.py, measure/device_matrix.py), so the report's cells are the
figures the command printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..measure import device_matrix as dm, memory_matrix as mx
from ..units import format_size
from .collect import Figure, Section, Table, command_of, counting_notes, peak_of


def is_matrix(run: dict[str, Any]) -> bool:
    """Whether a stored run is a `measure memory --matrix` or `measure device --matrix` run."""
    return bool((run.get("params") or {}).get("matrix"))


def _peak_notes(cells: list[dict[str, Any]]) -> list[str]:
    """Where the cells' peaks came from, or why none is known: each distinct source once."""
    return [f"% of peak: {source}" for source in dict.fromkeys(c.get("peak_source") for c in cells) if source]


def matrix_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> Section:
    """The section of one stored matrix run (memory or device)."""
    if run["command"].startswith("measure device"):
        return device_matrix_section(run, rows, folder)
    return memory_matrix_section(run, rows, folder)


def memory_matrix_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> Section:
    rid, params = run["run_id"], run.get("params") or {}
    _, cells, matrices = mx.stored(run, rows)
    section = Section(f"Memory matrix (run {rid})", f"run-{rid}-matrix",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC; Intel MLC's idle latency and "
                       "bandwidth matrices: threads on the row's CPU node, memory bound to the column's memory node "
                       "(a CPU-less node, CXL or HBM, is a column only)"], commands=[command_of(run)])
    for m in matrices:
        unit = "seconds" if m["test"] == "latency" else "bytes_per_second"
        mine = {(c["cpu_node"], c["memory_node"]): c for c in cells if c["test"] == m["test"]}
        grid = [{"cpu_node": r["cpu_node"], **{f"node {n}": r[n] for n in m["memory_nodes"]}} for r in mx.shown_rows(m, cells)]
        notes = [mx.summary_line(m)]
        if unit != "seconds":
            notes += counting_notes("memory", [{"test": m["test"]}], peak_of(run))
            notes += [n for n in _peak_notes(list(mine.values())) if n.split(": ", 1)[1] not in " ".join(notes)]
        title = mx.title(m, params.get("chase_bytes") or 0, params.get("array_bytes") or 0)
        section.tables.append(Table(title, [("cpu_node", "CPU node"), *((f"node {n}", f"memory node {n}")
                                                                         for n in m["memory_nodes"])], grid, notes))
        from ..plots.matrix import plot_matrix  # matplotlib only when drawing

        path = plot_matrix(m["values"], m["cpu_nodes"], m["memory_nodes"], unit, "CPU node", "memory node",
                           f"{m['test']} ({m['headline']}), run {rid}", folder / rid / f"matrix-{m['test']}.png")
        section.figures.append(Figure(f"memory matrix, {m['test']}", path, command_of(run)))
    if not matrices:
        section.intro.append("no cell of this matrix has a validated sample (its failures are listed under Failures)")
    return section


def device_matrix_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> Section:
    from ..plots.matrix import plot_matrix  # matplotlib only when drawing

    rid = run["run_id"]
    plan = dm.stored_plan(run)
    cells = dm.with_peaks(dm.cells(plan, rows), peak_of(run))
    totals = {t["direction"]: t for t in dm.totals(cells)}
    listed = ", ".join(f"{plan.backend} #{d.get('index')} {d.get('name', '?')}" for d in plan.devices)
    section = Section(f"Device matrix (run {rid})", f"run-{rid}-matrix",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC; nvbandwidth's matrices over "
                       f"{listed}: rows are where a copy reads, columns where it writes; N/A where no path was measured"],
                      commands=[command_of(run)])
    for direction in dm.MATRIX_DIRECTIONS:
        columns, grid = dm.grid(cells, direction)
        shown = [{"src": g["src"], **{f"to {d}": g[d] for d in columns}} for g in dm.shown_grid(cells, direction)[1]]
        mine = [c for c in cells if c["direction"] == direction]
        notes = [f"{direction} over {totals[direction]['measured_cells']} cells: {dm.totals_text(totals[direction])}"]
        notes += [f"N/A {c['src']} -> {c['dst']}: {c['reason']}" for c in mine if c["status"] != "measured"]
        notes += _peak_notes(mine)
        section.tables.append(Table(dm.title(direction, plan), [("src", "from \\ to"), *((f"to {d}", d) for d in columns)],
                                    shown, notes))
        path = plot_matrix([[g.get(d) for d in columns] for g in grid], [g["src"] for g in grid], columns,
                           "bytes_per_second", "from", "to", f"{dm.TITLES[direction]}, run {rid}",
                           folder / rid / f"matrix-{direction}.png")
        section.figures.append(Figure(f"device matrix, {dm.TITLES[direction]}", path, command_of(run)))
    own = [c for c in cells if c["direction"] == "d2d" and c["src"] == c["dst"] and c.get("kernel_median_bytes_per_second")]
    if own:
        section.tables.append(Table(dm.kernel_title(plan.backend), [
            ("src", "device"), ("median_bytes_per_second", "runtime copy (median)"),
            ("best_bytes_per_second", "runtime copy (best)"), ("kernel_median_bytes_per_second", "copy kernel (median)"),
            ("kernel_best_bytes_per_second", "copy kernel (best)")], own))
    section.intro.append(f"each cell: the median of the copies of {format_size(plan.size)}; sum, min and max over the "
                         "measured cells of each direction, as nvbandwidth's SUM")
    section.intro += counting_notes("device", [{"test": d} for d in dm.MATRIX_DIRECTIONS], peak_of(run))
    return section

"""`xferlab measure memory --matrix`: idle latency and bandwidth from every CPU node's cores to every
memory node, as Intel Memory Latency Checker's ``--latency_matrix`` and ``--bandwidth_matrix`` draw
them (Intel MLC v3 user guide: rows are the nodes the threads run on, columns the nodes the memory
is bound to; a memory-only node, CXL or HBM, is a column and never a row).

A *cell* is one (CPU node, memory node) pair. Its latency is the probe's dependent pointer chase
(``latency``) on the CPU node's first allowed CPU over a working set past the last-level cache,
bound to the memory node; its bandwidth is the probe's STREAM-like ``stream`` kernel (``read`` by
default: MLC's bandwidth matrix is all reads) with one thread on each of the CPU node's allowed
CPUs, the arrays bound to the memory node. The plan (:func:`cells`) is pure: it takes a topology
as :func:`xferlab.system.inventory.numa_nodes` gives it, so it is tested on machines this is not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import BadValue
from ..system.locality import cpu_text
from .memory import MemoryPlan, summaries
from .precision import probe_args
from .steps import Step

MATRIX_KERNEL = "read"
MIN_CHASE = 128 * 2**20


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix: threads on ``cpus`` (of ``cpu_node``), memory on ``memory_node``."""

    cpu_node: int
    memory_node: int
    cpus: tuple[int, ...]


def cells(nodes: list[dict[str, Any]], allowed: set[int] | list[int]) -> tuple[list[Cell], list[str]]:
    """The cells for a topology (``numa_nodes()``'s records) and the CPUs this process may use, row by
    row, and notes on the CPU nodes left out (none of their CPUs allowed). Rows: the nodes with an
    allowed CPU; columns: the nodes with memory (a CPU-less node is a column only)."""
    allowed = set(allowed)
    columns = [n["node"] for n in nodes if n["memory_total_bytes"] > 0]
    rows, notes = [], []
    for n in nodes:
        if not n["cpus"]:
            continue
        mine = tuple(c for c in n["cpus"] if c in allowed)
        if mine:
            rows.append((n["node"], mine))
        else:
            notes.append(f"CPU node {n['node']} left out: none of its CPUs ({cpu_text(n['cpus'])}) is allowed to this process")
    if not rows:
        raise BadValue(f"--matrix: no NUMA node has a CPU this process may run on; allowed: {cpu_text(sorted(allowed))}")
    if not columns:
        raise BadValue("--matrix: no NUMA node reports memory (node*/meminfo)")
    return [Cell(node, m, cpus) for node, cpus in rows for m in columns], notes


def chase_bytes(llc: int) -> int:
    """The latency's working set: twice the last-level cache, at least 128 MiB, so most loads miss it."""
    return max(2 * llc, MIN_CHASE)


def steps(plan: MemoryPlan, plan_cells: list[Cell], chase: int) -> list[Step]:
    """The probe runs of the matrix: every cell's latency, then every cell's bandwidth (MLC's order)."""
    out: list[Step] = []
    for c in plan_cells:
        where = {"node": str(c.memory_node), "mode": "matrix", "cpu_node": str(c.cpu_node),
                 "memory_node": str(c.memory_node)}
        args = ["latency", "--sizes", str(chase), "--cpu", str(c.cpus[0]), "--node", str(c.memory_node),
                *probe_args(plan.precision, plan.max_time)]
        out.append(Step(f"latency CPU node {c.cpu_node} -> memory node {c.memory_node}", "latency", args,
                        {**where, "threads": 1}, 1.0 + chase / 2e8))
    for c in plan_cells:
        where = {"node": str(c.memory_node), "mode": "matrix", "cpu_node": str(c.cpu_node),
                 "memory_node": str(c.memory_node)}
        args = ["stream", "--kernels", ",".join(plan.kernels), "--size", str(plan.array_bytes), "--iterations",
                str(plan.iterations), "--threads", str(len(c.cpus)), "--cpus", cpu_text(list(c.cpus)), "--node",
                str(c.memory_node), "--first-touch", "on" if plan.first_touch else "off", "--hugepages", plan.hugepages,
                *probe_args(plan.precision, plan.max_time)]
        estimate = plan.iterations * len(plan.kernels) * 3 * plan.array_bytes / 10e9 + 3 * plan.array_bytes / 2e9
        out.append(Step(f"bandwidth CPU node {c.cpu_node} -> memory node {c.memory_node}", "stream", args,
                        {**where, "threads": len(c.cpus)}, estimate))
    return out


def cell_rows(rows: list[dict[str, Any]], llc: int) -> list[dict[str, Any]]:
    """One row per cell and figure (latency: ``median_seconds``; bandwidth: ``best_bytes_per_second``, with
    the median's interval beside), from the samples (a run's, or read back from the store) grouped by their
    ``cpu_node``/``memory_node`` first: two CPU nodes' cells on one memory node are never one group."""
    from .results import _row  # the summary's fields named with their unit, as `measure memory` prints them

    by_cell: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("cpu_node") is not None and r.get("memory_node") is not None:
            by_cell.setdefault((str(r["cpu_node"]), str(r["memory_node"])), []).append(r)
    return [{**_row(summary, llc), "cpu_node": cpu_node, "memory_node": memory_node}
            for (cpu_node, memory_node), members in by_cell.items() for summary in summaries(members)]


def matrices(rows: list[dict[str, Any]], plan_cells: list[Cell]) -> list[dict[str, Any]]:
    """Per figure (latency, then each bandwidth kernel): the grid's rows and columns, and the sum, min and
    max over the cells measured (a cell that failed is left out of them and shown as null)."""
    cpu_nodes = list(dict.fromkeys(str(c.cpu_node) for c in plan_cells))
    memory_nodes = list(dict.fromkeys(str(c.memory_node) for c in plan_cells))
    out = []
    for test in dict.fromkeys(r["test"] for r in rows):
        key = "median_seconds" if test == "latency" else "best_bytes_per_second"
        unit = key.split("_", 1)[1]
        by_cell = {(r["cpu_node"], r["memory_node"]): r.get(key) for r in rows if r["test"] == test}
        grid = [[by_cell.get((c, m)) for m in memory_nodes] for c in cpu_nodes]
        values = [v for v in by_cell.values() if v is not None and math.isfinite(v)]
        out.append({"test": test, "headline": key.split("_", 1)[0], "cpu_nodes": cpu_nodes, "memory_nodes": memory_nodes,
                    "values": grid, f"sum_{unit}": sum(values) if values else None,
                    f"min_{unit}": min(values, default=None), f"max_{unit}": max(values, default=None),
                    "count": len(values)})
    return out


#: What --matrix cannot honour, and why: the matrix chooses every cell's CPUs, threads and memory node itself.
REFUSED = {
    "--node": "the matrix binds memory to every memory node in turn",
    "--cpus": "the matrix runs on each CPU node's allowed CPUs in turn",
    "--threads": "the matrix runs one thread per allowed CPU of each CPU node",
    "--latency": "the matrix measures idle latency itself (one working set past the last-level cache)",
    "--loaded": "loaded latency is not a matrix figure",
    "--mixes": "loaded latency's mixes are not a matrix figure",
    "--pmem": "an App-Direct mapping lives where its device is, not on a chosen memory node",
    "--persist": "an App-Direct mapping lives where its device is, not on a chosen memory node",
    "--plots": "the matrix draws no plot",
}


def grid_rows(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """The table of one matrix: a row per CPU node, its figure per memory node (keyed by the node's name)."""
    return [{"cpu_node": c, **dict(zip(matrix["memory_nodes"], values))}
            for c, values in zip(matrix["cpu_nodes"], matrix["values"])]


def shown_rows(matrix: dict[str, Any], cell_rows_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`grid_rows` as the terminal and the report show them: each cell's figure as text, a bandwidth cell's
    % of the DRAM peak beside where one is known (measure/peak.py's cell; ``cell_rows_``: :func:`cell_rows` with
    :func:`with_peaks`), "–" where the cell was not measured."""
    from .peak import cell

    unit = "seconds" if matrix["test"] == "latency" else "bytes_per_second"
    fraction = {(r["cpu_node"], r["memory_node"]): r.get("fraction_of_peak") for r in cell_rows_
                if r["test"] == matrix["test"]}
    return [{"cpu_node": row["cpu_node"], **{n: cell(row[n], unit, fraction.get((row["cpu_node"], n)))
                                             for n in matrix["memory_nodes"]}} for row in grid_rows(matrix)]


def refuse(given: list[str]) -> None:
    """One line for the first option of ``given`` (the flags on the command line) that --matrix cannot honour."""
    for flag in given:
        if flag in REFUSED:
            raise BadValue(f"--matrix with {flag}: {REFUSED[flag]}; allowed with --matrix: --kernels, --size, "
                           "--iterations, --first-touch, --hugepages, --precision, --max-time, --budget, --timeout, "
                           "--store, --json, --csv")


def results(outcome, plan_cells: list[Cell]) -> dict[str, Any]:
    """A matrix run's cell rows (bandwidth ones with their counting rule and the DRAM peak), its matrices,
    and what `measure memory` says of every run (conventions, the DRAM peak recorded, failures)."""
    from .results import memory_results
    from .sizeclass import host_llc

    shared = memory_results(outcome, None)
    rows = with_peaks(cell_rows(outcome.rows, host_llc(None)), shared["peaks"])
    return {"cells": rows, "matrices": matrices(rows, plan_cells),
            **{k: shared[k] for k in ("conventions", "peaks", "failures", "unvalidated_samples")}}


def with_peaks(rows: list[dict[str, Any]], peaks: dict[str, Any]) -> list[dict[str, Any]]:
    """The cell rows (changed in place and returned), each bandwidth cell with its counting rule and the DRAM
    peak as every STREAM row carries it (measure/peak.py: a cell on one memory node of several is "peak
    unknown", which of the channels the node has is not known from SMBIOS)."""
    from . import conventions, peak

    bandwidth = [r for r in rows if r["test"] != "latency"]
    peak.memory_rows(conventions.with_counting("memory", bandwidth), peaks)
    return rows


def stored(run: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[list[Cell], list[dict[str, Any]], list[dict[str, Any]]]:
    """A stored matrix run rebuilt from its samples (``rows``, flat) and its record (``run``: its params' planned
    cells, its inventory's caches and peaks): the plan's cells, the cell rows, the matrices."""
    from .sizeclass import host_llc

    params, machine = run.get("params") or {}, run.get("inventory") or {}
    plan_cells = [Cell(int(c), int(m), tuple(cpus)) for c, m, cpus in params.get("cells") or []]
    if not plan_cells:  # an older record without its plan: the cells its samples name
        seen = dict.fromkeys((int(r["cpu_node"]), int(r["memory_node"])) for r in rows if r.get("cpu_node") is not None)
        plan_cells = [Cell(c, m, ()) for c, m in seen]
    cell = with_peaks(cell_rows(rows, host_llc({"caches": machine.get("caches") or []})), machine.get("peaks") or {})
    return plan_cells, cell, matrices(cell, plan_cells)


def title(matrix: dict[str, Any], chase: int, array_bytes: int) -> str:
    """The table's title: the figure, how it was taken, and which way the grid reads."""
    from ..units import format_size

    if matrix["test"] == "latency":
        return (f"Idle latency, median of a dependent pointer chase over {format_size(chase)} on the CPU node's first "
                "CPU (rows: CPU node, columns: memory node)")
    return (f"Bandwidth, {matrix['test']} kernel, best of the timed iterations, one thread per allowed CPU of the CPU "
            f"node, {format_size(array_bytes)} per array (rows: CPU node, columns: memory node)")


def summary_line(matrix: dict[str, Any]) -> str:
    """``latency over 2 cells: sum …, min …, max …`` (nvbandwidth's SUM line, with the extremes)."""
    from ..units import format_rate, format_time

    unit = "seconds" if matrix["test"] == "latency" else "bytes_per_second"
    show = format_time if unit == "seconds" else format_rate
    if not matrix["count"]:
        return f"{matrix['test']}: no cell measured"
    return (f"{matrix['test']} over {matrix['count']} cell{'s' * (matrix['count'] > 1)}: sum {show(matrix[f'sum_{unit}'])}, "
            f"min {show(matrix[f'min_{unit}'])}, max {show(matrix[f'max_{unit}'])}")

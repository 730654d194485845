"""`xferlab measure …`: characterize this machine: memory tiers here; devices and collaboration in
measure_device.py and measure_collab.py, registered below."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from ..errors import BadValue
from ..measure import checks, loaded as loaded_mixes
from ..measure import memory_matrix as mx
from ..measure.memory import DEFAULT_KERNELS, KERNELS, MemoryPlan, rows_of, steps
from ..measure.run import measure
from ..system import inventory as inv
from ..units import format_rate, format_size, format_time, parse_size
from .common import BUDGET, CPUS, CSV, JSON, MAX_TIME, OLD_PLOT, PLOTS, PRECISION, STORE, TIMEOUT, budget_seconds, timeout_seconds
from ..measure.results import memory_params, memory_results, notes as failure_notes
from ..measure.conventions import footer
from ..measure.peak import lines as peak_lines, percent
from ..measure.pmdk import note as pmdk_notes
from .measure_outcome import conclude
from .output import Column, emit, or_dash, output_format, stderr, stdout
from .precision_options import interval_column, with_interval
from ..measure.precision import parse_max_time, parse_precision

app = typer.Typer(no_args_is_help=True, help="Measure this machine: memory tiers (bandwidth, latency, App-Direct).")

def _ints(text: str, where: str, lo: int = 0) -> list[int]:
    def one(item: str, _where: str) -> int:
        try:
            value = int(item)
        except ValueError:
            raise BadValue(f"{where} '{item}' is not a whole number") from None
        if value < lo:
            raise BadValue(f"{where} {value} is below {lo}")
        return value
    items: list[int] = []
    for part in text.split(","):
        if "-" in part.strip()[1:]:
            lo_s, hi_s = part.split("-", 1)
            first, last = one(lo_s, where), one(hi_s, where)
            if last < first or last - first >= 65536:
                raise BadValue(f"{where} range '{part.strip()}' is not a range of at most 65,536 whole numbers, low-high")
            items += list(range(first, last + 1))
        else:
            items.append(one(part, where))
        if len(items) > 65536:
            raise BadValue(f"{where} '{text[:40]}' lists more than 65,536 values")
    return items


def plan_from(kernels: str, size: Optional[str], threads: Optional[str], cpus: Optional[str], node: Optional[str],
              first_touch: bool, hugepages: str, iterations: int, pmem: Optional[Path], persist: bool, latency: bool,
              loaded: bool, mixes: Optional[str] = None, pmdk: bool = False) -> MemoryPlan:
    if mixes is not None and not loaded:
        raise BadValue(f"--mixes {mixes} applies to loaded latency; give --loaded with it")
    if hugepages not in ("none", "thp", "hugetlb"):
        raise BadValue(f"--hugepages '{hugepages}' is not allowed; allowed: none, thp, hugetlb")
    nodes: list[Optional[int]]
    if node is None:
        nodes = [None]
    elif node == "all":
        nodes = list(inv.memory_nodes())
    else:
        nodes = list(_ints(node, "--node"))
    plan = MemoryPlan(
        kernels=[k.strip() for k in kernels.split(",")],
        size_bytes=parse_size(size, "--size") if size else None,
        threads=_ints(threads, "--threads", lo=-10**9) if threads else [],
        cpus=_ints(cpus, "--cpus") if cpus else None,
        nodes=nodes, first_touch=first_touch, hugepages=hugepages, iterations=iterations, pmem=pmem,
        persist=persist, pmdk=pmdk, latency=latency, loaded=loaded,
    )
    if mixes is not None:
        plan.mixes = loaded_mixes.parse_mixes(mixes)
    plan.check()
    return plan


@app.command("memory")
def memory(
    kernels: str = typer.Option(",".join(DEFAULT_KERNELS), "--kernels", help=f"Kernels to run: {', '.join(KERNELS)} (--matrix: read unless given).",
                                metavar="LIST"),
    size: Optional[str] = typer.Option(None, "--size", help="Bytes per array (default: 4 x the last-level cache, at least 64 MiB).",
                                       metavar="SIZE"),
    threads: Optional[str] = typer.Option(None, "--threads", help="OpenMP threads; a list sweeps (default: one per allowed CPU).",
                                          metavar="N[,N…]"),
    cpus: Optional[str] = CPUS,
    node: Optional[str] = typer.Option(None, "--node", help="Memory node(s) for the arrays: N, a list, or all (default: the OS's policy).",
                                       metavar="N|LIST|all"),
    first_touch: bool = typer.Option(True, "--first-touch/--no-first-touch", help="Initialise arrays with the measuring threads (on) or one thread (off)."),
    hugepages: str = typer.Option("none", "--hugepages", help="none, thp (madvise) or hugetlb (reserved pages).", metavar="KIND"),
    iterations: int = typer.Option(10, "--iterations", help="Timed iterations per kernel; the first is a warm-up.", metavar="N"),
    precision: Optional[str] = PRECISION,
    max_time: Optional[str] = MAX_TIME,
    pmem: Optional[Path] = typer.Option(None, "--pmem", help="App-Direct: run on a mapping in this directory, new file or DAX device.",
                                        metavar="PATH"),
    persist: bool = typer.Option(False, "--persist", help="With --pmem: also run with stores made persistent (clwb/clflushopt/clflush or msync)."),
    pmdk: bool = typer.Option(False, "--pmdk", help="With --pmem: also STREAM-PMem, the arrays in a PMDK libpmemobj pool "
                              "(pmemobj_persist, and transactions), beside the raw mapping persisted; a pmdk_overhead per "
                              "kernel (PMEM_IS_PMEM_FORCE=1: PMDK's emulation on a non-DAX file, rows marked emulated)."),
    latency: bool = typer.Option(False, "--latency", help="Also measure pointer-chase latency from L1 to past the last-level cache."),
    loaded: bool = typer.Option(False, "--loaded", help="Also measure latency under increasing traffic from the other CPUs: "
                                "a bandwidth–latency curve per read/write mix (--mixes), each from idle to saturation."),
    mixes: Optional[str] = typer.Option(None, "--mixes", help="With --loaded: the read/write mixes, a curve each: read, "
                                        "write, nt-write (non-temporal stores), R:W (R lines read per W written), "
                                        "R:W-nt (default: read,3:1,2:1,1:1,nt-write: Intel MLC's read-only traffic and its -W3, -W2, -W5, -W6).",
                                        metavar="LIST"),
    matrix: bool = typer.Option(False, "--matrix", help="Idle latency and bandwidth (the read kernel unless --kernels) from "
                                "every CPU node's CPUs to every memory node, as Intel MLC's matrices; refuses --node, "
                                "--cpus, --threads, --latency, --loaded, --mixes, --pmem, --pmdk, --plots."),
    budget: Optional[str] = BUDGET,
    timeout: str = TIMEOUT,
    plot: Optional[Path] = PLOTS,
    _old_plot: Optional[str] = OLD_PLOT,
    store: Optional[Path] = STORE,
    json_: bool = JSON,
    csv_: bool = CSV,
) -> None:
    """STREAM bandwidth (and latency) of memory tiers, with placement control; recorded in the store.

    Bytes as STREAM counts them (no write-allocate); the best iteration against the DRAM peak where
    dmidecode gives the channels and speed, else "peak unknown" with the reason (docs/measure.md).

    Exit code 0 when every step ran, 1 when every step failed, 3 when some did (results kept)."""
    fmt = output_format(json_, csv_)
    if matrix:
        given = [flag for flag, value in (("--node", node), ("--cpus", cpus), ("--threads", threads), ("--latency", latency),
                                          ("--loaded", loaded), ("--mixes", mixes), ("--pmem", pmem), ("--persist", persist), ("--pmdk", pmdk),
                                          ("--plots", plot))
                 if value]
        return memory_matrix(given, kernels, size, first_touch, hugepages, iterations, precision, max_time, budget,
                             timeout, store, fmt)
    plan = plan_from(kernels, size, threads, cpus, node, first_touch, hugepages, iterations, pmem, persist, latency, loaded,
                     mixes, pmdk)
    plan.precision, plan.max_time = parse_precision(precision), parse_max_time(max_time)
    budget_s, timeout_s = budget_seconds(budget), timeout_seconds(timeout)
    checks.plot_dir(plot)
    outcome = measure("measure memory", steps(plan), rows_of, "memory", params=memory_params(plan), store_path=store,
                      timeout=timeout_s, budget=budget_s)
    report(outcome, fmt, plot)
    conclude(outcome, fmt)


def memory_matrix(given: list[str], kernels: str, size: Optional[str], first_touch: bool, hugepages: str,
                  iterations: int, precision: Optional[str], max_time: Optional[str], budget: Optional[str], timeout: str,
                  store: Optional[Path], fmt: str) -> None:
    """`measure memory --matrix`: every cell's latency and bandwidth (measure/memory_matrix.py), a table per figure."""
    mx.refuse(given)
    chosen = mx.MATRIX_KERNEL if kernels == ",".join(DEFAULT_KERNELS) else kernels
    plan = plan_from(chosen, size, None, None, "all", first_touch, hugepages, iterations, None, False, False, False)
    plan.precision, plan.max_time = parse_precision(precision), parse_max_time(max_time)
    budget_s, timeout_s = budget_seconds(budget), timeout_seconds(timeout)
    cells, left_out = mx.cells(inv.numa_nodes(), os.sched_getaffinity(0))
    chase = mx.chase_bytes(inv.last_level_cache_bytes())
    params = {**memory_params(plan), "matrix": True, "chase_bytes": chase,
              "cells": [[c.cpu_node, c.memory_node, list(c.cpus)] for c in cells]}
    outcome = measure("measure memory", mx.steps(plan, cells, chase), rows_of, "memory", params=params,
                      store_path=store, timeout=timeout_s, budget=budget_s)
    result = mx.results(outcome, cells)
    notes = left_out + [mx.summary_line(m) for m in result["matrices"]]
    notes += footer("memory", [m["test"] for m in result["matrices"] if m["test"] != "latency"])
    notes += peak_lines(result["peaks"]) + [f"run {outcome.run_id} recorded in {outcome.store_path}"]
    notes += failure_notes(result["failures"])
    if fmt != "table":
        rows = result["cells"]
        emit("measure memory", rows, [Column(k, k) for k in sorted({k for r in rows for k in r})], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path), "machine_state": outcome.machine_state,
                    **{k: result[k] for k in ("matrices", "conventions", "peaks", "failures", "unvalidated_samples")}})
    else:
        for m in result["matrices"]:  # each bandwidth cell with its % of the DRAM peak, as the report shows it
            emit("measure memory", mx.shown_rows(m, result["cells"]),
                 [Column("cpu_node", "CPU node"), *(Column(n, f"memory node {n}", no_wrap=True) for n in m["memory_nodes"])],
                 "table", title=mx.title(m, chase, plan.array_bytes))
        for note in notes:
            (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False)
    conclude(outcome, fmt)


def report(outcome, fmt: str, plot: Optional[Path]) -> None:
    """Print a run's results (bandwidth, latency, loaded latency, failures) and write its plots."""
    result = memory_results(outcome, plot)
    bandwidth, latency, loaded, failures = result["bandwidth"], result["latency"], result["loaded"], result["failures"]
    notes = [f"{m['mode']}: {'a DAX mapping' if m['dax'] else 'not DAX (the kernel refused MAP_SYNC)'}"
             f"{' (emulated)' if m['emulated'] else ''}; persistence: {m['persist_mechanism']}" for m in result["app_direct"]]
    notes += pmdk_notes(result["pmdk_overhead"])
    if bandwidth or loaded:  # what each bandwidth counts (STREAM's, loaded latency's traffic), and the DRAM peak
        notes += footer("memory", [r["test"] for r in bandwidth] + ([loaded_mixes.TEST] if loaded else []))
        notes += peak_lines(result["peaks"]) if bandwidth else []
    notes += [f"run {outcome.run_id} recorded in {outcome.store_path}"]
    notes += failure_notes(failures)
    notes += [f"plot: {p}" for p in result["plots"]]
    if fmt != "table":
        rows = bandwidth + latency + [{"test": "loaded-latency", **p} for p in loaded]
        emit("measure memory", rows, [Column(k, k) for k in sorted({k for r in rows for k in r})], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                    "machine_state": outcome.machine_state, "conventions": result["conventions"],
                    "peaks": result["peaks"], "failures": failures, "pmdk_overheads": result["pmdk_overhead"],
                    "unvalidated_samples": result["unvalidated_samples"]})
        return
    print_tables(bandwidth, latency, loaded)
    if result["pmdk_overhead"]:
        emit("measure memory", result["pmdk_overhead"], [
            Column("test", "kernel", justify="left"), Column("mode", "mode", justify="left", no_wrap=True),
            Column("threads", "threads"), Column("best_bytes_per_second", "best", format_rate, no_wrap=True),
            Column("reference_mode", "against", justify="left", no_wrap=True),
            Column("reference_best_bytes_per_second", "its best", or_dash(format_rate), no_wrap=True),
            Column("pmdk_overhead", "PMDK's overhead", or_dash(percent), no_wrap=True),
            Column("emulated", "emulated")], "table",
            title="PMDK's overhead: 1 - best(pmdk mode) / best(raw mapping persisted), per kernel")
    for note in notes:
        (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False)


def print_tables(bandwidth: list, latency: list, loaded: list) -> None:
    placement = [Column("node", "node"), Column("mode", "mode", justify="left", no_wrap=True), Column("threads", "threads"),
                 Column("cpus", "CPUs")]
    if bandwidth:
        emit("measure memory", with_interval(bandwidth, "ci", "median_ci_low_bytes_per_second", "median_ci_high_bytes_per_second"), [
            Column("test", "kernel", justify="left"), *placement, Column("size_bytes", "array", format_size, no_wrap=True),
            Column("best_bytes_per_second", "best", format_rate, no_wrap=True),
            Column("median_bytes_per_second", "median", format_rate, no_wrap=True), interval_column("ci", fmt=format_rate),
            Column("min_bytes_per_second", "min", format_rate, no_wrap=True),
            Column("hardware_peak_bytes_per_second", "DRAM peak", format_rate, no_wrap=True),
            Column("fraction_of_peak", "best, % of peak", percent, no_wrap=True), Column("cov", "CoV", lambda v: f"{v:.1%}"),
            Column("count", "n"), Column("stopped", "stopped", justify="left"),
        ], "table", title="Memory bandwidth (STREAM's counting, no write-allocate; headline: best of the timed "
                                  "iterations, STREAM's figure)")
    if latency:
        emit("measure memory", with_interval(latency, "ci", "median_ci_low_seconds", "median_ci_high_seconds"), [
            Column("size_bytes", "working set", format_size), Column("node", "node"),
            Column("median_seconds", "latency (median)", format_time), interval_column("ci"),
            Column("min_seconds", "min", format_time), Column("max_seconds", "max", format_time), Column("count", "n"),
            Column("stopped", "stopped", justify="left"),
        ], "table", title="Load-to-use latency, dependent pointer chase (headline: median)")
    if loaded:
        emit("measure memory", loaded_rows(loaded), [
            Column("node", "node"), Column("mix", "mix", justify="left", no_wrap=True), Column("delay", "delay"),
            Column("median_bytes_per_second", "traffic (median)", format_rate, no_wrap=True),
            interval_column("traffic_ci", fmt=format_rate), Column("best_bytes_per_second", "best", format_rate, no_wrap=True),
            Column("write_allocate_median_bytes_per_second", "+ write-allocate", or_dash(format_rate), no_wrap=True),
            Column("median_seconds", "latency (median)", format_time), interval_column("ci"), Column("count", "n"),
        ], "table", title="Loaded latency: the chase on the first CPU under each read/write mix of the others' traffic, "
                          "from idle (long delay) to saturation (delay 0); traffic checked against memory")


def loaded_rows(points: list) -> list:
    """The loaded-latency points with their two intervals as table cells (latency ``ci``, bandwidth ``traffic_ci``)."""
    shown = with_interval(points, "ci", "median_ci_low_seconds", "median_ci_high_seconds")
    return with_interval(shown, "traffic_ci", "median_ci_low_bytes_per_second", "median_ci_high_bytes_per_second")


def _register_device_commands() -> None:
    from . import measure_collab, measure_device, measure_kernels, measure_network

    app.command("device")(measure_device.device)
    app.command("launch")(measure_device.launch_cmd)
    app.command("collab")(measure_collab.collab)
    app.command("network")(measure_network.network)
    app.command("kernels")(measure_kernels.kernels)


_register_device_commands()

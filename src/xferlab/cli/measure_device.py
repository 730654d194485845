"""`xferlab measure device | launch`: host–accelerator copies and kernel launch latency (registered on
the `measure` verb by cli/measure.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..measure.device import DIRECTIONS, KINDS, SEED_CHUNKS, DevicePlan, platform_device, rows_of, steps
from ..measure import checks
from ..measure.run import measure
from ..units import LIST_HELP, format_rate, format_size, format_time, parse_list, parse_size, parse_time
from ..system.locality import cpu_text, parse_cpus, placement_notes
from .common import (BACKEND, BUDGET, CSV, DEVICE, DEVICE_CPUS, JSON, MAX_TIME, OLD_PLOT, PLATFORM, PLOTS, PRECISION, PROGRAM,
                     STORE, TIMEOUT, budget_seconds, only_with, timeout_seconds)
from ..measure.results import device_results, notes as failure_notes
from ..measure.conventions import footer
from ..measure.peak import lines as peak_lines, percent
from .measure_outcome import conclude
from .output import Column, emit, output_format, stderr, stdout
from .precision_options import interval_column, with_interval
from ..measure.precision import parse_max_time, parse_precision, stopped_text


def device(ctx: typer.Context, backend: str = BACKEND, device_: int = DEVICE, platform: Optional[str] = PLATFORM,
           kinds: Optional[str] = typer.Option(None, "--kinds", help=f"Host memory kinds: {', '.join(KINDS)} (default: all the device supports).",
                                               metavar="LIST"),
           sizes: Optional[str] = typer.Option(None, "--sizes", help=f"Copy sizes: {LIST_HELP} (default: 1B..1GiB, within the device's largest allocation).",
                                               metavar="LIST"),
           directions: str = typer.Option(",".join(DIRECTIONS), "--directions", help="h2d, d2h, d2d, bidir.", metavar="LIST"),
           iterations: int = typer.Option(5, "--iterations", help="Timed copies per point, at least.", metavar="N"),
           min_time: str = typer.Option("20ms", "--min-time", help="Keep timing a point until this much has passed.", metavar="TIME"),
           precision: Optional[str] = PRECISION, max_time: Optional[str] = MAX_TIME,
           order: Optional[str] = typer.Option(None, "--order", help="sequential (each point whole, in turn) or interleaved "
                                               "(rounds of short batches over all points, so the machine's drift reaches every "
                                               "size); default: interleaved with --precision, else sequential.",
                                               metavar="sequential|interleaved"),
           node: Optional[int] = typer.Option(None, "--node", help="NUMA node for the host buffers (memory-only CXL nodes too).", metavar="N"),
           cpus: Optional[str] = DEVICE_CPUS,
           chunks: str = typer.Option(",".join(map(str, SEED_CHUNKS)), "--chunks", help="Chunk sizes for the granularity study ('' to skip).",
                                      metavar="LIST"),
           total: str = typer.Option("256MiB", "--total", help="Bytes moved in all by the granularity study.", metavar="SIZE"),
           launch: bool = typer.Option(True, "--launch/--no-launch", help="Also measure kernel launch latency."),
           matrix: bool = typer.Option(False, "--matrix", help="nvbandwidth's matrices instead: host to device, device to host "
                                       "and device to device for every pair of the backend's (--platform's) devices, at one "
                                       "size (--sizes, default 4x the largest device cache, at least 32MiB) and host memory kind (--kinds, default pinned), with the "
                                       "copy kernel beside each device's own copy."),
           budget: Optional[str] = BUDGET, timeout: str = TIMEOUT,
           plot: Optional[Path] = PLOTS, _old_plot: Optional[str] = OLD_PLOT,
           store: Optional[Path] = STORE,
           json_: bool = JSON, csv_: bool = CSV) -> None:
    """Host↔device copies over a size sweep per host memory kind, chunked transfers and launch latency.

    Copies are counted once (bidir: the sum, and each way); each is set against its PCIe link's payload
    limit for its size (sysfs link, PCIe model), or says why there is none (docs/measure.md).

    Exit code 0 when every step ran, 1 when every step failed, 3 when some did (results kept)."""
    fmt = output_format(json_, csv_)
    if matrix:
        from .measure_device_matrix import run_matrix

        run_matrix(ctx, backend, platform, kinds, sizes, iterations, parse_time(min_time, "--min-time"), fmt, budget,
                   timeout, store)
        return
    only_with(ctx, [("total", bool(chunks), "with --chunks (the granularity study; --chunks '' skips it)")])
    plan = DevicePlan(backend=backend, device=platform_device(backend, platform, device_),
                      kinds=[k.strip() for k in kinds.split(",")] if kinds else None,
                      sizes=[int(s) for s in parse_list(sizes, parse_size, "--sizes")] if sizes else None,
                      directions=[d.strip() for d in directions.split(",")], iterations=iterations,
                      min_time=parse_time(min_time, "--min-time"), node=node, launch=launch,
                      cpus=parse_cpus(cpus) if cpus is not None else None,
                      launch_count=2000 if precision is None else 20_000,  # with a target: the cap
                      chunks=[int(c) for c in parse_list(chunks, parse_size, "--chunks")] if chunks else [],
                      chunk_total=parse_size(total, "--total"), precision=parse_precision(precision),
                      max_time=parse_max_time(max_time), order=order)
    plan.check()
    _run("measure device", plan, fmt, budget, timeout, store, plot)


def launch_cmd(backend: str = BACKEND, device_: int = DEVICE, platform: Optional[str] = PLATFORM,
               count: int = typer.Option(100_000, "--count", help="Launches per argument count (with --budget: at most this many)."),
               args: str = typer.Option("0,1,4,8", "--args", help="Buffer arguments of the empty kernel (0..8).", metavar="LIST"),
               pin: Optional[int] = typer.Option(None, "--pin", help="Also measure with the host thread pinned to this CPU.", metavar="CPU"),
               cpus: Optional[str] = DEVICE_CPUS,
               program: Optional[Path] = PROGRAM,
               precision: Optional[str] = PRECISION, max_time: Optional[str] = MAX_TIME,
               budget: Optional[str] = BUDGET, timeout: str = TIMEOUT,
               plot: Optional[Path] = PLOTS, _old_plot: Optional[str] = OLD_PLOT,
               store: Optional[Path] = STORE,
               json_: bool = JSON, csv_: bool = CSV) -> None:
    """Kernel launch latency: an empty kernel launched and waited for, COUNT times (median and tail).

    Exit code 0 when every step ran, 1 when every step failed, 3 when some did (results kept)."""
    fmt = output_format(json_, csv_)
    try:
        arg_counts = [int(a) for a in args.split(",")]
        if len(arg_counts) > 9 * 16:
            raise ValueError
    except ValueError:
        from ..errors import BadValue
        raise BadValue(f"--args '{args}' is not a list of whole numbers 0..8") from None
    plan = DevicePlan(backend=backend, device=platform_device(backend, platform, device_), transfers=False, launch=True,
                      launch_count=count, launch_args=arg_counts, pin=pin,
                      cpus=parse_cpus(cpus) if cpus is not None else None, precision=parse_precision(precision),
                      max_time=parse_max_time(max_time), program=program)
    plan.check()
    budget_s = budget_seconds(budget)
    timeout_seconds(timeout)
    checks.plot_dir(plot)
    if budget_s:  # the count the budget allows (80 % of it), at most --count
        plan.fit_launches(0.8 * budget_s)
    _run("measure launch", plan, fmt, budget, timeout, store, plot)


def _run(command: str, plan: DevicePlan, fmt: str, budget: Optional[str], timeout: str, store: Optional[Path],
         plot: Optional[Path]) -> None:
    timeout_s, budget_s = timeout_seconds(timeout), budget_seconds(budget)
    checks.plot_dir(plot)
    outcome = measure(command, steps(plan), rows_of, "device",
                      params={"backend": plan.backend, "device": plan.device, "platform": plan.info.get("platform"), "kinds": plan.kind_list(),
                              "directions": plan.directions, "sizes": plan.size_list() if plan.transfers else [],
                              "node": plan.node, "cpus": None if plan.cpus is None else cpu_text(plan.cpus),
                              "launch_count": plan.launch_count if plan.launch else 0,
                              "chunks": plan.chunks, "precision": plan.precision, "max_time_seconds": plan.max_time,
                              **({"order": plan.transfer_order()} if plan.transfers else {})},
                      store_path=store, timeout=timeout_s, budget=budget_s, extra_inventory={"accelerator": plan.info})
    report(outcome, plan, fmt, plot)
    conclude(outcome, fmt)


def report(outcome, plan: DevicePlan, fmt: str, plot: Optional[Path]) -> None:
    result = device_results(outcome, plot)
    name = plan.info.get("name", "?")
    notes = [f"device: {plan.backend} #{plan.device} {name}; run {outcome.run_id} recorded in {outcome.store_path}"]
    notes += placement_notes(plan.cpus, plan.info)
    if result["transfers"] or result["chunks"]:  # what each bandwidth counts, and the link it is held against
        notes += footer("device", [r["direction"] for r in result["transfers"]] + (["chunks"] if result["chunks"] else []))
        notes += peak_lines(result["peaks"])
    notes += failure_notes(result["failures"])
    notes += [f"plot: {p}" for p in result["plots"]]
    if fmt != "table":
        rows = ([{"test": "transfer", **r} for r in result["transfers"]] + [{"test": "launch", **r} for r in result["launch"]]
                + [{"test": "chunks", **r} for r in result["chunks"]])
        emit(outcome_command(outcome), rows, [Column(k, k) for k in sorted({k for r in rows for k in r})], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                    "machine_state": outcome.machine_state, "device": plan.info,
                    "overview": result["overview"], "conventions": result["conventions"], "peaks": result["peaks"],
                    "failures": result["failures"],
                    "unvalidated_samples": result["unvalidated_samples"]})
        return
    print_device_tables(result)
    for note in notes:
        (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False)


def outcome_command(outcome) -> str:
    return "measure device" if any(r.step.test == "transfer" for r in outcome.results) else "measure launch"


def _direction(value: str) -> str:
    return "bidir (sum)" if value == "bidir" else value


def print_device_tables(result: dict) -> None:
    if result["overview"]:
        overview = with_interval(with_interval(result["overview"], "latency_ci", "latency_ci_low_seconds",
                                               "latency_ci_high_seconds"), "bandwidth_ci",
                                 "bandwidth_ci_low_bytes_per_second", "bandwidth_ci_high_bytes_per_second")
        emit("measure device", overview, [
            Column("host_kind", "host memory", justify="left"), Column("direction", "direction", _direction, justify="left"),
            Column("latency_seconds", "latency (smallest)", format_time, no_wrap=True), interval_column("latency_ci"),
            Column("bandwidth_bytes_per_second", "bandwidth (largest)", format_rate, no_wrap=True),
            interval_column("bandwidth_ci", fmt=format_rate),
            Column("device_bandwidth_bytes_per_second", "device clock", format_rate, no_wrap=True),
            Column("largest_bytes", "at", format_size, no_wrap=True),
            Column("half_bandwidth_bytes", "n½", format_size, no_wrap=True),
            Column("stopped_points", "stopped (points)", stopped_text, justify="left"),
        ], "table", title="Copies (medians; latency of the smallest copy, bandwidth of the largest, n½ = size reaching half of it)")
        emit("measure device", result["overview"], [
            Column("host_kind", "host memory", justify="left"), Column("direction", "direction", _direction, justify="left"),
            Column("largest_bytes", "size", format_size, no_wrap=True),
            Column("bandwidth_bytes_per_second", "bandwidth (median)", format_rate, no_wrap=True),
            Column("direction_bandwidth_bytes_per_second", "each way", format_rate, no_wrap=True),
            Column("hardware_peak_bytes_per_second", "link peak", format_rate, no_wrap=True),
            Column("fraction_of_peak", "% of peak", percent, no_wrap=True),
        ], "table", title="Against the link's peak: the largest copy beside the link model's payload limit for its size")
    if result["chunks"]:
        emit("measure device", with_interval(result["chunks"], "ci", "median_ci_low_seconds", "median_ci_high_seconds"), [
            Column("host_kind", "host memory", justify="left"), Column("chunk_bytes", "chunk", lambda v: format_size(v, 10), no_wrap=True),
            Column("transfers", "transfers"), Column("median_seconds", "total time", format_time, no_wrap=True),
            interval_column("ci"), Column("median_bytes_per_second", "bandwidth", format_rate, no_wrap=True),
            Column("count", "n"), Column("stopped", "stopped", justify="left"),
        ], "table", title="Granularity: the same total in small or large transfers (seed 004)")
    if result["launch"]:
        emit("measure launch", with_interval(result["launch"], "ci", "median_ci_low_seconds", "median_ci_high_seconds"), [
            Column("backend", "API", justify="left"), Column("kernel_args", "buffer args"), Column("pinned_cpu", "pinned"),
            Column("median_seconds", "median", format_time, no_wrap=True), interval_column("ci"),
            Column("relative_to_opencl", "/ OpenCL", lambda v: "–" if v is None else f"{v:.2f}x", no_wrap=True),
            Column("p99_seconds", "p99", format_time, no_wrap=True),
            Column("max_seconds", "max", format_time, no_wrap=True),
            Column("device_median_seconds", "device (kernel)", format_time, no_wrap=True), Column("count", "n"),
            Column("stopped", "stopped", justify="left"),
        ], "table", title="Kernel launch latency: empty kernel, submit + wait (host clock; headline: median)")

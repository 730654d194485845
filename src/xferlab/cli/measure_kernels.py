"""`xferlab measure kernels`: device STREAM (BabelStream's kernels) on device memory and on host
memory, its scaling over work-groups and concurrent instances, first-touch faults of shared memory,
copies by host offset and allocator, SpMV. Registered on the `measure` verb by cli/measure.py; the
work is in measure/kernels.py and the probe's kernels.cpp."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import BadValue
from ..measure import checks
from ..measure import peak
from ..measure.kernel_results import (align_summary, d2d_summary, fault_summary, overview, scaling, stream_summary,
                                      with_peaks)
from ..measure.kernels import KERNELS, OFFSETS, KernelPlan, rows_of, steps
from ..measure.conventions import footer, metadata
from ..measure.results import failures as failed_steps, notes as failure_notes, unvalidated_total
from ..system.locality import cpu_text, given_cpus, placement_notes
from ..measure.run import measure
from ..units import format_rate, format_size, format_time, parse_list, parse_size, parse_time
from ..measure.device import platform_device
from .common import (BACKEND, BUDGET, CSV, DEVICE, DEVICE_CPUS, JSON, KERNELS_MAX_TIME, PLATFORM, PLOTS, PROGRAM, STORE,
                     TIMEOUT, budget_seconds, only_with, timeout_seconds)
from .measure_outcome import conclude
from .output import Column, emit, or_dash, output_format, stderr, stdout
from .precision_options import interval_column, with_interval


def _words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def _ints(text: str, where: str, what: str = "") -> list[int]:
    """A LIST of byte counts, or (``what`` given: "a vector width, 1, 2, 4, 8 or 16") of whole numbers of things."""
    def whole(item: str, where: str) -> int:
        if item.strip().isascii() and item.strip().isdigit():
            return int(item)
        raise BadValue(f"{where} '{item.strip()}' is not {what}")

    return [int(v) for v in parse_list(text, whole if what else lambda t, w: parse_size(t, w, allow_zero=True), where,
                                       max_items=64)]


def kernels(ctx: typer.Context,
            backend: str = BACKEND, device_: int = DEVICE, platform: Optional[str] = PLATFORM,
            kernel_list: str = typer.Option(",".join(KERNELS), "--kernels", metavar="LIST",
                                            help="copy (c=a), mul (b=s*c), add (c=a+b), triad (a=b+s*c), dot (sum a*b): "
                                                 "BabelStream's; read (sum a): read-only."),
            size: Optional[str] = typer.Option(None, "--size", help="Bytes per array (default: STREAM's rule, 4x the "
                                               "device's last-level cache, at least 64 MiB, at most its largest "
                                               "allocation).", metavar="SIZE"),
            memory: Optional[str] = typer.Option(None, "--memory", metavar="LIST",
                                                 help="device; kernels on host memory: pinned (runtime-allocated), host "
                                                      "(the application's, CL_MEM_USE_HOST_PTR), svm-coarse, svm-fine "
                                                      "(OpenCL; default device,pinned,svm-fine); CUDA: device, pinned, "
                                                      "managed, managed-prefetch (default device,pinned,managed)."),
            types: str = typer.Option("float", "--types", help="float, double.", metavar="LIST"),
            widths: str = typer.Option("1,4", "--widths", help="Elements per work-item: 1, 2, 4, 8, 16.", metavar="LIST"),
            groups: str = typer.Option("0", "--groups", metavar="LIST",
                                       help="Work-groups per launch (0: one work-item per vector for the streaming "
                                            "kernels, ~8 vectors per work-item for dot and read)."),
            instances: str = typer.Option("1", "--instances", metavar="LIST",
                                          help="Concurrent kernel instances, one queue and disjoint arrays each (seed "
                                               "004's kernel copies)."),
            scaling_: bool = typer.Option(False, "--scaling", help="Sweep work-groups 1, 2, 4 … 8 per compute unit and "
                                          "instances 1, 2, 4: the scaling table (speedup against the fewest)."),
            iterations: int = typer.Option(20, "--iterations", help="Timed launches per point (after 2 warm-ups).",
                                           metavar="N"),
            max_time: Optional[str] = KERNELS_MAX_TIME,
            faults: bool = typer.Option(False, "--faults", help="Also time a kernel's first touch of fresh shared "
                                        "memory against its second, and the host reading it back."),
            strides: str = typer.Option("4096", "--strides", help="Bytes between touches (--faults).", metavar="LIST"),
            align: bool = typer.Option(False, "--align", help="Also copy H2D and D2H from host buffers at offsets from a "
                                       "page, runtime- and application-allocated (seed 004's DMA hazard)."),
            offsets: str = typer.Option(",".join(map(str, OFFSETS)), "--offsets", metavar="LIST",
                                        help="Bytes from a page boundary (--align)."),
            peer: Optional[int] = typer.Option(None, "--peer", metavar="N",
                                               help="Also copy device to device, --device to device N. OpenCL: "
                                                    "through the runtime (one context) and staged through pinned host "
                                                    "memory; CUDA: cuMemcpyPeerAsync, peer to peer where the devices "
                                                    "allow it, else staged by the driver."),
            spmv: Optional[str] = typer.Option(None, "--spmv", metavar="FILE|ROWS",
                                               help="Also run CSR SpMV on a Matrix Market file, or on a generated "
                                                    "matrix of ROWS rows; checked against SciPy."),
            per_row: int = typer.Option(16, "--per-row", help="Entries per row of a generated matrix.", metavar="N"),
            structure: str = typer.Option("random", "--structure", help="Columns of a generated matrix.",
                                          metavar="random|banded"),
            spmv_type: str = typer.Option("double", "--spmv-type", help="SpMV values: float or double.",
                                          metavar="float|double"),
            cpus: Optional[str] = DEVICE_CPUS,
            program: Optional[Path] = PROGRAM,
            budget: Optional[str] = BUDGET, timeout: str = TIMEOUT,
            plot: Optional[Path] = PLOTS, store: Optional[Path] = STORE,
            json_: bool = JSON, csv_: bool = CSV) -> None:
    """Device STREAM, kernels on host memory, scaling, first-touch faults, copies by alignment, SpMV.

    OpenCL runs all of it; CUDA the STREAM kernels (width 1) and --faults on managed memory.
    Each STREAM point's best launch is held against the device memory's peak (CUDA: memory clock x 2 x bus
    width) or, on CUDA's mapped pinned memory, the PCIe link's, and an --align copy against the link; else
    "peak unknown" or "no link" with the reason (docs/measure.md).
    Exit code 0 when every step ran, 1 when every step failed, 3 when some did (results kept)."""
    fmt = output_format(json_, csv_)
    from ..measure.spmv import names_a_file

    generated = spmv is not None and not names_a_file(spmv)
    only_with(ctx, [("strides", faults, "with --faults"), ("offsets", align, "with --align"),
                    ("per_row", generated, "with --spmv ROWS (a generated matrix)"),
                    ("structure", generated, "with --spmv ROWS (a generated matrix)"),
                    ("spmv_type", spmv is not None, "with --spmv"),
                    ("groups", not scaling_, "without --scaling (--scaling sweeps the work-groups itself)")])
    plan = KernelPlan(backend=backend, device=platform_device(backend, platform, device_), kernels=_words(kernel_list),
                      memories=_words(memory) if memory is not None else None,
                      types=_words(types), widths=_ints(widths, "--widths", "a vector width (elements per work-item); allowed: 1, 2, 4, 8, 16"), size=parse_size(size, "--size") if size is not None else None,
                      groups=_ints(groups, "--groups", "a number of work-groups; allowed: 0 (chosen per kernel) or more"),
                      instances=_ints(instances, "--instances", "a number of kernel instances; allowed: 1..64"), iterations=iterations,
                      scaling=scaling_, faults=faults, strides=_ints(strides, "--strides"), align=align,
                      offsets=_ints(offsets, "--offsets"), spmv=spmv, spmv_structure=structure, spmv_per_row=per_row,
                      spmv_type=spmv_type, peer=peer, cpus=given_cpus(cpus), program=program)
    if spmv_type not in ("float", "double"):
        from ..errors import BadValue

        raise BadValue(f"--spmv-type '{spmv_type}' is not allowed; allowed: float, double")
    if max_time is not None:
        plan.max_time = parse_time(max_time, "--max-time", allow_zero=False)
        if plan.max_time > 3600:
            from ..errors import BadValue

            raise BadValue(f"--max-time {max_time}: at most 1 h per point")
    plan.check()
    timeout_s, budget_s = timeout_seconds(timeout), budget_seconds(budget)
    checks.plot_dir(plot)
    with tempfile.TemporaryDirectory(prefix="xferlab-kernels-") as tmp:
        outcome = measure("measure kernels", steps(plan, Path(tmp)), rows_of, "kernels", params=params(plan),
                          store_path=store, timeout=timeout_s, budget=budget_s, extra_inventory={"accelerator": plan.info})
    report(outcome, plan, fmt, plot)
    conclude(outcome, fmt)


def params(plan: KernelPlan) -> dict[str, Any]:
    groups, instances = plan.scaling_lists()
    return {"backend": plan.backend, "device": plan.device, "platform": plan.info.get("platform"), "kernels": plan.kernels, "memories": plan.memories,
            "types": plan.types, "widths": plan.widths, "size": plan.size, "groups": groups, "instances": instances,
            "iterations": plan.iterations, "faults": plan.faults, "strides": plan.strides if plan.faults else None,
            "align": plan.align, "offsets": plan.offsets if plan.align else None, "spmv": plan.spmv, "peer": plan.peer,
            "spmv_structure": plan.spmv_structure if plan.spmv else None,
            "cpus": None if plan.cpus is None else cpu_text(plan.cpus)}


_rate, _time, _ratio = or_dash(format_rate), or_dash(format_time), or_dash(lambda v: f"{v:.2f}")


STREAM_COLUMNS = [
    Column("memory", "memory", justify="left"), Column("kernel", "kernel", justify="left"),
    Column("type", "type", justify="left"), Column("width", "width"), Column("groups", "groups"),
    Column("instances", "inst."), Column("size_bytes", "arrays", format_size, no_wrap=True),
    Column("array_size_class", "size class", lambda v: v or "unknown", justify="left"),
    Column("best_bytes_per_second", "best", _rate, no_wrap=True),
    Column("median_bytes_per_second", "median", _rate, no_wrap=True), interval_column("median_ci", fmt=format_rate),
    Column("hardware_peak_bytes_per_second", "peak", _rate, no_wrap=True),
    Column("fraction_of_peak", "best, % of peak", peak.percent, no_wrap=True), Column("count", "n"),
]
SCALING_COLUMNS = [
    Column("memory", "memory", justify="left"), Column("kernel", "kernel", justify="left"), Column("width", "width"),
    Column("groups", "groups"), Column("instances", "inst."), Column("best_bytes_per_second", "best", _rate, no_wrap=True),
    Column("speedup_vs_fewest_groups", "x fewest groups", _ratio), Column("speedup_vs_one_instance", "x one instance", _ratio),
]
FAULT_COLUMNS = [
    Column("memory", "memory", justify="left"), Column("stride_bytes", "stride", format_size),
    Column("touches", "touches"), Column("first_touch_median_seconds", "first touch", _time, no_wrap=True),
    Column("second_touch_median_seconds", "second", _time, no_wrap=True),
    Column("fault_per_touch_median_seconds", "fault / touch", _time, no_wrap=True),
    Column("host_back_per_touch_median_seconds", "host back / touch", _time, no_wrap=True), Column("count", "n"),
]
ALIGN_COLUMNS = [
    Column("direction", "direction", justify="left"), Column("allocator", "allocator", justify="left"),
    Column("offset_bytes", "offset"), Column("median_bytes_per_second", "median", _rate, no_wrap=True),
    Column("best_bytes_per_second", "best", _rate, no_wrap=True),
    Column("relative_to_runtime_aligned", "x runtime, offset 0", _ratio),
    Column("hardware_peak_bytes_per_second", "link peak", _rate, no_wrap=True),
    Column("fraction_of_peak", "median, % of peak", peak.percent, no_wrap=True), Column("count", "n"),
]
D2D_COLUMNS = [
    Column("path", "path", justify="left"), Column("device_index", "from"), Column("peer_index", "to"),
    Column("size_bytes", "size", format_size), Column("median_bytes_per_second", "median", _rate, no_wrap=True),
    Column("best_bytes_per_second", "best", _rate, no_wrap=True), Column("count", "n"),
]
SPMV_COLUMNS = [
    Column("type", "type", justify="left"), Column("rows", "rows"), Column("nnz", "entries"), Column("groups", "groups"),
    Column("instances", "inst."), Column("best_bytes_per_second", "best", _rate, no_wrap=True),
    Column("best_flops_per_second", "GFLOP/s", or_dash(lambda v: f"{v / 1e9:.3g}")), Column("count", "n"),
]


def results(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    summary = stream_summary(rows)
    return {"stream": [s for s in summary if s["kernel"] != "spmv"], "spmv": [s for s in summary if s["kernel"] == "spmv"],
            "scaling": scaling(summary), "faults": fault_summary(rows), "align": align_summary(rows),
            "d2d": d2d_summary(rows),
            "overview": overview(summary)}


def report(outcome, plan: KernelPlan, fmt: str, plot: Optional[Path]) -> None:
    peaks = peak.of(outcome)
    got = with_peaks(results(outcome.rows), peaks, plan.backend)  # % of the device memory's or the link's peak
    plots = []
    if plot and (got["stream"] or got["spmv"]):
        from ..plots.measured import plot_kernels

        plots = plot_kernels(got["stream"] + got["spmv"], got["scaling"], Path(plot))
    name = plan.info.get("name", "?")
    notes = [f"device: {plan.backend} #{plan.device} {name}; run {outcome.run_id} recorded in {outcome.store_path}"]
    notes += placement_notes(plan.cpus, plan.info)
    for result in outcome.results:
        notes += [f"not available: {u}" for u in result.step.learned.get("unavailable", [])]
    notes += failure_notes(failed_steps(outcome))
    notes += [f"plot: {p}" for p in plots]
    counted = [r.get("kernel") for r in got["stream"]] + [r.get("direction") for r in got.get("align") or []]
    if counted:  # what each bandwidth counts (measure/conventions.py), and the peaks they are held against
        notes += footer("kernels", counted) + peak.lines(peaks) + peak.unknown_notes(got["stream"] + got["align"], peaks)
    if fmt != "table":
        emit("measure kernels", got["stream"] + got["spmv"], [Column(k, k) for k in dict.fromkeys(
             k for r in got["stream"] + got["spmv"] for k in r)], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                    "machine_state": outcome.machine_state, "device": plan.info,
                    "conventions": metadata("kernels", counted), "peaks": peaks,
                    **{k: v for k, v in got.items() if k not in ("stream", "spmv")},
                    "failures": failed_steps(outcome), "unvalidated_samples": unvalidated_total(outcome),
                    "plots": [str(p) for p in plots]})
        return
    tables = [("stream", STREAM_COLUMNS, "Device STREAM (BabelStream's kernels and byte counts): best = the fastest launch "
               "(BabelStream's figure), median with its 95 % interval; memory = where the arrays live"),
              ("scaling", SCALING_COLUMNS, "Scaling over work-groups and concurrent instances (seed 004's ports and "
               "kernel copies): speedup against the fewest groups and against one instance"),
              ("faults", FAULT_COLUMNS, "First touch of fresh shared memory by a kernel (medians): fault / touch = "
               "(first - second) / touches"),
              ("align", ALIGN_COLUMNS, "Copies from host buffers at an offset from a page, by who allocated them"),
              ("d2d", D2D_COLUMNS, "Device to device between two devices: runtime = one context holds both, the runtime "
               "moves the bytes (peer or through the host, it does not say); staged = through pinned host memory "
               "(CUDA: by the driver, no peer access); peer = CUDA peer access enabled"),
              ("spmv", SPMV_COLUMNS, "CSR SpMV, checked against SciPy: bytes = values, column indices, row pointers, x "
               "and y once; 2 flops per entry")]
    for key, columns, title in tables:
        if got[key]:
            shown = with_interval(got[key], "median_ci", "median_ci_low_bytes_per_second", "median_ci_high_bytes_per_second")
            emit("measure kernels", shown, columns, "table", title=title)
    for note in notes:
        (stderr if note.startswith(("failed", "skipped", "not available")) else stdout).print(note, highlight=False,
                                                                                              markup=False)

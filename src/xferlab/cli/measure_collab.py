"""`xferlab measure collab`: CHAI-style collaborative CPU–device patterns in their D (device buffers,
explicit copies) and U (shared virtual memory, system atomics) versions, time split into allocation,
copy and kernel and normalized to D as in seed 001's Figure 4. Registered on the `measure` verb by
cli/measure.py."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import typer

from ..measure.collab import (ADVICE, DEFAULT_ADVISE, DEFAULT_COLS, DEFAULT_HEIGHT, DEFAULT_SUPER_ELEMENT, DEFAULT_WIDTH, PATTERNS,
                              CollabPlan, rows_of, steps, summary)
from ..measure import checks
from ..measure.run import measure
from ..units import COUNT_HELP, format_time, parse_count
from ..measure.device import platform_device
from ..system.locality import cpu_text, given_cpus, placement_notes
from .common import (BACKEND, BUDGET, CSV, DEVICE, DEVICE_CPUS, JSON, OLD_PLOT, PLATFORM, PLOTS, PROGRAM, STORE, TIMEOUT,
                     budget_seconds, only_with, renamed, timeout_seconds)
from ..measure.results import failures as failed_steps, notes as failure_notes, unvalidated_total
from .measure_outcome import conclude
from .output import Column, emit, output_format, stderr, stdout


def _time(value: Optional[float]) -> str:
    return format_time(value) if value is not None and math.isfinite(value) else "–"


def _ratio(value: Optional[float]) -> str:
    return f"{value:.2f}" if value is not None else "–"


def collab(ctx: typer.Context, backend: str = BACKEND, device_: int = DEVICE, platform: Optional[str] = PLATFORM,
           patterns: str = typer.Option(",".join(PATTERNS), "--patterns",
                                        help="histogram (data partitioning), taskqueue (task partitioning), pad (CHAI's PAD: "
                                             "in-place padding, flags a row), trns (CHAI's TRNS: in-place transposition, a flag a "
                                             "super-element), bs (CHAI's BS: a Bézier surface, tiles of the output).", metavar="LIST"),
           size: str = typer.Option("1Mi", "--elements", help=f"Values binned (histogram) or floats transformed (taskqueue): "
                                    f"{COUNT_HELP}. Not trns: its matrix is --height x --width.", metavar="COUNT"),
           _old_size: Optional[str] = renamed("--size", "--elements COUNT", "a count of values, not bytes"),
           host_threads: Optional[int] = typer.Option(None, "--host-threads",
                                                      help="Host threads working beside the device (default: half the CPUs).",
                                                      metavar="T"),
           device_share: float = typer.Option(0.5, "--device-share",
                                              help="Fraction of the input (histogram) or of the tasks (taskqueue, pad and bs D) the "
                                                   "device takes; trns D: the device alone unless 0.",
                                              metavar="F"),
           block: int = typer.Option(4096, "--block", help="Floats per task (taskqueue).", metavar="N"),
           cols: int = typer.Option(DEFAULT_COLS, "--cols", help="PAD: columns of the matrix; --elements / --cols rows, each "
                                     "a task with one flag (8192: CHAI's task size).", metavar="N"),
           pad: int = typer.Option(16, "--pad", help="PAD: columns added to each row.", metavar="N"),
           advise: str = typer.Option(DEFAULT_ADVISE, "--advise",
                                      help=f"PAD U on CUDA: cuMemAdvise hints on its managed memory, one of {', '.join(ADVICE)} "
                                           "(default none, as CHAI's; preferred-device, the matrix's preferred location the GPU, is "
                                           "our reading of seed 001's remedy for PAD's U; flags-accessed-by maps the flags).",
                                      metavar="HINT"),
           height: int = typer.Option(DEFAULT_HEIGHT, "--height", help="TRNS: matrix height, rows (CHAI's -m).",
                                      metavar="N"),
           width: int = typer.Option(DEFAULT_WIDTH, "--width", help="TRNS: matrix width in floats, a multiple of "
                                     "--super-element (CHAI's -n).", metavar="N"),
           super_element: int = typer.Option(DEFAULT_SUPER_ELEMENT, "--super-element", help="TRNS: floats moved as one "
                                             "and flagged as one, 1..256 (CHAI's -s).", metavar="N"),
           resolution: int = typer.Option(300, "--resolution", help="BS: points per side of the surface (CHAI's -n).",
                                          metavar="N"),
           tile: int = typer.Option(16, "--tile", help="BS: points per side of a tile, the unit of the split (CHAI's -i).",
                                    metavar="N"),
           iterations: int = typer.Option(16, "--math-iterations", help="Math iterations per float (taskqueue).", metavar="N"),
           _old_iterations: Optional[str] = renamed("--iterations", "--math-iterations N",
                                                    "math per float; --iterations elsewhere counts timed repetitions"),
           repeats: int = typer.Option(100, "--repeats", help="Timed runs per pattern and version (CHAI's 100); the "
                                       "headline is their mean, the median and its interval beside.", metavar="R"),
           warmups: int = typer.Option(10, "--warmup", help="Runs before the timed ones, out of the statistics "
                                       "(CHAI's 10).", metavar="W"),
           cpus: Optional[str] = DEVICE_CPUS,
           program: Optional[Path] = PROGRAM,
           budget: Optional[str] = BUDGET, timeout: str = TIMEOUT,
           plot: Optional[Path] = PLOTS, _old_plot: Optional[str] = OLD_PLOT,
           store: Optional[Path] = STORE,
           json_: bool = JSON, csv_: bool = CSV) -> None:
    """CPU+device collaboration (CHAI): D (copies) against U (shared memory + atomics), normalized to D.

    OpenCL runs every pattern, U on shared virtual memory; CUDA the histogram and PAD, U on managed memory
    (PAD's with the cuMemAdvise hints --advise names).
    Exit code 0 when every step ran, 1 when every step failed, 3 when some did (results kept)."""
    fmt = output_format(json_, csv_)
    queue = "taskqueue" in [p.strip() for p in patterns.split(",")]
    padding = "pad" in [p.strip() for p in patterns.split(",")]
    named = [p.strip() for p in patterns.split(",") if p.strip()]
    transposing = "trns" in named
    bezier = "bs" in named
    only_with(ctx, [("block", queue, "with taskqueue in --patterns"),
                    ("iterations", queue, "with taskqueue in --patterns"),
                    ("cols", padding, "with pad in --patterns"), ("pad", padding, "with pad in --patterns"),
                    ("advise", padding and backend == "cuda", "with --backend cuda and pad in --patterns"),
                    ("size", bool({"histogram", "taskqueue", "pad"} & set(named)), "with histogram, taskqueue or pad in --patterns (trns: --height, --width; bs: --resolution, --tile)"),
                    ("resolution", bezier, "with bs in --patterns"), ("tile", bezier, "with bs in --patterns"),
                    *[(name, transposing, "with trns in --patterns") for name in ("height", "width", "super_element")]])
    plan = CollabPlan(backend=backend, device=platform_device(backend, platform, device_), patterns=[p.strip() for p in patterns.split(",") if p.strip()],
                      size=parse_count(size, "--elements"), block=block, cols=cols, pad=pad, height=height, width=width,
                      super_element=super_element, resolution=resolution, tile=tile, iterations=iterations, host_threads=host_threads,
                      repeats=repeats, warmups=warmups, device_share=device_share, cpus=given_cpus(cpus), program=program,
                      advise=advise)
    plan.check()
    timeout_s, budget_s = timeout_seconds(timeout), budget_seconds(budget)
    checks.plot_dir(plot)
    outcome = measure("measure collab", steps(plan), rows_of, "device",
                      params={"backend": plan.backend, "device": plan.device, "platform": plan.info.get("platform"),
                              "patterns": plan.patterns,
                              "versions": plan.versions, "size": plan.size, "block": plan.block,
                              "iterations": plan.iterations, "cols": plan.cols, "pad": plan.pad, "height": plan.height, "width": plan.width,
                              "super_element": plan.super_element, "resolution": plan.resolution, "tile": plan.tile,
                              "advise": plan.advise if plan.backend == "cuda" and "pad" in plan.patterns else None, "host_threads": plan.threads, "repeats": plan.repeats,
                              "warmups": plan.warmups,
                              "device_share": plan.device_share, "cpus": None if plan.cpus is None else cpu_text(plan.cpus)},
                      store_path=store, timeout=timeout_s, budget=budget_s, extra_inventory={"accelerator": plan.info})
    report(outcome, plan, fmt, plot)
    conclude(outcome, fmt)


COLUMNS = [
    Column("pattern", "pattern", justify="left"), Column("version", "version", justify="left"),
    Column("allocation_seconds", "allocation", format_time, no_wrap=True),
    Column("copy_seconds", "copy", format_time, no_wrap=True),
    Column("kernel_seconds", "kernel", format_time, no_wrap=True),
    Column("total_seconds", "mean total", format_time, no_wrap=True),
    Column("median_seconds", "median", format_time, no_wrap=True),
    Column("median_ci_low_seconds", "95 % low", _time, no_wrap=True),
    Column("median_ci_high_seconds", "95 % high", _time, no_wrap=True),
    Column("allocation_normalized", "alloc/D", _ratio), Column("copy_normalized", "copy/D", _ratio),
    Column("kernel_normalized", "kernel/D", _ratio), Column("total_normalized", "total/D", _ratio),
    Column("device_share", "device share", _ratio), Column("count", "n"),
]


def report(outcome, plan: CollabPlan, fmt: str, plot: Optional[Path]) -> None:
    result = summary(outcome.rows)
    failures = failed_steps(outcome)
    plots = []
    if plot and result:
        from ..plots.measured import plot_collab

        plots.append(plot_collab(result, Path(plot) / "collab.png"))
    name = plan.info.get("name", "?")
    atomics = sorted({r["atomics_path"] for r in result if r["version"] == "U" and r.get("atomics_path")})
    notes = [f"device: {plan.backend} #{plan.device} {name}; {plan.threads} host thread(s); "
             f"run {outcome.run_id} recorded in {outcome.store_path}"]
    if atomics:
        notes.append(f"U atomics: {', '.join(atomics)}")
    pad = next((r for r in result if r["pattern"] == "pad" and r.get("groups_rule")), None)
    if pad:
        notes.append(f"PAD: {pad['groups']} work-group(s) a launch, D and U ({pad['groups_rule']})")
    if plan.backend == "cuda" and "pad" in plan.patterns and "U" in plan.versions:
        notes.append(f"PAD U's cuMemAdvise hints: --advise {plan.advise}")
    notes += placement_notes(plan.cpus, plan.info)
    notes += failure_notes(failures)
    notes += [f"plot: {p}" for p in plots]
    if fmt != "table":
        keys = list(dict.fromkeys(k for r in result for k in r))
        emit("measure collab", result, [Column(k, k) for k in keys], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                    "machine_state": outcome.machine_state, "device": plan.info,
                    "failures": failures, "unvalidated_samples": unvalidated_total(outcome),
                    "plots": [str(p) for p in plots]})
        return
    if result:
        emit("measure collab", result, COLUMNS, "table",
             title=f"CHAI's method: mean of {plan.repeats} timed runs after {plan.warmups} warm-ups, median "
                   "and its 95 % interval beside; /D = divided by D's mean total (seed 001, Figure 4)")
    for note in notes:
        (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False)

"""`xferlab simulate SYSTEM WORKFLOW` and `xferlab simulate sweep SYSTEM WORKFLOW --chunk LIST`:
the flow simulator on a system and a workflow, given as YAML files or packaged names."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from ..errors import BadValue
from ..sim import flows
from ..system.models import STRATEGIES, System, Workflow
from ..scenarios.packaged import load_named
from ..units import LIST_HELP, format_size, format_time, parse_list, parse_size
from .common import CSV, JSON, only_with
from .output import Column, emit, output_format

def simulate(
    ctx: typer.Context,
    args: list[str] = typer.Argument(..., metavar="[sweep] SYSTEM WORKFLOW",
                                     help="A system and a workflow: YAML files or packaged names (seed-testbed, "
                                          "seed-testbed-cxl, ac922, grace-hopper; deceval). With 'sweep' first: a chunk-size sweep."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help=f"Override every edge: {', '.join(STRATEGIES)}.",
                                           metavar="STRATEGY"),
    chunk: Optional[str] = typer.Option(None, "--chunk", help="Pipelined: bytes per chunk.", metavar="SIZE"),
    chunks: Optional[str] = typer.Option(None, "--chunks", help=f"sweep: the chunk sizes, {LIST_HELP}.", metavar="LIST"),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write a Gantt chart (seed 000, Figure 6 style; not with sweep "
                                         "or a run past the engine's chunk limit).", metavar="FILE"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="sweep: write makespan against chunk size to FILE.", metavar="FILE"),
    json_: bool = JSON, csv_: bool = CSV,
) -> None:
    """Simulate a workflow's data flow on a system: makespan, timeline, utilization, critical path."""
    fmt = output_format(json_, csv_)
    sweep = bool(args) and args[0] == "sweep"
    names = args[1:] if sweep else args
    if len(names) != 2:
        raise BadValue(f"give a SYSTEM and a WORKFLOW{' after sweep' if sweep else ''} (got {len(names)} argument"
                       f"{'s' * (len(names) != 1)}: {' '.join(names) or 'none'})")
    if strategy is not None and strategy not in STRATEGIES:
        raise BadValue(f"--strategy '{strategy}' is not allowed; allowed: {', '.join(STRATEGIES)}")
    system = load_named(names[0], System, "system")
    workflow = load_named(names[1], Workflow, "workflow")
    if sweep:
        refused = [(opt, why) for opt, why, given in (
            ("--strategy", "a sweep pipelines every edge", strategy is not None),
            ("--chunk", "give the sweep's sizes with --chunks LIST", chunk is not None),
            ("--gantt", "a sweep draws no timeline; use --plot FILE", gantt is not None)) if given]
        if refused:
            raise BadValue(f"simulate sweep does not take {refused[0][0]}: {refused[0][1]}")
        return _sweep(system, workflow, chunks, plot, fmt)
    for opt, given in (("--chunks", chunks is not None), ("--plot", plot is not None)):
        if given:
            raise BadValue(f"{opt} is for `simulate sweep` (a chunk-size sweep); one simulation takes --chunk SIZE and --gantt FILE")
    only_with(ctx, [("chunk", (strategy or workflow.strategy) == "pipelined", pipelined_only(workflow))])
    if gantt is not None:
        from ..plots import check_plot_path

        check_plot_path(gantt, "--gantt")
    size = parse_size(chunk, "--chunk") if chunk else None
    result = flows.run(system, workflow, strategy, size)
    timeline = result.timeline
    notes = [f"system {system.name}, workflow {workflow.name}, strategy {result.strategy}"
             + (f", {result.chunks} chunks of {format_size(size or workflow.chunk)}" if result.chunks else "")]
    if timeline is None:  # too many chunks for the engine: the fast path alone
        if gantt is not None:
            raise BadValue(f"--gantt: {result.chunks} chunks are past the engine's {flows.ENGINE_CHUNKS:,}, so there is no "
                           "timeline to draw; give a larger --chunk")
        emit("simulate", [{"makespan_seconds": result.fast_path_seconds, "chunks": result.chunks}],
             [Column("makespan_seconds", "makespan", format_time), Column("chunks", "chunks")], fmt,
             notes=notes + [f"fast path only (the discrete-event engine runs up to {flows.ENGINE_CHUNKS:,} chunks)"],
             extra={"strategy": result.strategy, "makespan_seconds": result.fast_path_seconds})
        return
    if result.fast_path_seconds is not None:
        notes.append(f"max-plus fast path: {format_time(result.fast_path_seconds)} (engine: {format_time(timeline.makespan)})")
    notes.append(f"critical path: {' -> '.join(_short(timeline.critical_path))}")
    usage = [{"resource": u.resource, "busy_seconds": u.busy_seconds, "utilization": u.utilization, "bytes": u.bytes,
              "ops": u.ops} for u in timeline.resources.values() if u.ops]
    if gantt:
        from ..plots import plot_gantt

        notes.append(f"gantt: {plot_gantt(timeline, gantt, f'{workflow.name} on {system.name}: {result.strategy}')}")
    extra = {"strategy": result.strategy, "makespan_seconds": timeline.makespan, "critical_path": timeline.critical_path,
             "resources": usage, "fast_path_seconds": result.fast_path_seconds, "chunks": result.chunks}
    if fmt != "table":
        emit("simulate", timeline.rows(), [Column(k, k) for k in ("op", "resource", "kind", "start_seconds", "end_seconds",
                                                                  "size_bytes")], fmt, notes=notes, extra=extra)
        return
    rows = timeline.rows()
    shown = rows if len(rows) <= 24 else rows[:12] + rows[-12:]
    emit("simulate", shown, [Column("op", "op", justify="left"), Column("resource", "resource", justify="left"),
                             Column("start_seconds", "start", format_time), Column("end_seconds", "end", format_time),
                             Column("size_bytes", "bytes", lambda v: format_size(v) if v else "–")], "table",
         title=f"Makespan {format_time(timeline.makespan)}" + (f" ({len(rows)} ops; first and last 12 shown)" if len(rows) > 24 else ""))
    emit("simulate", usage, [Column("resource", "resource", justify="left"), Column("busy_seconds", "busy", format_time),
                             Column("utilization", "utilization", lambda v: f"{v:.0%}"),
                             Column("bytes", "bytes", lambda v: format_size(v) if v else "–"), Column("ops", "ops")],
         "table", title="Resources", notes=notes)


def pipelined_only(workflow: Workflow) -> str:
    """When --chunk applies: the pipelined strategy, given or the workflow's own."""
    return (f"with the pipelined strategy (--strategy pipelined, or a workflow whose strategy it is; "
            f"{workflow.name}'s is {workflow.strategy})")


def _short(path: list[str]) -> list[str]:
    return path if len(path) <= 8 else path[:4] + ["…"] + path[-3:]


def _sweep(system: System, workflow: Workflow, chunks: Optional[str], plot: Optional[Path], fmt: str) -> None:
    if not chunks:
        raise BadValue("simulate sweep needs --chunks LIST, e.g. --chunks 64B..1GiB")
    sizes = [int(s) for s in parse_list(chunks, parse_size, "--chunks")]
    if plot:
        from ..plots import check_plot_path

        check_plot_path(plot, "--plot")
    rows = flows.chunk_sweep(system, workflow, sizes)
    best = min(rows, key=lambda r: r["makespan_seconds"])
    notes = [f"fastest: {format_size(best['chunk_bytes'])} chunks, {format_time(best['makespan_seconds'])} "
             "(pipelined, max-plus fast path)"]
    if plot:
        from ..plots import plot_lines

        notes.append(f"plot: {plot_lines([(workflow.name, np.asarray(sizes, dtype=float), np.asarray([r['makespan_seconds'] for r in rows]))], 'makespan (s)', f'{workflow.name} on {system.name}, pipelined', plot, xlabel='chunk size')}")
    emit("simulate sweep", rows, [Column("chunk_bytes", "chunk", format_size), Column("chunks", "chunks"),
                                  Column("makespan_seconds", "makespan", format_time)], fmt,
         title=f"Pipelined {workflow.name} on {system.name} by chunk size", notes=notes)



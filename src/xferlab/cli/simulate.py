"""`xferlab simulate run SYSTEM WORKFLOW` and `xferlab simulate sweep SYSTEM WORKFLOW --chunks LIST`:
the flow simulator on a system and a workflow, given as YAML files or packaged names."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from ..choices import BIASES
from ..errors import BadValue
from ..sim import flows
from ..system.models import System, Workflow
from ..scenarios.packaged import load_named
from ..units import LIST_HELP, format_size, format_time, parse_list, parse_size
from .common import CHUNK, CSV, JSON, PLOT, STRATEGY, only_with, verb
from .output import Column, emit, output_format

app = verb("simulate", "The flow simulator: a workflow's data flow on a system, once or over chunk sizes.")
SYSTEM = typer.Argument(..., metavar="SYSTEM", help="A system: YAML file or packaged name (seed-testbed, seed-testbed-cxl, "
                        "ac922, ac922-8335gtw, grace-hopper).")
WORKFLOW = typer.Argument(..., metavar="WORKFLOW", help="A workflow: YAML file or packaged name (deceval).")


@app.command("run")
def run(
    ctx: typer.Context, system_name: str = SYSTEM, workflow_name: str = WORKFLOW,
    strategy: Optional[str] = STRATEGY, chunk: Optional[str] = CHUNK,
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write a Gantt chart (seed 000, Figure 6 style; not past "
                                         "the engine's chunk limit).", metavar="FILE"),
    bias: Optional[str] = typer.Option(None, "--bias", metavar="|".join(BIASES),
                                       help="The bias of the system's CXL Type 2 devices' memory (default: the "
                                            "workflow's `bias`, else not modelled); see docs/simulate.md."),
    json_: bool = JSON, csv_: bool = CSV,
) -> None:
    """Simulate a workflow's data flow on a system: makespan, timeline, utilization, critical path."""
    fmt = output_format(json_, csv_)
    system = load_named(system_name, System, "system")
    workflow = load_named(workflow_name, Workflow, "workflow")
    if bias is not None:
        if bias not in BIASES:
            raise BadValue(f"--bias {bias!r} is not a bias; allowed: {', '.join(BIASES)}")
        workflow = workflow.model_copy(update={"bias": bias})
    only_with(ctx, [("chunk", (strategy or workflow.strategy) == "pipelined", pipelined_only(workflow))])
    if gantt is not None:
        from ..plots import check_plot_path

        check_plot_path(gantt, "--gantt")
    size = parse_size(chunk, "--chunk") if chunk else None
    result = flows.run(system, workflow, strategy, size)
    timeline = result.timeline
    notes = [f"system {system.name}, workflow {workflow.name}, strategy {result.strategy}"
             + (f", {result.chunks} chunks of {format_size(size or workflow.chunk)}" if result.chunks else "")]
    if workflow.bias is not None:
        notes.append(f"{workflow.bias} bias on the CXL Type 2 devices' memory: {result.flips:,} bias flips")
    if timeline is None:  # too many chunks for the engine: the fast path alone
        if gantt is not None:
            raise BadValue(f"--gantt: {result.chunks} chunks are past the engine's {flows.ENGINE_CHUNKS:,}, so there is no "
                           "timeline to draw; give a larger --chunk")
        emit("simulate run", [{"makespan_seconds": result.fast_path_seconds, "chunks": result.chunks}],
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
             "resources": usage, "fast_path_seconds": result.fast_path_seconds, "chunks": result.chunks,
             **({"bias": workflow.bias, "flips": result.flips} if workflow.bias is not None else {})}
    if fmt != "table":
        emit("simulate run", timeline.rows(), [Column(k, k) for k in ("op", "resource", "kind", "start_seconds", "end_seconds",
                                                                  "size_bytes")], fmt, notes=notes, extra=extra)
        return
    rows = timeline.rows()
    shown = rows if len(rows) <= 24 else rows[:12] + rows[-12:]
    emit("simulate run", shown, [Column("op", "op", justify="left"), Column("resource", "resource", justify="left"),
                             Column("start_seconds", "start", format_time), Column("end_seconds", "end", format_time),
                             Column("size_bytes", "bytes", lambda v: format_size(v) if v else "–")], "table",
         title=f"Makespan {format_time(timeline.makespan)}" + (f" ({len(rows)} ops; first and last 12 shown)" if len(rows) > 24 else ""))
    emit("simulate run", usage, [Column("resource", "resource", justify="left"), Column("busy_seconds", "busy", format_time),
                             Column("utilization", "utilization", lambda v: f"{v:.0%}"),
                             Column("bytes", "bytes", lambda v: format_size(v) if v else "–"), Column("ops", "ops")],
         "table", title="Resources", notes=notes)


def pipelined_only(workflow: Workflow) -> str:
    """When --chunk applies: the pipelined strategy, given or the workflow's own."""
    return (f"with the pipelined strategy (--strategy pipelined, or a workflow whose strategy it is; "
            f"{workflow.name}'s is {workflow.strategy})")


def _short(path: list[str]) -> list[str]:
    return path if len(path) <= 8 else path[:4] + ["…"] + path[-3:]


@app.command("sweep")
def sweep(system_name: str = SYSTEM, workflow_name: str = WORKFLOW,
          chunks: Optional[str] = typer.Option(None, "--chunks", help=f"The chunk sizes (needed): {LIST_HELP}.",
                                               metavar="LIST"),
          plot: Optional[Path] = PLOT, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Simulate the workflow pipelined over chunk sizes (max-plus fast path): makespan by chunk size.

    --plot FILE draws the makespan against the chunk size."""
    fmt = output_format(json_, csv_)
    system = load_named(system_name, System, "system")
    workflow = load_named(workflow_name, Workflow, "workflow")
    if not chunks:
        raise BadValue("simulate sweep needs --chunks LIST, e.g. --chunks 64B..1GiB")
    sizes = [int(s) for s in parse_list(chunks, parse_size, "--chunks")]
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



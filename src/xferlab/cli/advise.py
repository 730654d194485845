"""`xferlab advise …`: which link, whether to offload, what a different link would buy."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..advise.links import fastest, ranking_changes
from ..advise.whatif import compare
from ..units import LIST_HELP, format_size, format_time, parse_size, parse_sizes
from .common import CHUNK, CSV, JSON, LINKS_FILE, OP, STRATEGY, check_op, links_from, only_with
from .model import LINK_HELP, offload_cmd
from .output import Column, emit, output_format
from ..scenarios.packaged import load_named

app = typer.Typer(no_args_is_help=True, help="Advice on data movement: links, offloading, what-if.")
app.command("offload")(offload_cmd)


@app.command("links")
def links_cmd(links_: list[str] = typer.Argument(..., metavar="LINK...", help=LINK_HELP),
              sizes: str = typer.Option("64B..1GiB", "--sizes", help=f"Transfer sizes: {LIST_HELP}.", metavar="LIST"),
              op: str = OP, links: Optional[list[Path]] = LINKS_FILE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """The fastest link at each size, the runner-up, and every size where the ranking changes."""
    fmt, op = output_format(json_, csv_), check_op(op)
    models = links_from(links_, links)
    if len(models) < 2:
        from ..errors import BadValue

        raise BadValue("give two links or more to compare")
    changes = ranking_changes(models, op)
    notes = [f"{c['faster_below']} is faster below {format_size(c['size_bytes'])}, {c['faster_above']} from there on"
             for c in changes] or ["the ranking does not change between 1 B and 1 PiB"]
    emit("advise links", fastest(models, parse_sizes(sizes), op), [
        Column("size_bytes", "size", format_size), Column("fastest", "fastest", justify="left"),
        Column("seconds", "time", format_time), Column("runner_up", "runner-up", justify="left"),
        Column("runner_up_ratio", "it takes", lambda v: f"{v:.2f}x"),
    ], fmt, title=f"Fastest link by transfer size ({op})", notes=notes, extra={"ranking_changes": changes, "op": op})


@app.command("chunk")
def chunk_cmd(system: str = typer.Argument(..., help="A system: YAML file or packaged name."),
              workflow: str = typer.Argument(..., help="A workflow (a chain of tasks): YAML file or packaged name."),
              overhead: Optional[str] = typer.Option(None, "--overhead", metavar="TIME",
                                                     help="Per-chunk cost of every task that gives none (a kernel launch: "
                                                          "see `xferlab measure launch`)."),
              json_: bool = JSON, csv_: bool = CSV) -> None:
    """The chunk size that minimizes the pipelined makespan (simulated), against moving the data in one piece."""
    from ..advise.chunk import best_chunk
    from ..system.models import System, Workflow

    fmt = output_format(json_, csv_)
    sys_model = load_named(system, System, "system")
    from ..advise.chunk import with_overhead
    from ..units import parse_time

    cost = parse_time(overhead, "--overhead", allow_zero=True) if overhead is not None else None
    wf_model = with_overhead(load_named(workflow, Workflow, "workflow"), cost)
    best = best_chunk(sys_model, wf_model)
    costs = sorted({t.overhead for t in wf_model.tasks})
    notes = [f"best: {format_size(best['chunk_bytes'])} chunks ({best['chunks']} of them), makespan "
             f"{format_time(best['makespan_seconds'])}; in one piece {format_time(best['one_piece_seconds'])} "
             f"({best['one_piece_seconds'] / best['makespan_seconds']:.3f}x slower)",
             "per-chunk task overhead: " + ", ".join(format_time(c) for c in costs)
             + ("; with none, the smallest chunk always wins (only link start-up times limit it)" if costs == [0.0] else "")]
    emit("advise chunk", best["grid"], [Column("chunk_bytes", "chunk", format_size),
                                        Column("makespan_seconds", "makespan", format_time)], fmt,
         title=f"Pipelined {wf_model.name} on {sys_model.name}: makespan by chunk size (max-plus fast path)", notes=notes,
         extra={k: v for k, v in best.items() if k != "grid"})


@app.command("whatif")
def whatif(ctx: typer.Context, system: str = typer.Argument(..., help="A system: YAML file or packaged name."),
           workflow: str = typer.Argument(..., help="A workflow: YAML file or packaged name."),
           replace: list[str] = typer.Option(..., "--replace", help="OLD=NEW: a link (LINK or devices a-b) and its replacement; repeatable.",
                                             metavar="OLD=NEW"),
           strategy: Optional[str] = STRATEGY, chunk: Optional[str] = CHUNK,
           json_: bool = JSON, csv_: bool = CSV) -> None:
    """Re-simulate a workflow with one of the system's links replaced by another."""
    from ..errors import BadValue
    from ..system.models import System, Workflow

    fmt = output_format(json_, csv_)
    sys_model = load_named(system, System, "system")
    wf_model = load_named(workflow, Workflow, "workflow")
    from .simulate import pipelined_only

    only_with(ctx, [("chunk", (strategy or wf_model.strategy) == "pipelined", pipelined_only(wf_model))])
    rows = []
    for item in replace:
        old, eq, new = item.partition("=")
        if not eq or not old or not new:
            raise BadValue(f"--replace '{item}' is not OLD=NEW (e.g. --replace pcie3x16=cxl2x16)")
        rows.append(compare(sys_model, wf_model, old, new, strategy, parse_size(chunk, "--chunk") if chunk else None))
    emit("advise whatif", rows, [
        Column("replaced", "link", justify="left"), Column("by", "replaced by", justify="left"),
        Column("strategy", "strategy", justify="left"), Column("before_seconds", "before", format_time),
        Column("after_seconds", "after", format_time), Column("speedup", "speedup", lambda v: f"{v:.3f}x"),
    ], fmt, title=f"What if: {wf_model.name} on {sys_model.name}")


@app.command("bias")
def bias_cmd(link: str = typer.Argument(..., help="The Type 2 device's CXL link: " + LINK_HELP[0].lower() + LINK_HELP[1:]),
             accesses: str = typer.Option("1,16,256,4096,65536", "--accesses", metavar="LIST",
                                          help=f"The device's accesses (64-byte lines) to a region between two flips: "
                                               f"{LIST_HELP} (counts)."),
             flip: Optional[str] = typer.Option(None, "--flip", metavar="TIME",
                                                help="One flip's cost (default: derived from the link, 2 t_s + t(page); "
                                                     "see docs/models.md)."),
             page: str = typer.Option("4KiB", "--page", metavar="SIZE", help="The bytes one flip covers."),
             links: Optional[list[Path]] = LINKS_FILE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """When device bias pays for a CXL Type 2 device's memory: its accesses in host bias (a request to the host per
    line) against one bias flip per region."""
    from ..advise.bias import bias_advice
    from ..units import parse_count, parse_list, parse_time

    fmt = output_format(json_, csv_)
    model = links_from([link], links)[0]
    cost = parse_time(flip, "--flip", allow_zero=False) if flip is not None else None
    even, rows = bias_advice(model, [int(a) for a in parse_list(accesses, parse_count, "--accesses", max_items=4096)],
                             cost, parse_size(page, "--page"))
    notes = [f"one flip of {format_size(even['page_bytes'])}: {format_time(even['flip_seconds'])} "
             + ("(derived: 2 t_s + t(page) on the link)" if even["flip_derived"] else "(--flip)"),
             f"one device access in host bias: {format_time(even['access_seconds'])} (64 B at the link's request rate)",
             f"device bias pays from {even['break_even_accesses']:,} device accesses per flip"]
    emit("advise bias", rows, [Column("accesses", "accesses per flip"),
                               Column("host_bias_seconds", "host bias", format_time),
                               Column("device_bias_seconds", "device bias", format_time),
                               Column("pays", "device bias pays", lambda v: "yes" if v else "no")],
         fmt, title=f"Host or device bias on {model.label}", notes=notes,
         extra={"link": model.label, **{k: v for k, v in even.items() if k != "flip_derived"}})

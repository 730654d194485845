"""`xferlab sweep run FILE`: a design-space sweep (src/xferlab/sweep/) in this process or on Dask."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from ..errors import BadValue
from ..units import shown, format_size, format_time
from ..sweep import MAX_POINTS
from .common import CSV, JSON, STORE, only_with
from .output import Column, emit, output_format, stderr

app = typer.Typer(no_args_is_help=True, help="Design-space sweeps: systems x links x workflows x strategies x chunks.")


@app.command("run")
def run(ctx: typer.Context,
        file: Optional[Path] = typer.Argument(None, help="The sweep file (YAML; `xferlab schema sweep`), or the "
                                             "grid as lists: --systems, --workflows …", metavar="[FILE]"),
        name: str = typer.Option("sweep", "--name", help="Lists: the sweep's name (with its grid, what --resume "
                                 "matches).", metavar="NAME"),
        systems: Optional[str] = typer.Option(None, "--systems", help="Lists: systems, files or packaged names.",
                                              metavar="LIST"),
        replace: Optional[str] = typer.Option(None, "--replace", help="Lists: the link of each system that "
                                              "--replace-with's links stand in for.", metavar="LINK"),
        links: Optional[str] = typer.Option(None, "--replace-with", help="Lists: LINKs in place of --replace "
                                            "(separated by ';' when a LINK has commas).", metavar="LIST"),
        workflows: Optional[str] = typer.Option(None, "--workflows", help="Lists: workflows, files or packaged names.",
                                                metavar="LIST"),
        strategies: Optional[str] = typer.Option(None, "--strategies", help="Lists: staged, direct, coherent, "
                                                 "pipelined (default all).", metavar="LIST"),
        chunks: Optional[str] = typer.Option(None, "--chunks", help="Lists: chunk sizes of the pipelined points.",
                                             metavar="LIST"),
        baseline: Optional[str] = typer.Option(None, "--baseline", help="Lists: the strategy speedups are against "
                                               "(default staged).", metavar="STRATEGY"),
        workers: Optional[int] = typer.Option(None, "--workers", help="Run on a local Dask cluster of N worker "
                                              "processes (default: in this process; 0: one per core).", metavar="N"),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Run on the Dask scheduler at ADDR "
                                                "(tcp://host:8786; see docs/scaleout.md for Slurm).", metavar="ADDR"),
        connect_timeout: str = typer.Option("10s", "--connect-timeout", help="How long a --scheduler has to answer.",
                                            metavar="TIME"),
        resume: bool = typer.Option(False, "--resume", help="Evaluate only the points no earlier run of this sweep "
                                    "stored (an interrupted one included)."),
        batch: int = typer.Option(0, "--batch", help="Points per task (0: chosen from the grid and the workers).",
                                  metavar="N"),
        parquet: Optional[Path] = typer.Option(None, "--parquet", help="Also write every point to FILE (Parquet).",
                                               metavar="FILE"),
        heatmap: Optional[Path] = typer.Option(None, "--heatmap", help="Plot the speedup over two axes (--heatmap-axes) "
                                               "to FILE, each cell the best over the other axes.", metavar="FILE"),
        heatmap_axes: str = typer.Option("link,chunk", "--heatmap-axes", help="The heat map's rows and columns: two of "
                                         "system, link, workflow, strategy, chunk (with --heatmap).", metavar="Y,X"),
        max_points: int = typer.Option(MAX_POINTS, "--max-points", help="Refuse a grid of more points than N (a larger "
                                       "N runs it); the count and the time estimated from a few points timed here are "
                                       "printed first.", metavar="N"),
        store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Evaluate every point of a sweep with the flow simulator; results stream into the store."""
    import os

    from ..sweep.export import write_heatmap, write_parquet
    from ..sweep.run import run_sweep
    from ..sweep.summary import crossovers
    from ..sweep.summary import heatmap_axes as heatmap_axes_of
    from ..sweep.spec import Sweep
    from ..system.yamlfile import load

    fmt = output_format(json_, csv_)
    only_with(ctx, [("heatmap_axes", heatmap is not None, "with --heatmap"),
                    ("connect_timeout", scheduler is not None, "with --scheduler"),
                    ("name", file is None, "with the grid as lists (--systems, --workflows …); a sweep FILE names "
                                           "its sweep")])
    if workers is not None and scheduler is not None:
        raise BadValue("--workers starts a local cluster and --scheduler uses one that runs: give one of them")
    if workers == 0:
        workers = len(os.sched_getaffinity(0))
    if heatmap is not None:
        from ..plots import check_plot_path

        check_plot_path(heatmap, "--heatmap")
    if parquet is not None:
        from ..outputs import check_file

        check_file(parquet, "--parquet file", "points.parquet")
    from ..units import parse_time

    wait = parse_time(connect_timeout, "--connect-timeout", allow_zero=False)
    lists = {"systems": systems, "replace": replace, "links": links, "workflows": workflows, "strategies": strategies,
             "chunks": chunks, "baseline": baseline}
    given = {k: v for k, v in lists.items() if v is not None}
    if file is not None:
        if given:
            raise BadValue(f"give a sweep FILE or the grid as lists (--{GRID_OPTIONS[next(iter(given))]} …), not both")
        spec = load(file, Sweep, "sweep")
    else:
        spec = from_lists(name, given)
    axes = heatmap_axes_of(heatmap_axes, spec.strategies) if heatmap is not None else None
    from rich.progress import Progress

    bar, task = Progress(transient=True, console=stderr), None

    def progress(done: int, total: int) -> None:  # the bar starts with the first batch: a refusal is one line
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task(f"sweep {spec.name}", total=total)
        bar.update(task, completed=done, total=total)

    try:
        result = run_sweep(spec, store, workers, scheduler, resume, batch, connect=wait, progress=progress,
                           max_points=max_points, say=lambda line: stderr.print(line, highlight=False, markup=False))
    finally:
        if task is not None:
            bar.stop()
    rows = result["rows"]
    if parquet is not None:
        write_parquet(rows, parquet)
    if heatmap is not None:
        write_heatmap(rows, heatmap, *axes, spec.baseline)
    best = [r for r in rows if r["best"]]
    notes = [f"{len(rows)} points ({result['evaluated']} evaluated {result['where']}, {result['reused']} from earlier "
             f"runs, {result['failed']} could not run); run {result['run_id']}, group {result['group']}"]
    notes += [f"could not run: {r['system']}, {r['link'] or 'its own links'}, {r['workflow']}, {r['strategy']}"
              + (f" in {format_size(r['chunk_bytes'])} chunks" if r["chunk_bytes"] else "") + f": {r['error']}"
              for r in rows if r["error"]][:10]
    notes += [f"best for {r['system']}, {r['link'] or 'its own links'}, {r['workflow']}: {r['strategy']}"
              + (f" in {format_size(r['chunk_bytes'])} chunks" if r["chunk_bytes"] else "")
              + f", {format_time(r['makespan_seconds'])}" for r in best]
    columns = [Column("system", "system", justify="left"), Column("link", "link", lambda v: v or "–", justify="left"),
               Column("workflow", "workflow", justify="left"), Column("strategy", "strategy", justify="left"),
               Column("chunk_bytes", "chunk", lambda v: format_size(v) if v else "–"),
               Column("makespan_seconds", "makespan", lambda v: "–" if v is None else format_time(v)),
               Column("speedup", "speedup", lambda v: "–" if v is None else f"{v:.3g}x"),
               Column("best", "best", lambda v: "best" if v else "")]
    if spec.costs:
        columns += [Column("cost", "cost", lambda v: "–" if v is None else f"{v:g}"),
                    Column("pareto", "Pareto", lambda v: "front" if v else "")]
        notes += [f"Pareto front ({r['system']}, {r['workflow']}): {r['link']} {r['strategy']}"
                  + (f" in {format_size(r['chunk_bytes'])} chunks" if r["chunk_bytes"] else "")
                  + f", {format_time(r['makespan_seconds'])} at cost {r['cost']:g}" for r in rows if r.get("pareto")]
    crossing = crossovers(rows, spec.baseline)
    notes += [f"pipelined beats {c['baseline']} for {c['system']}, {c['link'] or 'its own links'}, {c['workflow']}: "
              + (f"at {c['faster_chunks']} of {c['swept_chunks']} chunk sizes, {format_size(c['faster_from_bytes'])} "
                 f"to {format_size(c['faster_up_to_bytes'])}" if c["faster_chunks"] else
                 f"at none of {c['swept_chunks']} chunk sizes")
              + (f"; best {format_size(c['best_chunk_bytes'])} ({c['best_speedup']:.3g}x)" if c["best_chunk_bytes"] else "")
              for c in crossing]
    emit("sweep run", rows, columns, fmt, title=f"Sweep {spec.name}", notes=notes,
         extra={key: result[key] for key in ("run_id", "group", "where", "evaluated", "reused", "failed")}
         | {"best_points": best, "crossovers": crossing})
    if result["failed"]:
        every = result["failed"] == len(rows)
        what = f"none of the {len(rows)} points could run" if every else \
            f"{result['failed']} of {len(rows)} points could not run"
        stderr.print(f"error: {what} (their reasons are the run's failures: xferlab results show {result['run_id']})",
                     highlight=False, markup=False)
        raise typer.Exit(1 if every else 3)


GRID_OPTIONS = {"systems": "systems", "replace": "replace", "links": "replace-with", "workflows": "workflows",
                "strategies": "strategies", "chunks": "chunks", "baseline": "baseline"}  # field -> its option


def from_lists(name: str, given: dict):
    """The Sweep the command line's lists describe, checked as a file is; the first problem in one line."""
    from pydantic import ValidationError

    from ..sweep.spec import Sweep
    from ..system.yamlfile import where

    if not given.get("systems") or not given.get("workflows"):
        raise BadValue("give a sweep FILE, or at least --systems and --workflows")
    if (given.get("replace") is None) != (given.get("links") is None):  # name the one given, and its partner
        one, other = ("--replace", "--replace-with") if given.get("replace") is not None else ("--replace-with", "--replace")
        raise BadValue(f"{one} {shown(given.get('replace') or given.get('links'))} needs {other}: the --replace-with "
                       "LINKs stand in for the --replace link")
    data: dict = {"name": name}
    for key, value in given.items():
        if key in ("replace", "baseline"):
            data[key] = value
        elif key == "links":
            data[key] = link_list(value)
        else:
            data[key] = [item.strip() for item in value.split(",") if item.strip()]
    try:
        return Sweep.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        field = where(tuple(first["loc"])).split("[")[0]
        named = re.match(r"(\w+): ", message)  # checks across fields name theirs first: "chunks: …"
        if not field and named:
            field, message = named[1], message[named.end():]
        given = first.get("input")
        if first["loc"] and isinstance(given, str) and repr(given[:20])[1:-1] not in message:  # name the value
            message = f"{shown(given)}: {message}"
        raise BadValue(f"--{GRID_OPTIONS[field]}: {message}" if field in GRID_OPTIONS else f"{field or 'grid'}: {message}") from None


def link_list(value: str) -> list[str]:
    """--replace-with's LINKs: the whole value when it is one LINK (a piecewise LINK holds ';' and ','),
    else split at ';' when there is one (LINKs with overrides hold commas), else at ','."""
    from ..errors import XferlabError
    from ..links import resolve

    try:
        resolve(value.strip())
        return [value.strip()]
    except XferlabError:
        separator = ";" if ";" in value else ","
        return [item.strip() for item in value.split(separator) if item.strip()]

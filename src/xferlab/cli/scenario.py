"""`xferlab scenario …`: the seeds' studies, packaged, re-run and set beside the seeds' figures."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import scenarios
from .common import CSV, JSON
from .output import Column, emit, output_format

app = typer.Typer(no_args_is_help=True, help="Packaged scenarios from the seed documents.")


@app.command("list")
def list_(json_: bool = JSON, csv_: bool = CSV) -> None:
    """The packaged scenarios."""
    rows = []
    for name in scenarios.names():
        s = scenarios.load(name)
        rows.append({"name": name, "kind": s.kind, "title": s.title, "source": s.source})
    emit("scenario list", rows, [Column("name", "scenario", justify="left"), Column("kind", "kind", justify="left"),
                                 Column("title", "title", justify="left")], output_format(json_, csv_))


@app.command("run")
def run(name: str = typer.Argument(..., help="A scenario from `xferlab scenario list`."),
        out: Optional[Path] = typer.Option(None, "--out", help="Also write its plots to DIR.", metavar="DIR"),
        json_: bool = JSON, csv_: bool = CSV) -> None:
    """Run a scenario and print its results beside the seed's figures."""
    fmt = output_format(json_, csv_)
    scenario = scenarios.load(name)
    result = scenario.run()
    rows = []
    for check in result["checks"]:
        seed, ours = scenarios.describe_check(check)
        rows.append({**check, "seed_shown": seed, "xferlab_shown": ours})
    notes = [f"source: {result['source']}; op {result['op']}; baseline {result['baseline']}"]
    notes += [f"note ({r['figure']}): {r['note']}" for r in rows if r["note"]]
    if out:
        notes += [f"plot: {p}" for p in scenario.plot(out)]
    emit(f"scenario run {name}", [{k: v for k, v in r.items() if not k.endswith("_shown")} for r in rows] if fmt != "table" else rows, [
        Column("figure", "figure", justify="left"), Column("seed_shown", "seed"), Column("xferlab_shown", "xferlab"),
        Column("deviation", "deviation", lambda d: f"{d:+.1%}"),
        Column("reproduced", "reproduced", lambda ok: "yes" if ok else "no"),
    ] if fmt == "table" else [Column(k, k) for k in ("figure", "kind", "candidate", "size_bytes", "seed", "xferlab", "unit",
                                                      "deviation", "reproduced", "tolerance")],
        fmt, title=result["title"], notes=notes, extra={"scenario": name, "sweep": result["sweep"]} if fmt == "json" else None)

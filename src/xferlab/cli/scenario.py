"""`xferlab scenario …`: the seeds' studies, packaged, re-run and set beside the seeds' figures."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import scenarios
from .common import CSV, JSON
from ..units import format_time
from .output import Column, emit, output_format

app = typer.Typer(no_args_is_help=True, help="Packaged scenarios from the seed documents.")


@app.command("list")
def list_(json_: bool = JSON, csv_: bool = CSV) -> None:
    """The packaged scenarios."""
    rows = []
    for name in scenarios.names():
        s = scenarios.load(name)
        rows.append({"name": name, "seed_document": scenarios.seed_document(s), "kind": s.kind, "title": s.title,
                     "source": s.source})
    emit("scenario list", rows, [Column("name", "scenario", justify="left"), Column("seed_document", "seed", justify="left"),
                                 Column("kind", "kind", justify="left"), Column("title", "title", justify="left")],
         output_format(json_, csv_))


CHECK_FIELDS = ("figure", "kind", "section", "compute", "candidate", "size_bytes", "seed", "seed_high", "xferlab", "unit",
                "relative_error", "tolerance", "basis", "status", "status_reason", "note")


@app.command("run")
def run(name: str = typer.Argument(..., help="A scenario from `xferlab scenario list`."),
        out: Optional[Path] = typer.Option(None, "--out", help="Also write its plots to DIR.", metavar="DIR"),
        json_: bool = JSON, csv_: bool = CSV) -> None:
    """Run a scenario and print its results beside the seed's figures."""
    fmt = output_format(json_, csv_)
    scenario = scenarios.load(name)
    if out:
        from ..outputs import check_folder

        check_folder(out, "--out")  # before the scenario runs
    result = scenario.run()
    notes = [f"source: {result['source']}" + (f"; op {result['op']}; baseline {result['baseline']}" if "op" in result else "")]
    notes += [f"{c['status']} ({c['figure']}): {c['status_reason']}" for c in result["checks"] if c["status_reason"]]
    notes += [f"note ({c['figure']}): {c['note']}" for c in result["checks"] if c["note"]]
    notes += [f"{name}: {meaning}" for name, meaning in scenarios.STATUSES.items()
              if any(c["status"] == name for c in result["checks"])]
    if out:
        notes += [f"plot: {p}" for p in scenario.plot(out)]
    if fmt == "table":
        rows = [dict(zip(("seed", "xferlab"), scenarios.describe_check(c)), figure=c["figure"], relative_error=c["relative_error"],
                     status=c["status"]) for c in result["checks"]]
        columns = [Column("figure", "figure", justify="left"), Column("seed", "seed"), Column("xferlab", "xferlab"),
                   Column("relative_error", "deviation", lambda d: f"{d:+.1%}"), Column("status", "status", justify="left")]
    else:
        rows, columns = result["checks"], [Column(k, k) for k in CHECK_FIELDS]
    extra = {k: v for k, v in result.items() if k not in ("checks", "title", "source")}
    emit(f"scenario run {name}", rows, columns, fmt, title=result["title"], notes=notes, extra={"scenario": name, **extra})
    if fmt == "table" and result.get("flows"):
        emit(f"scenario run {name}", result["flows"], [
            Column("link", "link", justify="left"), Column("flow", "flow", justify="left"),
            Column("seconds", "application time", format_time), Column("speedup", "speedup", lambda v: f"{v:.2f}x"),
        ], "table", title="The flows on other links (speedup against the seed's measured baseline)")

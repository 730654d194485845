"""`xferlab results …`: the runs recorded in the results store: list them, show one, export its samples,
import runs exported elsewhere.

These commands only read (but import): they open the store read-only and never create it. ``STORE`` is the
``--store PATH`` option, shared with the commands that record runs.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import BadFile
from ..stats import relative_half_width
from ..store import FORMATS, check_format, export_run, open_store
from ..units import format_rate, format_size, format_time
from .common import CSV, JSON, STORE
from .output import Column, emit, output_format, stderr, stdout

app = typer.Typer(no_args_is_help=True, help="The runs recorded in the results store: list, show, export, import.")

RUN = typer.Argument(..., help="A run id, a unique prefix of one, or 'latest'.", metavar="RUN")

INCOMPLETE_NOTE = ("interrupted*: the process recording the run was killed or crashed before it finished it (the "
                   "file still says running; JSON and CSV: incomplete true); every sample it committed is kept")


def _table(title: str, rows: list[dict], columns: list[Column], whole: tuple[str, ...] = (),
           notes: list[str] = ()) -> None:
    """A table whose columns named in ``whole`` are never wrapped or cut (run ids, figures)."""
    columns = [Column(c.key, c.header, c.show, c.justify, c.key in whole) for c in columns]
    emit("results", rows, columns, "table", title=title, notes=notes)


def _when(iso: Optional[str]) -> str:
    """``2026-11-22T01:30:45.123456Z`` → ``2026-11-22 01:30:45``."""
    return iso[:19].replace("T", " ") if iso else "–"


def _status(row: dict) -> str:
    """The status as the store reads it (a killed run's is interrupted), marked * when its process never finished it."""
    return row["status"] + ("*" if row.get("incomplete") else "")


def show_value(metric: str, value: Any) -> Optional[str]:
    """A statistic in the unit its metric names (``…_bytes_per_second``, ``…_seconds``, ``…_bytes``)."""
    if value is None:
        return None
    if metric.endswith("_bytes_per_second"):
        return format_rate(value)
    if metric.endswith("_seconds"):
        return format_time(value)
    if metric.endswith("_bytes"):
        return format_size(value)
    return f"{value:.4g}"


@app.command("list")
def list_runs(store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """List the recorded runs, newest first (the store is read whole first: a damaged one is named as such)."""
    fmt = output_format(json_, csv_)
    with open_store(store, read_only=True) as db:
        rows, path = db.runs(check=True), db.path
    rows = [{("failure_count" if k == "failures" else k): v for k, v in r.items()} for r in rows]  # failures: a list elsewhere
    columns = [Column("run_id", "run", justify="left"), Column("started_utc", "started (UTC)", _when, "left"),
               Column("command", "command", justify="left"), Column("status", "status", justify="left"),
               Column("samples", "samples"), Column("failure_count", "failures")]
    notes = [] if rows else [f"no runs in {path} yet"]
    if fmt == "table":
        if any(r["incomplete"] for r in rows):
            notes.append(INCOMPLETE_NOTE)
        _table(f"Runs in {path}", [{**r, "status": _status(r)} for r in rows], columns,
               ("run_id", "command", "status", "samples", "failure_count"), notes)
        return
    if fmt == "csv":
        columns += [Column("finished_utc", ""), Column("incomplete", "")]
    emit("results list", rows, columns, fmt, notes=notes, extra={"store": str(path)})


def _facts(mapping: Optional[dict], limit: int = 8) -> str:
    """The scalar entries of a mapping as ``key value, …`` (nested ones are in --json)."""
    items = [(k, v) for k, v in (mapping or {}).items() if not isinstance(v, (dict, list)) and v is not None]
    text = ", ".join(f"{k} {v}" for k, v in items[:limit])
    nested = [k for k, v in (mapping or {}).items() if isinstance(v, (dict, list))]
    if nested:
        text += ("; " if text else "") + f"also {', '.join(nested)} (see --json)"
    return text or "–"


def _header(run: dict) -> list[str]:
    lines = [f"run {run['run_id']}: {run['command']}, {_status(run)}",
             f"started {_when(run['started_utc'])} UTC, finished {_when(run['finished_utc'])}"
             + (" UTC" if run["finished_utc"] else "")
             + f"; {run['samples']} samples, {run['failures']} failures",
             f"argv: {shlex.join(run['argv'] or []) or '–'}",
             f"versions: {_facts(run['versions'])}",
             f"machine: {_facts(run['inventory'])}"]
    if run["params"]:
        lines.append(f"params: {_facts(run['params'])}")
    if run["incomplete"]:
        lines.append(INCOMPLETE_NOTE)
    return lines


STAT_KEYS = ("median", "min", "mean", "max")


@app.command("show")
def show(run: str = RUN, store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Show a run: its command, versions and machine, statistics of its samples, its failures."""
    fmt = output_format(json_, csv_)
    with open_store(store, read_only=True) as db:
        info = db.run(run)
        groups = db.stats(info["run_id"])
        failures = db.failures(info["run_id"])
        path = db.path
    placement = [Column("suite", "suite", justify="left"), Column("test", "test", justify="left"),
                 Column("metric", "metric", justify="left"), Column("size_bytes", "size", lambda v: format_size(v)),
                 Column("threads", "threads"), Column("node", "node"), Column("mode", "mode", justify="left"),
                 Column("delay", "delay"), Column("pair", "pair", justify="left"), Column("path", "path", justify="left"),
                 Column("host_kind", "memory", justify="left"), Column("variant", "variant", justify="left")]
    if fmt == "json":
        emit("results show", groups, [], fmt, extra={"run": info, "failures": failures, "store": str(path)})
        return
    stat_columns = [Column("count", "n"), *(Column(k, k) for k in STAT_KEYS), Column("ci", "median ± (95 %)"),
                    Column("cov", "CoV")]
    if fmt == "csv":
        emit("results show", groups, [*placement, Column("count", ""), Column("warmups", ""), Column("unvalidated", ""),
                                      *(Column(k, k) for k in STAT_KEYS), Column("median_ci_low", ""),
                                      Column("median_ci_high", ""), Column("cov", "")], fmt)
        return
    for line in _header(info):
        stdout.print(line, markup=False, highlight=False)
    # A placement field with one value in every group is said once, above the table.
    common = [c for c in placement if len({g[c.key] for g in groups}) == 1]
    shown = [c for c in placement if c not in common]
    said = [f"{c.header} {c.show(groups[0][c.key])}" for c in common if groups and groups[0][c.key] is not None]
    rows = [{**g, "metric": _quantity(g["metric"]), **{k: show_value(g["metric"], g[k]) for k in STAT_KEYS},
             "ci": _plus_minus(g), "cov": None if g["cov"] is None else f"{100 * g['cov']:.2f}%"} for g in groups]
    warmups = sum(g["warmups"] for g in groups)
    unvalidated = sum(g.get("unvalidated") or 0 for g in groups)
    left_out = f"; {unvalidated} samples the probe did not validate left out" if unvalidated else ""
    notes = [f"statistics over non-warm-up iterations (n); {warmups} warm-up iterations left out{left_out}; "
             "median ±: half the 95 % distribution-free confidence interval of the median (– below 6 samples); "
             "CoV = sample standard deviation / mean"] if groups else ["no samples recorded"]
    title = f"Samples of run {info['run_id']}" + (f" ({', '.join(said)})" if said else "") + "; headline: median"
    if groups:
        _table(title, rows, [*shown, *[Column(c.key, c.header, str) for c in stat_columns]], (), notes)
    else:
        stdout.print(notes[0], highlight=False)
    if failures:
        _table(f"Failures ({len(failures)})", failures,
               [Column("suite", "suite", justify="left"), Column("what", "what", justify="left"),
                Column("reason", "reason", justify="left"), Column("at_utc", "at (UTC)", _when, "left")])


def _plus_minus(group: dict) -> str:
    """Half the median's 95 % interval as a share of it: ``±1.2%``, or – when there are too few samples."""
    half = relative_half_width(group["median"], group.get("median_ci_low"), group.get("median_ci_high"))
    return "–" if half != half else f"±{100 * half:.2g}%"


def _quantity(metric: str) -> str:
    """A metric's name without its unit, which the figures show: ``bandwidth_bytes_per_second`` → ``bandwidth``."""
    for unit in ("_bytes_per_second", "_seconds", "_bytes"):
        if metric.endswith(unit) and len(metric) > len(unit):
            return metric[: -len(unit)]
    return metric


@app.command("export")
def export(run: str = RUN,
           format_: str = typer.Option(..., "--format", help="File format: csv, parquet or json.",
                                       metavar="|".join(FORMATS)),
           output: Optional[str] = typer.Option(None, "-o", "--output", metavar="FILE",
                                                help="File to write (default: ./<run id>.<format>; a folder, or "
                                                     "a path ending in /, gets that name inside)."),
           force: bool = typer.Option(False, "--force", help="Overwrite FILE if it exists."),
           store: Optional[Path] = STORE) -> None:
    """Write a run's samples to a file (JSON also holds the run and its failures); prints its path."""
    fmt = check_format(format_)
    folder = output is not None and output.endswith(("/", os.sep))
    target = Path(output) if output is not None else None
    if target is not None:  # before the store is read: a folder that can hold the file, or a file that can be written
        from ..outputs import check_file, check_folder

        if folder or os.path.isdir(target):
            check_folder(target, "--output")
        else:
            check_file(target, "--output", f"RUN.{fmt}")
    if target is not None and not folder and target.exists() and not target.is_dir() and not force:
        raise BadFile(f"output file '{target}' exists; give --force to overwrite it, or -o another file")
    with open_store(store, read_only=True) as db:
        run_id = db.resolve_run(run)
        name = f"{run_id}.{fmt}"
        target = Path(name) if target is None else target / name if folder else target
        written = export_run(db, run_id, fmt, target, overwrite=force)
        count = db.run(run_id)["samples"]
    stderr.print(f"{count} samples of run {run_id} written as {fmt}", highlight=False)
    print(written)


@app.command("import")
def import_(shards: list[Path] = typer.Argument(..., help="Files written by `results export` (JSON or Parquet): a "
                                                 "campaign's nodes, another machine's runs.", metavar="SHARD..."),
            store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Merge runs recorded elsewhere into the store, by run id: a run already here is left as it is."""
    from ..store.shards import import_shards, read_shards

    fmt = output_format(json_, csv_)
    loaded = read_shards(shards)  # every shard readable and right before the store is opened (or made)
    with open_store(store) as db:
        rows = import_shards(db, loaded)
    new = sum(r["imported"] for r in rows)
    emit("results import", rows, [Column("shard", "shard", justify="left"), Column("run_id", "run", justify="left"),
                                  Column("samples", "samples"),
                                  Column("imported", "imported", lambda v: "imported" if v else "already in the store")],
         fmt, title="Imported shards", notes=[f"{new} of {len(rows)} runs imported"])

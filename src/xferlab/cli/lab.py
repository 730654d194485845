"""`xferlab lab`: the main job. For now: check the native probe, evaluate the link presets, run
every packaged scenario, and write it all under one results folder. Later stages (measurement,
fits, advice, the report) join here as they are built."""

from __future__ import annotations

import json
import platform
import time as _time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

from .. import __version__, scenarios
from ..links import PRESETS, resolve
from ..measure.probe import run_probe
from ..units import parse_time
from .common import JSON
from .output import Column, emit, stderr, stdout

DEFAULT_OUT = Path("xferlab-results")


def lab(budget: str = typer.Option("5m", "--budget", help="Time the whole job may take, e.g. 5m.", metavar="TIME"),
        out: Optional[Path] = typer.Option(None, "--out", help=f"Results folder (default: ./{DEFAULT_OUT}/lab-<UTC time>).",
                                           metavar="DIR"),
        json_: bool = JSON) -> None:
    """Run the main job and write its results to one folder."""
    seconds = parse_time(budget, "--budget", allow_zero=False)
    started = datetime.now(timezone.utc)
    folder = out or DEFAULT_OUT / f"lab-{started:%Y%m%d-%H%M%S}"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = _time.monotonic()
    summary: dict = {"xferlab_version": __version__, "started_utc": started.isoformat(), "budget_seconds": seconds,
                     "python": platform.python_version(), "machine": platform.machine(), "kernel": platform.release()}

    stderr.print("[1/3] native probe: clock", highlight=False)
    clock = run_probe(["clock"], timeout=min(60.0, seconds))
    summary["probe"] = {"ok": clock.ok, "failure": clock.failure, "records": clock.records}

    stderr.print("[2/3] link presets", highlight=False)
    presets = [{"name": name, **resolve(name).parameters(), "peak_write_bytes_per_second": resolve(name).peak_rate("write"),
                "description": resolve(name).summary()} for name in PRESETS]
    (folder / "presets.json").write_text(json.dumps(presets, indent=1))

    rows = []
    names = scenarios.names()
    for i, name in enumerate(names, 1):
        stderr.print(f"[3/3] scenario {name} ({i}/{len(names)})", highlight=False)
        scenario = scenarios.load(name)
        result = scenario.run()
        plots = [str(p) for p in scenario.plot(folder)]
        (folder / f"{name}.json").write_text(json.dumps({**result, "plots": plots}, indent=1))
        for check in result["checks"]:
            seed, ours = scenarios.describe_check(check)
            rows.append({"scenario": name, "figure": check["figure"], "seed": seed, "xferlab": ours,
                         "reproduced": check["reproduced"]})
    summary["elapsed_seconds"] = _time.monotonic() - t0
    summary["scenarios"] = names
    (folder / "lab.json").write_text(json.dumps(summary, indent=1))

    if json_:
        emit("lab", rows, [], "json", extra={"folder": str(folder), "probe": summary["probe"]})
        return
    emit("lab", rows, [Column("scenario", "scenario", justify="left"), Column("figure", "figure", justify="left"),
                       Column("seed", "seed"), Column("xferlab", "xferlab"),
                       Column("reproduced", "reproduced", lambda ok: "yes" if ok else "no")], "table",
         title="Seed figures recomputed by xferlab's models")
    if clock.ok and clock.records:
        record = clock.records[0]
        stdout.print(f"probe: steady clock ticks every {record['observed_tick_seconds'] * 1e9:.0f} ns, "
                     f"one read costs {record['call_overhead_seconds'] * 1e9:.1f} ns (median)", highlight=False)
    else:
        stdout.print(f"probe: failed: {clock.failure}", highlight=False)
    stdout.print(f"results: {folder}/ (lab.json, presets.json, one JSON and two plots per scenario)", highlight=False)

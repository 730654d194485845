"""`xferlab fit RUN [--name PROFILE]`: calibrate link profiles on a recorded device run."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from ..errors import BadValue
from ..fit import profiles
from ..fit.linkfit import fit as fit_sweep
from ..measure.device import DIRECTIONS
from ..store import open_store
from ..units import format_rate, format_time
from .common import CSV, JSON, STORE
from .output import Column, emit, output_format


def fit(run: str = typer.Argument(..., help="A recorded `measure device` run: its id, a prefix, or 'latest'.", metavar="RUN"),
        name: Optional[str] = typer.Option(None, "--name", help="Save each fit as profile NAME-<direction>-<kind>, usable as a LINK.",
                                           metavar="PROFILE"),
        store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Fit t = t_s + n / b to each direction and host memory kind of a device run; state the fit's quality."""
    fmt = output_format(json_, csv_)
    with open_store(store, read_only=True) as db:
        run_id = db.resolve_run(run)
        samples = [s for s in db.samples(run_id) if s["suite"] == "device" and s["test"] in DIRECTIONS and not s["warmup"]]
    if not samples:
        raise BadValue(f"run {run_id} has no host-device copies to fit; record one with `xferlab measure device`")
    rows, notes = [], []
    for direction, kind in dict.fromkeys((s["test"], s["mode"]) for s in samples):
        mine = [s for s in samples if (s["test"], s["mode"]) == (direction, kind)]
        sizes = np.array([s["size_bytes"] for s in mine], dtype=float)
        seconds = np.array([s["seconds"] for s in mine])
        if direction == "bidir":
            sizes = sizes * 2  # both directions' bytes in one copy_both
        f = fit_sweep(sizes, seconds)
        row = {"direction": direction, "kind": kind, "latency_seconds": f.latency_seconds,
               "latency_ci_low_seconds": f.latency_ci[0], "latency_ci_high_seconds": f.latency_ci[1],
               "bandwidth_bytes_per_second": f.bandwidth_bytes_per_second,
               "bandwidth_ci_low_bytes_per_second": f.bandwidth_ci[0], "bandwidth_ci_high_bytes_per_second": f.bandwidth_ci[1],
               "r2_log": f.r2_log, "median_relative_error": f.median_relative_error,
               "worst_relative_error": f.worst_relative_error, "cv_relative_error": f.cv_relative_error,
               "points": f.points, "poor": f.poor}
        if name:
            profile = f"{name}-{direction}-{kind}"
            path = profiles.save(profile, {"kind": "simple", "bandwidth": f.bandwidth_bytes_per_second,
                                           "latency": f.latency_seconds},
                                 f"fitted by xferlab fit on run {run_id}: {direction}, {kind} host memory; "
                                 f"cross-validated error {f.cv_relative_error:.1%}")
            row["profile"] = profile
            notes.append(f"profile {profile}: {path}")
        notes += f.notes
        rows.append(row)
    emit("fit", rows, [
        Column("direction", "direction", justify="left"), Column("kind", "host memory", justify="left"),
        Column("latency_seconds", "t_s", format_time, no_wrap=True),
        Column("bandwidth_bytes_per_second", "b", format_rate, no_wrap=True),
        Column("bandwidth_ci_low_bytes_per_second", "b 95% low", format_rate, no_wrap=True),
        Column("bandwidth_ci_high_bytes_per_second", "b 95% high", format_rate, no_wrap=True),
        Column("median_relative_error", "median err", lambda v: f"{v:.1%}"),
        Column("cv_relative_error", "held-out err", lambda v: f"{v:.1%}"),
        Column("poor", "verdict", lambda v: "poor" if v else "good"),
    ], fmt, title=f"t = t_s + n / b fitted on run {run_id} (robust relative least squares; 95 % bootstrap intervals)",
        notes=notes, extra={"run_id": run_id})

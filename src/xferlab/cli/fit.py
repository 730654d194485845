"""`xferlab fit RUN [--name PROFILE] [--model …] [--plots DIR] [--against LINK]`: calibrate link
profiles on a recorded device run and set them beside a link model (seed 000, Figure 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import BadValue
from ..fit.device import AGAINST, fit_device, skip_note
from ..fit.linkfit import MODELS, TOLERANCE
from ..measure.samples import unvalidated_count
from ..links import resolve
from ..links.presets import check_profile_name
from ..store import open_store
from ..units import format_rate, format_time
from .common import AGAINST as AGAINST_OPTION, CSV, JSON, OLD_PLOT, PLOTS, STORE
from .output import Column, emit, output_format, stderr


def _percent(value: float) -> str:
    return f"{value:.1%}"


def fit(run: str = typer.Argument(..., help="A recorded `measure device`, `measure network` or `measure memory` run: its id, a prefix, or 'latest'.",
                                  metavar="RUN"),
        name: Optional[str] = typer.Option(None, "--name", help="Save each fit as profile NAME-<direction>-<kind> (device runs; kind "
                                           "simple for the plain model, piecewise otherwise), NAME-<pair>-<path> (network runs) or NAME-node<N> (memory tiers), "
                                           "usable as a LINK.", metavar="PROFILE"),
        model: str = typer.Option("auto", "--model", metavar="auto|plain|packet|piecewise",
                                  help="auto: the simplest candidate whose held-out error is within 1.5 points of the best; "
                                       "or force one model (piecewise: 1 or 2 breakpoints)."),
        _old_plot: Optional[str] = OLD_PLOT,
        plot: Optional[Path] = PLOTS, against: str = AGAINST_OPTION,
        store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Device runs: fit transfer-time models to each direction and host memory kind, keep the one the
    held-out sizes support, state its quality and how far the copies are from a link model's limit.
    Network runs: the same, per pair kind and path, on the one-way ping-pong times.
    Memory runs: a Tier profile per node (idle latency, bandwidth per kernel, loaded-latency curve).

    With --plots DIR: one PNG per direction and host memory kind, measured times beside the fit and --against (seed 000, Figure 4)."""
    fmt = output_format(json_, csv_)
    if model not in MODELS:
        raise BadValue(f"--model '{model}' is not allowed; allowed: {', '.join(MODELS)}")
    if name is not None:
        check_profile_name(name)
    if plot is not None:
        from ..outputs import check_folder

        check_folder(plot, "--plots")
    against_link = resolve(against)
    with open_store(store, read_only=True) as db:
        run_id = db.resolve_run(run)
        samples = db.samples(run_id)
        inventory = db.run(run_id).get("inventory")
    if any(s["suite"] == "memory" for s in samples):
        unused = [opt for opt, given in (("--model", model != "auto"), ("--plots", plot is not None),
                                         ("--against", against != AGAINST)) if given]
        if unused:
            raise BadValue(f"{', '.join(unused)} apply to device runs; run {run_id} is a memory run (its tiers take none)")
        return _fit_tiers(samples, run_id, inventory, name, fmt)
    network = any(s["suite"] == "network" for s in samples)
    if network:
        from ..fit.network import AGAINST as NETWORK_AGAINST, fit_network

        against_link = resolve(NETWORK_AGAINST if against == AGAINST else against)
        rows, _, _, notes, skipped = fit_network(samples, against_link, plot, name, run_id, model)
    else:
        rows, _, _, notes, skipped = fit_device(samples, against_link, plot, name, run_id, model)
    unchecked = unvalidated_count(samples)
    if unchecked:
        notes.append(f"{unchecked} unvalidated sample{'s' * (unchecked > 1)} of run {run_id} left out (the probe ended "
                     "before validating them)")
    notes.insert(0, "held-out: mean relative error at each size when it is left out of the fit (plain: t = t_s + n/b's; a "
                    f"richer model is kept only if it beats the simpler ones by over {TOLERANCE * 100:.1f} points; every "
                    f"candidate's is in --json); worst: largest error at a size; of limit: best measured bandwidth over "
                    f"{against_link.label}'s peak payload rate")
    first = ([Column("pair", "pair", justify="left"), Column("path", "path", justify="left")] if network else
             [Column("direction", "direction", justify="left"), Column("host_kind", "memory", justify="left")])
    emit("fit", rows, [
        *first,
        Column("model", "model", justify="left"), Column("latency_seconds", "t_s", format_time, no_wrap=True),
        Column("description", "rates", justify="left"),
        Column("cv_relative_error", "held-out", _percent), Column("plain_cv_relative_error", "plain", _percent),
        Column("worst_relative_error", "worst", _percent), Column("poor_cause", "verdict", _verdict),
        Column("fraction_of_model_limit", "of limit", _percent),
    ], fmt, title=f"Transfer-time models fitted on run {run_id} (robust relative least squares on per-size medians; "
                  "95 % bootstrap intervals and the measured peak in --json)", notes=notes,
        extra={"run_id": run_id, "against": against_link.label, "skipped": skipped,
               "unvalidated_samples": unchecked})
    for s in skipped:
        stderr.print(skip_note(s), highlight=False)
    if not rows:
        stderr.print(f"error: no group of run {run_id} could be fitted ({len(skipped)} skipped)", highlight=False)
        raise typer.Exit(1)


def _verdict(cause: Optional[str]) -> str:
    return "good" if cause is None else f"poor ({cause})"


def _fit_tiers(samples: list[dict[str, Any]], run_id: str, inventory: Optional[dict], name: Optional[str], fmt: str) -> None:
    from ..fit.tiers import data_caches, fit_tiers, save_tiers, tier_rows

    tiers = fit_tiers(samples, run_id, data_caches(inventory))
    notes = [f"{t.name}: {n}" for t in tiers for n in t.notes]
    if name:
        notes += [f"profile {saved}: {path}" for saved, path in save_tiers(name, tiers, run_id)]
    notes.append("link view of a tier: t = idle latency + n / copy rate (STREAM copy's best / 2: it counts each byte twice)")
    emit("fit", tier_rows(tiers), [
        Column("tier", "tier", justify="left"), Column("mode", "mode", justify="left"),
        Column("idle_latency_seconds", "idle latency", lambda v: "–" if v is None else format_time(v), no_wrap=True),
        Column("copy_rate_bytes_per_second", "copy rate", lambda v: "–" if v is None else format_rate(v), no_wrap=True),
        Column("kernel", "kernel", justify="left"), Column("threads", "threads"),
        Column("best_bytes_per_second", "best", lambda v: "–" if v is None else format_rate(v), no_wrap=True),
        Column("median_bytes_per_second", "median", lambda v: "–" if v is None else format_rate(v), no_wrap=True),
        Column("loaded_points", "loaded points"),
    ], fmt, title=f"Memory tiers fitted on run {run_id}", notes=notes, extra={"run_id": run_id,
                                                                              "tiers": [t.model_dump(mode="json") for t in tiers]})

"""`xferlab fit RUN [--name PROFILE] [--model …] [--plot DIR] [--against LINK]`: calibrate link
profiles on a recorded device run and set them beside a link model (seed 000, Figure 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import typer

from ..errors import BadValue
from ..links.presets import check_profile_name, save_profile
from ..fit.linkfit import MODELS, NOISE_FACTOR, PARAMETERS, POOR_CV, POOR_WORST, TOLERANCE, select
from ..fit.samples import kept, unvalidated_count
from ..links import resolve
from ..links.base import Link
from ..links.presets import build
from ..measure.device import DIRECTIONS
from ..store import open_store
from ..units import format_rate, format_time
from .common import CSV, JSON, STORE
from .output import Column, emit, output_format, stderr

#: The preset the fits are set beside by default: seed 000's testbed link (PCIe Gen3 x16).
AGAINST = "pcie3x16"


def _percent(value: float) -> str:
    return f"{value:.1%}"


def _limit(against: Link, direction: str) -> tuple[float, str, int]:
    """The model's payload limit for a direction, the op it is quoted for, and how many ways the bytes
    go: bidir copies count both directions' bytes, so their limit is two streams of a full-duplex
    read+write; one-way copies take the link's peak rate (writes, as `xferlab model` quotes it)."""
    if direction == "bidir":
        return 2 * against.peak_rate("readwrite"), "readwrite", 2
    return against.peak_rate("write"), "write", 1


def fit_device(samples: list[dict[str, Any]], against: str | Link, plot_dir: Optional[Path], profile_prefix: Optional[str],
               run_id: str, model: str = "auto"
               ) -> tuple[list[dict[str, Any]], list[Link], list[Path], list[str], list[dict[str, str]]]:
    """Fit every direction x host memory kind of a device run's copies (validated samples only).
    Returns the rows (as `xferlab fit --json` gives them), the fitted Link of each row (named by its
    profile if saved, else by a LINK string that resolves to it), the plots written, the notes, and
    the groups that could not be fitted ({group, reason}: too few sizes, times that do not grow with
    size, a non-finite value); those are left out, the others fitted and saved."""
    from ..report.plots import plot_fit

    if model not in MODELS:
        raise BadValue(f"--model '{model}' is not allowed; allowed: {', '.join(MODELS)}")
    limit_link = resolve(against) if isinstance(against, str) else against
    copies = [s for s in kept(samples) if s["suite"] == "device" and s["test"] in DIRECTIONS and not s["warmup"]]
    if not copies:
        raise BadValue(f"run {run_id} has no validated host-device copies to fit; record one with `xferlab measure device`")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in copies:
        groups.setdefault((s["test"], s["mode"]), []).append(s)
    rows, links, figures, notes, to_save, skipped = [], [], [], [], [], []
    for (direction, kind), mine in groups.items():
        group = f"{direction}, {kind} host memory"
        sizes = np.array([s["size_bytes"] for s in mine], dtype=float)
        seconds = np.array([s["seconds"] if s["seconds"] is not None else np.nan for s in mine], dtype=float)
        if direction == "bidir":
            sizes = sizes * 2  # both directions' bytes in one copy_both
        try:
            f = select(sizes, seconds, model)
            spec = f"{profile_prefix}-{direction}-{kind}" if profile_prefix else f.spec()
            link = build({**f.link_fields(), "name": spec}, f"fitted link of {direction}, {kind}")
        except BadValue as error:
            skipped.append({"group": group, "reason": str(error)})
            continue
        distinct = np.unique(sizes)
        peak = float(max(s / np.median(seconds[sizes == s]) for s in distinct))
        limit, op, ways = _limit(limit_link, direction)
        row = {"direction": direction, "kind": kind, "model": f.model, "description": link.summary(),
               "latency_seconds": f.latency_seconds, "latency_ci_low_seconds": f.latency_ci[0],
               "latency_ci_high_seconds": f.latency_ci[1],
               "bandwidth_bytes_per_second": f.bandwidth_bytes_per_second,
               "bandwidth_ci_low_bytes_per_second": f.bandwidth_ci[0], "bandwidth_ci_high_bytes_per_second": f.bandwidth_ci[1],
               "breakpoints_bytes": list(f.breakpoints_bytes), "bandwidths_bytes_per_second": list(f.bandwidths_bytes_per_second),
               "bandwidths_ci_low_bytes_per_second": [c[0] for c in f.bandwidths_ci],
               "bandwidths_ci_high_bytes_per_second": [c[1] for c in f.bandwidths_ci],
               "packet_bytes": f.packet_bytes, "packet_overhead_seconds": f.packet_overhead_seconds if f.packet_bytes else None,
               "packet_overhead_ci_low_seconds": f.packet_overhead_ci[0] if f.packet_overhead_ci else None,
               "packet_overhead_ci_high_seconds": f.packet_overhead_ci[1] if f.packet_overhead_ci else None,
               "r2_log": f.r2_log, "median_relative_error": f.median_relative_error,
               "worst_relative_error": f.worst_relative_error, "cv_relative_error": f.cv_relative_error,
               **{f"{c.replace('-', '')}_cv_relative_error": f.candidates.get(c) for c in PARAMETERS},
               "bootstrap_resamples": f.resamples, "points": f.points, "sizes": f.sizes, "poor": f.poor,
               "poor_cause": f.poor_cause, "missed_sizes_bytes": list(f.missed_sizes_bytes),
               "per_size": [{"size_bytes": s, "held_out_relative_error": e, "noise_relative": z}
                            for s, e, z in zip(f.size_bytes, f.held_out_errors, f.noise)],
               "measured_peak_bytes_per_second": peak, "against": limit_link.label, "model_limit_op": op,
               "model_limit_bytes_per_second": limit, "fraction_of_model_limit": peak / limit}
        notes += [f"{group}: {n}" for n in f.notes if n.startswith("poor fit")]
        if profile_prefix:
            row["profile"] = spec
            to_save.append((spec, f.link_fields(), f"fitted by xferlab fit on run {run_id}: {direction}, {kind} host "
                                                   f"memory; {f.model} model, held-out error {f.cv_relative_error:.1%}"))
        if plot_dir is not None:
            figures.append(plot_fit(sizes, seconds, f, limit_link, Path(plot_dir) / f"{direction}-{kind}.png",
                                    f"{direction}, {kind} host memory (run {run_id})", op, ways))
            row["plot"] = str(figures[-1])
        rows.append(row)
        links.append(link)
    for spec, fields, note in to_save:
        notes.append(f"profile {spec}: {save_profile(spec, fields, note)}")
    poor = [f"{r['direction']} {r['kind']} ({r['poor_cause']})" for r in rows if r["poor"]]
    if poor:
        notes.append(f"poor (held-out error over {POOR_CV:.0%} or worst over {POOR_WORST:.0%}): {len(poor)} of {len(rows)} "
                     f"fits ({', '.join(poor)}); drift: the medians fall with size beyond their intervals (the "
                     f"machine's speed changed between points); noise: the error is within {NOISE_FACTOR:g}x the "
                     "medians' noise where it is largest (repeat with --precision); model: the model misses the sizes named")
    return rows, links, figures, notes, skipped


def skip_note(skipped: dict[str, str]) -> str:
    return f"not fitted: {skipped['group']}: {skipped['reason']}"


def fit(run: str = typer.Argument(..., help="A recorded `measure device` or `measure memory` run: its id, a prefix, or 'latest'.",
                                  metavar="RUN"),
        name: Optional[str] = typer.Option(None, "--name", help="Save each fit as profile NAME-<direction>-<kind> (device runs; kind "
                                           "simple for the plain model, piecewise otherwise) or NAME-node<N> (memory tiers), "
                                           "usable as a LINK.", metavar="PROFILE"),
        model: str = typer.Option("auto", "--model", metavar="auto|plain|packet|piecewise",
                                  help="auto: the simplest candidate whose held-out error is within 1.5 points of the best; "
                                       "or force one model (piecewise: 1 or 2 breakpoints)."),
        plot: Optional[Path] = typer.Option(None, "--plot", metavar="DIR",
                                            help="Write one PNG per direction and host memory kind into DIR: measured times "
                                                 "beside the fitted and the --against model (seed 000, Figure 4)."),
        against: str = typer.Option(AGAINST, "--against", metavar="LINK",
                                    help=f"The link model drawn beside the fits and whose peak rate is the model limit "
                                         f"(default: {AGAINST}, seed 000's testbed link)."),
        store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Device runs: fit transfer-time models to each direction and host memory kind, keep the one the
    held-out sizes support, state its quality and how far the copies are from a link model's limit.
    Memory runs: a Tier profile per node (idle latency, bandwidth per kernel, loaded-latency curve)."""
    fmt = output_format(json_, csv_)
    if model not in MODELS:
        raise BadValue(f"--model '{model}' is not allowed; allowed: {', '.join(MODELS)}")
    if name is not None:
        check_profile_name(name)
    if plot is not None:
        from ..report.paths import check_folder

        check_folder(plot, "--plot")
    against_link = resolve(against)
    with open_store(store, read_only=True) as db:
        run_id = db.resolve_run(run)
        samples = db.samples(run_id)
        inventory = db.run(run_id).get("inventory")
    if any(s["suite"] == "memory" for s in samples):
        unused = [opt for opt, given in (("--model", model != "auto"), ("--plot", plot is not None),
                                         ("--against", against != AGAINST)) if given]
        if unused:
            raise BadValue(f"{', '.join(unused)} apply to device runs; run {run_id} is a memory run (its tiers take none)")
        return _fit_tiers(samples, run_id, inventory, name, fmt)
    rows, _, _, notes, skipped = fit_device(samples, against_link, plot, name, run_id, model)
    unchecked = unvalidated_count(samples)
    if unchecked:
        notes.append(f"{unchecked} unvalidated sample{'s' * (unchecked > 1)} of run {run_id} left out (the probe ended "
                     "before validating them)")
    notes.insert(0, "held-out: mean relative error at each size when it is left out of the fit (plain: t = t_s + n/b's; a "
                    f"richer model is kept only if it beats the simpler ones by over {TOLERANCE * 100:.1f} points; every "
                    f"candidate's is in --json); worst: largest error at a size; of limit: best measured bandwidth over "
                    f"{against_link.label}'s peak payload rate")
    emit("fit", rows, [
        Column("direction", "direction", justify="left"), Column("kind", "memory", justify="left"),
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
        Column("best_bandwidth_bytes_per_second", "best", lambda v: "–" if v is None else format_rate(v), no_wrap=True),
        Column("median_bandwidth_bytes_per_second", "median", lambda v: "–" if v is None else format_rate(v), no_wrap=True),
        Column("loaded_points", "loaded points"),
    ], fmt, title=f"Memory tiers fitted on run {run_id}", notes=notes, extra={"run_id": run_id,
                                                                              "tiers": [t.model_dump(mode="json") for t in tiers]})

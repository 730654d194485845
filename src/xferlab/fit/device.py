"""Fitting a device run's copies: every direction x host memory kind of the validated samples gets
the transfer-time model the held-out sizes support (:func:`xferlab.fit.linkfit.select`), set beside
a link model's limit, optionally saved as a profile and plotted. ``xferlab fit``, the lab and the
report call :func:`fit_device`; the CLI only prints its rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..choices import DEVICE_AGAINST
from ..errors import BadValue, NothingMeasured
from ..links import resolve
from ..links.base import Link
from ..links.presets import build, save_profile
from ..measure.device import DIRECTIONS
from .linkfit import MODELS, NOISE_FACTOR, PARAMETERS, POOR_CV, POOR_WORST, select
from ..measure.samples import kept

#: The preset the fits are set beside by default: seed 000's testbed link (PCIe Gen3 x16).
AGAINST = DEVICE_AGAINST


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
    if model not in MODELS:
        raise BadValue(f"--model '{model}' is not allowed; allowed: {', '.join(MODELS)}")
    limit_link = resolve(against) if isinstance(against, str) else against
    copies = [s for s in kept(samples) if s["suite"] == "device" and s["test"] in DIRECTIONS and not s["warmup"]]
    if not copies:
        recorded = [s for s in samples if s["suite"] == "device" and s["test"] in DIRECTIONS and not s["warmup"]]
        if recorded:  # copies were measured, but none validated: the measurement failed, not the input
            raise NothingMeasured(f"run {run_id} has {len(recorded)} host-device copies, none validated by the probe; "
                                  "nothing to fit (measure again)")
        raise BadValue(f"run {run_id} has no validated host-device copies to fit; record one with `xferlab measure device`")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in copies:
        groups.setdefault((s["test"], s["host_kind"]), []).append(s)
    planned = []
    for (direction, kind), mine in groups.items():
        sizes = np.array([s["size_bytes"] for s in mine], dtype=float)
        seconds = np.array([s["seconds"] if s["seconds"] is not None else np.nan for s in mine], dtype=float)
        if direction == "bidir":
            sizes = sizes * 2  # both directions' bytes in one copy_both
        limit, op, ways = _limit(limit_link, direction)
        planned.append(Group({"direction": direction, "host_kind": kind}, f"{direction}, {kind} host memory", sizes,
                             seconds, f"{profile_prefix}-{direction}-{kind}" if profile_prefix else None, limit, op, ways,
                             Path(plot_dir) / f"{direction}-{kind}.png" if plot_dir is not None else None,
                             f"{direction}, {kind} host memory (run {run_id})",
                             f"fitted by xferlab fit on run {run_id}: {direction}, {kind} host memory"))
    return fit_groups(planned, model, limit_link, lambda r: f"{r['direction']} {r['host_kind']}")


@dataclass
class Group:
    """One group of samples to fit: the fields its row starts with, what to call it, its sizes and
    times, the profile to save it as (or None), the limit it is set beside, where to plot it."""

    fields: dict[str, Any]
    label: str
    sizes: np.ndarray
    seconds: np.ndarray
    spec: Optional[str]
    limit: float
    op: str
    ways: int
    plot_path: Optional[Path]
    title: str
    origin: str


def fit_groups(groups: list[Group], model: str, limit_link: Link, name_of
               ) -> tuple[list[dict[str, Any]], list[Link], list[Path], list[str], list[dict[str, str]]]:
    """Fit each group (:func:`fit_group`), save the profiles asked for, and note the poor fits
    (``name_of(row)`` names a row in that note). Returns rows, links, plots, notes and the groups
    that could not be fitted."""
    rows, links, figures, notes, to_save, skipped = [], [], [], [], [], []
    for g in groups:
        try:
            row, link, figure, more, save = fit_group(g, model, limit_link)
        except BadValue as error:  # too few sizes, times that do not grow with size …
            skipped.append({"group": g.label, "reason": str(error)})
            continue
        rows.append({**g.fields, **row})
        links.append(link)
        figures += [figure] if figure else []
        notes += more
        to_save += [save] if save else []
    notes += save_fits(to_save)
    notes += poor_note(rows, name_of)
    return rows, links, figures, notes, skipped


def fit_group(g: Group, model: str, limit_link: Link):
    """Fit one group's (size, seconds) samples and set it beside ``g.limit`` (``limit_link``'s rate for
    ``g.op``). Returns the row's fields, the Link (named ``g.spec`` when it is to be saved as that
    profile), the plot written or None, notes, and the (name, fields, note) to save or None; raises
    BadValue when the samples cannot be fitted."""
    from ..plots import plot_fit  # matplotlib only when plotting

    group, sizes, seconds, spec, limit, op, ways = g.label, g.sizes, g.seconds, g.spec, g.limit, g.op, g.ways
    f = select(sizes, seconds, model)
    link = build({**f.link_fields(), "name": spec or f.spec()}, f"fitted link of {group}")
    distinct = np.unique(sizes)
    peak = float(max(s / np.median(seconds[sizes == s]) for s in distinct))
    row = {"model": f.model, "description": link.summary(),
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
           "per_size": [{"size_bytes": s, "held_out_relative_error": e, "noise_relative_error": z}
                        for s, e, z in zip(f.size_bytes, f.held_out_errors, f.noise)],
           "measured_peak_bytes_per_second": peak, "against": limit_link.label, "model_limit_op": op,
           "model_limit_bytes_per_second": limit, "fraction_of_model_limit": peak / limit}
    notes = [f"{group}: {n}" for n in f.notes if n.startswith("poor fit")]
    save = None
    if spec:
        row["profile"] = spec
        save = (spec, f.link_fields(), f"{g.origin}; {f.model} model, held-out error {f.cv_relative_error:.1%}")
    figure = None
    if g.plot_path is not None:
        figure = plot_fit(sizes, seconds, f, limit_link, g.plot_path, g.title, op, ways)
        row["plot"] = str(figure)
    return row, link, figure, notes, save


def save_fits(to_save: list) -> list[str]:
    """Save each (name, fields, note) as a profile; a note per profile saved."""
    return [f"profile {spec}: {save_profile(spec, fields, note)}" for spec, fields, note in to_save]


def poor_note(rows: list[dict[str, Any]], label) -> list[str]:
    """One line naming the fits judged poor and what each cause means."""
    poor = [f"{label(r)} ({r['poor_cause']})" for r in rows if r["poor"]]
    if not poor:
        return []
    return [f"poor (held-out error over {POOR_CV:.0%} or worst over {POOR_WORST:.0%}): {len(poor)} of {len(rows)} "
            f"fits ({', '.join(poor)}); drift: the medians fall with size beyond their intervals (the "
            f"machine's speed changed between points); noise: the error is within {NOISE_FACTOR:g}x the "
            "medians' noise where it is largest (repeat with --precision); model: the model misses the sizes named"]


def skip_note(skipped: dict[str, str]) -> str:
    return f"not fitted: {skipped['group']}: {skipped['reason']}"



"""Fitting a network run: the one-way ping-pong times (OSU's latency test) of every pair kind x path
become a transfer-time model, t(n) = latency + n / rate or a richer one the held-out sizes support
(:func:`xferlab.fit.device.fit_group`, the same fit as the device copies), set beside a network
link model's limit and, with ``--name``, saved as a profile usable wherever a LINK is accepted
(``advise whatif … --replace ib-edr=<profile>``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..choices import NETWORK_AGAINST
from ..errors import BadValue, NothingMeasured
from ..links import resolve
from ..links.base import Link
from ..measure.samples import kept, value_of
from .device import Group, fit_groups
from .linkfit import MODELS

#: The network model the fits are set beside by default: seed 001's testbed network (EDR InfiniBand).
AGAINST = NETWORK_AGAINST




def fit_network(samples: list[dict[str, Any]], against: str | Link, plot_dir: Optional[Path], profile_prefix: Optional[str],
                run_id: str, model: str = "auto"
                ) -> tuple[list[dict[str, Any]], list[Link], list[Path], list[str], list[dict[str, str]]]:
    """Fit the latency test of every (pair kind, path) of a network run (validated samples, sizes
    above 0). Returns what :func:`xferlab.fit.device.fit_device` returns; rows carry ``pair``,
    ``path`` and ``buffer`` instead of direction and host memory kind."""
    if model not in MODELS:
        raise BadValue(f"--model '{model}' is not allowed; allowed: {', '.join(MODELS)}")
    limit_link = resolve(against) if isinstance(against, str) else against
    pings = [s for s in kept(samples) if s["suite"] == "network" and s["test"] == "latency" and (s["size_bytes"] or 0) > 0]
    if not pings:
        recorded = [s for s in samples if s["suite"] == "network" and s["test"] == "latency"]
        if recorded:
            raise NothingMeasured(f"run {run_id} has {len(recorded)} ping-pong samples, none validated by the probe; "
                                  "nothing to fit (measure again)")
        raise BadValue(f"run {run_id} has no ping-pong (latency test) above 0 bytes to fit; record one with "
                       "`xferlab measure network --tests latency`")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in pings:  # a pair of mixed buffers (OSU's H D, D H) is a path of its own: "staged-H-D"
        sides = value_of(s, "buffers") or ""
        mixed = sides in ("H D", "D H")
        groups.setdefault((value_of(s, "pair"), value_of(s, "path") + ("-" + sides.replace(" ", "-") if mixed else "")),
                          []).append(s)
    limit = limit_link.peak_rate("write")
    planned = []
    for (pair, path), mine in groups.items():
        planned.append(Group({"pair": pair, "path": path, "buffer": value_of(mine[0], "buffer")}, f"{pair}, {path} path",
                             np.array([s["size_bytes"] for s in mine], dtype=float),
                             np.array([s["seconds"] for s in mine], dtype=float),
                             f"{profile_prefix}-{pair}-{path}" if profile_prefix else None, limit, "write", 1,
                             Path(plot_dir) / f"network-{pair}-{path}.png" if plot_dir is not None else None,
                             f"MPI one-way time, {pair}, {path} (run {run_id})",
                             f"fitted by xferlab fit on run {run_id}: MPI ping-pong, {pair}, {path} path"))
    return fit_groups(planned, model, limit_link, lambda r: f"{r['pair']} {r['path']}")

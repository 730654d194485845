"""Which link is fastest for a transfer of each size, and where the ranking changes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..links.analysis import crossovers
from ..links.base import Link, Op


def fastest(links: list[Link], sizes: np.ndarray, op: Op = "write") -> list[dict[str, Any]]:
    """Per size: the fastest link, its time, the runner-up and how much slower it is."""
    times = np.vstack([np.asarray(link.time(sizes, op)) for link in links])
    order = np.argsort(times, axis=0)
    rows = []
    for j, size in enumerate(sizes):
        best, second = order[0, j], order[1, j] if len(links) > 1 else order[0, j]
        rows.append({"size_bytes": int(size), "fastest": links[best].label, "seconds": float(times[best, j]),
                     "runner_up": links[second].label if len(links) > 1 else None,
                     "runner_up_ratio": float(times[second, j] / times[best, j]) if len(links) > 1 else None})
    return rows


def ranking_changes(links: list[Link], op: Op = "write") -> list[dict[str, Any]]:
    """Every exact crossover between pairs of links (sizes where one overtakes another)."""
    out = []
    for i, a in enumerate(links):
        for b in links[i + 1:]:
            for c in crossovers(a, b, op):
                out.append({"size_bytes": c.size_bytes, "faster_below": c.faster_below, "faster_above": c.faster_above})
    return sorted(out, key=lambda r: r["size_bytes"])

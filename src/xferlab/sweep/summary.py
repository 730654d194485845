"""What a sweep's points answer: the speedup of each against the baseline strategy and the best
point per system, link and workflow (:func:`summarize`), the Pareto front of makespan against link
cost (:func:`mark_pareto`), where pipelining beats the baseline in chunk size (:func:`crossovers`),
and the speedup over two chosen axes for a heat map (:func:`heatmap_grid`). Plain functions over the
rows :func:`xferlab.sweep.run.run_sweep` returns."""

from __future__ import annotations

import math
from typing import Any, Optional

from ..errors import BadValue

#: The axes a heat map can take: a row field each (``chunk`` is ``chunk_bytes``).
AXES = {"system": "system", "link": "link", "workflow": "workflow", "strategy": "strategy", "chunk": "chunk_bytes"}


def summarize(rows: list[dict[str, Any]], baseline: str, costs: Optional[dict[str, float]] = None) -> list[dict[str, Any]]:
    """Each point with ``speedup`` (the baseline strategy's makespan at the same system, link and
    workflow over its own), ``best`` (the fastest point of its system, link and workflow) and ``error``
    (why it could not run, its makespan then None, as its speedup); with
    link ``costs``, its ``cost`` and ``pareto``: no point of its system and workflow is at most as
    costly and faster, or cheaper and as fast."""
    def where(r):
        return r["system"], r["link"], r["workflow"]

    ran = [r for r in rows if r["makespan_seconds"] is not None]  # a point that could not run has none
    base = {where(r): r["makespan_seconds"] for r in ran if r["strategy"] == baseline}
    fastest: dict[tuple, float] = {}
    for r in ran:
        fastest[where(r)] = min(fastest.get(where(r), math.inf), r["makespan_seconds"])
    out = []
    for r in rows:
        b, m = base.get(where(r)), r["makespan_seconds"]
        out.append({k: r[k] for k in ("system", "link", "workflow", "strategy", "chunk_bytes", "makespan_seconds")}
                   | {"speedup": b / m if b and m else None, "best": m is not None and m == fastest[where(r)],
                      "error": r.get("error")})
    if costs:
        for r in out:
            r["cost"] = costs.get(r["link"])
            r["pareto"] = False
        mark_pareto(out)
    return out


def mark_pareto(rows: list[dict[str, Any]]) -> None:
    """Sets ``pareto`` on the rows of each system and workflow that have a cost: sorted by cost, a
    point is on the front when it is the fastest of its cost and faster than every cheaper point
    (n log n: a sweep of 10,000 costed points is marked in milliseconds)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r["cost"] is not None and r["makespan_seconds"] is not None:
            groups.setdefault((r["system"], r["workflow"]), []).append(r)
    for members in groups.values():
        members.sort(key=lambda r: (r["cost"], r["makespan_seconds"]))
        cheaper_best = math.inf  # the fastest makespan among strictly cheaper points
        i = 0
        while i < len(members):
            j = i
            while j < len(members) and members[j]["cost"] == members[i]["cost"]:
                j += 1
            level_best = members[i]["makespan_seconds"]  # sorted: the fastest of this cost comes first
            for r in members[i:j]:
                r["pareto"] = r["makespan_seconds"] == level_best < cheaper_best
            cheaper_best = min(cheaper_best, level_best)
            i = j


def crossovers(rows: list[dict[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """Where chunking pays: for each system, link and workflow with pipelined points, the smallest and
    largest chunk size at which pipelining beats the baseline strategy (``speedup`` > 1; None where none
    does), at how many of the chunk sizes swept it does, and the best chunk. Rows from :func:`summarize`."""
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        if r["strategy"] != "pipelined" or r["speedup"] is None:
            continue
        key = (r["system"], r["link"], r["workflow"])
        entry = out.setdefault(key, {"system": key[0], "link": key[1], "workflow": key[2], "baseline": baseline,
                                     "faster_from_bytes": None, "faster_up_to_bytes": None, "faster_chunks": 0,
                                     "swept_chunks": 0, "best_chunk_bytes": None, "best_speedup": 0.0})
        entry["swept_chunks"] += 1
        if r["speedup"] > 1:
            entry["faster_chunks"] += 1
            c = r["chunk_bytes"]
            entry["faster_from_bytes"] = c if entry["faster_from_bytes"] is None else min(entry["faster_from_bytes"], c)
            entry["faster_up_to_bytes"] = c if entry["faster_up_to_bytes"] is None else max(entry["faster_up_to_bytes"], c)
        if r["speedup"] > entry["best_speedup"]:
            entry["best_chunk_bytes"], entry["best_speedup"] = r["chunk_bytes"], r["speedup"]
    return list(out.values())


def heatmap_axes(text: str, strategies: list[str]) -> tuple[str, str]:
    """--heatmap-axes Y,X checked against the sweep before it runs: two different axes, and ``chunk``
    only when the sweep has pipelined points (only they have a chunk size)."""
    axes = [a.strip() for a in text.split(",")]
    if len(axes) != 2:
        raise BadValue(f"--heatmap-axes '{text}': give two axes, rows then columns, such as link,chunk")
    for axis in axes:
        if axis not in AXES:
            raise BadValue(f"--heatmap-axes: '{axis}' is not an axis; allowed: {', '.join(AXES)}")
    if axes[0] == axes[1]:
        raise BadValue(f"--heatmap-axes '{text}' names one axis twice; give two of {', '.join(AXES)}")
    if "chunk" in axes and "pipelined" not in strategies:
        raise BadValue(f"--heatmap-axes {text}: only pipelined points have a chunk size and the sweep has none; "
                       "choose two of system, link, workflow, strategy")
    return axes[0], axes[1]


def heatmap_grid(rows: list[dict[str, Any]], y: str, x: str) -> tuple[list, list, list[list[float]], list[str]]:
    """The best speedup at each (``y``, ``x``) pair of values over every other axis (two axes that
    :func:`heatmap_axes` accepted): (y values, x values, grid[i][j] (NaN where no point), the axes the
    best is taken over). With ``chunk`` an axis only the pipelined points count."""
    keep = [r for r in rows if r["speedup"] is not None and ("chunk" not in (x, y) or r["chunk_bytes"] is not None)]
    if not keep:
        raise BadValue(f"--heatmap-axes {y},{x}: no point that ran has a value on both axes")

    def values(axis: str) -> dict:
        seen = list(dict.fromkeys(r[AXES[axis]] for r in keep))
        return {v: i for i, v in enumerate(sorted(seen) if axis == "chunk" else seen)}

    ys, xs = values(y), values(x)
    grid = [[math.nan] * len(xs) for _ in ys]
    for r in keep:
        i, j = ys[r[AXES[y]]], xs[r[AXES[x]]]
        grid[i][j] = r["speedup"] if math.isnan(grid[i][j]) else max(grid[i][j], r["speedup"])
    over = [a for a in AXES if a not in (x, y) and len({r[AXES[a]] for r in keep}) > 1]
    return list(ys), list(xs), grid, over

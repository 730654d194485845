"""The request stream's statistics that seed 002 (Chen, Zhang and Austin, "Zipper: Latency-Tolerant
Optimizations for High-Performance Buses") argues from: how many operands a request takes from one
of the last few requests (forwarding keeps them on the device), how many requests are independent
at once (a window of them runs in parallel), how few results the host actually reads (the others
never need to cross the bus), and how long after its issue a result is first used (the latency there
is to hide).

The stream comes from the runtime's trace (``native/runtime``: ``Runtime.trace``/``traced``): per
request the requests its operands came from, when the host first read its result, and the steady
clock's time of both (its issue, the host's read). A workload is run once, in forward mode on the
emulated bus at latency 0 (the stream's order does not depend on the bus; its times do, and are this
run's). The seed counts within an 8-request window ("Exploitable Opportunities Exist"): ``WINDOW``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import BadValue

RECENT = 7  # seed 002: operands produced by one of the last 7 requests
WINDOW = 8  # seed 002: "within an 8-request window"
MAX_WINDOW = 2**20


def check_window(window: int, option: str = "--window") -> int:
    if not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        raise BadValue(f"{option} {window} is not allowed: requests per window of the opportunity statistics, "
                       f"1 to {MAX_WINDOW:,} (seed 002's is 8)")
    return window


def statistics(producers: list[int], read_at: list[int], recent: int = RECENT, window: int = WINDOW,
               issued_seconds: Optional[list[float]] = None, read_seconds: Optional[list[float]] = None) -> dict[str, Any]:
    """The stream's figures from a trace: ``producers`` (3 per request, 1-based producing request or
    0) and ``read_at`` (per request, requests issued when the host first read it, or 0); with
    ``issued_seconds`` and ``read_seconds`` (per request, its issue and the host's first read, -1: never)
    the issue-to-use distance in time too.

    * ``recent_operand_share``: of the operands that are earlier results, the share produced by one of
      the last ``recent`` requests (distance i - p <= recent);
    * ``level_width_*``: requests per level of the dependency graph within each window of ``window``
      requests (producers outside the window count as ready): mean over windows of requests / levels,
      and the distribution of the levels' sizes (median, p90, max); ``ideal_parallelism``: requests
      over the depth of the whole stream's graph;
    * ``host_read_share``: results the host reads; ``unused_share``: results neither read nor used;
    * ``use_distance_*``: per result that is used, requests issued from its issue to its first use
      (by a later request, or the host's read): median, p90, max; ``use_distance_*_seconds``: the same
      distance in time, from its issue to the issue of the first request that uses it or the host's
      read, whichever is earlier: mean (the seed's "on average"), median, p90, max.
    """
    n = len(read_at)
    if len(producers) != 3 * n:
        raise BadValue(f"trace: {len(producers)} producers for {n} requests; 3 per request")
    if recent < 1:
        raise BadValue(f"recent = {recent}: at least 1")
    check_window(window)
    timed = issued_seconds is not None and read_seconds is not None
    if timed and not len(issued_seconds) == len(read_seconds) == n:
        raise BadValue(f"trace: {len(issued_seconds)} issue times and {len(read_seconds)} read times for {n} requests")
    if not n:
        return {"requests": 0}
    p = np.asarray(producers, dtype=np.int64).reshape(n, 3)
    index = np.arange(1, n + 1)[:, None]
    from_requests = p > 0
    distance = (index - p)[from_requests]
    first_use = np.full(n + 1, np.iinfo(np.int64).max)
    np.minimum.at(first_use, p[from_requests], np.broadcast_to(index, p.shape)[from_requests])
    read = np.asarray(read_at, dtype=np.int64)
    first_use[1:] = np.where(read > 0, np.minimum(first_use[1:], read), first_use[1:])
    used = first_use[1:] < np.iinfo(np.int64).max
    use_distance = first_use[1:][used] - np.arange(1, n + 1)[used]
    times: dict[str, Any] = {}
    if timed:
        issued = np.asarray(issued_seconds, dtype=np.float64)
        first_time = np.full(n + 1, np.inf)  # the issue of the first request using each result (consumers in order)
        np.minimum.at(first_time, p[from_requests], np.broadcast_to(issued[:, None], p.shape)[from_requests])
        host = np.asarray(read_seconds, dtype=np.float64)
        first_time[1:] = np.where(host >= 0, np.minimum(first_time[1:], host), first_time[1:])
        seconds = (first_time[1:] - issued)[np.isfinite(first_time[1:])]
        times = {"use_distance_mean_seconds": float(seconds.mean()) if seconds.size else None,
                 **{f"use_distance_{k}_seconds": v for k, v in
                    zip(("median", "p90", "max"), _spread(seconds) if seconds.size else (None, None, None))}}

    level = np.zeros(n + 1, dtype=np.int64)  # level of each request in the whole graph (1-based requests)
    widths, per_window = [], []
    for start in range(0, n, window):
        stop = min(start + window, n)
        local = {}  # request -> its level within this window
        for i in range(start + 1, stop + 1):
            deps = p[i - 1][p[i - 1] > 0]
            level[i] = 1 + (level[deps].max() if deps.size else 0)
            local[i] = 1 + max((local[d] for d in deps.tolist() if d in local), default=0)
        sizes = np.bincount(np.fromiter(local.values(), dtype=np.int64))[1:]
        widths += sizes[sizes > 0].tolist()
        per_window.append((stop - start) / sizes.size)

    def spread(values: np.ndarray, name: str) -> dict[str, Any]:
        if not values.size:
            return {f"{name}_median": None, f"{name}_p90": None, f"{name}_max": None}
        return {f"{name}_median": float(np.median(values)), f"{name}_p90": float(np.percentile(values, 90)),
                f"{name}_max": int(values.max())}

    return {
        "requests": n, "operands_from_requests": int(from_requests.sum()),
        "recent_operand_share": float((distance <= recent).mean()) if distance.size else None,
        "recent": recent, "window": window,
        "level_width_mean": float(np.mean(per_window)), **spread(np.asarray(widths), "level_width"),
        "ideal_parallelism": n / int(level.max()),
        "host_read_share": float((read > 0).mean()), "unused_share": float(1 - used.mean()),
        **spread(use_distance, "use_distance"), **times,
    }


def _spread(values: np.ndarray) -> tuple[float, float, float]:
    return float(np.median(values)), float(np.percentile(values, 90)), float(values.max())


def trace_workload(name: str, size: int = 0, seed: int = 1, recent: int = RECENT, window: int = WINDOW,
                   **runtime: Any) -> dict[str, Any]:
    """Run workload ``name`` once with the trace on (the runtime at its own window, ``runtime``: other
    open_runtime options, such as work and device_speed) and return its stream's statistics over windows
    of ``window`` requests (and its check)."""
    from . import open_runtime

    check_window(window)
    rt = open_runtime("emulated", "forward", latency=0.0, **runtime)
    try:
        rt.trace()
        result = rt.run_workload(name, size, seed)
        traced = rt.traced
    finally:
        rt.close()
    if not result["ok"]:
        raise RuntimeError(f"workload {name} gave a wrong result while traced: {result['detail']}")
    return {"workload": name, "opset": result["opset"], "problem_size": result["size"],
            **statistics(traced["producers"], traced["read_at"], recent, window, traced["issued_seconds"],
                         traced["read_seconds"])}

"""The chunk size that minimizes a pipelined workflow's makespan, found through the simulator.

Small chunks overlap the stages better (the pipeline fills and drains faster), but every chunk pays
each link's start-up time t_s again (seed 000's granularity argument; seed 004 measures it). The
makespan against chunk size is therefore U-shaped: xferlab evaluates it on powers of two with the
max-plus fast path (:func:`xferlab.sim.flows.pipelined`), then narrows the best bracket by golden-
section search on log(size) down to whole bytes' resolution of a few percent.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import BadValue
from ..sim import flows
from ..system.models import System, Workflow

MAX_CHUNKS = 2**20  # the smallest chunk tried moves total / MAX_CHUNKS bytes
GOLDEN = (math.sqrt(5) - 1) / 2


def with_overhead(workflow: Workflow, seconds: float | None) -> Workflow:
    """``workflow`` with a per-chunk cost of ``seconds`` given to every task that has none (None: as is)."""
    if seconds is None:
        return workflow
    tasks = [{**t.model_dump(), "overhead": t.overhead or seconds} for t in workflow.tasks]
    return Workflow.model_validate({**workflow.model_dump(by_alias=True), "tasks": tasks})


def best_chunk(system: System, workflow: Workflow, smallest: int = 64) -> dict[str, Any]:
    """The best chunk, its makespan, the grid it was chosen from, and the one-piece makespan."""
    if not workflow.edges:
        raise BadValue(f"workflow '{workflow.name}' moves no data: there is nothing to chunk")
    total = int(workflow.edges[0].bytes)
    lo = max(smallest, math.ceil(total / MAX_CHUNKS))
    cache: dict[int, float] = {}

    def makespan(size: int) -> float:
        size = min(max(int(size), lo), total)
        if size not in cache:
            cache[size] = flows.chunk_sweep(system, workflow, [size])[0]["makespan_seconds"]
        return cache[size]

    grid = sorted({min(2**k, total) for k in range(max(0, math.floor(math.log2(lo))), math.ceil(math.log2(total)) + 1)
                   if 2**k >= lo} | {total})
    cache.update({r["chunk_bytes"]: r["makespan_seconds"] for r in flows.chunk_sweep(system, workflow, grid)})
    times = [cache[s] for s in grid]
    i = min(range(len(grid)), key=times.__getitem__)
    a, b = math.log(grid[max(i - 1, 0)]), math.log(grid[min(i + 1, len(grid) - 1)])
    while b - a > 0.01:  # sizes within 1 % of each other
        c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        if makespan(round(math.exp(c))) <= makespan(round(math.exp(d))):
            b = d
        else:
            a = c
    best = min(cache, key=cache.__getitem__)
    return {"system": system.name, "workflow": workflow.name, "total_bytes": total, "chunk_bytes": best,
            "chunks": math.ceil(total / best), "makespan_seconds": cache[best], "one_piece_seconds": makespan(total),
            "grid": [{"chunk_bytes": s, "makespan_seconds": t} for s, t in zip(grid, times)],
            "evaluations": len(cache)}

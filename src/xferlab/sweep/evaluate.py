"""One batch of a sweep's points -> rows: what a Dask worker (or this process) runs. The systems and
workflows travel as plain dicts (``model_dump``), so a worker on another host needs no files; each
worker builds each model once per batch."""

from __future__ import annotations

import math
import time
from typing import Any

from ..advise.whatif import replace_link
from ..errors import XferlabError
from ..sim import flows
from ..system.models import System, Workflow


def evaluate_batch(models: dict[str, dict[str, Any]], replace: str | None, points: list[dict]) -> list[dict]:
    """Rows for ``points``: the point, ``makespan_seconds`` (NaN where the point cannot run) and ``error``."""
    systems: dict[tuple, System] = {}
    workflows: dict[str, Workflow] = {}
    rows = []
    for p in points:
        t0 = time.perf_counter()
        try:
            key = (p["system"], p["link"])
            if key not in systems:
                system = System.model_validate(models["systems"][p["system"]])
                systems[key] = replace_link(system, replace, p["link"]) if p["link"] else system
            if p["workflow"] not in workflows:
                workflows[p["workflow"]] = Workflow.model_validate(models["workflows"][p["workflow"]])
            value, error = flows.makespan(systems[key], workflows[p["workflow"]], p["strategy"], p["chunk_bytes"]), None
        except XferlabError as problem:  # a point that cannot run (no link for direct, a chunk too large)
            value, error = math.nan, str(problem)
        rows.append({**p, "makespan_seconds": value, "error": error, "seconds": time.perf_counter() - t0})
    return rows

"""The lab's memory stage: calibrated, planned to its share of the budget (measure/sizing.py),
measured, and what was left out said (:func:`memory_stage`)."""

from __future__ import annotations

import os
import time as _time
from pathlib import Path
from typing import Any, Callable, Optional

from ..measure import sizing
from ..measure.memory import MemoryPlan, rows_of, steps
from ..measure.results import memory_params, memory_results
from ..measure.run import measure
from ..outputs import write_json
from ..system import inventory as inv
from ..units import format_size

#: The lab's target for every memory and device point: its median's 95 % interval within 2 % of it.
PRECISION = 0.02
MAX_TIME_MEMORY = 0.5  # seconds of timed work per memory point (kernel x threads, working set), at most
MIN_TIME_PER_POINT = 0.005  # seconds: below this a point has too few repetitions to say anything


def memory_stage(share: float, store: Optional[Path], folder: Path, seconds: float,
                 say: Callable[[str], None] = lambda line: None) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Every memory node measured within ``share`` seconds, sized by :func:`quick_memory_plan` from a
    calibration measured first (its seconds taken from the share); the statistics and plots after
    (``measured_seconds`` against ``seconds`` in the entry) are not measuring and not in the share.
    Returns the run, its results (memory.json) and the summary's entry: the run, the calibration, the
    plan and what it left out, with why."""
    t0 = _time.monotonic()
    llc = inv.last_level_cache_bytes() or 32 * 2**20
    try:
        calibration = sizing.calibrate(llc, timeout=max(60.0, share))
    except RuntimeError as error:  # the plan cannot be sized: the first point of each step only
        calibration = None
        say(f"memory: {error}; measuring the first point of each step only")
    plan = quick_memory_plan(max(0.0, share - (_time.monotonic() - t0)), calibration, llc)
    skipped = list(plan.sized.skipped) if plan.sized else []
    for line in skipped:
        say(f"memory plan: {line}")
    outcome = measure("lab", steps(plan), rows_of, "memory",
                      {"budget_seconds": seconds, "memory": memory_params(plan),
                       "sizing": plan.sized.as_json() if plan.sized else None}, store,
                      timeout=max(60.0, seconds), budget=share)
    measured = _time.monotonic() - t0  # the statistics and plots below are the stage's fixed cost, not measuring
    memory = memory_results(outcome, folder)
    for result in outcome.results:
        for point in result.step.learned.get("skipped", []):
            skipped.append(f"{result.step.label}: {format_size(point['size_bytes'])} not started, its estimated "
                           f"{point['estimate_seconds']:.1f} s more than the {point['left_seconds']:.1f} s left")
    memory["skipped"] = skipped
    write_json(folder / "memory.json", {k: v for k, v in memory.items() if k != "plots"}, "lab file")
    entry = {"run_id": outcome.run_id, "store": str(outcome.store_path), "failures": memory["failures"],
             "share_seconds": share, "measured_seconds": measured, "seconds": _time.monotonic() - t0,
             "sizing": plan.sized.as_json() if plan.sized else None, "skipped": skipped}
    return outcome, memory, entry


def quick_memory_plan(share: float, calibration: Optional[sizing.Calibration], llc: int) -> MemoryPlan:
    """Every memory node: STREAM's four kernels (5 iterations), the latency sweep, loaded latency,
    each node in an equal part of ``share`` seconds, sized (measure/sizing.py) from ``calibration``:
    what fits is measured, the rest left out and named. Without a calibration, the first working set
    of the sweep alone, and neither STREAM nor loaded latency."""
    cpus = len(os.sched_getaffinity(0))
    plan = MemoryPlan(nodes=list(inv.memory_nodes()), iterations=5, latency=True, loaded=cpus >= 2,
                      precision=PRECISION, max_time=MAX_TIME_MEMORY)
    if calibration is None:
        plan.bandwidth, plan.loaded, plan.latency_sizes, plan.max_time = False, False, [4096], MIN_TIME_PER_POINT
    else:
        plan.sized = sizing.plan(share / max(1, len(plan.nodes)), calibration, llc, len(plan.kernels),
                                 plan.thread_counts()[0], cpus)
        plan.size_bytes = plan.sized.stream_bytes
    plan.check()
    return plan

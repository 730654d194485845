"""The lab's smaller measuring stages, each a library call that returns what it recorded and why it
failed: the offload runtime's bench (:func:`runtime_stage`), the 2-rank MPI network
(:func:`network_stage`) and DecEval measured against the simulator (:func:`deceval_stage`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from ..errors import XferlabError
from ..measure.run import measure

NETWORK_SHARE = 0.05  # of the budget, at most, for the 2-rank network step
DECEVAL_SHARE = 0.05  # of the budget, at most, for DecEval measured and simulated (16 MiB: about 2 s here)


def deceval_stage(share: float, store: Optional[Path],
                  program: Optional[Path] = None) -> tuple[dict[str, Any], Optional[str]]:
    """`xferlab study run deceval` at 16 MiB on OpenCL device 0 (its kernel from ``program``, --program DIR,
    when given), both configurations (decompress-bound and
    device-bound) when ``share`` holds them, else the decompress-bound one alone (said in ``note``): its
    table (measured against the simulator and the naive baselines per flow), its verdicts and the runs, and
    why it failed if it did."""
    from ..studies import find
    from ..studies.deceval import notes
    from ..studies.run import run_study

    study = find("deceval")
    options = {**study.options, "total": 16 * 2**20, "repeats": 2, "program": str(program) if program else None}
    note = None
    try:
        for evaluations in (options["evaluations"], options["evaluations"][:1]):
            needed = sum(step.estimate_seconds for s in study.plan({**options, "evaluations": evaluations}).steps
                         for step in s.steps)
            if needed <= share:
                break
        else:
            return {"skipped": f"needs about {needed:.0f} s, its share of the budget is {share:.0f} s"}, None
        if evaluations != options["evaluations"]:
            note = (f"only the x{evaluations[0]} configuration: both need more than DecEval's {share:.0f} s share of the "
                    "budget (a larger --budget runs the device-bound one too)")
        options["evaluations"] = evaluations
        result = run_study(study, options, store, share, timeout=max(60.0, 4 * share))
    except XferlabError as error:
        return {"failure": str(error)}, str(error)
    flows = [r for r in result.table if r["part"] == "flow"]
    entry = {"group": result.group, "run_ids": [s["run_id"] for s in result.steps if s["run_id"]], "flows": flows,
             "largest_relative_error": max((abs(r["relative_error"]) for r in flows if "relative_error" in r), default=None),
             "verdicts": notes(result.table), "note": note}
    failure = "; ".join(s["failure"] for s in result.failed) or None
    return entry, failure


def network_stage(share: float, store: Optional[Path], mpi: str = "auto") -> tuple[Optional[str], Optional[str]]:
    """Two ranks of the MPI ``mpi`` names (--mpi: auto, wheel or a PATH), on this machine: latency,
    bandwidth, bi-directional bandwidth, message rate and allreduce, OSU's sizes with a tenth of OSU's
    iterations, within ``share`` seconds (the probe stops starting points when it is spent). Returns
    (run id, failure)."""
    from ..measure.network import NetworkPlan, rows_of as network_rows, run_summary, step as network_step

    plan = NetworkPlan(tests=["latency", "bw", "bibw", "mbw_mr", "allreduce"], latency_counts=((1000, 10), (100, 2)),
                       bandwidth_counts=((20, 2), (5, 1)), collective_counts=((100, 10), (20, 2)), budget=share, mpi=mpi)
    if len(os.sched_getaffinity(0)) < 2:
        return None, "skipped: one CPU (two ranks would share it)"
    try:
        plan.check(len(os.sched_getaffinity(0)))
        run = measure("lab", [network_step(plan)], network_rows, "network", {"network": plan.params()}, store,
                      timeout=max(60.0, 4 * share), extra_summary=run_summary)
    except XferlabError as error:  # no MPI here: say so and go on
        return None, str(error)
    failure = next((r.failure for r in run.results if r.failure), None)
    return (run.run_id if run.rows else None), failure


def runtime_stage(backend: str, store: Optional[Path], program: Optional[Path] = None) -> tuple[str, Optional[str]]:
    """`xferlab runtime bench` in small: every workload, sync and forward, one run each (seed 002's ~1 us
    round trip on the emulated bus: 500 ns a leg; OpenCL: device 0, its program from ``program``, --program
    DIR, when given), recorded row by row. Returns the run id and why it stopped early (a wrong result, a
    device error), None if it did not."""
    from ..runtime import LATENCY_PRESETS, workload_names
    from ..runtime.bench import bench, recording

    lats = [LATENCY_PRESETS["ccip"]] if backend == "emulated" else [None]
    argv = ["runtime", "bench", "--backend", backend, "--mode", "sync,forward", "--repeats", "1"]
    argv += ["--latency", "ccip"] if backend == "emulated" else []
    argv += ["--program", str(program)] if program else []
    failure = None
    try:
        with recording({"backend": backend, "latencies_seconds": lats, "modes": ["sync", "forward"], "repeats": 1,
                        "lab": True, **({"program": str(program)} if program else {})}, store, argv) as (run_id, _, add):
            bench(backend, lats, workload_names(), ["sync", "forward"], repeats=1, on_row=add, program=program)
    except RuntimeError as error:  # recorded as failed, with every row finished before it
        failure = str(error)
    return run_id, failure

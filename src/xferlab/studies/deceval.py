"""Seed 000's application, DecEval (Cabrera, Young and Vetter, ExHET '22), measured and simulated on
this machine: the probe runs it for real (:mod:`xferlab.measure.deceval`: zlib decompression on the
host feeding pi's integration on the OpenCL device, each stage alone and each flow end to end), and
the simulator predicts every flow from the stages alone (the seed's Figure 4 and 5 method: model
against the application's measured times).

The model, from the stage samples only (never from a flow's own time):

* each stage's time at n chunks is fitted as ``W + n * o`` (least squares over the chunk sizes):
  ``W`` its work (the task's ``seconds``), ``o`` what each chunk costs it (a kernel
  launch, an inflate call, a copy's start-up); the copy's fit is the link host -> device
  (``simple:bandwidth=size/W,latency=o``);
* the decompressing thread also submits each chunk's copy and kernel as it goes; the
  ``decompress-submit`` stage does just that (nothing waited for), and what it takes beyond
  decompress alone, per chunk (least squares through 0 over the chunk sizes), joins the decompress
  task's overhead: the runtime's calls and what they, and the device reading fresh data, do to the
  decompressing thread's caches;
* ``handoff``: an 8-byte copy enqueued and waited for, per chunk: how long the host takes to learn a
  command is done; a producer that waits for a free buffer (``depth``) pays it each time;
* the device runs copies and kernels in one in-order queue: it has no copy engine
  (``copy_engines: 0``), so in the pipelined flow its copy and its kernel are one stage;
* flows: ``staged`` is the simulator's staged strategy, ``direct`` its coherent one (the device reads
  the buffer the host wrote, in place), ``pipelined`` its pipelined one at each chunk size with the
  run's depth (finite buffers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..measure.deceval import DEFAULT_CHUNKS, DEFAULT_SIZE, DecevalPlan, rows_of, steps, summary
from ..report.collect import flat
from .base import Plan, Study, StudyStep

STAGES = ("decompress", "copy", "integrate", "decompress-submit", "handoff")  # what the probe times alone


def plan(options: dict[str, Any]) -> Plan:
    run = DecevalPlan(device=options["device"], size=int(options["total"]), chunks=[int(c) for c in options["chunks"]],
                      depth=options["depth"], repeats=options["repeats"])
    run.check()
    cpu, env = run.placement()
    where = (f"decompressing thread on CPU {cpu}, the device on the other CPUs ({env})" if cpu is not None
             else "the device and the decompressing thread placed by the system")
    return Plan([StudyStep("run", f"each stage alone and every flow end to end; {where}", "deceval", steps(run),
                           rows_of, {"deceval": run.params()}, {"accelerator": run.info})], [])


def fit_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``(W, o)`` of ``T = W + n * o`` through (n, T) points by least squares with both kept >= 0
    (scipy's non-negative least squares: times with a negative part would make a link or a task the
    simulator refuses); ``o`` is 0 when the points have one n only."""
    from scipy.optimize import nnls

    n = np.asarray([p[0] for p in points], dtype=float)
    t = np.asarray([p[1] for p in points], dtype=float)
    if len(set(n.tolist())) < 2:
        return float(t.mean()), 0.0
    (w, o), _ = nnls(np.column_stack([np.ones_like(n), n]), t)
    return float(w), float(o)


def model(stats: list[dict[str, Any]]):
    """The System and Workflow the simulator runs, from the stage medians; and the fits, for the table."""
    from ..system.models import System, Workflow

    stages = {name: [(s["chunks"], s["median_seconds"]) for s in stats if s["kind"] == "stage" and s["name"] == name]
              for name in STAGES}
    size = next(s["size"] for s in stats)
    depth = next(s["depth"] for s in stats)
    fits = {name: fit_line(points) for name, points in stages.items() if points}
    alone = dict(stages["decompress"])
    extra = [(n, t - alone[n]) for n, t in stages["decompress-submit"] if n in alone]
    submit = max(0.0, sum(n * d for n, d in extra) / sum(n * n for n, _ in extra)) if extra else 0.0
    handoff = float(np.median([t / n for n, t in stages["handoff"]])) if stages["handoff"] else 0.0
    (w_dec, o_dec), (w_copy, o_copy), (w_int, o_int) = fits["decompress"], fits["copy"], fits["integrate"]
    system = System.model_validate({
        "name": "this machine", "host": "host",
        "devices": [{"name": "host", "kind": "cpu"}, {"name": "device", "kind": "other", "copy_engines": 0}],
        # a copy whose whole time the fit puts in its per-chunk part gets a payload rate of 1 PB/s, not a division by 0
        "links": [{"between": ["host", "device"],
                   "link": f"simple:bandwidth={size / max(w_copy, size / 1e15):.6g},latency={o_copy:.6g}"}]})
    workflow = Workflow.model_validate({
        "name": "deceval", "depth": depth, "handoff": handoff,
        "tasks": [{"name": "decompress", "device": "host", "seconds": w_dec, "overhead": o_dec + submit},
                  {"name": "integrate", "device": "device", "seconds": w_int, "overhead": o_int}],
        "edges": [{"from": "decompress", "to": "integrate", "bytes": size}]})
    terms = {"decompress": (w_dec, o_dec), "copy": (w_copy, o_copy), "integrate": (w_int, o_int),
             "decompress-submit": (w_dec, o_dec + submit), "handoff": (0.0, handoff)}
    return system, workflow, terms


def predict(stats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per flow (and chunk size): measured median against the simulator's prediction, and per stage the
    measurement against its fitted line."""
    from ..sim import flows

    if not any(s["kind"] == "stage" for s in stats):
        return []
    system, workflow, terms = model(stats)
    out = []
    for s in stats:
        row = {"part": s["kind"], "flow": s["name"], "chunk_bytes": s["chunk_bytes"], "chunks": s["chunks"],
               "measured_seconds": s["median_seconds"], "median_ci_low_seconds": s["median_ci_low_seconds"],
               "median_ci_high_seconds": s["median_ci_high_seconds"], "count": s["count"]}
        if s["kind"] == "stage":
            w, o = terms[s["name"]]
            row["predicted_seconds"] = w + s["chunks"] * o
        elif s["name"] == "pipelined":
            row["predicted_seconds"] = flows.pipelined(system, workflow, s["chunk_bytes"], engine=False).fast_path_seconds
        else:
            strategy = "coherent" if s["name"] == "direct" else "staged"
            row["predicted_seconds"] = flows.run(system, workflow, strategy).timeline.makespan
        row["error"] = row["predicted_seconds"] / row["measured_seconds"] - 1
        out.append(row)
    return out


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    out = predict(summary([flat(r) for r in rows.get("run", [])]))
    return sorted(out, key=lambda r: (r["part"] != "flow", r["flow"], r["chunk_bytes"]))


DECEVAL = Study(
    name="deceval", seed="seed 000",
    experiment="DecEval for real: zlib decompression feeding pi on the device, staged, direct and pipelined, "
               "measured against the simulator's prediction",
    description="Seed 000's application run here: each stage alone, each flow end to end, and the simulator's "
                "prediction of each flow from the stages alone (error = predicted / measured - 1).",
    plan=plan, table=table,
    columns=[("part", "part"), ("flow", "flow"), ("chunk_bytes", "chunk"), ("chunks", "chunks"),
             ("measured_seconds", "measured"), ("predicted_seconds", "predicted"), ("error", "error")],
    options={"device": 0, "total": DEFAULT_SIZE, "chunks": list(DEFAULT_CHUNKS), "depth": 2, "repeats": 3})

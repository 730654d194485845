"""Seed 000's application, DecEval (Cabrera, Young and Vetter, ExHET '22), measured and simulated on
this machine: the probe runs it for real (:mod:`xferlab.measure.deceval`: zlib decompression on the
host feeding pi's integration on the OpenCL device), and the simulator predicts every flow from
stage models fitted on other runs (the seed's Figure 4 and 5 method: model against the
application's measured times). A validation that can fail:

* **two configurations**, one per ``evaluations`` (the integrand's evaluations per element on the
  device; 1 and 16 by default): with 1 the decompression is the slowest stage (86-97 % of every
  flow here), with 16 the device's integration is (the same bytes, 16 times the arithmetic: a finer
  midpoint rule), so that overlap, the device's queue and the buffers decide the pipelined flow.
  Which one each really is, is measured (the stages' shares) and said;
* **stages and flows are runs of their own**: per configuration ``repeats`` rounds of a ``stages-K-R``
  run (each stage alone, at the fit chunk sizes ``chunks`` only) and a ``flows-K-R`` run (staged,
  direct, pipelined at the fit and the ``held_out`` chunk sizes), one timed repeat each after a
  warm-up, alternated so that a busy machine's drift falls on both alike. :func:`fit` reads the stage
  rows only; :func:`predict` takes a flow's name and chunking, never its measurement;
* **held-out points**: a flow at a chunk size no stage was measured at (``held_out`` in the table:
  the pipelined flow at the ``held_out`` sizes, staged and direct in one chunk of the whole);
* **naive baselines beside the simulator**, from the same fitted stage lines: the sum of the
  flow's stages (no overlap) and their max (perfect overlap), each with its error. Where the two
  differ by more than :data:`DIFFER` the simulator must beat both; :func:`verdicts` says per
  configuration whether it did, flow by flow.

The model, from the stage medians (at n chunks each stage is fitted as ``W + n * o`` by
non-negative least squares over the fit chunk sizes: ``W`` its work, ``o`` what each chunk costs):
the copy's line is the link host -> device (``simple:bandwidth=size/W,latency=o``), integrate the
device's task; the producer is ``decompress`` in the staged and direct flows (the device idle
meanwhile) and ``decompress-submit`` in the pipelined one (the inflate again with each chunk's copy
and kernel enqueued as it comes out, nothing waited for, the device working: what the producer
does in a pipeline, without its waits, which the simulator adds); ``handoff`` (an 8-byte copy
enqueued and waited for, per chunk) is what a producer that waits for a free buffer pays each
time. The device runs copies and kernels in one in-order queue (``copy_engines: 0``), so in the
pipelined flow its copy and its kernel are one stage. Flows: ``staged`` is the simulator's staged
strategy, ``direct`` its coherent one, ``pipelined`` its pipelined one with the run's depth.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BadValue
from ..measure.deceval import DEFAULT_CHUNKS, DEFAULT_SIZE, FLOW_ITEMS, STAGE_ITEMS, DecevalPlan, rows_of, steps, summary
from ..store.rows import flat
from ..units import format_size
from .base import Plan, Study, StudyStep

STAGES = ("decompress", "copy", "integrate", "decompress-submit", "handoff")  # what the probe times alone
DEFAULT_HELD_OUT = (128 * 2**10, 2**20)  # the pipelined flow's chunk sizes that no stage is measured at
DEFAULT_EVALUATIONS = (1, 16)            # decompress-bound and device-bound here (a PoCL CPU device)
DIFFER = 0.05  # sum and max of stages farther apart than this (relative to max): overlap matters, the simulator must win


def _plans(options: dict[str, Any]) -> list[tuple[int, DecevalPlan, DecevalPlan]]:
    """Per configuration: its evaluations, a stages run (fit chunks only) and a flows run, one timed repeat
    each (after a warm-up): the study alternates them ``repeats`` times."""
    fit_chunks = sorted({int(c) for c in options["chunks"]})
    held = sorted({int(c) for c in options["held_out"]})
    both = sorted(set(fit_chunks) & set(held))
    if both:
        raise BadValue(f"--held-out {format_size(both[0])} is also a fit chunk size (--chunks); allowed: held-out "
                       "chunk sizes that no stage is measured at")
    if not options["evaluations"]:
        raise BadValue("--evaluations is empty; give one count or more (one configuration each)")
    out = []
    for k in sorted({int(e) for e in options["evaluations"]}):
        common = dict(device=options["device"], size=int(options["total"]), depth=options["depth"], repeats=1,
                      evaluations=k, program=Path(options["program"]) if options.get("program") else None)
        stage_run = DecevalPlan(chunks=fit_chunks, items=list(STAGE_ITEMS), **common)
        flow_run = DecevalPlan(chunks=sorted(set(fit_chunks) | set(held)), items=list(FLOW_ITEMS), **common)
        stage_run.check()
        flow_run.check(probe_devices=False)
        flow_run.info = stage_run.info
        out.append((k, stage_run, flow_run))
    return out


def plan(options: dict[str, Any]) -> Plan:
    """Per configuration, ``repeats`` rounds of a stages run then a flows run (``stages-K-R``, ``flows-K-R``):
    runs of their own, alternated so that the machine's drift (a neighbour's job) falls on both alike."""
    if not 1 <= options["repeats"] <= 100:
        raise BadValue(f"--repeats {options['repeats']}: rounds of a stages run and a flows run, 1 to 100")
    out = []
    for k, stage_run, flow_run in _plans(options):
        cpu, env = stage_run.placement()
        where = (f"decompressing thread on CPU {cpu}, the device on the other CPUs ({env})" if cpu is not None
                 else "the device and the decompressing thread placed by the system")
        what = f"{k} evaluation{'s' * (k > 1)} per element"
        for r in range(1, options["repeats"] + 1):
            for key, run, label in ((f"stages-{k}-{r}", stage_run, "each stage alone at the fit chunk sizes"),
                                    (f"flows-{k}-{r}", flow_run, "every flow end to end, fit and held-out chunk sizes")):
                out.append(StudyStep(key, f"{label}, {what}, round {r}; {where}", "deceval", steps(run), rows_of,
                                     {"deceval": run.params()}, {"accelerator": run.info}))
    return Plan(out, [])


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


@dataclass
class StageModel:
    """What :func:`fit` makes of the stage rows: each stage's line ``(W, o)``, the hand-off per wait,
    and the chunk sizes the stages were measured at (a flow at any other size is held out)."""

    size: int
    depth: int
    lines: dict[str, tuple[float, float]]
    handoff: float
    fit_chunks: frozenset[int]

    def at(self, stage: str, chunks: int) -> float:
        w, o = self.lines[stage]
        return w + chunks * o


def fit(stage_stats: list[dict[str, Any]]) -> StageModel:
    """The stage models, from the stage summaries alone (``kind`` stage: anything else is refused)."""
    if any(s["kind"] != "stage" for s in stage_stats):
        raise ValueError("fit() takes the stage rows only")
    points = {name: [(s["chunks"], s["median_seconds"]) for s in stage_stats if s["name"] == name] for name in STAGES}
    missing = [name for name, p in points.items() if not p]
    if missing:
        raise ValueError(f"no stage rows for {', '.join(missing)}")
    handoff = float(np.median([t / n for n, t in points["handoff"]]))
    return StageModel(size=int(stage_stats[0]["size"]), depth=int(stage_stats[0]["depth"]),
                      lines={name: fit_line(p) for name, p in points.items() if name != "handoff"},
                      handoff=handoff, fit_chunks=frozenset(int(s["chunk_bytes"]) for s in stage_stats))


def model(m: StageModel, producer: str = "decompress"):
    """The System and Workflow the simulator runs, the producer's line from ``producer``'s stage."""
    from ..system.models import System, Workflow

    w_copy, o_copy = m.lines["copy"]
    (w_dec, o_dec), (w_int, o_int) = m.lines[producer], m.lines["integrate"]
    system = System.model_validate({
        "name": "this machine", "host": "host",
        "devices": [{"name": "host", "kind": "cpu"}, {"name": "device", "kind": "other", "copy_engines": 0}],
        # a copy whose whole time the fit puts in its per-chunk part gets a payload rate of 1 PB/s, not a division by 0
        "links": [{"between": ["host", "device"],
                   "link": f"simple:bandwidth={m.size / max(w_copy, m.size / 1e15):.6g},latency={o_copy:.6g}"}]})
    workflow = Workflow.model_validate({
        "name": "deceval", "depth": m.depth, "handoff": m.handoff,
        "tasks": [{"name": "decompress", "device": "host", "seconds": w_dec, "overhead": o_dec},
                  {"name": "integrate", "device": "device", "seconds": w_int, "overhead": o_int}],
        "edges": [{"from": "decompress", "to": "integrate", "bytes": m.size}]})
    return system, workflow


def predict(m: StageModel, flow: str, chunk_bytes: int, chunks: int) -> dict[str, float]:
    """A flow's time by the simulator and by the two naive baselines (the sum and the max of its stages'
    lines at its chunk count), from the stage models and the flow's name and chunking only."""
    from ..sim import flows

    if flow == "pipelined":
        system, workflow = model(m, "decompress-submit")
        simulated = flows.pipelined(system, workflow, chunk_bytes, engine=False).fast_path_seconds
        parts = [m.at("decompress-submit", chunks), m.at("copy", chunks), m.at("integrate", chunks)]
    else:
        system, workflow = model(m)
        simulated = flows.run(system, workflow, "coherent" if flow == "direct" else "staged").timeline.makespan
        parts = [m.at("decompress", chunks), m.at("integrate", chunks)] + ([m.at("copy", chunks)] * (flow == "staged"))
    return {"predicted_seconds": float(simulated), "stage_sum_seconds": sum(parts), "stage_max_seconds": max(parts)}


def _config(k: int, m: StageModel) -> tuple[str, float]:
    """A configuration's name: its evaluations per element (x16), and by measurement which side is the
    slower (the device's share, copy and integrate, of the stages' sum in the fewest chunks fitted)."""
    n = math.ceil(m.size / max(m.fit_chunks))
    device = m.at("copy", n) + m.at("integrate", n)
    share = device / (device + m.at("decompress", n))
    return f"x{k} {'device' if share > 0.5 else 'decompress'}-bound", share


def _summaries(rows: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [s for s in summary([flat(r) for r in rows]) if s["kind"] == kind]


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per configuration: the stage rows against their fitted lines, then each flow's measured median
    against the simulator and the two baselines. Flow rows never reach :func:`fit`."""
    out = []
    steps_of: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (stages|flows, K) -> the rows of every round
    for key, members in rows.items():
        step = re.fullmatch(r"(stages|flows)-(\d+)-\d+", key)  # a store's older DecEval runs ("run") are not shown
        if step:
            steps_of.setdefault((step[1], int(step[2])), []).extend(members)
    for k in sorted({k for _, k in steps_of}):
        stage_stats = _summaries(steps_of.get(("stages", k), []), "stage")
        flow_stats = _summaries(steps_of.get(("flows", k), []), "flow")
        m = fit(stage_stats) if stage_stats else None
        name, share = _config(k, m) if m else (f"x{k}", None)
        for s in stage_stats + flow_stats:
            row = {"configuration": name, "evaluations": k, "device_share": share, "part": s["kind"], "flow": s["name"],
                   "chunk_bytes": s["chunk_bytes"], "chunks": s["chunks"], "measured_seconds": s["median_seconds"],
                   "median_ci_low_seconds": s["median_ci_low_seconds"],
                   "median_ci_high_seconds": s["median_ci_high_seconds"], "min_seconds": s["min_seconds"],
                   "count": s["count"]}
            if m is not None and s["kind"] == "stage":
                row.update(held_out=False, predicted_seconds=(m.handoff * s["chunks"] if s["name"] == "handoff"
                                                              else m.at(s["name"], s["chunks"])))
            elif m is not None:
                row.update(held_out=s["chunk_bytes"] not in m.fit_chunks, **predict(m, s["name"], s["chunk_bytes"], s["chunks"]))
                for key in ("sum", "max"):
                    row[f"stage_{key}_relative_error"] = row[f"stage_{key}_seconds"] / row["measured_seconds"] - 1
            if "predicted_seconds" in row:
                row["relative_error"] = row["predicted_seconds"] / row["measured_seconds"] - 1
            out.append(row)
    return sorted(out, key=lambda r: (r["evaluations"], r["part"] != "flow", r["flow"], r["chunk_bytes"]))


def verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration: the pipelined flows whose baselines differ by more than :data:`DIFFER`, those the
    simulator beat (smaller |error| than both) and those it did not; the mean |error| of each predictor over
    the pipelined flows; the largest |error| of the simulator over the held-out flows."""
    out = []
    for k in sorted({r["evaluations"] for r in rows}):
        flows_ = [r for r in rows if r["evaluations"] == k and r["part"] == "flow" and "relative_error" in r]
        if not flows_:
            continue
        piped = [r for r in flows_ if r["flow"] == "pipelined"]
        compared = [r for r in piped if r["stage_sum_seconds"] > (1 + DIFFER) * r["stage_max_seconds"]]
        lost = [r for r in compared if abs(r["relative_error"]) >= min(abs(r["stage_sum_relative_error"]), abs(r["stage_max_relative_error"]))]
        held = [abs(r["relative_error"]) for r in flows_ if r["held_out"]]
        out.append({
            "configuration": flows_[0]["configuration"], "evaluations": k, "device_share": flows_[0]["device_share"],
            "compared": len(compared), "beaten": len(compared) - len(lost), "lost": lost,
            "mean_abs_error": {name: float(np.mean([abs(r[key]) for r in piped])) if piped else None
                               for name, key in (("simulator", "relative_error"), ("sum", "stage_sum_relative_error"),
                                                 ("max", "stage_max_relative_error"))},
            "held_out_worst": max(held) if held else None})
    return out


def notes(rows: list[dict[str, Any]]) -> list[str]:
    """What :func:`verdicts` found, a line per configuration, a miss named flow by flow."""
    lines = []
    for v in verdicts(rows):
        mean = v["mean_abs_error"]
        if mean["simulator"] is None:
            lines.append(f"{v['configuration']}: no pipelined flow measured (run the study again to finish it)")
            continue
        head = (f"{v['configuration']} (copy and integrate {v['device_share']:.0%} of the stages' sum): pipelined "
                f"flows' mean |error| simulator {mean['simulator']:.1%}, sum of stages {mean['sum']:.1%}, "
                f"max of stages {mean['max']:.1%}; held-out flows' largest |error| "
                + (f"{v['held_out_worst']:.1%}" if v["held_out_worst"] is not None else "– (none held out)"))
        if not v["compared"]:
            lines.append(f"{head}; the baselines are within {DIFFER:.0%} of each other at every pipelined flow: "
                         "overlap does not matter here, so this configuration cannot tell the simulator from them")
            continue
        lines.append(f"{head}; the simulator beat both baselines at {v['beaten']} of {v['compared']} pipelined flows "
                     f"where they differ by more than {DIFFER:.0%}")
        for r in v["lost"]:
            better = "sum of stages" if abs(r["stage_sum_relative_error"]) <= abs(r["stage_max_relative_error"]) else "max of stages"
            lines.append(f"  the simulator did not beat the {better} at {format_size(r['chunk_bytes'])} chunks: "
                         f"simulator {r['relative_error']:+.1%}, sum {r['stage_sum_relative_error']:+.1%}, "
                         f"max {r['stage_max_relative_error']:+.1%}")
    return lines


DECEVAL = Study(
    name="deceval", seed="seed 000",
    experiment="DecEval for real: zlib decompression feeding pi on the device, staged, direct and pipelined, "
               "decompress-bound and device-bound, measured against the simulator and two naive baselines",
    description="Seed 000's application run here: stages and flows in runs of their own, each flow predicted by the "
                "simulator from stage models fitted at other chunk sizes or the same (held out: yes/no), beside the "
                "sum and the max of its stages (error = predicted / measured - 1).",
    plan=plan, table=table, notes=notes,
    columns=[("configuration", "config"), ("part", "part"), ("flow", "flow"), ("chunk_bytes", "chunk"),
             ("chunks", "chunks"), ("held_out", "held out"), ("measured_seconds", "measured"),
             ("predicted_seconds", "simulated"), ("relative_error", "error"),
             ("stage_sum_relative_error", "sum error"), ("stage_max_relative_error", "max error")],
    options={"device": 0, "total": DEFAULT_SIZE, "chunks": list(DEFAULT_CHUNKS), "held_out": list(DEFAULT_HELD_OUT),
             "evaluations": list(DEFAULT_EVALUATIONS), "depth": 2, "repeats": 3, "program": None})

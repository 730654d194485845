"""Speed of the flow simulator: the fast path at DecEval scale, and the engine against plain SimPy.

1. The vectorized fast path (``xferlab.sim.pipeline``) on the pipelined DecEval flow of seed 000:
   1.6 GB in 64-byte chunks (25,000,000 chunks) through 3 stages (FPGA decompress, CXL transfer, GPU
   integrate), with per-chunk durations materialized as a (3, 25M) array so that the full scan runs.
   Target: under 2 s (best of 3 after a first run, whose time is printed too: the first time a
   process touches 600 MB of fresh pages costs extra). Its answer is checked against the balanced
   closed form.
2. The discrete-event engine (``xferlab.sim.simulate``, validation and timeline included) on a
   3-stage x 20,000-chunk pipeline, beside the textbook SimPy model of the same pipeline written here:
   one process per stage, unbounded ``simpy.Store`` queues between them (the tandem queue of SimPy's
   own examples; an earlier reference started a process per chunk, 20,000 at once, and was slower
   than this). Both must give the same makespan (within 1e-9 relative, checked before timing); the
   figure is modeled ops (stage x chunk) per second, and the target is ours / plain >= 1.

The script exits 1 if a target is missed. Run: ``make bench`` or
``PYTHONPATH=src .venv/bin/python benchmarks/bench_sim.py``.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import simpy  # noqa: E402

from xferlab.links import resolve  # noqa: E402
from xferlab.sim import ops_for_pipeline, pipeline, pipeline_makespan, simulate  # noqa: E402

FAST_CHUNKS = 25_000_000  # 1.6 GB / 64 B
FAST_TARGET_S = 2.0
ENGINE_STAGES, ENGINE_CHUNKS = 3, 20_000
ENGINE_TARGET = 1.0


def best_of(repeats, fn):
    best, result = float("inf"), None
    for _ in range(repeats):
        result = None  # free the last run's result first: each run allocates its own
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def deceval_stage_seconds(chunks: int) -> np.ndarray:
    """Per-chunk seconds of the 3 stages: the seed's FPGA (7.70 s) and GPU (0.36 s) kernel times spread
    over the chunks, and a 64-byte transfer on the seed's CXL link model."""
    cxl = resolve("cxl-seed")
    t = np.empty((3, chunks))
    t[0] = 7.70 / chunks
    t[1] = cxl.time(64.0, "write")
    t[2] = 0.36 / chunks
    return t


def plain_simpy(stage_seconds: np.ndarray) -> float:
    """The reference: the same pipeline as a textbook SimPy model, a process per stage and a Store
    between consecutive stages. Stage s takes chunk i from its inbox once stage s - 1 put it there,
    holds it for its duration and passes it on: f_s[i] = max(f_{s-1}[i], f_s[i-1]) + t_s[i]."""
    env = simpy.Environment()
    inboxes = [simpy.Store(env) for _ in range(stage_seconds.shape[0])]  # unbounded: no blocking after
    durations = stage_seconds.tolist()

    def stage(s):
        inbox = inboxes[s]
        outbox = inboxes[s + 1] if s + 1 < len(inboxes) else None
        for i, seconds in enumerate(durations[s]):
            if s:
                yield inbox.get()
            yield env.timeout(seconds)
            if outbox is not None:
                outbox.put(i)

    for s in range(len(inboxes)):
        env.process(stage(s))
    env.run()
    return env.now


def main() -> int:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    ok = True

    # 1. The fast path at DecEval scale.
    t = deceval_stage_seconds(FAST_CHUNKS)
    cold_s, _ = best_of(1, lambda: pipeline(t))  # the first run also pays for fresh memory pages
    fast_s, finish = best_of(3, lambda: pipeline(t))
    makespan_s, makespan = best_of(3, lambda: pipeline_makespan(t))
    closed = t[:, 0].sum() + (FAST_CHUNKS - 1) * t[:, 0].max()
    assert abs(finish[-1, -1] - closed) <= 1e-9 * closed and abs(makespan - closed) <= 1e-9 * closed
    del finish
    met = fast_s < FAST_TARGET_S
    ok &= met
    print(f"fast path: {FAST_CHUNKS:,} chunks x 3 stages (DecEval 1.6 GB in 64 B chunks): "
          f"pipeline() {fast_s:.3f} s (first run {cold_s:.3f} s), pipeline_makespan() {makespan_s:.3f} s; "
          f"makespan {makespan:.4f} s")
    print(f"  target under {FAST_TARGET_S:.0f} s: {'met' if met else 'NOT met'}")
    del t

    # 2. The engine against plain SimPy on the same pipeline.
    rng = np.random.default_rng(3)
    t = rng.lognormal(mean=-9.0, sigma=0.5, size=(ENGINE_STAGES, ENGINE_CHUNKS))
    names = [f"stage{s}" for s in range(ENGINE_STAGES)]
    resources, ops = ops_for_pipeline(names, t)
    modeled = ENGINE_STAGES * ENGINE_CHUNKS
    # Same answer first (both against the max-plus recurrence too), then the timing, alternating rounds.
    expected = pipeline_makespan(t)
    for makespan in (simulate(resources, ops).makespan, plain_simpy(t)):
        assert abs(makespan - expected) <= 1e-9 * expected, (makespan, expected)
    ours_s = plain_s = float("inf")
    for _ in range(3):
        ours_s = min(ours_s, best_of(1, lambda: simulate(resources, ops))[0])
        plain_s = min(plain_s, best_of(1, lambda: plain_simpy(t))[0])
    ratio = plain_s / ours_s  # = our modeled ops per second / plain's
    met = ratio >= ENGINE_TARGET
    ok &= met
    print(f"engine: {ENGINE_STAGES} stages x {ENGINE_CHUNKS:,} chunks = {modeled:,} ops: "
          f"{modeled / ours_s / 1e3:.0f} k ops/s ({ours_s:.3f} s, validation and timeline included)")
    print(f"textbook SimPy model (a process per stage, Stores between): {modeled / plain_s / 1e3:.0f} k ops/s ({plain_s:.3f} s)")
    print(f"  ratio ours / plain {ratio:.2f}, target at least {ENGINE_TARGET:.0f}: {'met' if met else 'NOT met'}")
    # What xferlab runs for a chain like this one (sweeps, advise chunk): the max-plus fast path, not the engine.
    chain_s, _ = best_of(3, lambda: pipeline_makespan(t))
    print(f"  (for a chain xferlab uses the fast path: pipeline_makespan() {chain_s * 1e3:.2f} ms on the same pipeline, "
          f"{plain_s / chain_s:.0f}x the textbook model's speed; not the target, which is the engine's)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

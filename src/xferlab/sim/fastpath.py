r"""The vectorized fast path for linear pipelines: a max-plus recurrence solved with numpy scans.

A linear pipeline moves ``chunks`` pieces of data through ``stages`` resources in order (seed 000,
the pipelined DecEval flow: FPGA decompresses a chunk, CXL carries it, the GPU integrates it). Each
stage serves one chunk at a time, in chunk order, and stage ``s`` of chunk ``i`` starts when stage
``s - 1`` of chunk ``i`` and stage ``s`` of chunk ``i - 1`` are both done. With ``t_s[i]`` the time of
stage ``s`` on chunk ``i`` and every chunk available at time 0, its finish time is

    f_s[i] = max(f_{s-1}[i], f_s[i-1]) + t_s[i],      f_{-1}[i] = 0,  f_s[-1] = -inf.

Derivation of the scan. Unrolling the recurrence over ``i`` (max and + distribute as in max-plus
algebra),

    f_s[i] = max_{j <= i} ( f_{s-1}[j] + t_s[j] + t_s[j+1] + ... + t_s[i] ).

With ``C[i] = t_s[0] + ... + t_s[i]`` (``np.cumsum``) and ``C[-1] = 0`` the inner sum is
``C[i] - C[j-1]``, and ``C[i]`` does not depend on ``j``, so

    f_s[i] = C[i] + max_{j <= i} ( f_{s-1}[j] - C[j-1] ),

a running maximum (``np.maximum.accumulate``) of one array plus another: four O(chunks) numpy
passes per stage (cumsum, subtract, running max, add), no Python loop over chunks. The passes run
block by block (:data:`BLOCK` chunks; each block starts from the previous one's last finish time
per stage, see :func:`_scan`) so that a block's rows stay in cache across the stages and
:func:`pipeline_makespan` needs no array as long as the input. The engine
(:mod:`xferlab.sim.engine`) run on the same pipeline (:func:`xferlab.sim.model.ops_for_pipeline`)
gives the same times to 1e-9 relative (``tests/test_sim.py``).

Balanced pipelines. When every chunk takes the same time at a stage, the recurrence has the closed
form ``f_s[i] = (t_0 + ... + t_s) + i * max(t_0, ..., t_s)`` (induction on ``s``: the slowest stage
so far sets the pace); with ``d`` stages of equal ``t_stage`` the last chunk of ``n`` finishes at
``d * t_stage + (n - 1) * t_stage``: the seed's pipelined application model (seed 000, "Pipelined
Application Model", Cabrera, Young, Vetter, ExHET'22)

    t_app = d * t_stage + (n - 1) * t_stage + s

where ``s`` is the serial time outside the pipeline (:func:`balanced_formula`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BadValue


def _check(stage_seconds: Any, ndim: int, what: str) -> np.ndarray:
    t = np.asarray(stage_seconds, dtype=np.float64)
    if t.ndim != ndim:
        shape = "(stages, chunks)" if ndim == 2 else "(stages,)"
        raise BadValue(f"{what}: stage_seconds has shape {t.shape}; expected {shape}")
    if t.size:
        lo, hi = t.min(), t.max()  # min/max propagate NaN; no temporary arrays
        if not (lo >= 0 and np.isfinite(hi)):
            bad = np.argwhere(~(np.isfinite(t) & (t >= 0)))[0]
            where = ", ".join(f"{axis} {k}" for axis, k in zip(("stage", "chunk"), bad))
            raise BadValue(f"{what}: stage_seconds at {where} is {float(t[tuple(bad)])!r}; "
                           "allowed: a finite number >= 0")
    return t


#: chunks per block of the scan: the block's rows stay in cache while every stage runs over them
BLOCK = 1 << 15


def _scan(t: np.ndarray, out: np.ndarray | None) -> float:
    """Run the recurrence over ``t`` (stages, chunks), block by block; return the makespan.

    A block of chunks ``[a, b)`` is a pipeline of its own whose stage ``s`` may not start before
    ``f_s[a-1]``, the previous block's last finish at that stage (the carry). With ``C`` now summed
    from ``a`` (``C[a-1] = 0``), the module doc's scan becomes
    ``f_s[i] = C[i] + max(f_s[a-1], max_{a <= j <= i} (f_{s-1}[j] - C[j-1]))``: the carry enters as
    the first term of the running maximum. Finish times go to ``out`` when it is given; otherwise
    only two rows of one block are kept, so memory does not grow with the chunk count.
    """
    stages, n = t.shape
    if not stages or not n:
        return 0.0
    carry = np.zeros(stages)  # f_s[a-1]: the last finish time of each stage so far
    rows = np.empty((2, min(n, BLOCK))) if out is None else None
    scratch = np.empty(min(n, BLOCK))
    for a in range(0, n, BLOCK):
        b = min(a + BLOCK, n)
        previous = None
        for s in range(stages):
            f = out[s, a:b] if rows is None else rows[s % 2, : b - a]
            np.cumsum(t[s, a:b], out=f)  # C[i], i in [a, b)
            if previous is None:  # first stage: every chunk is ready at 0, so f = f_0[a-1] + C
                f += carry[s]
            else:
                d = scratch[: b - a]
                d[0] = max(previous[0], carry[s])  # j = a, and the carry
                np.subtract(previous[1:], f[:-1], out=d[1:])  # f_{s-1}[j] - C[j-1]
                np.maximum.accumulate(d, out=d)
                f += d
            carry[s] = f[-1]
            previous = f
    return float(previous[-1])


def pipeline(stage_seconds: Any) -> np.ndarray:
    """Finish times, shape ``(stages, chunks)``, of a linear pipeline given ``t_s[i]`` of that shape.

    ``result[s, i]`` is when stage ``s`` finishes chunk ``i``; ``result[-1, -1]`` is the makespan.
    Memory: the result, plus one block of scratch.
    """
    t = _check(stage_seconds, 2, "pipeline")
    f = np.empty(t.shape, dtype=np.float64)
    _scan(t, f)
    return f


def pipeline_uniform(stage_seconds: Any, chunks: int) -> np.ndarray:
    """:func:`pipeline` for chunks that all take ``stage_seconds[s]`` at stage ``s`` (shape ``(stages,)``)."""
    t = _check(stage_seconds, 1, "pipeline_uniform")
    return pipeline(np.broadcast_to(t[:, None], (t.shape[0], _chunks(chunks))))


def pipeline_makespan(stage_seconds: Any, chunks: int | None = None) -> float:
    """When the last chunk leaves the last stage.

    ``stage_seconds`` of shape ``(stages, chunks)`` runs the scan keeping only two rows of one block
    of chunks (memory independent of the chunk count, beyond the input); of shape ``(stages,)`` with
    ``chunks`` given, it is the balanced closed form ``sum(t) + (chunks - 1) * max(t)`` (module doc).
    No chunks or no stages take 0 s.
    """
    if chunks is not None:
        t = _check(stage_seconds, 1, "pipeline_makespan")
        n = _chunks(chunks)
        return float(t.sum() + (n - 1) * t.max()) if n and t.size else 0.0
    return _scan(_check(stage_seconds, 2, "pipeline_makespan"), None)


def balanced_formula(d: Any, n: Any, t_stage: Any, s: Any = 0.0) -> Any:
    """Seed 000's balanced pipeline: ``t_app = d * t_stage + (n - 1) * t_stage + s``.

    ``d`` stages of ``t_stage`` seconds each, ``n`` chunks, ``s`` seconds outside the pipeline;
    scalars or numpy arrays (broadcast).
    """
    return d * t_stage + (n - 1) * t_stage + s


def _chunks(chunks: Any) -> int:
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 0:
        raise BadValue(f"pipeline: chunks = {chunks!r}; allowed: an integer >= 0")
    return int(chunks)

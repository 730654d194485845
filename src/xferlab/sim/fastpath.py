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

Finite buffers (``depth``). With ``d`` buffers between each pair of neighbouring stages, stage ``s``
may start chunk ``i`` only once stage ``s + 1`` has finished chunk ``i - d`` (it frees the buffer
chunk ``i`` is written into; the seed's depth d, a producer that blocks on a full queue):

    f_s[i] = max(f_{s-1}[i], f_s[i-1], f_{s+1}[i-d]) + t_s[i].

The new term refers to chunks at least ``d`` back, so blocks of ``d`` chunks are scanned as above,
each with that term (from the previous block) folded into the ready times. For chunks that all take
the same time at a stage it has a closed form too: ``d >= 2`` changes nothing (the pace is still the
slowest stage's), and ``d = 1`` (one buffer: neighbours never overlap) paces the pipeline at its
slowest pair, ``sum(t) + (n - 1) * max(t_s + t_{s+1})``; ``tests/test_deceval_study.py`` checks
both against a chunk-by-chunk loop.

A stage may free its input before it ends (``release[s]`` seconds into each chunk: a device that
copies a chunk in and then computes on its own copy, in one queue): the bound is then
``f_{s+1}[i-d] - (t_{s+1}[i-d] - release[s+1])``, and with one buffer the pace is
``max(max(t), max(t_s + release_{s+1}))``. A ``handoff`` (seconds from a buffer freed to its
producer knowing it: a host thread woken by the device's completion event) adds to that bound; with
one, the pipeline is scanned chunk by chunk in blocks of ``d`` (no closed form is claimed).
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


def _scan(t: np.ndarray, out: np.ndarray | None, depth: int | None = None,
          release: np.ndarray | None = None, handoff: float = 0.0) -> float:
    """Run the recurrence over ``t`` (stages, chunks), block by block; return the makespan.

    A block of chunks ``[a, b)`` is a pipeline of its own whose stage ``s`` may not start before
    ``f_s[a-1]``, the previous block's last finish at that stage (the carry). With ``C`` now summed
    from ``a`` (``C[a-1] = 0``), the module doc's scan becomes
    ``f_s[i] = C[i] + max(f_s[a-1], max_{a <= j <= i} (r_s[j] - C[j-1]))`` with ``r_s`` the ready
    times (``f_{s-1}``, or 0 for the first stage): the carry enters as the first term of the running
    maximum. With ``depth`` the blocks are ``depth`` chunks long and ``r_s`` also holds
    ``f_{s+1}[i - depth]`` (less what stage s + 1 runs after its ``release``), the same chunk's place
    in the previous block. Finish times go to ``out``
    when it is given; otherwise only the rows needed are kept, so memory does not grow with the
    chunk count.
    """
    stages, n = t.shape
    if not stages or not n:
        return 0.0
    block = depth or BLOCK
    carry = np.zeros(stages)  # f_s[a-1]: the last finish time of each stage so far
    width = min(n, block)
    rows = np.empty((stages if depth else 2, width)) if out is None else None
    before = np.empty((stages, width)) if depth and out is None else None  # the previous block's rows
    scratch = np.empty(width)
    zero = np.zeros(width)
    for a in range(0, n, block):
        b = min(a + block, n)
        m = b - a
        if depth and a and out is None:
            before[:, :m] = rows[:, :m]
        previous = None
        for s in range(stages):
            f = out[s, a:b] if rows is None else rows[s if depth else s % 2, :m]
            ready = zero[:m] if previous is None else previous
            if depth and a and s + 1 < stages:
                later = out[s + 1, a - depth:a - depth + m] if out is not None else before[s + 1, :m]
                if release is not None:
                    run = t[s + 1, a - depth:a - depth + m]
                    later = later - np.maximum(run - release[s + 1], 0.0)
                ready = np.maximum(ready, later + handoff)
            np.cumsum(t[s, a:b], out=f)  # C[i], i in [a, b)
            d = scratch[:m]
            d[0] = max(ready[0], carry[s])  # j = a, and the carry
            np.subtract(ready[1:], f[:-1], out=d[1:])  # r_s[j] - C[j-1]
            np.maximum.accumulate(d, out=d)
            f += d
            carry[s] = f[-1]
            previous = f
    return float(previous[-1])


def pipeline(stage_seconds: Any, depth: int | None = None, release: Any = None, handoff: float = 0.0) -> np.ndarray:
    """Finish times, shape ``(stages, chunks)``, of a linear pipeline given ``t_s[i]`` of that shape.

    ``result[s, i]`` is when stage ``s`` finishes chunk ``i``; ``result[-1, -1]`` is the makespan.
    ``depth``: buffers between neighbouring stages (None: as many as there are chunks);
    ``release``: per stage, when into each chunk it frees its input buffer (default: when it ends);
    ``handoff``: seconds from a buffer freed to its producer knowing it. Memory: the result, plus one
    block of scratch.
    """
    t = _check(stage_seconds, 2, "pipeline")
    f = np.empty(t.shape, dtype=np.float64)
    _scan(t, f, _depth(depth), _release(release, t.shape[0]), _handoff(handoff))
    return f


def pipeline_uniform(stage_seconds: Any, chunks: int, depth: int | None = None) -> np.ndarray:
    """:func:`pipeline` for chunks that all take ``stage_seconds[s]`` at stage ``s`` (shape ``(stages,)``)."""
    t = _check(stage_seconds, 1, "pipeline_uniform")
    return pipeline(np.broadcast_to(t[:, None], (t.shape[0], _chunks(chunks))), depth)


def pipeline_makespan(stage_seconds: Any, chunks: int | None = None, depth: int | None = None,
                      release: Any = None, handoff: float = 0.0) -> float:
    """When the last chunk leaves the last stage.

    ``stage_seconds`` of shape ``(stages, chunks)`` runs the scan keeping only the rows of one block
    of chunks (memory independent of the chunk count, beyond the input); of shape ``(stages,)`` with
    ``chunks`` given, it is the balanced closed form ``sum(t) + (chunks - 1) * max(t)``, or with one
    buffer (``depth`` 1) ``sum(t) + (chunks - 1) * max(t_s + release_{s+1})`` (module doc). No
    chunks or no stages take 0 s.
    """
    depth = _depth(depth)
    handoff = _handoff(handoff)
    if chunks is not None:
        t = _check(stage_seconds, 1, "pipeline_makespan")
        n = _chunks(chunks)
        if not n or not t.size:
            return 0.0
        if handoff and depth:
            return _scan(np.broadcast_to(t[:, None], (t.size, n)), None, depth, _release(release, t.size), handoff)
        pace = float(t.max())
        if depth == 1 and t.size > 1:
            freed = np.minimum(_release(release, t.size), t) if release is not None else t
            pace = max(pace, float((t[:-1] + freed[1:]).max()))
        return float(t.sum() + (n - 1) * pace)
    t = _check(stage_seconds, 2, "pipeline_makespan")
    return _scan(t, None, depth, _release(release, t.shape[0]), handoff)


def balanced_formula(d: Any, n: Any, t_stage: Any, s: Any = 0.0) -> Any:
    """Seed 000's balanced pipeline: ``t_app = d * t_stage + (n - 1) * t_stage + s``.

    ``d`` stages of ``t_stage`` seconds each, ``n`` chunks, ``s`` seconds outside the pipeline;
    scalars or numpy arrays (broadcast).
    """
    return d * t_stage + (n - 1) * t_stage + s


def _release(release: Any, stages: int) -> np.ndarray | None:
    if release is None:
        return None
    r = _check(release, 1, "pipeline release")
    if r.shape[0] != stages:
        raise BadValue(f"pipeline: release has {r.shape[0]} values for {stages} stages")
    return r


def _handoff(handoff: Any) -> float:
    if isinstance(handoff, bool) or not isinstance(handoff, (int, float, np.floating)) or not 0 <= handoff < np.inf:
        raise BadValue(f"pipeline: handoff = {handoff!r}; allowed: a finite number of seconds >= 0")
    return float(handoff)


def _depth(depth: Any) -> int | None:
    if depth is None:
        return None
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise BadValue(f"pipeline: depth = {depth!r}; allowed: an integer >= 1 (buffers between stages), or none")
    return int(depth)


def _chunks(chunks: Any) -> int:
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 0:
        raise BadValue(f"pipeline: chunks = {chunks!r}; allowed: an integer >= 0")
    return int(chunks)

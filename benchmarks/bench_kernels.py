"""xferlab's device STREAM against a plain pyopencl program on the same OpenCL device.

The reference is the benchmark's own code: a triad kernel of its own (one work-item per element,
a[i] = b[i] + s * c[i]) and a dot product through pyopencl's ReductionKernel (the library's own
reduction), over float arrays of the same size, timed host-side around enqueue + finish as
xferlab's probe times them. Both report BabelStream's figure, the best of N launches (triad moves 3
arrays, dot 2). Rounds alternate; the figure per side is the median over rounds of its best.

Targets: xferlab's triad and dot bandwidth at least 0.95x pyopencl's. Run: ``make bench`` or
``.venv/bin/python benchmarks/bench_kernels.py`` (pyopencl comes with ``pip install '.[bench]'``).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from xferlab.measure.probe import run_probe

SIZE = 64 * 2**20  # bytes per array
LAUNCHES = 20
ROUNDS = 3
TARGET = 0.95
TRIAD = """
kernel void triad(global float* a, global const float* b, global const float* c, float s) {
  size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}
"""


def pyopencl_round() -> tuple[float, float, str]:
    import pyopencl as cl
    import pyopencl.array as cla
    from pyopencl.reduction import ReductionKernel

    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    n = SIZE // 4
    a = cla.to_device(queue, np.full(n, 0.1, np.float32))
    b = cla.to_device(queue, np.full(n, 0.2, np.float32))
    c = cla.to_device(queue, np.full(n, 0.0, np.float32))
    triad = cl.Program(ctx, TRIAD).build().triad
    dot = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
                          arguments="const float *x, const float *y")
    best_triad = best_dot = float("inf")
    for i in range(LAUNCHES + 2):
        t0 = time.perf_counter()
        triad(queue, (n,), None, a.data, b.data, c.data, np.float32(0.4))
        queue.finish()
        t = time.perf_counter() - t0
        if i >= 2:
            best_triad = min(best_triad, t)
    for i in range(LAUNCHES + 2):
        t0 = time.perf_counter()
        result = dot(a, b, queue=queue)
        queue.finish()
        t = time.perf_counter() - t0
        if i >= 2:
            best_dot = min(best_dot, t)
    expected = 0.2 * 0.2 * n  # a = b + s * c = 0.2 after the triads
    if abs(float(result.get()) - expected) > 1e-2 * expected:
        sys.exit(f"the pyopencl dot is wrong: {float(result.get())} against {expected}")
    return 3 * SIZE / best_triad, 2 * SIZE / best_dot, ctx.devices[0].name


def xferlab_round() -> tuple[float, float]:
    run = run_probe(["kernels", "--kernels", "triad,dot", "--memory", "device", "--size", str(SIZE),
                     "--iterations", str(LAUNCHES), "--widths", "1"], timeout=600)
    if not run.ok:
        sys.exit(f"xferlab-probe kernels failed: {run.failure}")
    wrong = [r for r in run.records if r.get("record") == "validation" and not r.get("ok")]
    if wrong:
        sys.exit(f"xferlab's {wrong[0]['kernel']} is wrong: {wrong[0]['what']}")
    best = {}
    for r in run.records:
        if r.get("record") == "sample":
            best[r["kernel"]] = max(best.get(r["kernel"], 0.0), r["bytes"] / r["host_seconds"])
    return best["triad"], best["dot"]


def main() -> int:
    p_triad, p_dot, x_triad, x_dot = [], [], [], []
    name = "?"
    for _ in range(ROUNDS):
        t, d, name = pyopencl_round()
        p_triad.append(t)
        p_dot.append(d)
        t, d = xferlab_round()
        x_triad.append(t)
        x_dot.append(d)
    pt, pd, xt, xd = (statistics.median(v) for v in (p_triad, p_dot, x_triad, x_dot))
    print(f"device: {name}; float arrays of {SIZE >> 20} MiB; best of {LAUNCHES} launches, median of {ROUNDS} "
          "alternating rounds")
    print(f"triad: xferlab {xt / 1e9:.2f} GB/s, pyopencl {pt / 1e9:.2f} GB/s, ratio {xt / pt:.3f} (target at least {TARGET})")
    print(f"dot:   xferlab {xd / 1e9:.2f} GB/s, pyopencl {pd / 1e9:.2f} GB/s, ratio {xd / pd:.3f} (target at least {TARGET})")
    ok = xt / pt >= TARGET and xd / pd >= TARGET
    print("met" if ok else "below target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

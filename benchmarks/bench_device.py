"""xferlab's device measurements against a plain pyopencl loop on the same OpenCL device.

The harness is what is being measured here: a measuring tool must add as little as it can to what
it measures. Both sides copy the same 64 MiB host buffer to the device (H2D, pageable memory) and
launch the same empty kernel, each timed with a host clock around submit + wait; the figure per
side is the median of N operations, best of several alternating rounds. Targets (issue 4):
xferlab's bandwidth at least the loop's, its launch latency at most the loop's. A 2 % band is
allowed for the bandwidth, whose run-to-run spread on this shared machine is of that order;
launch latency gets none.

Run: ``make bench`` (installs pyopencl) or ``.venv/bin/python benchmarks/bench_device.py``.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from xferlab.measure.probe import run_probe

SIZE = 64 * 2**20
COPIES = 30
LAUNCHES = 3000
ROUNDS = 3


def pyopencl_side():
    import pyopencl as cl

    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    host = np.ones(SIZE, dtype=np.uint8)
    dev = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, SIZE)
    program = cl.Program(ctx, "__kernel void xferlab_empty0() {}").build()
    kernel = program.xferlab_empty0

    def copies():
        times = []
        for i in range(COPIES + 2):
            t0 = time.perf_counter()
            cl.enqueue_copy(queue, dev, host).wait()
            if i >= 2:
                times.append(time.perf_counter() - t0)
        return SIZE / statistics.median(times)

    def launches():
        times = []
        for i in range(LAUNCHES + 100):
            t0 = time.perf_counter()
            kernel(queue, (1,), None).wait()
            if i >= 100:
                times.append(time.perf_counter() - t0)
        return statistics.median(times)

    return copies, launches, ctx.devices[0].name


def xferlab_copies() -> float:
    run = run_probe(["transfer", "--kinds", "pageable", "--sizes", str(SIZE), "--directions", "h2d",
                     "--iterations", str(COPIES), "--max-iterations", str(COPIES), "--min-time", "0"], timeout=300)
    if not run.ok:
        sys.exit(f"xferlab-probe transfer failed: {run.failure}")
    return SIZE / statistics.median(r["host_seconds"] for r in run.records if r.get("record") == "sample")


def xferlab_launches() -> float:
    run = run_probe(["launch", "--count", str(LAUNCHES), "--args", "0"], timeout=300)
    if not run.ok:
        sys.exit(f"xferlab-probe launch failed: {run.failure}")
    return statistics.median(t for r in run.records if r.get("record") == "samples" for t in r["host_seconds"])


def main() -> int:
    try:
        loop_copies, loop_launches, name = pyopencl_side()
    except Exception as error:  # no pyopencl, or no OpenCL device
        sys.exit(f"the pyopencl reference cannot run: {error}")
    bw_x = bw_l = 0.0
    lat_x = lat_l = float("inf")
    for _ in range(ROUNDS):
        bw_l = max(bw_l, loop_copies())
        bw_x = max(bw_x, xferlab_copies())
        lat_l = min(lat_l, loop_launches())
        lat_x = min(lat_x, xferlab_launches())
    bw_ratio, lat_ratio = bw_x / bw_l, lat_l / lat_x
    print(f"device: {name}; {ROUNDS} alternating rounds, best median of each side")
    print(f"H2D 64 MiB pageable: xferlab {bw_x / 1e9:.2f} GB/s, pyopencl loop {bw_l / 1e9:.2f} GB/s, "
          f"ratio {bw_ratio:.3f} ({'meets' if bw_ratio >= 0.98 else 'BELOW'} the target: at least the loop's, 2 % band)")
    print(f"empty kernel launch+wait: xferlab {lat_x * 1e6:.1f} µs, pyopencl loop {lat_l * 1e6:.1f} µs, "
          f"loop/xferlab {lat_ratio:.2f} ({'meets' if lat_ratio >= 1.0 else 'BELOW'} the target: at most the loop's)")
    return 0 if bw_ratio >= 0.98 and lat_ratio >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())

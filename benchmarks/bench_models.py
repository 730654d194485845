"""Throughput of the link models: (link, size) transfer times evaluated per second, on one core.

xferlab's models are vectorized with numpy over sizes. The reference, run in the same process on
the same inputs, is a plain Python loop over the same model: once calling the model per size
(``link.time(n)``), and once as a hand-inlined scalar formula of the PCIe model with ``math.ceil``
(the fastest plain Python can do). The target of issue 2 is at least 10 million evaluations per
second; the script exits 1 if the vectorized path falls below it.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_models.py``.
"""

from __future__ import annotations

import math
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from xferlab.links import PRESETS, resolve  # noqa: E402

TARGET = 10e6
SIZES = 1_000_000


def best_of(repeats, fn):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    rng = np.random.default_rng(1)
    sizes = np.floor(2.0 ** rng.uniform(0, 34, SIZES))
    links = [resolve(name) for name in PRESETS]

    vector_s = best_of(3, lambda: [link.time(sizes, "readwrite") for link in links])
    vector_rate = len(links) * SIZES / vector_s

    sample = sizes[:20_000].tolist()
    pcie = resolve("pcie3x16")
    loop_s = best_of(3, lambda: [pcie.time(n, "readwrite") for n in sample[:2000]])
    loop_rate = 2000 / loop_s

    # The PCIe readwrite model inlined as scalar Python: the fastest plain loop.
    tlp, mps, mrrs, c = pcie.tlp_rate, pcie.mps, pcie.mrrs, pcie.completion_size
    w, r, cpl, ts = pcie.write_overhead, pcie.read_request_bytes, pcie.completion_overhead, pcie.latency

    def inline():
        out = []
        for n in sample:
            tx = n + math.ceil(n / mps) * w + math.ceil(n / mrrs) * r
            rx = n + math.ceil(n / c) * cpl
            out.append(ts + max(tx, rx) / tlp)
        return out

    inline_s = best_of(3, inline)
    inline_rate = len(sample) / inline_s
    # Same answers on the sample.
    assert np.allclose(inline(), pcie.time(np.asarray(sample), "readwrite"), rtol=1e-12)

    print(f"vectorized models: {vector_rate / 1e6:.1f} M (link, size) evaluations/s "
          f"({len(links)} presets x {SIZES:,} sizes in {vector_s:.3f} s, one core)")
    print(f"plain loop calling link.time(n): {loop_rate / 1e6:.3f} M/s  -> ratio {vector_rate / loop_rate:,.0f}x")
    print(f"plain loop, PCIe formula inlined: {inline_rate / 1e6:.2f} M/s  -> ratio {vector_rate / inline_rate:.1f}x")
    ok = vector_rate >= TARGET
    print(f"target {TARGET / 1e6:.0f} M/s: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

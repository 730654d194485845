"""Throughput of the link models: (link, size) transfer times evaluated per second, on one core.

xferlab's models are vectorized with numpy over sizes. Two references, run in the same process on
the same inputs: the PCIe model's formula written by hand as one numpy expression (what the model
costs beyond its arithmetic: the ratio should stay near 1), and the same formula as scalar Python
with ``math.ceil`` (the fastest plain loop). The targets: at least 10 million evaluations per second
over every preset (issue 2), and the PCIe model within 2x of its hand-written numpy formula; the
script exits 1 if either is missed.

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
OVERHEAD_TARGET = 2.0  # the model's time over its hand-written numpy formula, at most
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

    def by_hand():  # the same formula as one numpy expression: no model, no checks
        tx = sizes + np.ceil(sizes / mps) * w + np.ceil(sizes / mrrs) * r
        rx = sizes + np.ceil(sizes / c) * cpl
        return ts + np.maximum(tx, rx) / tlp

    model_s = best_of(5, lambda: pcie.time(sizes, "readwrite"))
    hand_s = best_of(5, by_hand)
    assert np.allclose(by_hand(), pcie.time(sizes, "readwrite"), rtol=1e-12)
    inline_s = best_of(3, inline)
    inline_rate = len(sample) / inline_s
    # Same answers on the sample.
    assert np.allclose(inline(), pcie.time(np.asarray(sample), "readwrite"), rtol=1e-12)

    print(f"vectorized models: {vector_rate / 1e6:.1f} M (link, size) evaluations/s "
          f"({len(links)} presets x {SIZES:,} sizes in {vector_s:.3f} s, one core)")
    print(f"pcie3x16 model: {SIZES / model_s / 1e6:.1f} M/s; its formula by hand in numpy: {SIZES / hand_s / 1e6:.1f} M/s "
          f"-> model/hand time ratio {model_s / hand_s:.2f} (target at most {OVERHEAD_TARGET:g})")
    print(f"plain loop, PCIe formula inlined: {inline_rate / 1e6:.2f} M/s  -> vectorized/loop {vector_rate / inline_rate:.1f}x")
    ok = vector_rate >= TARGET and model_s / hand_s <= OVERHEAD_TARGET
    print(f"targets {TARGET / 1e6:.0f} M/s and overhead at most {OVERHEAD_TARGET:g}x: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

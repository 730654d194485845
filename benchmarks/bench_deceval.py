"""DecEval (seed 000's application) on this machine: the simulator's prediction of every flow against
its measured time, and the decompression stage against Python's own zlib.

1. Model fidelity: ``xferlab study deceval`` (into a temporary store) measures each stage alone and
   each flow end to end (staged, direct, pipelined at three chunk sizes) and predicts each flow from
   the stages alone; printed per flow: measured median, predicted, error = predicted / measured - 1.
   Target: every |error| within 15 %.
2. The decompression stage's speed: the probe's inflate (zlib through C, one thread) against
   CPython's ``zlib.decompress`` of the same values deflated at the same level, best of 3 runs each.
   Target: the probe at least 0.9x Python's rate (both call the same library; a slower probe would
   mean the stage is timed around something else).

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_deceval.py [SIZE]`` (default 256MiB).
"""

from __future__ import annotations

import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from xferlab.studies import find
from xferlab.studies.run import run_study
from xferlab.units import format_size, parse_size

TOLERANCE = 0.15
SPEED_TARGET = 0.9


def python_inflate_rate(size: int) -> float:
    n = size // 8
    data = ((np.arange(n, dtype=np.float64) + 0.5) / n).tobytes()
    packed = zlib.compress(data, 1)
    best = min(_timed(lambda: zlib.decompress(packed)) for _ in range(3))
    return size / best


def _timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main() -> int:
    size = parse_size(sys.argv[1], "SIZE") if len(sys.argv) > 1 else 256 * 2**20
    study = find("deceval")
    options = {**study.options, "total": size}
    with tempfile.TemporaryDirectory() as tmp:
        result = run_study(study, options, Path(tmp) / "bench.duckdb", budget=900, timeout=900)
    if result.failed:
        print(f"FAILED: {result.failed[0]['failure']}")
        return 1
    print(f"DecEval, {format_size(size)} of doubles: measured vs simulated (xferlab study deceval --total {format_size(size)})")
    print(f"{'flow':<10} {'chunk':>9} {'measured':>11} {'predicted':>11} {'error':>8}")
    worst = 0.0
    for r in result.table:
        if r["part"] != "flow":
            continue
        worst = max(worst, abs(r["error"]))
        print(f"{r['flow']:<10} {format_size(r['chunk_bytes']):>9} {r['measured_seconds'] * 1e3:>9.2f}ms "
              f"{r['predicted_seconds'] * 1e3:>9.2f}ms {r['error']:>+8.1%}")
    print(f"largest |error| {worst:.1%} (target <= {TOLERANCE:.0%})")
    stage = max((r for r in result.table if r["part"] == "stage" and r["flow"] == "decompress"),
                key=lambda r: r["chunk_bytes"])
    ours = size / stage["measured_seconds"]
    reference = python_inflate_rate(size)
    ratio = ours / reference
    print(f"decompress: probe {ours / 1e9:.3g} GB/s, Python zlib.decompress {reference / 1e9:.3g} GB/s, "
          f"ratio {ratio:.2f} (target >= {SPEED_TARGET})")
    ok = worst <= TOLERANCE and ratio >= SPEED_TARGET
    print("OK" if ok else "BELOW TARGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

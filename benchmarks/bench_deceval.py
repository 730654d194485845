"""DecEval (seed 000's application) on this machine: the simulator's prediction of every flow against
its measured time and against two naive baselines, and the decompression stage against zlib called
directly.

1. Model fidelity: ``xferlab study run deceval`` (into a temporary store) runs both configurations (1 and
   16 evaluations of the integrand per element: decompress-bound and device-bound here), each as a
   run of the stages alone at the fit chunk sizes and a run of the flows (staged, direct, pipelined at
   the fit and the held-out chunk sizes); each flow is predicted from the stage models by the
   simulator, by the sum of its stages and by their max. Printed per flow: measured median, the
   simulator's prediction and the three errors (predicted / measured - 1). Targets: every held-out
   flow within 15 % in both configurations, and in the configuration measured device-bound the
   simulator's mean |error| over the pipelined flows below the better baseline's.
2. The decompression stage's speed: the probe's inflate (zlib through C, one thread, into a buffer it
   allocated and touched before timing) against zlib's own ``uncompress`` called through ctypes into a
   preallocated, touched buffer of the same size (the same values deflated at the same level), best of
   3 before the study and 3 after, against the probe's best round. Target: the probe at least 0.9x the
   reference's rate (both run the same library into a buffer of their own allocated before timing; a
   slower probe would time something else).

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_deceval.py [SIZE]`` (default 64MiB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from xferlab.studies import find
from xferlab.studies.deceval import notes, verdicts
from xferlab.studies.run import run_study
from xferlab.units import format_size, parse_size

TOLERANCE = 0.15
SPEED_TARGET = 0.9


class Uncompress:
    """zlib's one-call ``uncompress`` into one preallocated buffer, as the probe inflates into its own."""

    def __init__(self, size: int):
        n = size // 8
        self.expected = (np.arange(n, dtype=np.float64) + 0.5) / n
        self.packed = zlib.compress(self.expected.tobytes(), 1)
        self.out = np.ones(n, dtype=np.float64)  # allocated and touched before any timing
        self.lib = ctypes.CDLL(ctypes.util.find_library("z") or "libz.so.1")
        self.lib.uncompress.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_ulong), ctypes.c_char_p, ctypes.c_ulong]

    def seconds(self) -> float:
        length = ctypes.c_ulong(self.out.nbytes)
        t0 = time.perf_counter()
        rc = self.lib.uncompress(self.out.ctypes.data, ctypes.byref(length), self.packed, len(self.packed))
        elapsed = time.perf_counter() - t0
        if rc != 0 or length.value != self.out.nbytes or not np.array_equal(self.out, self.expected):
            raise SystemExit(f"FAILED: zlib uncompress returned {rc}, {length.value} bytes, or wrong values")
        self.out.fill(1.0)  # the next round must write every value again
        return elapsed


def main() -> int:
    size = parse_size(sys.argv[1], "SIZE") if len(sys.argv) > 1 else 64 * 2**20
    study = find("deceval")
    options = {**study.options, "total": size}
    reference = Uncompress(size)
    best = min(reference.seconds() for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        result = run_study(study, options, Path(tmp) / "bench.duckdb", budget=1800, timeout=900)
    best = min([best] + [reference.seconds() for _ in range(3)])
    if result.failed or any(s["status"] != "measured" for s in result.steps):
        bad = next(s for s in result.steps if s["status"] != "measured")
        print(f"FAILED: step {bad['key']}: {bad['status']}: {bad['failure']}")
        return 1
    print(f"DecEval, {format_size(size)} of doubles: measured vs the simulator and two naive baselines "
          f"(xferlab study run deceval --total {format_size(size)})")
    print(f"{'config':<20} {'flow':<10} {'chunk':>8} {'held out':>8} {'measured':>10} {'simulated':>10} "
          f"{'error':>7} {'sum err':>8} {'max err':>8}")
    for r in result.table:
        if r["part"] == "flow":
            print(f"{r['configuration']:<20} {r['flow']:<10} {format_size(r['chunk_bytes']):>8} "
                  f"{'yes' if r['held_out'] else 'no':>8} {r['measured_seconds'] * 1e3:>8.1f}ms "
                  f"{r['predicted_seconds'] * 1e3:>8.1f}ms {r['error']:>+7.1%} {r['sum_error']:>+8.1%} {r['max_error']:>+8.1%}")
    for line in notes(result.table):
        print(line)
    ok = True
    found = verdicts(result.table)
    for v in found:
        worst = v["held_out_worst"]
        met = worst is not None and worst <= TOLERANCE
        ok &= met
        print(f"{v['configuration']}: held-out flows' largest |error| {worst:.1%} (target <= {TOLERANCE:.0%}): "
              f"{'met' if met else 'MISSED'}")
    bound = [v for v in found if v["device_share"] > 0.5]
    if not bound:
        ok = False
        print("no configuration was device-bound here (raise --evaluations): the simulator against the baselines "
              "is untested: MISSED")
    for v in bound:
        mean = v["mean_abs_error"]
        better = min(mean["sum"], mean["max"])
        met = mean["simulator"] < better
        ok &= met
        print(f"{v['configuration']}: pipelined flows' mean |error| simulator {mean['simulator']:.1%}, better baseline "
              f"{better:.1%} (target: the simulator below it): {'met' if met else 'MISSED'}")
    stage = max((r for r in result.table if r["part"] == "stage" and r["flow"] == "decompress" and r["evaluations"] == 1),
                key=lambda r: r["chunk_bytes"])
    ratio = best / stage["min_seconds"]  # the probe's best rate over the reference's best
    ok &= ratio >= SPEED_TARGET
    print(f"decompress: probe {size / stage['min_seconds'] / 1e9:.3g} GB/s ({format_size(stage['chunk_bytes'])} per "
          f"inflate call, best of {stage['count']} rounds), zlib uncompress into a preallocated buffer "
          f"{size / best / 1e9:.3g} GB/s (best of 6: 3 before the study, 3 after), "
          f"ratio {ratio:.2f} (target >= {SPEED_TARGET})")
    print("OK" if ok else "BELOW TARGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

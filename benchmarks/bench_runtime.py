"""What the offload runtime buys, as ratios measured in one run (issue 7's targets).

For each backend, every workload runs in `sync` (each request waits for its result: the baseline)
and in `forward` (requests in windows, results forwarded on the device, only read values come back),
validated against the plain host computation each time. Targets: forward at least 2x faster than sync
on the CG workload (posit32) and on a VIP-style workload (enc64), on PoCL and on the emulated bus at a
1 us round trip (500 ns one way, seed 002's ~1000 ns); bus transactions (64-byte lines written and read
plus doorbells) cut by at least 46 % on the VIP-style workloads and 77 % on the posit workloads, the
reductions seed 002 reports. The figure per mode is the median of ROUNDS runs.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_runtime.py``.
"""

from __future__ import annotations

import statistics
import sys

from xferlab.runtime import open_runtime, workload_names, workload_opset

ROUNDS = 5
SPEEDUP = 2.0
CUT = {"posit32": 0.77, "enc64": 0.46}


def run(backend: str, mode: str, name: str) -> tuple[float, int]:
    seconds, transactions = [], 0
    for _ in range(ROUNDS):
        rt = open_runtime(backend, mode, latency=500e-9)
        result = rt.run_workload(name, 0, 1)
        transactions = rt.counters["bus_transactions"]
        rt.close()
        if not result["ok"]:
            raise SystemExit(f"{name} {mode} on {backend}: wrong result: {result['detail']}")
        seconds.append(result["seconds"])
    return statistics.median(seconds), transactions


def main() -> int:
    from xferlab.measure.device import devices

    backends = ["emulated"] + (["opencl"] if devices("opencl")[0] else [])
    failed = []
    print(f"{'backend':9} {'workload':8} {'opset':8} {'sync':>10} {'forward':>10} {'speedup':>8} {'cut':>7}  target")
    for backend in backends:
        for name in workload_names():
            opset = workload_opset(name)
            sync_s, sync_t = run(backend, "sync", name)
            fwd_s, fwd_t = run(backend, "forward", name)
            speedup, cut = sync_s / fwd_s, 1 - fwd_t / sync_t
            ok = speedup >= SPEEDUP and cut >= CUT[opset]
            failed += [] if ok else [f"{backend} {name}"]
            print(f"{backend:9} {name:8} {opset:8} {sync_s * 1e3:8.2f}ms {fwd_s * 1e3:8.2f}ms {speedup:7.2f}x {cut:7.1%}  "
                  f">= {SPEEDUP}x, >= {CUT[opset]:.0%}: {'met' if ok else 'NOT met'}")
    if "opencl" not in backends:
        print("no OpenCL device: the PoCL targets were not checked (make test installs PoCL)")
        failed.append("opencl (no device)")
    if failed:
        print("below target: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

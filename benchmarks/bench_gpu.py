"""xferlab's CUDA figures against the plain loop a CUDA Python programmer writes with CuPy, on the same GPU.

Run it on any machine with an NVIDIA GPU, its driver and CuPy (``cupy-cuda12x`` or ``cupy-cuda13x``):

    python benchmarks/bench_gpu.py [--size 1GiB] [--rounds 2] [--json FILE]

Each side does the same work, and the same statistic is compared:

* copies of SIZE bytes (default 1 GiB), pinned (``cuMemHostAlloc`` / ``cupy.cuda.alloc_pinned_memory``)
  and pageable (page-aligned ordinary memory, touched first) host memory, host to device and device to
  host, each side's **median** over its copies, timed twice as the probe times them: on the host clock
  around a synchronous copy and a context synchronize, and between two CUDA events around an
  asynchronous copy. A copy is counted once (SIZE bytes per copy). Target: xferlab at least 0.95x
  the loop's bandwidth.
* launch latency: an empty kernel of one thread, no arguments, launched and waited for
  (``cuStreamSynchronize``), the host clock around both, **median** of LAUNCHES launches. Target:
  xferlab at most 1.0x the loop's latency.
* triad (``a = b + s*c``, float), BabelStream's counting (3 arrays of SIZE bytes per run, no
  write-allocate), each side's **best** run timed by CUDA events, as BabelStream reports. Target:
  xferlab at least 0.95x.

The rounds alternate (xferlab first, then the loop first), each side keeps its best round's figure,
and the spread of its rounds is printed beside it. xferlab's side runs xferlab's own commands
(``measure device``, ``measure launch``, ``measure kernels`` with ``--backend cuda --json``) in their
own processes, as a user runs them. Exit code 1 when a target is missed, 2 for a bad argument, 3 when
there is no GPU or no CuPy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xferlab.errors import XferlabError
from xferlab.units import parse_size

COPY_TARGET = 0.95  # xferlab / loop bandwidth, at least
LAUNCH_TARGET = 1.0  # xferlab / loop latency, at most
TRIAD_TARGET = 0.95  # xferlab / loop bandwidth, at least
LAUNCHES = 20000
COPIES = 10
TRIADS = 50


# --- the loop: CuPy ------------------------------------------------------------------------------


class Loop:
    """The plain CuPy loops, one process (this one), one stream."""

    def __init__(self, size: int):
        import cupy as cp
        import numpy as np

        self.cp, self.np, self.size = cp, np, size
        self.stream = cp.cuda.Stream(non_blocking=False)
        self.events = (cp.cuda.Event(), cp.cuda.Event())
        self.device = cp.empty(size, dtype=cp.uint8)
        self.device.fill(1)
        pinned_mem = cp.cuda.alloc_pinned_memory(size)
        self.hosts = {"pinned": np.frombuffer(pinned_mem, dtype=np.uint8, count=size),
                      "pageable": np.empty(size, dtype=np.uint8)}
        self._keep = pinned_mem
        for host in self.hosts.values():
            host.fill(2)  # touched: no first-touch faults inside a timed copy
        self.empty = cp.RawKernel(r'extern "C" __global__ void empty() {}', "empty")
        self.triad_kernel = cp.RawKernel(r'''extern "C" __global__ void triad(float* a, const float* b,
            const float* c, float s, unsigned long long n) {
            unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) a[i] = b[i] + s * c[i];
        }''', "triad")

    def copies(self, kind: str, direction: str, count: int) -> tuple[float, float]:
        """Median seconds of ``count`` copies on the host clock, and of ``count`` between events."""
        cp, rt = self.cp, self.cp.cuda.runtime
        host = self.hosts[kind]
        if direction == "h2d":
            dst, src, how = self.device.data.ptr, host.ctypes.data, rt.memcpyHostToDevice
        else:
            dst, src, how = host.ctypes.data, self.device.data.ptr, rt.memcpyDeviceToHost
        host_times, event_times = [], []
        for i in range(count + 2):
            start = time.perf_counter()
            rt.memcpy(dst, src, self.size, how)
            rt.deviceSynchronize()
            host_seconds = time.perf_counter() - start
            self.events[0].record(self.stream)
            rt.memcpyAsync(dst, src, self.size, how, self.stream.ptr)
            self.events[1].record(self.stream)
            self.events[1].synchronize()
            if i >= 2:  # two warm-ups
                host_times.append(host_seconds)
                event_times.append(cp.cuda.get_elapsed_time(*self.events) / 1e3)
        return statistics.median(host_times), statistics.median(event_times)

    def launch(self, count: int) -> float:
        """Median seconds of an empty one-thread kernel launched and waited for, on the host clock."""
        times = []
        for i in range(count + count // 10):
            start = time.perf_counter()
            self.empty((1,), (1,), (), stream=self.stream)
            self.stream.synchronize()
            if i >= count // 10:
                times.append(time.perf_counter() - start)
        return statistics.median(times)

    def triad(self, count: int) -> float:
        """Best seconds of ``count`` triads over three float arrays of ``size`` bytes, between events."""
        cp, np = self.cp, self.np
        n = self.size // 4
        a, b, c = (cp.full(n, v, dtype=cp.float32) for v in (0.1, 0.2, 0.0))
        block = 1024
        grid = (n + block - 1) // block
        best = float("inf")
        for i in range(count + 2):
            self.events[0].record(self.stream)
            self.triad_kernel((grid,), (block,), (a, b, c, np.float32(0.4), np.uint64(n)), stream=self.stream)
            self.events[1].record(self.stream)
            self.events[1].synchronize()
            if i >= 2:
                best = min(best, cp.cuda.get_elapsed_time(*self.events) / 1e3)
        expect = np.float32(0.2) + np.float32(0.4) * np.float32(0.0)
        if not bool(cp.all(a == expect)):  # a figure is shown only from a validated run
            raise SystemExit("the CuPy triad computed wrong values")
        del a, b, c
        return best


# --- xferlab's side: its own commands --------------------------------------------------------------


def xferlab(*args: str, store: Path) -> dict:
    command = [sys.executable, "-m", "xferlab", *args, "--backend", "cuda", "--json", "--store", str(store)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"xferlab {' '.join(args)} failed (exit {done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'no message'}")
    return json.loads(done.stdout)


def xferlab_copies(size: int, store: Path) -> dict:
    doc = xferlab("measure", "device", "--kinds", "pinned,pageable", "--sizes", str(size), "--directions", "h2d,d2h",
                  "--iterations", str(COPIES), "--min-time", "0", "--chunks", "", "--no-launch", store=store)
    figures = {}
    for row in doc["results"]:
        if row.get("test") == "transfer" and row["size_bytes"] == size:
            figures[(row["host_kind"], row["direction"])] = (row["median_seconds"], row["device_median_seconds"])
    return figures


def xferlab_launch(store: Path) -> float:
    doc = xferlab("measure", "launch", "--count", str(LAUNCHES), "--args", "0", store=store)
    (row,) = [r for r in doc["results"] if r.get("kernel_args") == 0 and r.get("pinned_cpu") is None]
    return row["median_seconds"]


def xferlab_triad(size: int, store: Path) -> float:
    doc = xferlab("measure", "kernels", "--kernels", "triad", "--memory", "device", "--types", "float",
                  "--size", str(size), "--iterations", str(TRIADS), store=store)
    rows = [r for r in doc["results"] if r["kernel"] == "triad" and r["memory"] == "device"]
    return max(r["best_bytes_per_second"] for r in rows)


# --- the comparison --------------------------------------------------------------------------------


def spread(values: list[float]) -> str:
    return f"{(max(values) - min(values)) / min(values) * 100:.1f} %" if len(values) > 1 else "–"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1GiB", help="bytes per copy and per triad array (default 1GiB)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    try:
        args.size = parse_size(args.size, "--size")
    except XferlabError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.rounds < 1:
        print(f"error: --rounds {args.rounds}: give at least 1", file=sys.stderr)
        return 2
    try:
        loop = Loop(args.size)
    except ImportError as error:
        print(f"error: CuPy is needed for the loop: {error}", file=sys.stderr)
        return 3
    except Exception as error:  # CuPy without a GPU or driver
        print(f"error: no GPU for the loop: {error}", file=sys.stderr)
        return 3

    cases = [("pinned", "h2d"), ("pinned", "d2h"), ("pageable", "h2d"), ("pageable", "d2h")]
    rounds: dict[str, dict[str, list[float]]] = {}

    def add(side: str, key: str, value: float) -> None:
        rounds.setdefault(key, {}).setdefault(side, []).append(value)

    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "bench.duckdb"
        for r in range(args.rounds):
            order = ("xferlab", "loop") if r % 2 == 0 else ("loop", "xferlab")
            for side in order:
                if side == "xferlab":
                    for (kind, direction), (host, event) in xferlab_copies(args.size, store).items():
                        add(side, f"copy {kind} {direction} host clock", args.size / host)
                        add(side, f"copy {kind} {direction} events", args.size / event)
                    add(side, "launch (0 args)", xferlab_launch(store))
                    add(side, "triad float", xferlab_triad(args.size, store))
                else:
                    for kind, direction in cases:
                        host, event = loop.copies(kind, direction, COPIES)
                        add(side, f"copy {kind} {direction} host clock", args.size / host)
                        add(side, f"copy {kind} {direction} events", args.size / event)
                    add(side, "launch (0 args)", loop.launch(LAUNCHES))
                    add(side, "triad float", 3 * args.size / loop.triad(TRIADS))

    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}; CuPy {cp.__version__}; CUDA runtime "
          f"{cp.cuda.runtime.runtimeGetVersion()}, driver {cp.cuda.runtime.driverGetVersion()}; size {args.size} B; "
          f"{args.rounds} rounds, each side's best round")
    print(f"{'figure':36} {'xferlab':>14} {'spread':>8} {'CuPy loop':>14} {'spread':>8} {'ratio':>7} {'target':>8}")
    missed, report = [], []
    for key, sides in rounds.items():
        is_launch = key.startswith("launch")
        pick = min if is_launch else max
        mine, theirs = pick(sides["xferlab"]), pick(sides["loop"])
        ratio = mine / theirs
        if is_launch:
            target, ok, unit, scale = f"<= {LAUNCH_TARGET}", ratio <= LAUNCH_TARGET, "µs", 1e6
        else:
            goal = TRIAD_TARGET if key.startswith("triad") else COPY_TARGET
            target, ok, unit, scale = f">= {goal}", ratio >= goal, "GB/s", 1e-9
        if not ok:
            missed.append(key)
        print(f"{key:36} {mine * scale:10.3f} {unit:>4} {spread(sides['xferlab']):>7} {theirs * scale:10.3f} {unit:>4} "
              f"{spread(sides['loop']):>7} {ratio:7.3f} {target:>8}{'' if ok else '  MISSED'}")
        field = "median_seconds" if is_launch else ("best_bytes_per_second" if key.startswith("triad")
                                                     else "median_bytes_per_second")
        report.append({"figure": key, "statistic": field, "xferlab": mine, "loop": theirs, "ratio": ratio,
                       "target": target, "met": ok, "xferlab_rounds": sides["xferlab"], "loop_rounds": sides["loop"]})
    if args.json:
        args.json.write_text(json.dumps({"device": props["name"].decode(), "size_bytes": args.size,
                                         "rounds": args.rounds, "figures": report}, indent=1) + "\n")
    if missed:
        print(f"missed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

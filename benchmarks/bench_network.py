"""xferlab's MPI measurements against plain C on the same MPI and the same ranks.

benchmarks/reference/pingpong.c is a ping-pong and a windowed-bandwidth loop written the way the
OSU Micro-Benchmarks define osu_latency and osu_bw, built with the MPI's own wrapper (mpicc_abi)
and started by the same mpiexec with 2 ranks, each pinned to its own CPU as xferlab's ranks are.
Beside it, `xferlab measure network --tests latency,bw`, and an mpi4py ping-pong to show what a
timing loop in Python would cost. Rounds alternate; the figure per side is the median over rounds.

Targets: xferlab's small-message (8 B) one-way latency at most 1.05x the C loop's, its
large-message (4 MiB) bandwidth at least 0.95x. Run: ``make bench`` or
``.venv/bin/python benchmarks/bench_network.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from xferlab.measure.network import launcher, mpi_library

SMALL, LARGE = 8, 4 * 2**20
LAT_ITERATIONS, LAT_WARMUP = 10_000, 100
BW_ITERATIONS, BW_WARMUP, WINDOW = 20, 2, 64
ROUNDS = 3
LATENCY_TARGET = 1.05    # xferlab / C, at most
BANDWIDTH_TARGET = 0.95  # xferlab / C, at least
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

MPI4PY_PINGPONG = f"""
import os, sys
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
os.sched_setaffinity(0, {{sorted(os.sched_getaffinity(0))[rank % len(os.sched_getaffinity(0))]}})
buf = np.zeros({SMALL}, dtype=np.uint8)
comm.Barrier()
for i in range({LAT_WARMUP} + {LAT_ITERATIONS}):
    if i == {LAT_WARMUP}:
        start = MPI.Wtime()
    if rank == 0:
        comm.Send(buf, 1, 1); comm.Recv(buf, 1, 1)
    else:
        comm.Recv(buf, 0, 1); comm.Send(buf, 0, 1)
if rank == 0:
    print((MPI.Wtime() - start) / {LAT_ITERATIONS} / 2)
"""


def mpiexec(*args: str, timeout: float = 600) -> str:
    done = subprocess.run([str(launcher()), "-n", "2", *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def build_reference(folder: Path) -> Path:
    exe = folder / "pingpong"
    wrapper = BIN / "mpicc_abi"
    if not wrapper.exists():
        sys.exit(f"no {wrapper}: the mpich package (a dependency of xferlab) installs it")
    subprocess.run([str(wrapper), "-O2", str(HERE / "reference" / "pingpong.c"), "-o", str(exe)], check=True)
    return exe


def reference(exe: Path) -> tuple[float, float]:
    out = mpiexec(str(exe), str(SMALL), str(LAT_ITERATIONS), str(LAT_WARMUP), str(LARGE), str(BW_ITERATIONS),
                  str(BW_WARMUP), str(WINDOW))
    figures = dict(line.split() for line in out.splitlines())
    return float(figures["latency_seconds"]), float(figures["bandwidth_bytes_per_second"])


def xferlab(folder: Path) -> tuple[float, float]:
    done = subprocess.run([str(BIN / "xferlab"), "measure", "network", "--tests", "latency,bw",
                           "--sizes", f"{SMALL},{LARGE}", "--iterations", str(LAT_ITERATIONS), "--warmup", str(LAT_WARMUP),
                           "--bw-iterations", str(BW_ITERATIONS * 5), "--bw-warmup", str(BW_WARMUP * 5),
                           "--window", str(WINDOW), "--store", str(folder / "bench.duckdb"), "--json"],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"xferlab measure network failed: {done.stderr.strip()[-500:]}")
    rows = json.loads(done.stdout)["results"]
    lat = next(r for r in rows if r["test"] == "latency" and r["size_bytes"] == SMALL)
    bw = next(r for r in rows if r["test"] == "bw" and r["size_bytes"] == LARGE)
    return lat["mean_seconds"], bw["mean_bytes_per_second"]


def python_pingpong(folder: Path) -> float:
    script = folder / "pingpong.py"
    script.write_text(MPI4PY_PINGPONG)
    return float(mpiexec(sys.executable, str(script)).strip())


def shown(path) -> str:
    """A path as the docs may show it: relative to the current folder when it is below it."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except (TypeError, ValueError):
        return str(path)


def main() -> int:
    print(f"MPI: {shown(mpi_library())}, launcher {shown(launcher())}, 2 ranks pinned one per CPU; {ROUNDS} alternating rounds, "
          "median of rounds")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        exe = build_reference(folder)
        c_lat, c_bw, x_lat, x_bw, py_lat = [], [], [], [], []
        for _ in range(ROUNDS):
            lat, bw = reference(exe)
            c_lat.append(lat)
            c_bw.append(bw)
            lat, bw = xferlab(folder)
            x_lat.append(lat)
            x_bw.append(bw)
            py_lat.append(python_pingpong(folder))
    c_l, c_b, x_l, x_b, p_l = (statistics.median(v) for v in (c_lat, c_bw, x_lat, x_bw, py_lat))
    lat_ratio, bw_ratio = x_l / c_l, x_b / c_b
    print(f"latency {SMALL} B, one way:   C {c_l * 1e6:.3f} µs   xferlab {x_l * 1e6:.3f} µs   "
          f"mpi4py {p_l * 1e6:.3f} µs ({p_l / c_l:.2f}x C)")
    print(f"bandwidth {LARGE >> 20} MiB, window {WINDOW}:   C {c_b / 1e9:.3f} GB/s   xferlab {x_b / 1e9:.3f} GB/s")
    print(f"ratio latency xferlab/C: {lat_ratio:.3f} (target at most {LATENCY_TARGET})")
    print(f"ratio bandwidth xferlab/C: {bw_ratio:.3f} (target at least {BANDWIDTH_TARGET})")
    ok = lat_ratio <= LATENCY_TARGET and bw_ratio >= BANDWIDTH_TARGET
    print("met" if ok else "below target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""xferlab's MPI measurements against plain C on the same MPI and the same ranks.

benchmarks/reference/pingpong.c is a ping-pong and a windowed-bandwidth loop written the way the
OSU Micro-Benchmarks define osu_latency and osu_bw (latency: half the round trip; bw: a window of
64 non-blocking sends, then a 4-byte ack), built with each MPI's own wrapper and started by that
MPI's mpiexec with 2 ranks, each pinned to its own CPU as xferlab's ranks are. Beside it,
`xferlab measure network --mpi M --tests latency,bw` on the same MPI, for each MPI present: the
mpich wheel (standard ABI, mpicc_abi), Debian's Open MPI (mpicc.openmpi) and MPICH (mpicc.mpich),
both through xferlab's shim. On the wheel also an mpi4py ping-pong, to show what a timing loop in
Python would cost. Rounds alternate; the figure per side is its best round (the least latency, the
most bandwidth): on a shared 2-vCPU machine two polling ranks are often descheduled, and a round
that was is slower on either side, so the best round is the one that measured the code.

Targets, for every MPI: xferlab's small-message (8 B) one-way latency at most 1.05x the C loop's,
its large-message (4 MiB) bandwidth at least 0.95x. Run: ``make bench`` or
``.venv/bin/python benchmarks/bench_network.py [--mpi NAME,...] [--rounds N]``; each MPI's lines end with the
load average before and after its rounds (a figure taken beside other work is not a verdict). ``--realtime``
(root) runs the ranks of both sides, and nothing else, at SCHED_FIFO priority 1 (``chrt -f 1`` on the launcher:
xferlab's through a wrapper of the MPI's own launcher beside a link to its mpicc, or $XFERLAB_MPIEXEC for the
wheel), so that a busy machine's other work cannot deschedule a polling rank mid-loop; its Python parent and
the C side's launch stay at normal priority. The kernel's RT throttling (sched_rt_runtime_us) still leaves the
rest of the machine 5 % of each second.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from xferlab.measure.mpi_site import Mpi, choose, launch_command

SMALL, LARGE = 8, 4 * 2**20
LAT_ITERATIONS, LAT_WARMUP = 10_000, 100
BW_ITERATIONS, BW_WARMUP, WINDOW = 20, 2, 64
ROUNDS = 5
REALTIME = False         # --realtime: the ranks at SCHED_FIFO 1
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


#: name -> (--mpi value, the wrapper that builds the C reference)
MPIS = {"wheel": ("wheel", str(BIN / "mpicc_abi")), "openmpi": ("mpicc.openmpi", "mpicc.openmpi"),
        "mpich": ("mpicc.mpich", "mpicc.mpich")}


def realtime(folder: Path, mpi: Mpi) -> tuple[str, dict[str, str]]:
    """--realtime: the --mpi value and environment that make xferlab start its ranks through ``chrt -f 1``."""
    rt = folder / "realtime"
    rt.mkdir(exist_ok=True)
    script = rt / mpi.launcher.name
    script.write_text(f'#!/bin/sh\nexec chrt -f 1 "{mpi.launcher}" "$@"\n')
    script.chmod(0o755)
    if mpi.mpicc is None:  # the wheel: its launcher is $XFERLAB_MPIEXEC's
        return mpi.choice, {"XFERLAB_MPIEXEC": str(script)}
    link = rt / Path(mpi.mpicc).name  # mpicc.X beside mpiexec.X: mpi_site takes the launcher beside the wrapper
    if not link.exists():
        link.symlink_to(mpi.mpicc)
    return str(link), {}


def mpiexec(mpi: Mpi, *args: str, timeout: float = 600) -> str:
    command = [*(["chrt", "-f", "1"] if REALTIME else []), *launch_command(mpi, 2), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **mpi.env})
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def build_reference(folder: Path, wrapper: str) -> Path:
    exe = folder / f"pingpong-{Path(wrapper).name}"
    done = subprocess.run([wrapper, "-O2", str(HERE / "reference" / "pingpong.c"), "-o", str(exe)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"{wrapper} failed to build the reference: {done.stderr.strip()[-500:]}")
    return exe


def reference(mpi: Mpi, exe: Path) -> tuple[float, float]:
    out = mpiexec(mpi, str(exe), str(SMALL), str(LAT_ITERATIONS), str(LAT_WARMUP), str(LARGE), str(BW_ITERATIONS),
                  str(BW_WARMUP), str(WINDOW))
    figures = dict(line.split() for line in out.splitlines())
    return float(figures["latency_seconds"]), float(figures["bandwidth_bytes_per_second"])


def xferlab(folder: Path, site: Mpi) -> tuple[float, float]:
    mpi, env = realtime(folder, site) if REALTIME else (site.choice, {})
    done = subprocess.run([str(BIN / "xferlab"), "measure", "network", "--mpi", mpi, "--tests", "latency,bw",
                           "--sizes", f"{SMALL},{LARGE}", "--iterations", str(LAT_ITERATIONS), "--warmup", str(LAT_WARMUP),
                           "--bw-iterations", str(BW_ITERATIONS * 5), "--bw-warmup", str(BW_WARMUP * 5),
                           "--window", str(WINDOW), "--store", str(folder / "bench.duckdb"), "--json"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, **env})
    if done.returncode != 0:
        sys.exit(f"xferlab measure network failed: {done.stderr.strip()[-500:]}")
    rows = json.loads(done.stdout)["results"]
    lat = next(r for r in rows if r["test"] == "latency" and r["size_bytes"] == SMALL)
    bw = next(r for r in rows if r["test"] == "bw" and r["size_bytes"] == LARGE)
    return lat["mean_seconds"], bw["mean_bytes_per_second"]


def python_pingpong(mpi: Mpi, folder: Path) -> float:
    script = folder / "pingpong.py"
    script.write_text(MPI4PY_PINGPONG)
    return float(mpiexec(mpi, sys.executable, str(script)).strip())


def shown(path) -> str:
    """A path as the docs may show it: relative to the current folder when it is below it."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except (TypeError, ValueError):
        return str(path)


def one(name: str, folder: Path) -> bool:
    """One MPI: C and xferlab in alternating rounds; prints the figures and ratios; True when on target."""
    choice, wrapper = MPIS[name]
    mpi = choose(shutil.which(choice) or choice if choice != "wheel" else "wheel")
    print(f"== {name}: {mpi.abi} ABI, launcher {shown(mpi.launcher)}, C reference built with {Path(wrapper).name}; "
          f"2 ranks pinned one per CPU{', at SCHED_FIFO 1 (--realtime)' if REALTIME else ''}; {ROUNDS} alternating rounds, "
          "best round per side")
    exe = build_reference(folder, shutil.which(wrapper) or wrapper)
    c_lat, c_bw, x_lat, x_bw, py_lat = [], [], [], [], []
    load_before = os.getloadavg()[0]
    for _ in range(ROUNDS):
        lat, bw = reference(mpi, exe)
        c_lat.append(lat)
        c_bw.append(bw)
        lat, bw = xferlab(folder, mpi)
        x_lat.append(lat)
        x_bw.append(bw)
        if name == "wheel":
            py_lat.append(python_pingpong(mpi, folder))
    c_l, x_l, c_b, x_b = min(c_lat), min(x_lat), max(c_bw), max(x_bw)
    lat_ratio, bw_ratio = x_l / c_l, x_b / c_b
    python = f"   mpi4py {min(py_lat) * 1e6:.3f} µs ({min(py_lat) / c_l:.2f}x C)" if py_lat else ""
    print(f"latency {SMALL} B, one way:   C {c_l * 1e6:.3f} µs   xferlab {x_l * 1e6:.3f} µs{python}")
    print(f"bandwidth {LARGE >> 20} MiB, window {WINDOW}:   C {c_b / 1e9:.3f} GB/s   xferlab {x_b / 1e9:.3f} GB/s")
    print(f"{name} ratio latency xferlab/C: {lat_ratio:.3f} (target at most {LATENCY_TARGET})")
    print(f"{name} ratio bandwidth xferlab/C: {bw_ratio:.3f} (target at least {BANDWIDTH_TARGET})")
    print(f"{name} load average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; rounds: latency C "
          f"{', '.join(f'{v * 1e6:.3f}' for v in c_lat)} µs, xferlab {', '.join(f'{v * 1e6:.3f}' for v in x_lat)} µs")
    return lat_ratio <= LATENCY_TARGET and bw_ratio >= BANDWIDTH_TARGET


def _rounds(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(f"--rounds {text!r}: allowed: 1..100")
    return int(text)


def _names(text: str) -> list[str]:
    names = text.split(",")
    bad = [n for n in names if n not in MPIS]
    if bad:
        raise argparse.ArgumentTypeError(f"--mpi {','.join(bad)}: allowed: {', '.join(MPIS)}")
    return names


def main() -> int:
    global ROUNDS, REALTIME
    parser = argparse.ArgumentParser(description="xferlab's MPI ping-pong and bandwidth beside a plain C loop of "
                                     "OSU's definitions, for each MPI present; prints the ratios against the targets.")
    parser.add_argument("--mpi", type=_names, default=list(MPIS), metavar="NAME,...",
                        help=f"the MPIs to run: {', '.join(MPIS)} (default: all present)")
    parser.add_argument("--rounds", type=_rounds, default=ROUNDS, metavar="N", help="alternating rounds per side, 1..100")
    parser.add_argument("--realtime", action="store_true",
                        help="the ranks of both sides at SCHED_FIFO priority 1 (root, chrt)")
    args = parser.parse_args()  # bad input: one line from argparse, exit 2
    names, ROUNDS, REALTIME = args.mpi, args.rounds, args.realtime
    if REALTIME and (os.geteuid() != 0 or not shutil.which("chrt")):
        print("error: --realtime needs root and chrt (util-linux)", file=sys.stderr)
        return 2
    ok, ran = True, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            wrapper = MPIS[name][1]
            if not (shutil.which(wrapper) or Path(wrapper).exists()):
                print(f"== {name}: skipped ({Path(wrapper).name} is not installed; make test installs Debian's MPIs)")
                continue
            ran += 1
            ok = one(name, Path(tmp)) and ok
    if not ran:
        return 3
    print("met" if ok else "below target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

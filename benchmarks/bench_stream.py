"""xferlab's STREAM triad against a plain `cc -O3 -fopenmp` triad, same arrays, same threads.

Issue 3's target: xferlab-probe's triad reaches at least 95 % of the reference's best rate, with
all cores and with one. Both are run in this one script, alternately (ABAB…), several rounds; each
side's figure is its best rate (STREAM's headline) over all rounds. Prints the ratios; exits 1 if a
ratio is below the target.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_stream.py [--size BYTES] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from xferlab.measure.probe import probe_path, run_probe
from xferlab.system.inventory import last_level_cache_bytes

TARGET = 0.95
HERE = Path(__file__).resolve().parent


def build_reference(folder: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("no C compiler (cc) to build the reference")
    exe = folder / "triad"
    subprocess.run([cc, "-O3", "-fopenmp", str(HERE / "reference" / "triad.c"), "-o", str(exe)], check=True)
    return exe


def reference(exe: Path, elements: int, iterations: int, threads: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_PROC_BIND": "true", "OMP_PLACES": "cores"}
    done = subprocess.run([str(exe), str(elements), str(iterations)], capture_output=True, text=True, env=env, check=True)
    return float(done.stdout)


def xferlab(size: int, iterations: int, threads: int) -> float:
    run = run_probe(["stream", "--kernels", "triad", "--size", str(size), "--iterations", str(iterations),
                     "--threads", str(threads)], timeout=600)
    if not run.ok:
        sys.exit(f"xferlab-probe failed: {run.failure}")
    return max(r["bytes"] / r["seconds"] for r in run.records if r.get("record") == "sample" and not r["warmup"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=max(4 * last_level_cache_bytes(), 64 << 20),
                        help="bytes per array (default: 4 x the last-level cache)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    elements = args.size // 8
    all_cores = len(os.sched_getaffinity(0))
    print(f"arrays of {args.size / 2**20:.0f} MiB, {args.iterations} iterations, best of {args.rounds} rounds; "
          f"probe {probe_path()}")
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        exe = build_reference(Path(folder))
        for threads in sorted({all_cores, 1}, reverse=True):
            ours, theirs = 0.0, 0.0
            for _ in range(args.rounds):
                theirs = max(theirs, reference(exe, elements, args.iterations, threads))
                ours = max(ours, xferlab(args.size, args.iterations, threads))
            ratio = ours / theirs
            ok = ok and ratio >= TARGET
            print(f"triad, {threads} thread{'s' * (threads > 1)}: xferlab {ours / 1e9:.2f} GB/s, "
                  f"reference cc -O3 -fopenmp {theirs / 1e9:.2f} GB/s, ratio {ratio:.3f} "
                  f"({'meets' if ratio >= TARGET else 'BELOW'} the {TARGET:.0%} target)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

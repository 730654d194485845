"""xferlab's device measurements against a plain-C OpenCL program on the same device
(benchmarks/reference/launch.c), as benchmarks/reference/triad.c is for STREAM.

The harness is what is being measured here: a measuring tool must add as little as it can to what
it measures. Both sides launch an empty kernel of one work item (host clock around submit + wait)
and copy the same 64 MiB pageable host buffer to the device (a blocking write); the figure per side
is the median of N operations, best of several alternating rounds. Targets: xferlab's launch
latency at most 1.25x the C program's (xferlab's probe also reads the event's device timestamps,
which the C loop does not), and its copy bandwidth at least 98 % of the C program's (the run-to-run
spread of a 64 MiB copy on this shared machine is of that order).

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_device.py``.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from xferlab.measure.probe import run_probe

SIZE = 64 * 2**20
COPIES = 30
LAUNCHES = 3000
ROUNDS = 3
LAUNCH_TARGET = 1.25  # xferlab / C, at most
COPY_TARGET = 0.98  # xferlab / C bandwidth, at least
HERE = Path(__file__).resolve().parent


def build_reference(folder: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("no C compiler (cc) to build the reference")
    exe = folder / "launch"
    subprocess.run([cc, "-O2", "-std=c99", str(HERE / "reference" / "launch.c"), "-ldl", "-o", str(exe)], check=True)
    return exe


def reference(exe: Path) -> tuple[float, float]:
    """The C program's median launch latency (s) and copy bandwidth (B/s)."""
    done = subprocess.run([str(exe), str(LAUNCHES), str(SIZE), str(COPIES)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"the C reference failed: {done.stderr.strip()}")
    figures = dict(line.split() for line in done.stdout.splitlines())
    return float(figures["launch_median_seconds"]), SIZE / float(figures["copy_median_seconds"])


def xferlab_copies() -> float:
    run = run_probe(["transfer", "--kinds", "pageable", "--sizes", str(SIZE), "--directions", "h2d",
                     "--iterations", str(COPIES), "--max-iterations", str(COPIES), "--min-time", "0"], timeout=300)
    if not run.ok:
        sys.exit(f"xferlab-probe transfer failed: {run.failure}")
    return SIZE / statistics.median(r["host_seconds"] for r in run.records if r.get("record") == "sample")


def xferlab_launches() -> tuple[float, str]:
    run = run_probe(["launch", "--count", str(LAUNCHES), "--args", "0"], timeout=300)
    if not run.ok:
        sys.exit(f"xferlab-probe launch failed: {run.failure}")
    name = next((r["device"].get("name", "?") for r in run.records if r.get("record") == "setup"), "?")
    return statistics.median(t for r in run.records if r.get("record") == "samples" for t in r["host_seconds"]), name


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_reference(Path(tmp))
        lat_c = lat_x = float("inf")
        bw_c = bw_x = 0.0
        name = "?"
        for _ in range(ROUNDS):  # alternating: C, xferlab, C, xferlab …
            lat, bw = reference(exe)
            lat_c, bw_c = min(lat_c, lat), max(bw_c, bw)
            lat, name = xferlab_launches()
            lat_x = min(lat_x, lat)
            bw_x = max(bw_x, xferlab_copies())
    lat_ratio, bw_ratio = lat_x / lat_c, bw_x / bw_c
    print(f"device: {name}; {ROUNDS} alternating rounds, best median of each side")
    print(f"empty kernel launch+wait: xferlab {lat_x * 1e6:.2f} µs, C reference {lat_c * 1e6:.2f} µs, "
          f"ratio {lat_ratio:.3f} ({'meets' if lat_ratio <= LAUNCH_TARGET else 'BELOW'} the target: at most "
          f"{LAUNCH_TARGET}x the C program's)")
    print(f"H2D 64 MiB pageable: xferlab {bw_x / 1e9:.2f} GB/s, C reference {bw_c / 1e9:.2f} GB/s, "
          f"ratio {bw_ratio:.3f} ({'meets' if bw_ratio >= COPY_TARGET else 'BELOW'} the target: at least "
          f"{COPY_TARGET:.0%} of the C program's)")
    return 0 if lat_ratio <= LAUNCH_TARGET and bw_ratio >= COPY_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

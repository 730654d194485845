"""xferlab's device measurements against two references on the same device: a plain-C OpenCL program
(benchmarks/reference/launch.c) and the pyopencl loop a Python programmer writes
(benchmarks/reference/launch_pyopencl.py), as benchmarks/reference/triad.c is for STREAM.

The harness is what is being measured here: a measuring tool must add as little as it can to what
it measures. Each side runs its launches and its copies in two processes of its own (as the probe's
launch and transfer runs are), doing the same work: an empty kernel of one work
item launched and waited for (host clock around submit + wait), LAUNCHES times after WARMUP
launches, and a blocking write of the same 64 MiB host buffer (aligned at 2 MiB and advised for
transparent huge pages, as the probe's pageable kind allocates it) into a READ_WRITE device buffer,
COPIES times after 2. A side's figure per round is the median of its operations; the rounds
alternate (C, pyopencl, xferlab, then the next order), and each side keeps its best round; the
spread of the rounds is printed beside it. Targets: xferlab's launch latency at most 1.1x the
better reference's, its copy bandwidth at least 0.95x the better reference's. Every ratio to a
reference more than 5 % from 1 is printed as a difference to explain. The C program also times its
launches on a queue with profiling enabled, reading the event's timestamps as the probe does, in
alternating blocks in the same process: the cost of the probe's device clock, apart from the
machine's and the process's. Whether the copies' source and destination fit in the last-level cache
(then every side may copy from cache, as on a VM with a 260 MiB one) is printed with them.

Exit code 1 when a target is missed, 2 for a bad argument. Run: ``make bench`` or
``.venv/bin/python benchmarks/bench_device.py [--rounds N]`` (pyopencl is in the project's ``bench`` extra).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from xferlab.measure.probe import run_probe
from xferlab.system.inventory import last_level_cache_bytes

SIZE = 64 * 2**20
COPIES = 30
LAUNCHES = 3000
WARMUP = 300
ROUNDS = 3
LAUNCH_TARGET = 1.1  # xferlab / the better reference's latency, at most
COPY_TARGET = 0.95  # xferlab / the better reference's bandwidth, at least
EXPLAIN = 0.05  # a ratio further than this from 1 is a difference to explain
HERE = Path(__file__).resolve().parent
SIDES = ("C", "pyopencl", "xferlab")


def build_reference(folder: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("no C compiler (cc) to build the reference")
    exe = folder / "launch"
    subprocess.run([cc, "-O2", "-std=c99", str(HERE / "reference" / "launch.c"), "-ldl", "-o", str(exe)], check=True)
    return exe


def reference(command: list[str], name: str) -> dict[str, float]:
    """A reference's figures: its median launch latency (s), copy bandwidth (B/s) and, when it has
    one, its median launch latency on a profiling queue (s); launches and copies each in a process
    of their own, as the probe's."""
    figures = {}
    for launches, copies in ((LAUNCHES, 0), (0, COPIES)):
        done = subprocess.run([*command, str(launches), str(WARMUP), str(SIZE), str(copies)], capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            sys.exit(f"the {name} reference failed: {done.stderr.strip()}")
        figures.update({k: float(v) for k, v in (line.split() for line in done.stdout.splitlines())})
    out = {"launch": figures["launch_median_seconds"], "copy": SIZE / figures["copy_median_seconds"]}
    if "launch_profiled_median_seconds" in figures:
        out["profiled"] = figures["launch_profiled_median_seconds"]
    return out


def xferlab(names: dict[str, str]) -> dict[str, float]:
    """The probe's median launch latency (s) and 64 MiB pageable H2D bandwidth (B/s), two runs of it."""
    run = run_probe(["launch", "--count", str(LAUNCHES), "--warmup", str(WARMUP), "--args", "0"], timeout=300)
    if not run.ok:
        sys.exit(f"xferlab-probe launch failed: {run.failure}")
    names["device"] = next((r["device"].get("name", "?") for r in run.records if r.get("record") == "setup"), "?")
    launch = statistics.median(t for r in run.records if r.get("record") == "samples" for t in r["host_seconds"])
    run = run_probe(["transfer", "--kinds", "pageable", "--sizes", str(SIZE), "--directions", "h2d", "--warmup", "2",
                     "--iterations", str(COPIES), "--max-iterations", str(COPIES), "--min-time", "0"], timeout=300)
    if not run.ok:
        sys.exit(f"xferlab-probe transfer failed: {run.failure}")
    copy = SIZE / statistics.median(r["host_seconds"] for r in run.records if r.get("record") == "sample")
    return {"launch": launch, "copy": copy}


def compare(what: str, unit: str, scale: float, rounds: dict[str, list[float]], lower_is_better: bool,
            target: float) -> bool:
    """Prints one figure's line for every side, the ratios, the target against the better reference
    and the differences to explain; True when the target is met."""
    best = {s: (min if lower_is_better else max)(v) for s, v in rounds.items()}
    print(f"{what}: " + ", ".join(f"{s} {best[s] * scale:.2f} {unit} (rounds {min(v) * scale:.2f}..{max(v) * scale:.2f})"
                                   for s, v in rounds.items()))
    ratios = {ref: best["xferlab"] / best[ref] for ref in ("C", "pyopencl")}
    better = min(("C", "pyopencl"), key=lambda r: best[r] if lower_is_better else -best[r])
    ratio = ratios[better]
    met = ratio <= target if lower_is_better else ratio >= target
    bound = "at most" if lower_is_better else "at least"
    print(f"  xferlab / C {ratios['C']:.3f}, xferlab / pyopencl {ratios['pyopencl']:.3f}; target {bound} {target}x the "
          f"better reference ({better}): {'meets' if met else 'MISSED'}")
    for ref, r in ratios.items():
        if abs(r - 1) > EXPLAIN:
            print(f"  difference to explain: xferlab / {ref} = {r:.3f} ({what}; more than {EXPLAIN:.0%} from 1)")
    return met


def main(argv: list[str]) -> int:
    rounds = ROUNDS
    if argv:  # --rounds N: more alternating rounds on a busy machine
        if len(argv) != 2 or argv[0] != "--rounds" or not argv[1].isdigit() or not 1 <= int(argv[1]) <= 100:
            print(f"error: {' '.join(argv)!r} is not allowed; allowed: --rounds N (1..100, default {ROUNDS})",
                  file=sys.stderr)
            return 2
        rounds = int(argv[1])
    names: dict[str, str] = {}
    launch: dict[str, list[float]] = {s: [] for s in SIDES}
    copy: dict[str, list[float]] = {s: [] for s in SIDES}
    profiled: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_reference(Path(tmp))
        run = {"C": lambda: reference([str(exe)], "C"),
               "pyopencl": lambda: reference([sys.executable, str(HERE / "reference" / "launch_pyopencl.py")], "pyopencl"),
               "xferlab": lambda: xferlab(names)}
        for r in range(rounds):  # alternating, and each side first in one round
            for side in SIDES[r % 3:] + SIDES[:r % 3]:
                figures = run[side]()
                launch[side].append(figures["launch"])
                copy[side].append(figures["copy"])
                if "profiled" in figures:
                    profiled.append((figures["launch"], figures["profiled"]))
    print(f"device: {names.get('device', '?')}; {rounds} alternating rounds, each side's best median "
          f"(rounds: the lowest..highest of the rounds' medians)")
    ok = compare("empty kernel launch+wait", "µs", 1e6, launch, True, LAUNCH_TARGET)
    plain, prof = min(p for p, _ in profiled), min(q for _, q in profiled)
    print(f"  profiling events (C reference, same process, alternating blocks of 100 launches): {prof * 1e6:.2f} µs "
          f"with, {plain * 1e6:.2f} µs without, ratio {prof / plain:.3f}")
    ok = compare(f"H2D {SIZE >> 20} MiB pageable", "GB/s", 1e-9, copy, False, COPY_TARGET) and ok
    llc = last_level_cache_bytes()
    held = "fit in" if 2 * SIZE <= llc else "exceed"
    print(f"  source and destination ({2 * SIZE >> 20} MiB) {held} the {llc >> 20} MiB last-level cache CPU 0 reports"
          + (": the copies may run from cache on every side" if held == "fit in" else "") if llc else
          "  no last-level cache size found (sysfs)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

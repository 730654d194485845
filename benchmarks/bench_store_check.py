"""What the damage check costs before a run (see xferlab.store: every column of every table read, the
keys looked up, a sample inserted and rolled back) on a store of 1,000,000 samples, beside what it
guards: the shortest recording run (`xferlab measure memory --kernels triad --size 8MiB --iterations 3`,
a whole process, as a user starts it). Target: the check under 10 % of that run.

Timed, best of ROUNDS each, in alternating rounds: opening the store to record with the check
(``open_store(path)``) and without it (a writable DuckDB connection and the schema's version read, what
opening cost before the check), on the same file; the run, as a subprocess, into a store of its own.
The store's samples are written with DuckDB's own INSERT (a run of the store's API, then 1e6 rows of
the shapes a memory run records), so that building it does not take longer than the benchmark.

Run: ``.venv/bin/python benchmarks/bench_store_check.py``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from xferlab.store import open_store
from xferlab.store.schema import prepare

SAMPLES = 1_000_000
ROUNDS = 5
TARGET = 0.10
RUN = ["measure", "memory", "--kernels", "triad", "--size", "8MiB", "--iterations", "3"]


def build(path: Path) -> None:
    with open_store(path) as store:
        run = store.start_run("measure memory", ["measure", "memory"], {"hostname": "bench"}, {"xferlab": "bench"})
        store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second", "value": 1.0}])
        store.finish_run(run, "ok")
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO samples (run_id, seq, suite, test, metric, value, size_bytes, threads, cpus, node, mode, "
                    "iteration, warmup, seconds, bytes, params, validated) SELECT ?, 2 + i, 'memory', "
                    "['copy', 'scale', 'add', 'triad'][1 + i % 4], 'bandwidth_bytes_per_second', 1e10 * random(), "
                    "1 << (12 + i % 18), 1 + i % 2, '0-1', (i % 2)::VARCHAR, 'memory', i % 100, i % 10 = 0, "
                    "1e-3 * (1 + random()), 1e6, json_object('delay', i % 17), true FROM range(?) t(i)", [run, SAMPLES])


def best(fn, rounds: int) -> float:
    return min(_timed(fn) for _ in range(rounds))


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def without_check(path: Path) -> None:
    conn = duckdb.connect(str(path))
    try:
        prepare(conn, f"store '{path}'", read_only=False)
    finally:
        conn.close()


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.duckdb"
        build(path)
        size = path.stat().st_size
        checked, plain, runs = [], [], []
        for _ in range(ROUNDS):
            checked.append(_timed(lambda: open_store(path).close()))
            plain.append(_timed(lambda: without_check(path)))
            store = Path(folder) / f"run-{len(runs)}.duckdb"
            runs.append(_timed(lambda: subprocess.run([sys.executable, "-m", "xferlab", *RUN, "--store", str(store)],
                                                      check=True, capture_output=True)))
        check = min(checked) - min(plain)
        run = min(runs)
        print(f"store: {SAMPLES:,} samples, {size / 2**20:.1f} MiB")
        print(f"open to record, with the check: {min(checked) * 1e3:.0f} ms; without: {min(plain) * 1e3:.0f} ms; "
              f"the check: {check * 1e3:.0f} ms (best of {ROUNDS})")
        print(f"shortest recording run (xferlab {' '.join(RUN)}): {run:.2f} s (best of {ROUNDS})")
        ratio = check / run
        print(f"check / run: {ratio:.3f} (target under {TARGET}: {'met' if ratio < TARGET else 'NOT met'})")
        return 0


if __name__ == "__main__":
    sys.exit(main())

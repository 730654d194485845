"""The store when things go wrong for real: a damaged file (one line with how to recover, nothing written
to it), a full disk (a tiny tmpfs: one line, everything committed before kept, no half-created store
left), and exports that are killed or interrupted (their temporary files removed)."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from xferlab.errors import BadFile
from xferlab.store import open_store
from xferlab.store.schema import check

MEASURE = ["measure", "memory", "--kernels", "triad", "--size", "8MiB", "--iterations", "3"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_store(path: Path, runs: int = 2, n: int = 20000) -> list[str]:
    ids = []
    with open_store(path) as store:
        for r in range(runs):
            run = store.start_run("measure memory", ["measure", "memory"], {"hostname": "h"}, {"xferlab": "t"})
            store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                                     "value": 1e9 + (i * 7919 % 1000) * 1e6, "seconds": 1e-3 * (1 + i % 13),
                                     "iteration": i, "node": str(i % 3)} for i in range(n)])
            store.finish_run(run, "ok")
            ids.append(run)
    return ids


def damaged_copies(original: Path, folder: Path):
    """Copies of ``original`` with 64 bytes overwritten somewhere past the headers, each with how DuckDB
    takes it: 'open' (refused on opening), 'query' (opens, a query fails) or None (not noticed)."""
    size = original.stat().st_size
    for n, offset in enumerate(range(12288 + 4096, size - 64, 8192)):
        copy = folder / f"damaged-{n}.duckdb"
        shutil.copy(original, copy)
        with open(copy, "r+b") as f:
            f.seek(offset)
            f.write(b"\xa5" * 64)
        try:
            con = duckdb.connect(str(copy), read_only=True)
        except duckdb.Error:
            yield copy, "open"
            continue
        try:
            check(con, "copy")
            kind = None
        except BadFile:
            kind = "query"
        finally:
            con.close()
        yield copy, kind


def test_a_damaged_store_gives_one_line_and_is_left_as_it_was(tmp_path, cli):
    original = tmp_path / "good.duckdb"
    make_store(original)
    found = {}
    for copy, kind in damaged_copies(original, tmp_path):
        if kind and kind not in found:
            found[kind] = copy
        else:
            copy.unlink()
        if len(found) == 2:
            break
    assert "open" in found or "query" in found, "no damage DuckDB noticed"
    for kind, path in found.items():
        before = digest(path)
        for args in (["results", "list"], MEASURE):
            code, out, err = cli(*args, "--store", path)
            assert code == 2, (kind, args, out, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in err, (kind, args, err)
            assert lines[0].startswith("error: store '") and str(path) in lines[0]
            assert "xferlab results export RUN" in lines[0] and "move the file aside" in lines[0]
        assert digest(path) == before, kind  # not written to
        assert not Path(str(path) + ".wal").exists()


# -- a full disk ------------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 6 MiB tmpfs (needs root and mount(8)); unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs to fill needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> Path:
    """Fill the file system holding ``folder`` to the last byte; returns the filler file."""
    filler = folder / "filler"
    with open(filler, "ab", buffering=0) as f:
        for chunk in (1 << 16, 4096, 512, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass
    return filler


def test_a_full_disk_keeps_what_was_committed(small_disk):
    path = small_disk / "s.duckdb"
    store = open_store(path)
    run = store.start_run("measure memory", [], {}, {})
    rows = [{"suite": "memory", "test": "triad", "metric": "m", "value": float(i), "iteration": i} for i in range(500)]
    assert store.add_samples(run, rows) == 500
    filler = fill(small_disk)
    with pytest.raises(BadFile) as caught:
        store.add_samples(run, rows * 200)
    message = str(caught.value)
    assert "no space left on device" in message and str(path) in message and "\n" not in message
    filler.unlink()
    assert len(store.samples(run)) == 500  # the committed batch, and nothing of the failed one
    store.finish_run(run, "ok")
    store.close()


def test_a_full_disk_leaves_no_half_created_store(small_disk, cli):
    fill(small_disk)
    path = small_disk / "new.duckdb"
    code, out, err = cli(*MEASURE, "--store", path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "no space left on device" in err and str(path) in err
    assert not path.exists() and not Path(f"{path}.wal").exists()  # the path is not blocked


def test_a_disk_filling_up_during_a_run(small_disk, cli, tmp_path):
    """The disk fills after the first of two steps committed: the second step is recorded as failed
    (exit 3) if the store still takes that, else the run stops with exit 1; either way one line, and
    the first step's samples are there once space is freed."""
    path = small_disk / "s.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "xferlab", "measure", "memory", "--threads", "1,2", "--size",
                             "64MiB", "--iterations", "20", "--store", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    filler = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with open_store(path, read_only=True) as store:
                    runs = store.runs()
                if runs and runs[0]["samples"]:
                    break
            except Exception:
                pass
            time.sleep(0.05)
        first = runs[0]["samples"]
        filler = fill(small_disk)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode in (1, 3), err
    assert "Traceback" not in err and "no space left on device" in err
    assert err.strip().splitlines()[-1].startswith("error: ")
    filler.unlink()
    with open_store(path, read_only=True) as store:
        (run,) = store.runs()
        samples = store.samples(run["run_id"])
    assert len(samples) == first == 20 * 4  # the first step (four kernels) kept, the second not stored


def test_export_to_a_full_disk(small_disk, cli, tmp_path):
    store = tmp_path / "s.duckdb"
    (run, _) = make_store(store, n=50000)
    fill(small_disk)
    for fmt in ("csv", "parquet", "json"):
        out = small_disk / f"out.{fmt}"
        code, _, err = cli("results", "export", run, "--format", fmt, "-o", out, "--store", store)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"output file '{out}' cannot be written: no space left on device" in err
        assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]  # no file, no temporary left


# -- exports ---------------------------------------------------------------------------------------

def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_export_removes_dead_writers_temporary_files(tmp_path, cli):
    store = tmp_path / "s.duckdb"
    (run,) = make_store(store, runs=1, n=100)
    out = tmp_path / "out.csv"
    stale = tmp_path / f".out.csv.{dead_pid()}.0badc0de.tmp"
    live = tmp_path / f".out.csv.{os.getpid()}.0000beef.tmp"  # this process is alive: left alone
    other = tmp_path / f".other.csv.{dead_pid()}.0badc0de.tmp"  # another target: left alone
    odd = tmp_path / ".out.csv.tmp"  # not the pattern: left alone
    for p in (stale, live, other, odd):
        p.write_bytes(b"x" * 1000)
    cli("results", "export", run, "--format", "csv", "-o", out, "--store", store, check=0)
    assert out.exists() and not stale.exists() and live.exists() and other.exists() and odd.exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_export_leaves_nothing(tmp_path, signum):
    store = tmp_path / "s.duckdb"
    (run,) = make_store(store, runs=1, n=10)
    with duckdb.connect(str(store)) as con:  # a big run, so that the export takes a while
        con.execute("INSERT INTO samples (run_id, seq, suite, test, metric, value, seconds, iteration) "
                    "SELECT ?, 100 + i, 'memory', 'triad', 'bandwidth_bytes_per_second', random() * 1e10, random() + 1e-3, i "
                    "FROM range(6000000) t(i)", [run])
    name = signal.Signals(signum).name
    for attempt in range(3):  # the signal can land after the file is in place (counting the samples): then again
        out = tmp_path / f"out{attempt}" / "big.csv"
        out.parent.mkdir()
        proc = subprocess.Popen([sys.executable, "-m", "xferlab", "results", "export", run, "--format", "csv", "-o",
                                 str(out), "--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            deadline = time.monotonic() + 60
            while not any(out.parent.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.01)
            assert proc.poll() is None, "the export ended before it could be interrupted"
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
        assert proc.returncode == 128 + signum, err
        if out.exists():  # interrupted after the export itself: the file is whole, and no temporary is left
            assert [p.name for p in out.parent.iterdir()] == ["big.csv"]
            assert sum(1 for _ in out.open()) == 10 + 6000000 + 1
            continue
        assert err.strip().splitlines() == [f"interrupted by {name}: export of run {run} to '{out}' stopped; "
                                            "nothing was written there"]
        assert list(out.parent.iterdir()) == []
        break
    else:
        pytest.fail("three exports were each interrupted only after their file was written")

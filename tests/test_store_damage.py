"""A damaged store takes no run: random bytes over table blocks, a truncated file, a zeroed header. Every
command that records runs (measure, study, sweep, runtime bench, lab, campaign, results import) refuses it
with one line naming the store, exit 2, before any work, and leaves the file's bytes as they were;
`results list` says it is damaged instead of answering from what it could read."""

import hashlib
import os
import random
import shutil
from pathlib import Path

import duckdb
import pytest

from xferlab.store import open_store

SWEEP = """kind: sweep
name: damaged
systems: [seed-testbed]
replace: pcie3x16
links: [pcie3x16]
workflows: [deceval]
strategies: [staged]
"""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A store of two runs (40,000 samples) and a shard exported from it."""
    folder = tmp_path_factory.mktemp("good")
    path = folder / "good.duckdb"
    with open_store(path) as store:
        for r in range(2):
            run = store.start_run("measure memory", ["measure", "memory"], {"hostname": "h"}, {"xferlab": "t"})
            store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                                     "value": 1e9 + (i * 7919 % 1000) * 1e6, "seconds": 1e-3 * (1 + i % 13),
                                     "iteration": i, "node": str(i % 3), "params": {"delay": i % 17}}
                                    for i in range(20000)])
            store.add_failure(run, "memory", "latency", "timed out")
            store.finish_run(run, "ok")
    return path


def blocks(path: Path) -> dict[str, int]:
    """A data block of each table that has one: its file offset (past the three 4 KiB headers)."""
    with duckdb.connect(str(path), read_only=True) as con:
        size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        found = {}
        for table in ("runs", "inventory", "samples", "meta"):
            ids = con.execute(f"SELECT max(block_id) FROM pragma_storage_info('{table}') WHERE block_id >= 0").fetchone()
            if ids[0] is not None:
                found[table] = 3 * 4096 + ids[0] * size
    return found


def damaged(good: Path, folder: Path):
    """(name, copy, what the one line must say) for each kind of damage."""
    rng = random.Random(24)
    for table, offset in blocks(good).items():
        copy = folder / f"bytes-{table}.duckdb"
        shutil.copy(good, copy)
        with open(copy, "r+b") as f:
            f.seek(offset + 8192)
            f.write(rng.randbytes(4096))
        # meta's one row is read (through its key) as the store opens, before the full read
        yield (f"random bytes in a {table} block", copy, "is damaged: Corrupt database file" if table == "meta" else
               f"is damaged: reading table {table} failed: Corrupt database file")
    copy = folder / "truncated.duckdb"
    shutil.copy(good, copy)
    os.truncate(copy, copy.stat().st_size // 2)
    yield "truncated", copy, "is damaged"
    copy = folder / "zeroed.duckdb"
    shutil.copy(good, copy)
    with open(copy, "r+b") as f:
        f.write(bytes(4096))
    yield "zeroed header", copy, "is not a DuckDB database file"


def commands(folder: Path, shard: Path, store: Path) -> list[list]:
    sweep = folder / "s.yaml"
    sweep.write_text(SWEEP)
    return [["measure", "memory", "--kernels", "triad", "--size", "8MiB", "--iterations", "3", "--store", store],
            ["study", "run", "tiers", "--iterations", "3", "--budget", "2m", "--store", store],
            ["sweep", "run", sweep, "--store", store],
            ["runtime", "bench", "--backend", "emulated", "--workload", "gcd", "--mode", "sync", "--repeats", "1",
             "--store", store],
            ["lab", "--budget", "1m", "--out", folder / "lab", "--store", store],
            ["campaign", "run", "--nodes", "1", "--shards", folder / "shards", "--store", store, "--", "measure", "memory",
             "--kernels", "triad", "--size", "8MiB", "--iterations", "3"],
            ["results", "import", shard, "--store", store],
            ["results", "list", "--store", store]]


def test_every_recording_command_refuses_a_damaged_store(good, tmp_path, cli):
    shard = tmp_path / "shard.json"
    with open_store(good, read_only=True) as db:
        run = db.runs()[0]["run_id"]
    cli("results", "export", run, "--format", "json", "-o", shard, "--store", good, check=0)
    fresh = tmp_path / "fresh.duckdb"  # the shard itself is fine: a good store takes it
    cli("results", "import", shard, "--store", fresh, check=0)
    tried = 0
    for name, copy, says in damaged(good, tmp_path):
        before = digest(copy)
        for args in commands(tmp_path, shard, copy):
            code, out, err = cli(*args)
            lines = err.strip().splitlines()
            assert code == 2, (name, args, code, out, err)
            assert len(lines) == 1 and lines[0].startswith(f"error: store '{copy}'") and says in lines[0], (name, args, err)
            assert "Traceback" not in err
            if name != "zeroed header":
                assert "xferlab results export RUN" in lines[0] and "move the file aside" in lines[0], (name, args, err)
            assert digest(copy) == before, (name, args)  # not one byte written
            assert not Path(f"{copy}.wal").exists()
            tried += 1
        assert not (tmp_path / "lab").exists() and not (tmp_path / "shards").exists()  # refused before any work
    assert tried >= 5 * 8


def test_the_check_reads_what_a_count_does_not(good, tmp_path):
    """Damage inside the samples' data: a row count (from the row groups' headers) still answers, the
    store's full read does not (what the check adds over `SELECT count(*)`)."""
    copy = tmp_path / "c.duckdb"
    shutil.copy(good, copy)
    with open(copy, "r+b") as f:
        f.seek(blocks(good)["samples"] + 8192)
        f.write(random.Random(1).randbytes(4096))
    with duckdb.connect(str(copy), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM samples").fetchone()[0] == 40000
    from xferlab.errors import BadFile

    with open_store(copy, read_only=True) as db, pytest.raises(BadFile, match="is damaged: reading table samples"):
        db.check()

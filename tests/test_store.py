"""The results store: round trips, run resolution, errors naming the path, transactional writes that
survive SIGKILL, waiting for a store another process holds, schema 2 (migration, owners, validated
samples) and the median's interval in the statistics."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

import xferlab
from xferlab.errors import BadFile, BadValue, Unavailable, UnknownName
from xferlab.store import DEFAULT_PATH, ENV, SCHEMA_VERSION, export_run, open_store
from xferlab.store.db import GROUPED_BY

SAMPLE_KEYS = ["suite", "test", "metric", "value", "size_bytes", "threads", "cpus", "node", "mode", "iteration",
               "warmup", "seconds", "bytes"]


def memory_rows(n=6, size=1 << 20):
    rows = []
    for i in range(n):
        rows.append({"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                     "value": 1.0e10 + 1e8 * i, "size_bytes": size, "threads": 4, "cpus": "0-3", "node": "0",
                     "mode": "dram", "iteration": i, "warmup": i == 0, "seconds": 3 * size / (1.0e10 + 1e8 * i),
                     "bytes": float(3 * size)})
    rows.append({"suite": "memory", "test": "latency", "metric": "latency_seconds", "value": 9.1e-8,
                 "size_bytes": 1 << 30})  # optional columns left out
    return rows


def child(script: str, *args) -> subprocess.Popen:
    """A Python child process importing the same xferlab as these tests."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(xferlab.__file__).parents[1]),
                                                         os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_round_trip_and_exports(tmp_path):
    path = tmp_path / "s" / "results.duckdb"
    rows = memory_rows()
    with open_store(path) as store:
        assert store.path == path and path.exists()
        run = store.start_run("measure memory", ["measure", "memory"], {"hostname": "h", "cpus": 4},
                              {"xferlab": xferlab.__version__}, {"kernels": ["triad"]})
        assert store.add_samples(run, rows[:3]) == 3
        assert store.add_samples(run, rows[3:]) == len(rows) - 3
        store.finish_run(run, "ok", {"best_bytes_per_second": 1.05e10})
    with open_store(path, read_only=True) as store:
        back = store.samples(run)
        assert [r["seq"] for r in back] == list(range(1, len(rows) + 1))
        for given, got in zip(rows, back):
            assert got["run_id"] == run and got["params"] == {}
            for key in SAMPLE_KEYS:
                expected = given.get(key, False if key == "warmup" else None)
                assert got[key] == expected, key
        info = store.run(run)
        assert info["status"] == "ok" and info["finished_utc"] and not info["incomplete"]
        assert info["inventory"] == {"hostname": "h", "cpus": 4} and info["params"] == {"kernels": ["triad"]}
        assert info["summary"] == {"best_bytes_per_second": 1.05e10} and info["samples"] == len(rows)
        assert info["argv"] == ["measure", "memory"] and info["xferlab_version"] == xferlab.__version__

        con = duckdb.connect()
        columns = list(back[0])
        for fmt, reader in (("csv", "read_csv"), ("parquet", "read_parquet")):
            out = export_run(store, run, fmt, tmp_path / f"out.{fmt}")
            read = con.execute(f"SELECT * FROM {reader}('{out}') ORDER BY seq").fetchall()
            assert len(read) == len(back)
            for got, want in zip(read, back):
                got = dict(zip(columns, got))
                for key in ["run_id", "seq", *SAMPLE_KEYS]:
                    if isinstance(want[key], float):
                        assert got[key] == pytest.approx(want[key], rel=1e-15), (fmt, key)
                    else:
                        assert got[key] == want[key] or (fmt == "csv" and str(got[key]) == str(want[key])), (fmt, key)
        out = export_run(store, run, "json", tmp_path / "out.json")
        doc = json.loads(out.read_text())
        assert doc["run"]["run_id"] == run and doc["failures"] == []
        assert doc["samples"] == json.loads(json.dumps(back))
        # the JSON file re-read by DuckDB too
        (count,) = con.execute(f"SELECT count(*) FROM (SELECT unnest(samples) FROM read_json('{out}'))").fetchone()
        assert count == len(rows)


def test_extra_keys_go_to_params(tmp_path):
    with open_store(tmp_path / "x.duckdb") as store:
        run = store.start_run("measure memory", [], {}, {})
        store.add_samples(run, [{"suite": "memory", "test": "write", "metric": "bandwidth_bytes_per_second",
                                 "value": np.float64(2.5e9), "size_bytes": np.int64(4096), "threads": 1,
                                 "cpus": [0, 2], "node": 1, "mode": "app-direct+persist", "warmup": np.bool_(False),
                                 "persist": "clwb+sfence", "dax": True, "params": {"intensity": 0.5}}])
        (row,) = store.samples(run)
        assert row["params"] == {"intensity": 0.5, "persist": "clwb+sfence", "dax": True}
        assert row["cpus"] == "0,2" and row["node"] == "1" and row["size_bytes"] == 4096 and row["value"] == 2.5e9
        (row,) = store.query("SELECT params->>'$.persist' AS persist FROM samples")
        assert row["persist"] == "clwb+sfence"


def test_bad_samples_write_nothing(tmp_path):
    with open_store(tmp_path / "x.duckdb") as store:
        run = store.start_run("measure memory", [], {}, {})
        good = memory_rows(2)
        with pytest.raises(BadValue, match="sample 1 has no 'metric'"):
            store.add_samples(run, [good[0], {k: v for k, v in good[1].items() if k != "metric"}])
        with pytest.raises(BadValue, match="sample 0 field 'threads' is 2.5"):
            store.add_samples(run, [{**good[0], "threads": 2.5}])
        # bad input: a value that is not finite, and times that are zero, negative or not finite
        for field, bad in (("value", float("nan")), ("value", float("inf")), ("seconds", 0.0), ("seconds", -1e-9),
                           ("seconds", float("nan"))):
            with pytest.raises(BadValue, match=rf"sample 1 field '{field}' is {bad!r}") as caught:
                store.add_samples(run, [good[0], {**good[1], field: bad}])
            assert "\n" not in str(caught.value)
        # bad input: a whole number beyond BIGINT (refused before the transaction): one line, and the whole
        # batch is refused
        with pytest.raises(BadValue, match=r"sample 1 field 'size_bytes' is 1180591620717411303424; it must be a whole "
                                           r"number in -2\^63..2\^63 - 1") as caught:
            store.add_samples(run, [good[0], {**good[1], "size_bytes": 1 << 70}])
        assert "\n" not in str(caught.value)
        assert store.samples(run) == []
        assert store.add_samples(run, good) == len(good)
        assert [r["seq"] for r in store.samples(run)] == [1, 2, 3]
        store.finish_run(run)
        with pytest.raises(BadValue, match="has finished"):
            store.add_samples(run, good)
        with pytest.raises(BadValue, match="status 'done' is not allowed"):
            store.finish_run(run, "done")
        with pytest.raises(UnknownName, match="run 'nope'"):
            store.add_failure("nope", "memory", "triad", "crashed")


def test_run_resolution(tmp_path):
    with open_store(tmp_path / "x.duckdb") as store:
        with pytest.raises(UnknownName, match="has no runs yet"):
            store.run("latest")
        ids = [store.start_run(f"measure memory {i}", [], {}, {}) for i in range(7)]
        store.add_failure(ids[-1], "memory", "loaded-latency", "timed out after 5 s")
        listed = store.runs()
        assert [r["run_id"] for r in listed] == ids[::-1]  # newest first
        assert listed[0]["failures"] == 1 and listed[0]["samples"] == 0 and listed[0]["status"] == "running"
        assert not listed[0]["incomplete"]  # this process is recording it
        assert store.run("latest")["run_id"] == ids[-1]
        assert store.run(ids[2])["command"] == "measure memory 2"
        unique = next(ids[3][:n] for n in range(1, 21) if sum(i.startswith(ids[3][:n]) for i in ids) == 1)
        assert store.run(unique)["run_id"] == ids[3]
        with pytest.raises(BadValue, match=r"matches 7 runs"):
            store.run(ids[0][:4])
        with pytest.raises(UnknownName) as caught:
            store.run("20200101-000000-dead")
        message = str(caught.value)
        assert "'20200101-000000-dead'" in message and str(store.path) in message
        assert all(i in message for i in ids[-5:]) and ids[0] not in message
        (failure,) = store.failures("latest")
        assert failure["reason"] == "timed out after 5 s" and failure["at_utc"].endswith("Z")
    with open_store(tmp_path / "x.duckdb", read_only=True) as store:
        assert all(r["incomplete"] for r in store.runs())  # nobody records them any more


def test_context_manager_marks_runs_on_errors(tmp_path):
    path = tmp_path / "x.duckdb"
    with pytest.raises(KeyboardInterrupt):
        with open_store(path) as store:
            run = store.start_run("measure memory", [], {}, {})
            raise KeyboardInterrupt
    with open_store(path) as store:
        assert store.run(run)["status"] == "interrupted"


def test_open_errors_name_the_path(tmp_path):
    with pytest.raises(BadFile, match=f"store '{tmp_path}' is a folder"):
        open_store(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BadFile, match=f"store '{blocker}/s.duckdb' cannot be created"):
        open_store(blocker / "s.duckdb")
    for read_only in (False, True):  # a name longer than the file system's limit: a BadFile, not an OSError
        with pytest.raises(BadFile, match="cannot be used: File name too long"):
            open_store(tmp_path / ("y" * 300 + ".duckdb"), read_only=read_only)
    text = tmp_path / "notes.duckdb"
    text.write_text("not a database\n" * 1000)
    with pytest.raises(BadFile, match=f"store '{text}' is not a DuckDB database file"):
        open_store(text)
    assert text.read_text() == "not a database\n" * 1000  # left as it was
    missing = tmp_path / "missing" / "x.duckdb"
    with pytest.raises(BadFile, match=f"no results store at '{missing}'"):
        open_store(missing, read_only=True)
    assert not missing.parent.exists()
    foreign = tmp_path / "foreign.duckdb"
    with duckdb.connect(str(foreign)) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(BadFile, match="not an xferlab results store"):
        open_store(foreign)
    newer = tmp_path / "newer.duckdb"
    open_store(newer).close()
    with duckdb.connect(str(newer)) as con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    with pytest.raises(BadFile, match="a newer xferlab wrote it"):
        open_store(newer)


def test_path_from_env_and_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    with open_store(None) as store:
        assert store.path == DEFAULT_PATH and (tmp_path / DEFAULT_PATH).exists()
    monkeypatch.setenv(ENV, str(tmp_path / "env" / "e.duckdb"))
    with open_store(None) as store:
        assert store.path == tmp_path / "env" / "e.duckdb"
    with pytest.raises(BadFile, match=f"from {ENV}"):
        monkeypatch.setenv(ENV, str(tmp_path))
        open_store(None)


WRITER = """
    import sys, time
    from xferlab.store import open_store
    store = open_store(sys.argv[1])
    run = store.start_run("measure memory", ["measure", "memory"], {"hostname": "test"}, {"xferlab": "test"})
    print("run", run, flush=True)
    batch = 0
    while True:
        rows = [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                 "value": float(batch * 1000 + i), "iteration": i, "batch": batch} for i in range(200)]
        store.add_samples(run, rows)
        print("committed", batch, flush=True)
        batch += 1
        time.sleep(0.01)
"""


def test_sigkill_keeps_every_committed_batch(tmp_path, cli):
    path = tmp_path / "killed.duckdb"
    proc = child(WRITER, path)
    try:
        run = proc.stdout.readline().split()[-1]
        reported = []
        while len(reported) < 5:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            reported.append(int(line.split()[1]))
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # first a read-only look, as `results list` takes, straight after the kill (DuckDB replays its log)
    doc = cli.json("results", "list", "--store", path)
    (row,) = doc["results"]
    # its process is gone: interrupted wherever it is read (the file still says running: incomplete)
    assert row["run_id"] == run and row["status"] == "interrupted" and row["incomplete"] is True
    code, out, _ = cli("results", "list", "--store", path, check=0)
    assert run in out and "interrupted*" in out and not re.search(r"│\s*running\s*│", out)
    shown = cli.json("results", "show", run, "--store", path)
    assert shown["run"]["status"] == "interrupted" and shown["run"]["incomplete"] is True
    code, out, _ = cli("results", "show", run, "--store", path, check=0)
    assert f"run {run}: " in out and ", interrupted*" in out
    exported = tmp_path / "killed.json"
    cli("results", "export", run, "--format", "json", "-o", exported, "--store", path)
    assert json.loads(exported.read_text())["run"]["status"] == "interrupted"
    code, out, _ = cli("results", "list", "--store", path, "--csv", check=0)
    assert ",interrupted," in out and "running" not in out
    with open_store(path) as store:
        samples = store.samples(run)
        batches: dict[int, list] = {}
        for sample in samples:
            batches.setdefault(sample["params"]["batch"], []).append(sample)
        assert set(reported) <= set(batches)  # every batch reported committed is there ...
        assert sorted(batches) == list(range(len(batches)))
        assert all(len(rows) == 200 for rows in batches.values())  # ... and no batch is partly there
        assert [r["seq"] for r in samples] == list(range(1, len(samples) + 1))
        assert row["samples"] == len(samples)
        info = store.run(run)
        assert info["status"] == "interrupted" and info["incomplete"] and info["finished_utc"] is None
        (listed,) = store.runs()
        assert listed["run_id"] == run and listed["status"] == "interrupted" and listed["incomplete"]


HOLDER = """
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    con.close()
    print("released", flush=True)
    time.sleep(60)
"""


def test_a_held_store_is_waited_for(tmp_path, cli, monkeypatch):
    """Another process holding the file: a writer and a reader wait their turn; past XFERLAB_STORE_WAIT
    they fail with one line naming the holder's PID."""
    path = tmp_path / "busy.duckdb"
    open_store(path).close()
    proc = child(HOLDER, path, 30)
    try:
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()
        monkeypatch.setenv("XFERLAB_STORE_WAIT", "0.5")
        for read_only in (False, True):
            started = time.monotonic()
            with pytest.raises(Unavailable) as caught:
                open_store(path, read_only=read_only)
            assert 0.5 <= time.monotonic() - started < 5
            message = str(caught.value)
            assert f"store '{path}'" in message and "in use by another process" in message
            assert f"PID {proc.pid}" in message and "for 0.5 s" in message and "\n" not in message
        code, _, err = cli("results", "list", "--store", path, env={"XFERLAB_STORE_WAIT": "0.2"})
        assert code == 2 and err.startswith(f"error: store '{path}' is in use by another process")
        assert len(err.strip().splitlines()) == 1
        # bad input: a wait that is not a number of seconds
        monkeypatch.setenv("XFERLAB_STORE_WAIT", "soon")
        with pytest.raises(BadValue, match="XFERLAB_STORE_WAIT='soon' is not allowed"):
            open_store(path)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    # a holder that lets go after 1.5 s: the writer waits for it (default wait) and then records
    monkeypatch.delenv("XFERLAB_STORE_WAIT")
    proc = child(HOLDER, path, 1.5)
    try:
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()
        started = time.monotonic()
        with open_store(path) as store:
            run = store.start_run("measure memory", [], {}, {})
            store.finish_run(run)
        assert time.monotonic() - started >= 1.0
        assert proc.stdout.readline().strip() == "released"
        assert [r["run_id"] for r in store.runs()] == [run]
    finally:
        proc.kill()
        proc.wait(timeout=30)


V1_DDL = [  # schema version 1 as xferlab 0.x wrote it
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    "CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, started_utc TIMESTAMP NOT NULL, finished_utc TIMESTAMP, "
    "command VARCHAR NOT NULL, argv JSON, status VARCHAR NOT NULL, xferlab_version VARCHAR, params JSON, summary JSON)",
    "CREATE TABLE inventory (run_id VARCHAR PRIMARY KEY, inventory JSON, versions JSON)",
    "CREATE TABLE samples (run_id VARCHAR NOT NULL, seq BIGINT NOT NULL, suite VARCHAR, test VARCHAR, metric VARCHAR, "
    "value DOUBLE, size_bytes BIGINT, threads INTEGER, cpus VARCHAR, node VARCHAR, mode VARCHAR, iteration INTEGER, "
    "warmup BOOLEAN, seconds DOUBLE, bytes DOUBLE, params JSON, PRIMARY KEY (run_id, seq))",
    "CREATE TABLE failures (run_id VARCHAR NOT NULL, suite VARCHAR, what VARCHAR, reason VARCHAR, "
    "at_utc TIMESTAMP NOT NULL)",
    "INSERT INTO meta VALUES ('schema_version', '1'), ('created_utc', '2026-01-01T00:00:00Z'), ('created_by', 'x')",
    "INSERT INTO runs VALUES ('20260101-000000-aaaa', '2026-01-01 00:00:00', '2026-01-01 00:01:00', 'measure memory', "
    "'[]', 'ok', '0.1', '{}', NULL), ('20260101-000200-bbbb', '2026-01-01 00:02:00', NULL, 'measure memory', '[]', "
    "'running', '0.1', '{}', NULL)",
    "INSERT INTO samples SELECT '20260101-000000-aaaa', i, 'memory', 'triad', 'bandwidth_bytes_per_second', 1e9 * i, "
    "4096, 1, '0', '0', 'dram', i, false, 1e-6, 4096, NULL FROM range(1, 8) t(i)",
]


def test_version_1_store_reads_and_migrates(tmp_path):
    path = tmp_path / "v1.duckdb"
    with duckdb.connect(str(path)) as con:
        for statement in V1_DDL:
            con.execute(statement)
    with open_store(path, read_only=True) as store:  # read as it is
        assert store.version == 1
        old, running = store.runs()[::-1]
        assert old["samples"] == 7 and not old["incomplete"] and running["incomplete"]  # no owner: incomplete
        (group,) = store.stats(old["run_id"])
        assert group["count"] == 7 and group["median"] == 4e9 and group["unvalidated"] == 0
        assert (group["median_ci_low"], group["median_ci_high"]) == (1e9, 7e9)
        assert "validated" not in store.samples(old["run_id"])[0]
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    with open_store(path) as store:  # writable: migrated in place
        assert store.version == SCHEMA_VERSION == 3
        run = store.start_run("measure memory", [], {}, {})
        store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "m", "value": 1.0, "validated": False}])
        assert store.samples(run)[0]["validated"] is False
        assert store.samples(old["run_id"])[0]["validated"] is None and len(store.samples(old["run_id"])) == 7
        assert not store.run(run)["incomplete"] and store.run(running["run_id"])["incomplete"]
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("3",)


V2_ROWS = [  # a version-2 store's rows, with mode, node and kind meaning what they meant then
    "INSERT INTO samples SELECT '20260101-000000-aaaa', i, 'device', 'h2d', 'bandwidth_bytes_per_second', 1e9 * i, "
    "4096, NULL, NULL, 'default', 'pinned', i, false, 1e-6, 4096, NULL, true, NULL, NULL, NULL FROM range(1, 4) t(i)",
    "INSERT INTO samples SELECT '20260101-000000-aaaa', 10 + i, 'device', 'launch', 'latency_seconds', 1e-5 * i, "
    "NULL, NULL, NULL, 'default', '4 args', i, false, 1e-5, NULL, '{\"args\": 4}', true, NULL, NULL, NULL "
    "FROM range(1, 4) t(i)",
    "INSERT INTO samples VALUES ('20260101-000000-aaaa', 20, 'runtime', 'cg', 'seconds', 0.5, NULL, NULL, NULL, "
    "'emulated: one-way latency 500 ns', 'forward', 0, false, 0.5, NULL, '{}', NULL, NULL, NULL, NULL)",
    "INSERT INTO samples VALUES ('20260101-000000-aaaa', 21, 'memory', 'triad', 'bandwidth_bytes_per_second', 9e9, "
    "4096, 1, '0', '0', 'memory', 0, false, 1e-6, 4096, NULL, true, NULL, NULL, NULL)",
]


def test_version_2_store_maps_and_migrates_to_one_name_per_concept(tmp_path):
    """A version-2 store kept the host memory kind and a launch's arguments in `mode` and the runtime
    backend in `node`. Read-only, it reads as version 3 (host_kind, kernel_args; node a memory node);
    writable, it is migrated in place, every sample kept. Bad input: none; old data is the input."""
    path = tmp_path / "v2.duckdb"
    with duckdb.connect(str(path)) as con:
        for statement in V1_DDL[:-1]:
            con.execute(statement)
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        for name, kind in (("owner_host", "VARCHAR"), ("owner_pid", "INTEGER"), ("owner_started", "BIGINT")):
            con.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
        con.execute("ALTER TABLE samples ADD COLUMN validated BOOLEAN")
        # a version-2 samples table had no host_kind/kernel_args: give the INSERTs the v3 shape, then drop them
        con.execute("ALTER TABLE samples ADD COLUMN host_kind VARCHAR")
        con.execute("ALTER TABLE samples ADD COLUMN kernel_args INTEGER")
        con.execute("ALTER TABLE samples ADD COLUMN spare VARCHAR")
        for statement in V2_ROWS:
            con.execute(statement)
        for column in ("host_kind", "kernel_args", "spare"):
            con.execute(f"ALTER TABLE samples DROP COLUMN {column}")

    def check(store):
        rows = {r["seq"]: r for r in store.samples("20260101-000000-aaaa")}
        assert len(rows) == 8
        assert (rows[1]["host_kind"], rows[1]["mode"]) == ("pinned", None)
        assert (rows[11]["kernel_args"], rows[11]["mode"]) == (4, None)
        assert (rows[20]["node"], rows[20]["mode"]) == (None, "forward")
        assert (rows[21]["node"], rows[21]["mode"], rows[21]["host_kind"]) == ("0", "memory", None)
        groups = {(g["test"], g["host_kind"], g["kernel_args"]) for g in store.stats("20260101-000000-aaaa")}
        assert ("h2d", "pinned", None) in groups and ("launch", None, 4) in groups

    with open_store(path, read_only=True) as store:
        assert store.version == 2
        check(store)
    with open_store(path) as store:
        assert store.version == 3
        check(store)
        backend = {r["seq"]: r for r in store.samples("20260101-000000-aaaa")}[20]["params"]["backend"]
        assert backend == "emulated: one-way latency 500 ns"


def test_stats_leave_out_unvalidated_samples_and_give_the_interval(tmp_path):
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0, 6.0]  # median 5, 95 % interval [x(2), x(8)] = [2, 8]
    rows = [{"suite": "s", "test": "t", "metric": "latency_seconds", "value": v, "seconds": v} for v in values]
    rows += [{"suite": "s", "test": "t", "metric": "latency_seconds", "value": 1e6, "validated": False},
             {"suite": "s", "test": "t", "metric": "latency_seconds", "value": 1e6, "warmup": True},
             {"suite": "s", "test": "u", "metric": "latency_seconds", "value": 1.0, "validated": True}]
    with open_store(tmp_path / "x.duckdb") as store:
        run = store.start_run("measure memory", [], {}, {})
        store.add_samples(run, rows)
        t, u = store.stats(run)
    assert (t["count"], t["warmups"], t["unvalidated"]) == (9, 1, 1)
    assert (t["min"], t["median"], t["max"]) == (1.0, 5.0, 9.0)  # the unvalidated 1e6 left out
    assert (t["median_ci_low"], t["median_ci_high"]) == (2.0, 8.0)
    assert u["count"] == 1 and u["median_ci_low"] is None and u["median_ci_high"] is None  # too few for 95 %
    # a row is its group's columns (GROUPED_BY, which the node comparison keys figures by), then statistics
    assert tuple(t)[:len(GROUPED_BY)] == GROUPED_BY and "count" == tuple(t)[len(GROUPED_BY)]

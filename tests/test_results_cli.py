"""`xferlab results list | show | export`: output formats, statistics over non-warm-up samples, and bad
input that exits 2 with one line naming the value and leaves stored data alone."""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

import xferlab
from xferlab.store import open_store

TRIAD = [10.0e9, 10.4e9, 9.8e9, 10.1e9, 10.3e9]  # timed iterations, after one warm-up


@pytest.fixture
def recorded(tmp_path):
    """A store holding one finished run (written through the store's API) and one older empty run."""
    path = tmp_path / "store" / "xferlab.duckdb"
    with open_store(path) as store:
        older = store.start_run("measure device", ["measure", "device"], {}, {})
        store.finish_run(older, "failed")
        run = store.start_run("measure memory", ["measure", "memory", "--kernels", "triad"],
                              {"hostname": "testbox", "logical_cpus": 8, "nodes": [0, 1]},
                              {"xferlab": xferlab.__version__, "compiler": "g++ 12"}, {"kernels": ["triad"]})
        rows = [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second", "value": 1.0e9,
                 "size_bytes": 1 << 26, "threads": 2, "node": "0", "mode": "dram", "iteration": 0, "warmup": True}]
        rows += [{**rows[0], "value": v, "iteration": i + 1, "warmup": False} for i, v in enumerate(TRIAD)]
        rows += [{"suite": "memory", "test": "latency", "metric": "latency_seconds", "value": v,
                  "size_bytes": 1 << 30, "node": "0", "mode": "dram", "iteration": i} for i, v in enumerate([90e-9, 92e-9])]
        store.add_samples(run, rows)
        store.add_failure(run, "memory", "loaded-latency", "probe timed out after 30 s")
        store.finish_run(run, "ok")
    return path, run, older


def one_error_line(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, err)


def run_in(cwd: Path, *args, **environ):
    """`python -m xferlab …` run from ``cwd`` (the `cli` fixture runs from the tests' folder)."""
    env = {**os.environ, **environ, "PYTHONPATH": os.pathsep.join([str(Path(xferlab.__file__).parents[1]),
                                                                     os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "xferlab", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_list(cli, recorded):
    path, run, older = recorded
    doc = cli.json("results", "list", "--store", path)
    assert doc["command"] == "results list" and doc["store"] == str(path)
    assert [r["run_id"] for r in doc["results"]] == [run, older]
    first = doc["results"][0]
    assert first["command"] == "measure memory" and first["status"] == "ok" and first["incomplete"] is False
    assert first["samples"] == 8 and first["failure_count"] == 1 and first["started_utc"].endswith("Z")
    code, out, _ = cli("results", "list", "--store", path, "--csv", check=0)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["run_id"] for r in rows] == [run, older] and rows[1]["status"] == "failed"
    code, out, _ = cli("results", "list", "--store", path, check=0)
    assert run in out and older in out and "measure memory" in out


def test_show_json_statistics(cli, recorded):
    path, run, _ = recorded
    doc = cli.json("results", "show", "latest", "--store", path)
    assert doc["command"] == "results show" and doc["run"]["run_id"] == run
    assert doc["run"]["versions"]["compiler"] == "g++ 12" and doc["run"]["inventory"]["hostname"] == "testbox"
    triad, latency = doc["results"]
    assert (triad["test"], triad["metric"], triad["size_bytes"], triad["threads"], triad["node"], triad["mode"]) == \
        ("triad", "bandwidth_bytes_per_second", 1 << 26, 2, "0", "dram")
    assert triad["count"] == len(TRIAD) and triad["warmups"] == 1  # the 1 GB/s warm-up is left out
    assert triad["min"] == min(TRIAD) and triad["max"] == max(TRIAD)
    assert triad["median"] == pytest.approx(np.median(TRIAD)) and triad["mean"] == pytest.approx(np.mean(TRIAD))
    assert triad["cov"] == pytest.approx(np.std(TRIAD, ddof=1) / np.mean(TRIAD))
    assert latency["count"] == 2 and latency["median"] == pytest.approx(91e-9) and latency["threads"] is None
    (failure,) = doc["failures"]
    assert failure["what"] == "loaded-latency" and failure["reason"] == "probe timed out after 30 s"


def test_show_gives_the_median_interval(cli, tmp_path):
    """9 validated samples: the 95 % interval of the median is [x(2), x(8)]; an unvalidated sample and 5
    samples (too few for 95 %) give no interval."""
    path = tmp_path / "s.duckdb"
    values = [10.0, 14.0, 11.0, 13.0, 12.0, 15.0, 9.0, 16.0, 8.0]
    with open_store(path) as store:
        run = store.start_run("measure memory", [], {}, {})
        store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                                 "value": v * 1e9, "iteration": i} for i, v in enumerate(values)]
                          + [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                              "value": 1e12, "validated": False}]
                          + [{"suite": "memory", "test": "copy", "metric": "bandwidth_bytes_per_second",
                              "value": v * 1e9} for v in values[:5]])
        store.finish_run(run, "ok")
    triad, copy = cli.json("results", "show", run, "--store", path)["results"]
    assert (triad["count"], triad["unvalidated"], triad["median"]) == (9, 1, 12e9)
    assert (triad["median_ci_low"], triad["median_ci_high"]) == (9e9, 15e9)
    assert copy["median_ci_low"] is None and copy["median_ci_high"] is None
    _, out, _ = cli("results", "show", run, "--store", path, check=0)
    assert "±25%" in out and "1 samples the probe did not validate left out" in out  # (15 - 9) / 2 / 12
    _, out, _ = cli("results", "show", run, "--store", path, "--csv", check=0)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert float(rows[0]["median_ci_low"]) == 9e9 and rows[1]["median_ci_low"] == ""


def test_show_table_and_csv(cli, recorded):
    path, run, _ = recorded
    code, out, _ = cli("results", "show", run, "--store", path, check=0)
    for text in (run, "measure memory", "testbox", "g++ 12", "median", "GB/s", "ns", "64 MiB",
                 "probe timed out after 30 s"):
        assert text in out, text
    code, out, _ = cli("results", "show", run, "--store", path, "--csv", check=0)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["test"] for r in rows] == ["triad", "latency"] and float(rows[0]["median"]) == np.median(TRIAD)


def test_export_formats_round_trip(cli, recorded, tmp_path):
    path, run, _ = recorded
    with open_store(path, read_only=True) as store:
        samples = store.samples(run)
    con = duckdb.connect()
    for fmt, reader in (("csv", "read_csv"), ("parquet", "read_parquet")):
        target = tmp_path / "out" / f"samples.{fmt}"
        code, out, _ = cli("results", "export", run, "--format", fmt, "-o", target, "--store", path, check=0)
        assert out.strip() == str(target)
        values = [v for (v,) in con.execute(f"SELECT value FROM {reader}('{target}') ORDER BY seq").fetchall()]
        assert values == [s["value"] for s in samples]
    code, out, _ = cli("results", "export", "latest", "--format", "json", "-o", tmp_path / "out" / "run.json",
                       "--store", path, check=0)
    doc = json.loads(Path(out.strip()).read_text())
    assert doc["run"]["run_id"] == run and len(doc["samples"]) == len(samples) == 8
    assert doc["samples"][0]["warmup"] is True and doc["failures"][0]["suite"] == "memory"


def test_export_default_name_in_current_folder(recorded, tmp_path):
    path, run, _ = recorded
    work = tmp_path / "work"
    work.mkdir()
    code, out, err = run_in(work, "results", "export", run, "--format", "parquet", "--store", path)
    assert code == 0, err
    assert out.strip() == f"{run}.parquet" and (work / f"{run}.parquet").is_file()
    assert "8 samples" in err


def test_export_refuses_to_overwrite_without_force(cli, recorded, tmp_path):
    path, run, _ = recorded
    target = tmp_path / "keep.csv"
    target.write_text("precious\n")
    code, out, err = cli("results", "export", run, "--format", "csv", "-o", target, "--store", path)
    assert code == 2 and out == ""
    one_error_line(err, f"'{target}'", "--force")
    assert target.read_text() == "precious\n"
    cli("results", "export", run, "--format", "csv", "-o", target, "--store", path, "--force", check=0)
    assert target.read_text().startswith("run_id,seq,")
    code, _, err = cli("results", "export", run, "--format", "csv", "-o", path, "--store", path, "--force")
    assert code == 2
    one_error_line(err, "is the results store itself")


def test_bad_format_fails_before_touching_anything(cli, recorded, tmp_path):
    path, run, _ = recorded
    before = path.read_bytes()
    missing = tmp_path / "nowhere" / "x.duckdb"
    for store in (path, missing):
        code, out, err = cli("results", "export", run, "--format", "xml", "--store", store)
        assert code == 2 and out == ""
        one_error_line(err, "'xml'", "csv, parquet, json")
    assert path.read_bytes() == before and not missing.parent.exists()
    assert not any(p.suffix == ".xml" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("args", [("list",), ("show", "latest"), ("export", "latest", "--format", "csv")])
def test_missing_store(cli, tmp_path, args):
    missing = tmp_path / "none" / "xferlab.duckdb"
    code, out, err = cli("results", *args, "--store", missing)
    assert code == 2 and out == ""
    one_error_line(err, f"no results store at '{missing}'")
    assert not missing.parent.exists()  # nothing created as a side effect


def test_missing_store_from_env(tmp_path):
    env_store = tmp_path / "env.duckdb"
    code, out, err = run_in(tmp_path, "results", "list", XFERLAB_STORE=str(env_store))
    assert code == 2 and out == ""
    one_error_line(err, f"'{env_store}'", "XFERLAB_STORE")
    assert not env_store.exists()


@pytest.mark.parametrize("args", [("show", "19990101-nope"), ("export", "19990101-nope", "--format", "json")])
def test_unknown_run(cli, recorded, args):
    path, run, _ = recorded
    code, out, err = cli("results", *args, "--store", path)
    assert code == 2 and out == ""
    one_error_line(err, "'19990101-nope'", run)


def test_not_a_store(cli, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    code, _, err = cli("results", "list", "--store", text)
    assert code == 2
    one_error_line(err, f"'{text}'", "not a DuckDB database")
    assert text.read_text() == "hello\n"
    code, _, err = cli("results", "list", "--json", "--csv", "--store", text)
    assert code == 2
    one_error_line(err, "--json and --csv")

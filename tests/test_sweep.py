"""Design-space sweeps (`xferlab sweep run`, src/xferlab/sweep/): the grid, the simulator at every point,
in this process and on a local Dask cluster with the same results, streamed into the store; an
interrupted sweep resumed gives the same points as one that ran through. Bad input tried: a malformed
sweep file (file:line: field: message), links without the link they replace, a scheduler address
that does not answer, --workers with --scheduler."""

import json

import pytest

from xferlab.errors import BadFile
from xferlab.store import open_store
from xferlab.sweep.run import run_sweep
from xferlab.sweep.spec import Sweep
from xferlab.system.yamlfile import load

SWEEP = """kind: sweep
name: small
systems: [seed-testbed]
replace: pcie3x16
links: [pcie3x16, pcie4x16, "pcie5x16:mps=128"]
workflows: [deceval]
strategies: [staged, direct, pipelined]
chunks: [1MiB, 4MiB, 16MiB, 64MiB]
"""


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    return path


def _points(rows):
    return {(r["link"], r["strategy"], r["chunk_bytes"]): r["makespan_seconds"] for r in rows}


def test_the_grid_and_the_speedups(sweep_file, tmp_path):
    spec = load(sweep_file, Sweep, "sweep")
    assert spec.size() == 3 * (1 + 1 + 4) == len(spec.points())
    result = run_sweep(spec, tmp_path / "a.duckdb", argv=["test"])
    rows = result["rows"]
    assert result["evaluated"] == 18 and result["failed"] == 0
    for r in rows:
        staged = next(s for s in rows if s["link"] == r["link"] and s["strategy"] == "staged")
        assert r["speedup"] == pytest.approx(staged["makespan_seconds"] / r["makespan_seconds"])
    assert sum(r["best"] for r in rows) == 3  # one per link
    with open_store(tmp_path / "a.duckdb", read_only=True) as db:
        assert db.runs()[0]["samples"] == 18


def test_an_interrupted_sweep_resumes_to_the_same_points(sweep_file, tmp_path):
    spec = load(sweep_file, Sweep, "sweep")
    whole = run_sweep(spec, tmp_path / "whole.duckdb", batch=2, argv=["test"])["rows"]
    store = tmp_path / "cut.duckdb"
    calls = []

    def stop_after_three(done, total):
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, store, batch=2, argv=["test"], progress=stop_after_three)
    with open_store(store, read_only=True) as db:
        (cut,) = db.runs()
    assert cut["status"] == "interrupted" and cut["samples"] == 6
    resumed = run_sweep(spec, store, batch=2, resume=True, argv=["test"])
    assert resumed["reused"] == 6 and resumed["evaluated"] == 12
    assert _points(resumed["rows"]) == _points(whole)


def test_a_local_dask_cluster_gives_the_same_points(sweep_file, tmp_path, cli):
    code, out, err = cli("sweep", "run", sweep_file, "--workers", "2", "--store", tmp_path / "d.duckdb", "--json",
                         "--parquet", tmp_path / "p.parquet", check=0)
    doc = json.loads(out)
    assert "local Dask cluster of 2 worker processes" in doc["where"]
    local = run_sweep(load(sweep_file, Sweep, "sweep"), tmp_path / "l.duckdb", argv=["test"])["rows"]
    assert _points(doc["results"]) == _points(local)
    import duckdb

    assert duckdb.connect().execute(f"SELECT count(*) FROM '{tmp_path / 'p.parquet'}'").fetchone()[0] == 18


def test_bad_input(sweep_file, tmp_path, cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SWEEP.replace("chunks: [1MiB, 4MiB, 16MiB, 64MiB]", "chunks: [1MiB, lots]"))
    code, out, err = cli("sweep", "run", bad, "--store", tmp_path / "x.duckdb", check=None)
    assert code == 2 and err.startswith(f"error: {bad}:8: chunks[1]:")
    half = tmp_path / "half.yaml"
    half.write_text(SWEEP.replace("replace: pcie3x16\n", ""))
    with pytest.raises(BadFile, match="links: `links` and `replace` go together"):
        load(half, Sweep, "sweep")
    code, out, err = cli("sweep", "run", sweep_file, "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "2s",
                         "--store", tmp_path / "x.duckdb", check=None)
    assert code == 2 and "no Dask scheduler answered within 2 s" in err and len(err.strip().splitlines()) == 1
    code, out, err = cli("sweep", "run", sweep_file, "--workers", "2", "--scheduler", "tcp://127.0.0.1:9", check=None)
    assert code == 2 and "give one of them" in err


def test_link_costs_mark_the_pareto_front(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(SWEEP + "costs: {pcie3x16: 1, pcie4x16: 1.5, \"pcie5x16:mps=128\": 3}\n")
    spec = load(path, Sweep, "sweep")
    rows = run_sweep(spec, tmp_path / "c.duckdb", argv=["test"])["rows"]
    front = [r for r in rows if r["pareto"]]
    assert front and all(r["cost"] is not None for r in rows)
    for r in front:  # nothing on the front is beaten by a point at most as costly
        assert not any(o["cost"] <= r["cost"] and o["makespan_seconds"] < r["makespan_seconds"] for o in rows)
    for r in rows:  # and every point off it is
        if not r["pareto"]:
            assert any(o["cost"] <= r["cost"] and o["makespan_seconds"] <= r["makespan_seconds"] and o is not r
                       for o in rows)
    cheapest_best = min((r for r in rows if r["cost"] == 1), key=lambda r: r["makespan_seconds"])
    assert cheapest_best["pareto"]
    bad = tmp_path / "b.yaml"
    bad.write_text(SWEEP + "costs: {nvlink4: 2}\n")
    with pytest.raises(BadFile, match="costs: 'nvlink4' is not one of the links"):
        load(bad, Sweep, "sweep")


def test_the_grid_as_command_line_lists(tmp_path, cli):
    doc = cli.json("sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--replace", "pcie3x16",
                   "--replace-with", "pcie3x16;pcie4x16:mps=128", "--strategies", "staged,pipelined", "--chunks", "1MiB,16MiB",
                   "--store", tmp_path / "l.duckdb")
    assert {(r["link"], r["strategy"], r["chunk_bytes"]) for r in doc["results"]} == {
        (link, "staged", None) for link in ("pcie3x16", "pcie4x16:mps=128")} | {
        (link, "pipelined", c) for link in ("pcie3x16", "pcie4x16:mps=128") for c in (2**20, 16 * 2**20)}
    code, out, err = cli("sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies",
                         "staged,teleport", check=None)
    assert code == 2 and err.strip() == "error: --strategies: 'teleport': Input should be 'staged', 'direct', " \
                                        "'coherent' or 'pipelined'"
    code, out, err = cli("sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies",
                         "pipelined", check=None)
    assert code == 2 and "--chunks: the pipelined strategy needs chunk sizes" in err

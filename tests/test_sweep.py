"""Design-space sweeps (`xferlab sweep run`, src/xferlab/sweep/): the grid, the simulator at every point,
in this process and on a local Dask cluster with the same results, streamed into the store; an
interrupted sweep resumed gives the same points as one that ran through. Bad input tried: a malformed
sweep file (file:line: field: message), links without the link they replace, a scheduler address
that does not answer, --workers with --scheduler, the pipelined strategy as the baseline, an unknown one, --replace alone, a newline in a system's name, heat-map
axes that are not axes, one axis twice, three axes, a chunk axis without pipelined points, a LINK or a
replaced link that does not exist, a value twice in a list; points that cannot run (a chunk larger
than the data) are rows with their reason, and the sweep exits 3 (some) or 1 (all)."""

import json

import pytest

from xferlab.errors import BadFile, BadValue
from xferlab.store import open_store
from xferlab.sweep.run import run_sweep
from xferlab.sweep.summary import crossovers, heatmap_axes, heatmap_grid, mark_pareto, summarize
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


def test_ctrl_c_while_a_batch_is_evaluated_keeps_the_batches_before_it(sweep_file, tmp_path, monkeypatch):
    """In this process each batch is stored before the next one runs: a Ctrl-C during the third batch's
    simulation keeps the first two (all batches used to be simulated before any was stored)."""
    from xferlab.sweep import run as sweep_run

    real, calls = sweep_run.evaluate_batch, []

    def third_interrupted(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(sweep_run, "evaluate_batch", third_interrupted)
    store = tmp_path / "k.duckdb"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(load(sweep_file, Sweep, "sweep"), store, batch=2, argv=["test"])
    with open_store(store, read_only=True) as db:
        (cut,) = db.runs()
    assert cut["status"] == "interrupted" and cut["samples"] == 4


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


def test_the_pareto_front_is_the_definition_on_ties_and_random_points():
    """mark_pareto (sorted, n log n) against the definition checked pair by pair, on points with
    many equal costs and equal makespans and on a point without a cost."""
    import random

    rng = random.Random(7)
    rows = [{"system": "s", "workflow": rng.choice("ab"), "cost": rng.choice([1, 2, 2.5, 4, None]),
             "makespan_seconds": rng.choice([1.0, 1.5, 2.0, 3.0]) + rng.choice([0, 0, 0.25]), "pareto": False}
            for _ in range(400)]
    mark_pareto(rows)

    def dominated(r):
        return any(o["cost"] is not None and (o["system"], o["workflow"]) == (r["system"], r["workflow"])
                   and o["cost"] <= r["cost"] and o["makespan_seconds"] <= r["makespan_seconds"]
                   and (o["cost"] < r["cost"] or o["makespan_seconds"] < r["makespan_seconds"]) for o in rows)

    expected = [r["cost"] is not None and not dominated(r) for r in rows]
    assert [r["pareto"] for r in rows] == expected and 2 <= sum(expected) < 40


def test_crossovers_say_where_pipelining_beats_the_baseline():
    def row(strategy, chunk, seconds, link="l"):
        return {"system": "s", "link": link, "workflow": "w", "strategy": strategy, "chunk_bytes": chunk,
                "makespan_seconds": seconds}

    rows = summarize([row("staged", None, 10.0), row("pipelined", 1, 12.0), row("pipelined", 2, 8.0),
                      row("pipelined", 4, 9.0), row("pipelined", 8, 11.0),
                      row("staged", None, 1.0, "m"), row("pipelined", 1, 2.0, "m")], "staged")
    by_link = {c["link"]: c for c in crossovers(rows, "staged")}
    assert by_link["l"] == {"system": "s", "link": "l", "workflow": "w", "baseline": "staged",
                                 "faster_from_bytes": 2, "faster_up_to_bytes": 4, "faster_chunks": 2,
                                 "swept_chunks": 4, "best_chunk_bytes": 2, "best_speedup": 10.0 / 8.0}
    assert by_link["m"]["faster_chunks"] == 0 and by_link["m"]["faster_from_bytes"] is None


def test_the_pipelined_strategy_is_no_baseline(tmp_path):
    bad = tmp_path / "b.yaml"
    bad.write_text(SWEEP + "baseline: pipelined\n")
    with pytest.raises(BadFile, match="baseline: 'pipelined' has a point per chunk size"):
        load(bad, Sweep, "sweep")


def test_the_heat_map_takes_the_best_over_the_other_axes(sweep_file, tmp_path, cli):
    rows = run_sweep(load(sweep_file, Sweep, "sweep"), tmp_path / "h.duckdb", argv=["test"])["rows"]
    ys, xs, grid, over = heatmap_grid(rows, "link", "chunk")
    assert ys == ["pcie3x16", "pcie4x16", "pcie5x16:mps=128"] and xs == [2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20]
    assert over == []  # one system and workflow, and only pipelined points have a chunk
    piped = {(r["link"], r["chunk_bytes"]): r["speedup"] for r in rows if r["strategy"] == "pipelined"}
    assert all(grid[i][j] == piped[(y, x)] for i, y in enumerate(ys) for j, x in enumerate(xs))
    ys, xs, grid, over = heatmap_grid(rows, "strategy", "link")
    assert ys == ["staged", "direct", "pipelined"] and over == ["chunk"]
    assert grid[2][0] == max(piped[("pcie3x16", c)] for c in [2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20])
    assert grid[0] == [1.0, 1.0, 1.0]  # the baseline against itself
    with pytest.raises(BadValue, match="names one axis twice"):
        heatmap_axes("link,link", ["staged", "pipelined"])
    assert heatmap_axes(" strategy, link", ["staged"]) == ("strategy", "link")
    picture = tmp_path / "h.png"
    cli("sweep", "run", sweep_file, "--store", tmp_path / "h2.duckdb", "--heatmap", picture, "--heatmap-axes",
        "strategy,link", check=0)
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for axes, fragment in (("link,speed", "--heatmap-axes: 'speed' is not an axis; allowed: system, link"),
                           ("link", "give two axes, rows then columns")):
        code, out, err = cli("sweep", "run", sweep_file, "--store", tmp_path / "bad.duckdb", "--heatmap",
                             tmp_path / "b.png", "--heatmap-axes", axes, check=None)
        assert code == 2 and fragment in err and not (tmp_path / "bad.duckdb").exists()


def test_resume_reuses_points_by_what_decides_them(tmp_path):
    """A grown grid reuses the points it shares with an earlier run; a system file edited since is
    evaluated again (its content, not its name, keys a point); costs change nothing evaluated."""
    from xferlab.scenarios.packaged import PACKAGED

    system = tmp_path / "mysys.yaml"
    system.write_text(PACKAGED.joinpath("systems", "seed-testbed.yaml").read_text())
    grid = f"kind: sweep\nname: r\nsystems: [{system}]\nworkflows: [deceval]\nstrategies: [staged, direct]\n"
    path = tmp_path / "r.yaml"
    path.write_text(grid)
    store = tmp_path / "r.duckdb"
    first = run_sweep(load(path, Sweep, "sweep"), store, argv=["test"])
    path.write_text(grid.replace("[staged, direct]", "[staged, direct, coherent]"))
    grown = run_sweep(load(path, Sweep, "sweep"), store, resume=True, argv=["test"])
    assert (grown["reused"], grown["evaluated"]) == (2, 1)
    system.write_text(system.read_text().replace("{between: [host, gpu], link: pcie3x16}",
                                                 "{between: [host, gpu], link: pcie5x16}"))
    edited = run_sweep(load(path, Sweep, "sweep"), store, resume=True, argv=["test"])
    assert (edited["reused"], edited["evaluated"]) == (0, 3)
    staged = lambda result: next(r["makespan_seconds"] for r in result["rows"] if r["strategy"] == "staged")
    assert staged(edited) < staged(first)  # the faster link was simulated, not the stored figure reused


def test_points_that_cannot_run_are_rows_with_their_reason(tmp_path, cli):
    args = ["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged,pipelined",
            "--chunks", "1MiB,4GB", "--json"]
    code, out, err = cli(*args, "--store", tmp_path / "f.duckdb", check=None)
    doc = json.loads(out)
    failed = [r for r in doc["results"] if r["error"]]
    assert code == 3 and doc["failed"] == 1 and len(doc["results"]) == 3
    assert failed[0]["chunk_bytes"] == 4 * 10**9 and failed[0]["makespan_seconds"] is None and not failed[0]["best"]
    assert err.strip().splitlines()[-1].startswith("error: 1 of 3 points could not run")
    from xferlab.scenarios.packaged import PACKAGED

    no_link = tmp_path / "no-link.yaml"  # no FPGA-GPU link: the direct strategy cannot run
    no_link.write_text("\n".join(line for line in PACKAGED.joinpath("systems", "seed-testbed.yaml").read_text()
                                 .splitlines() if "fpga, gpu" not in line))
    code, out, err = cli("sweep", "run", "--systems", no_link, "--workflows", "deceval", "--strategies", "direct",
                         "--baseline", "direct", "--store", tmp_path / "g.duckdb", check=None)
    assert code == 1 and "none of the 1 points could run" in err and "has no link between 'fpga' and 'gpu'" in out
    with open_store(tmp_path / "g.duckdb", read_only=True) as db:
        assert db.runs()[0]["status"] == "failed"


@pytest.mark.parametrize("args, fragment", [
    (["--replace", "pcie3x16", "--replace-with", "pcie3x16,nosuchlink"], "nosuchlink"),
    (["--replace", "nvlink9", "--replace-with", "pcie4x16"], "--replace 'nvlink9': no link of system 'seed-testbed'"),
    (["--chunks", "1MiB,1024KiB"], "--chunks: 1 MiB comes twice"),
    (["--replace", "pcie3x16", "--replace-with", "pcie4x16,pcie4x16"], "--replace-with: 'pcie4x16' comes twice"),
    (["--heatmap", "h.png", "--heatmap-axes", "link,link"], "names one axis twice"),
    (["--baseline", "nosuch"], "--baseline: 'nosuch': Input should be 'staged'"),
    (["--replace", "0"], "--replace '0' needs --replace-with"),
    (["--systems", "a\nb"], "system 'a\\nb' is neither a file nor a packaged system"),
    (["--heatmap", "h.png", "--strategies", "staged", "--chunks", "1MiB"], "only pipelined points have a chunk size"),
])
def test_bad_lists_are_refused_before_anything_is_stored(args, fragment, tmp_path, cli):
    base = ["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--store", tmp_path / "n.duckdb"]
    if "--strategies" not in args:
        base += ["--strategies", "staged,pipelined"] + ([] if "--chunks" in args else ["--chunks", "1MiB"])
    code, out, err = cli(*base, *[str(tmp_path / a) if a.endswith(".png") else a for a in args], check=None)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "n.duckdb").exists()


def test_a_piecewise_link_and_a_quoted_parquet_path(tmp_path, cli):
    link = "piecewise:bandwidths=1GB/s;2GB/s,breakpoints=1MiB"
    parquet = tmp_path / "it's.parquet"
    doc = cli.json("sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged",
                   "--replace", "pcie3x16", "--replace-with", link, "--parquet", parquet, "--store", tmp_path / "q.duckdb")
    assert [r["link"] for r in doc["results"]] == [link]
    import duckdb

    assert duckdb.connect().execute("SELECT link, strategy FROM read_parquet(?)", [str(parquet)]).fetchall() == \
        [(link, "staged")]


def test_a_plain_process_pool_gives_the_same_points(sweep_file, tmp_path):
    """The reference benchmarks/bench_sweep.py holds Dask to: the same seam with a ProcessPoolExecutor of
    spawned workers. Bad input tried: an executor that is not known."""
    spec = load(sweep_file, Sweep, "sweep")
    pool = run_sweep(spec, tmp_path / "p.duckdb", workers=2, local="processes", argv=["test"])
    assert pool["where"] == "on a local process pool of 2 worker processes" and pool["evaluated"] == 18
    assert _points(pool["rows"]) == _points(run_sweep(spec, tmp_path / "l.duckdb", argv=["test"])["rows"])
    with pytest.raises(BadValue, match="local executor 'threads' is not known; allowed: dask, processes"):
        run_sweep(spec, tmp_path / "x.duckdb", workers=2, local="threads", argv=["test"])

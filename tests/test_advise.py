import numpy as np
import pytest

from xferlab.advise.links import fastest, ranking_changes
from xferlab.links import resolve


def test_fastest_and_ranking_changes_agree_with_crossovers():
    links = [resolve("pcie3x16"), resolve("cxl-seed:penalty=0.6")]
    rows = fastest(links, np.asarray([64.0, 13048.0, 13049.0, 2.0**30]), "readwrite")
    assert [r["fastest"] for r in rows] == ["cxl-seed:penalty=0.6", "cxl-seed:penalty=0.6", "pcie3x16", "pcie3x16"]
    (change,) = ranking_changes(links, "readwrite")
    assert change["size_bytes"] == 13049  # the seed's 12.7 KiB, exact to the byte


def test_advise_cli(cli):
    doc = cli.json("advise", "links", "pcie3x16", "nvlink2", "c2c", "--sizes", "64B,1GiB")
    assert [r["fastest"] for r in doc["results"]] == ["c2c", "c2c"]
    doc = cli.json("advise", "whatif", "seed-testbed", "deceval", "--replace", "pcie3x16=c2c", "--strategy", "staged")
    (row,) = doc["results"]
    assert row["after_seconds"] < row["before_seconds"] and row["speedup"] > 1
    doc = cli.json("advise", "offload", "pcie3x16", "--bytes", "1MiB", "--host-time", "1ms", "--device-time", "0.5ms")
    assert doc["results"][0]["pays"] is True


@pytest.mark.parametrize("args, fragment", [
    (["whatif", "seed-testbed", "deceval", "--replace", "warp9"], "not OLD=NEW"),
    (["whatif", "seed-testbed", "deceval", "--replace", "ib-edr=c2c"], "no link of system 'seed-testbed' is 'ib-edr'"),
    (["whatif", "seed-testbed", "deceval", "--replace", "pcie3x16=pcie9x9"], "gen=9"),
    (["links", "pcie3x16"], "two links or more"),
])
def test_bad_input(cli, args, fragment):
    code, _, err = cli("advise", *args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_best_chunk_trades_overlap_against_per_chunk_overhead(cli):
    # Without a per-chunk cost the smallest chunk tried wins (only link start-up limits it); with a kernel launch of
    # 46 us per chunk on both tasks the best chunk of DecEval (1.6 GB) is in the tens of MB, like the seed's 16 MB,
    # and it beats both neighbours on the grid and the one-piece transfer.
    free = cli.json("advise", "chunk", "seed-testbed", "deceval")
    paid = cli.json("advise", "chunk", "seed-testbed", "deceval", "--overhead", "46us")
    assert free["chunk_bytes"] < 4096
    assert 4e6 < paid["chunk_bytes"] < 64e6
    grid = {r["chunk_bytes"]: r["makespan_seconds"] for r in paid["results"]}
    assert paid["makespan_seconds"] <= min(grid.values()) and paid["makespan_seconds"] < paid["one_piece_seconds"]
    # the makespan rises on both sides of the best
    assert grid[2**16] > paid["makespan_seconds"] and grid[2**28] > paid["makespan_seconds"]


def test_task_overhead_is_paid_per_chunk_when_pipelined():
    from xferlab.sim import flows
    from xferlab.system.models import System, Workflow

    system = System.model_validate({"name": "s", "host": "h", "devices": [{"name": "h"}, {"name": "a"}],
                                    "links": [{"between": ["h", "a"], "link": "simple:bandwidth=1GB/s"}]})
    wf = Workflow.model_validate({"name": "w", "tasks": [{"name": "x", "device": "h", "seconds": 1.0, "overhead": "1ms"},
                                                         {"name": "y", "device": "a", "seconds": 1.0}],
                                  "edges": [{"from": "x", "to": "y", "bytes": "1GB"}]})
    # 10 chunks: stages 0.1 s + 1 ms, 0.1 s link, 0.1 s: makespan = 10 x 0.101 + 0.1 + 0.1 (the slowest stage
    # repeats; the others fill and drain).
    assert flows.pipelined(system, wf, 10**8, engine=False).fast_path_seconds == pytest.approx(10 * 0.101 + 0.2)
    assert flows.run(system, wf, "direct").timeline.makespan == pytest.approx(1.001 + 1.0 + 1.0)


def test_advise_chunk_bad_overhead(cli):
    # a negative per-chunk overhead
    code, out, err = cli("advise", "chunk", "seed-testbed", "deceval", "--overhead", "-1us")
    assert code == 2 and "--overhead" in err and len(err.strip().splitlines()) == 1


def test_one_chunk_sweep_serves_simulate_sweep_and_advise_chunk(cli):
    """`simulate sweep` and `advise chunk` read the same function (sim.flows.chunk_sweep): the
    makespans they give at the same chunk sizes are equal."""
    from xferlab.advise.chunk import best_chunk
    from xferlab.scenarios.packaged import load_named
    from xferlab.sim import flows
    from xferlab.system.models import System, Workflow

    system, workflow = load_named("seed-testbed", System, "system"), load_named("deceval", Workflow, "workflow")
    rows = flows.chunk_sweep(system, workflow, [2**20, 2**24])
    grid = {g["chunk_bytes"]: g["makespan_seconds"] for g in best_chunk(system, workflow)["grid"]}
    assert [grid[r["chunk_bytes"]] for r in rows] == [r["makespan_seconds"] for r in rows]
    swept = cli.json("simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MiB,16MiB")["results"]
    assert [r["makespan_seconds"] for r in swept] == [r["makespan_seconds"] for r in rows]

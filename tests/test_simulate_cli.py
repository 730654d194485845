"""`xferlab simulate`: the four strategies on the packaged systems, the sweep, and bad input."""


import pytest

from xferlab.sim import flows
from xferlab.system.models import System, Workflow


def test_strategies_order_on_the_seed_testbed(cli):
    spans = {}
    for strategy in ("staged", "direct", "coherent", "pipelined"):
        doc = cli.json("simulate", "run", "seed-testbed", "deceval", "--strategy", strategy)
        spans[strategy] = doc["makespan_seconds"]
        assert doc["strategy"] == strategy and doc["results"] and doc["critical_path"]
    # Fewer hops, then hidden transfers, then overlap: each strategy beats the one before.
    assert spans["staged"] > spans["direct"] > spans["coherent"] > spans["pipelined"]
    assert spans["coherent"] == pytest.approx(7.70 + 0.36)


def test_staged_moves_the_data_twice_through_the_host(cli):
    doc = cli.json("simulate", "run", "seed-testbed", "deceval")
    links = {r["resource"]: r for r in doc["resources"] if "->" in r["resource"]}
    assert set(links) == {"fpga->host", "host->gpu"} and all(r["bytes"] == 1.6e9 for r in links.values())


def test_pipelined_engine_equals_fast_path(cli):
    doc = cli.json("simulate", "run", "seed-testbed-cxl", "deceval", "--strategy", "pipelined", "--chunk", "64MB")
    assert doc["chunks"] == 25 and doc["makespan_seconds"] == pytest.approx(doc["fast_path_seconds"], rel=1e-9)


def test_sweep_and_gantt(cli, tmp_path):
    doc = cli.json("simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MiB..1GiB")
    rows = doc["results"]
    assert [r["chunk_bytes"] for r in rows] == [2**i for i in range(20, 31)]
    assert rows[-1]["makespan_seconds"] > rows[0]["makespan_seconds"]  # two big chunks overlap less
    cli("simulate", "run", "seed-testbed", "deceval", "--gantt", tmp_path / "g.png", check=0)
    assert (tmp_path / "g.png").stat().st_size > 5000


@pytest.mark.parametrize("args, fragment", [
    (["run", "seed-testbed"], "Missing argument 'WORKFLOW'"),
    (["run", "warp-drive", "deceval"], "system 'warp-drive' is neither a file nor a packaged system"),
    (["run", "seed-testbed", "deceval", "--strategy", "teleport"], "--strategy 'teleport'"),
    (["run", "seed-testbed", "deceval", "--strategy", "pipelined", "--chunk", "2GB"], "larger than the 1600000000 bytes"),
    (["sweep", "seed-testbed", "deceval"], "needs --chunks LIST"),
    (["sweep", "seed-testbed"], "Missing argument 'WORKFLOW'"),
])
def test_bad_input(cli, args, fragment):
    code, out, err = cli("simulate", *args)
    assert code == 2 and err.startswith("error: ") and fragment in err and len(err.strip().splitlines()) == 1, err


def test_bad_yaml_names_file_and_line(cli, tmp_path):
    workflow = tmp_path / "w.yaml"
    workflow.write_text("kind: workflow\nname: w\ntasks:\n  - {name: a, device: fpga, seconds: -1}\n")
    code, _, err = cli("simulate", "run", "seed-testbed", workflow)
    assert code == 2 and f"{workflow}:4: tasks[0].seconds" in err
    system = tmp_path / "s.yaml"
    system.write_text("kind: system\nname: s\nhost: host\ndevices:\n  - {name: host}\nlinks:\n"
                      "  - {between: [host, gpu], link: pcie3x16}\n")
    code, _, err = cli("simulate", "run", system, "deceval")
    assert code == 2 and f"{system}:7: links[0].between: 'gpu' is not a device" in err


def test_a_task_on_a_missing_device(cli, tmp_path):
    workflow = tmp_path / "w.yaml"
    workflow.write_text("kind: workflow\nname: w\ntasks:\n  - {name: a, device: tpu, seconds: 1}\n")
    code, _, err = cli("simulate", "run", "seed-testbed", workflow)
    assert code == 2 and "tasks[0].device: 'tpu' is not a device of system 'seed-testbed'" in err


def test_two_transfers_sharing_a_link():
    system = System(name="s", host="h", devices=[{"name": "h"}, {"name": "a"}, {"name": "b"}],
                    links=[{"between": ["a", "h"], "link": "simple:bandwidth=1GB/s"}, {"between": ["b", "h"], "link": "pcie3x16"}])
    workflow = Workflow(name="w", tasks=[{"name": "p", "device": "a", "seconds": 0}, {"name": "q", "device": "h", "seconds": 0},
                                         {"name": "r", "device": "h", "seconds": 0}],
                        edges=[{"from": "p", "to": "q", "bytes": "1GB"}, {"from": "p", "to": "r", "bytes": "1GB"}],
                        strategy="direct")
    result = flows.run(system, workflow)
    # Both 1 GB transfers share the a->h link: together they take as long as 2 GB at 1 GB/s.
    assert result.timeline.makespan == pytest.approx(2.0)
    assert result.timeline.resources["a->h"].bytes == 2e9


@pytest.mark.parametrize("body, fragment", [
    # bad input: a pipelined run of a workflow with no chunk (was a TypeError traceback) ...
    ("tasks:\n  - {name: a, device: fpga, seconds: 1}\n  - {name: b, device: gpu, seconds: 1}\n"
     "edges:\n  - {from: a, to: b, bytes: 1GB}\n", "has no chunk"),
    # ... and of one with no edges (was an IndexError traceback)
    ("tasks:\n  - {name: a, device: fpga, seconds: 1}\nchunk: 16MB\n", "has no edges"),
])
def test_pipelined_without_chunk_or_edges_is_refused(cli, tmp_path, body, fragment):
    workflow = tmp_path / "w.yaml"
    workflow.write_text("name: w\n" + body)
    code, out, err = cli("simulate", "run", "seed-testbed", workflow, "--strategy", "pipelined", check=2)
    assert fragment in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err + out

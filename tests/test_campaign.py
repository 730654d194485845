"""Campaigns across nodes (`xferlab campaign run`, src/xferlab/campaign.py) and shards
(`results export` / `results import`, src/xferlab/store/shards.py): two local processes as nodes give
one store with two node inventories and the node table; importing a shard twice adds nothing; a slow
node is flagged. Bad input tried: neither --nodes nor --launcher, a node command with its own --store,
a file that is not a shard, a shard's run without an id."""

import json

import pytest

from xferlab.campaign import compare_nodes
from xferlab.errors import BadValue
from xferlab.store import open_store

MEASURE = ["measure", "memory", "--threads", "1", "--size", "8MiB", "--iterations", "4", "--kernels", "triad"]


def test_two_local_nodes_make_one_store_and_the_node_table(tmp_path, cli):
    store = tmp_path / "c.duckdb"
    code, out, err = cli("campaign", "run", "--nodes", "2", "--shards", tmp_path / "shards", "--store", store, "--json",
                         "--", *MEASURE, check=0)
    doc = json.loads(out)  # the nodes' own output went to stderr
    assert {r["node"] for r in doc["results"]} == {"local-0", "local-1"}
    assert all(r["test"] == "triad" and r["median"] > 0 for r in doc["results"])
    with open_store(store, read_only=True) as db:
        runs = db.runs()
        nodes = {db.run(r["run_id"])["inventory"]["node"] for r in runs}
    assert len(runs) == 2 and nodes == {"local-0", "local-1"}
    report = tmp_path / "report.html"
    cli("report", "--store", store, "--output", report, check=0)
    text = report.read_text()
    assert "Nodes compared: measure memory" in text and "local-0" in text and "local-1" in text


def test_a_shard_imported_twice_adds_nothing(tmp_path, cli):
    source = tmp_path / "a.duckdb"
    cli(*MEASURE, "--store", source, check=0)
    for fmt in ("json", "parquet"):
        cli("results", "export", "latest", "--format", fmt, "-o", tmp_path / f"run.{fmt}", "--store", source, check=0)
    target = tmp_path / "b.duckdb"
    first = cli.json("results", "import", tmp_path / "run.parquet", "--store", target)
    again = cli.json("results", "import", tmp_path / "run.json", tmp_path / "run.parquet", "--store", target)
    assert [r["imported"] for r in first["results"]] == [True]
    assert [r["imported"] for r in again["results"]] == [False, False]
    with open_store(source, read_only=True) as a, open_store(target, read_only=True) as b:
        (run,) = b.runs()
        assert b.samples(run["run_id"]) == a.samples(run["run_id"])
        assert b.run(run["run_id"])["inventory"] == a.run(run["run_id"])["inventory"]


def test_a_slow_node_is_flagged(tmp_path):
    with open_store(tmp_path / "n.duckdb") as db:
        for k, bandwidth in enumerate([20e9, 20.5e9, 19.8e9, 20.2e9, 11e9]):
            db.import_run({"run_id": f"20260101-00000{k}-abcd", "command": "measure memory",
                           "started_utc": "2026-01-01 00:00:00", "status": "ok", "inventory": {"node": f"n{k}"}},
                          [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                            "value": bandwidth * (1 + i / 1000), "seq": i + 1} for i in range(3)], [])
        rows = compare_nodes(db, [r["run_id"] for r in db.runs()], k=3.0)
    assert [r["node"] for r in rows if r["outlier"]] == ["n4"]
    with pytest.raises(BadValue, match="no run_id"):
        with open_store(tmp_path / "n.duckdb") as db:
            db.import_run({"command": "x"}, [], [])


def test_bad_input(tmp_path, cli):
    code, out, err = cli("campaign", "run", "--", *MEASURE, check=None)
    assert code == 2 and "give --nodes N" in err
    code, out, err = cli("campaign", "run", "--nodes", "2", "--", *MEASURE, "--store", "x.duckdb", check=None)
    assert code == 2 and "takes no --store" in err
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2]")
    code, out, err = cli("results", "import", junk, "--store", tmp_path / "s.duckdb", check=None)
    assert code == 2 and "has no run and samples" in err and not (tmp_path / "s.duckdb").exists()

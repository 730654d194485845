"""Campaigns across nodes (`xferlab campaign run`, src/xferlab/campaign.py) and shards
(`results export` / `results import`, src/xferlab/store/shards.py): two local processes as nodes give
one store with two node inventories and the node table; importing a shard twice adds nothing; a slow
node is flagged, in the figure (placement) where it is slow; a figure of another size class (arrays against the
node's last-level cache) is not compared; nodes whose command fails are named and the
campaign exits 3 (some shards), 1 (none) or 2 (every node refused the command as bad input); a second
campaign into the same shards folder merges only its own runs.
Bad input tried: neither --nodes nor --launcher, a node command with its own --store, a launcher that
is not a command, --min-deviation 150%, --mads inf, a file that is not a shard, a shard's run without an id, shards
with a sample without a value, a seq twice or not a number, failures not a list, an inventory or argv
of the wrong type, a start time that is not a time."""

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
    assert next(r for r in rows if r["node"] == "n4")["relative_error"] == pytest.approx(1 - 11 / 20.0, rel=1e-3)


def test_a_node_close_to_the_others_is_not_flagged_however_many_mads(tmp_path):
    """Three nodes at 100, 100.1 and 99 GB/s: the third is 10 MADs away but 1 % off: not an outlier at the
    default 5 % floor, one with --min-deviation 0."""
    with open_store(tmp_path / "m.duckdb") as db:
        for k, bandwidth in enumerate([100e9, 100.1e9, 99e9]):
            db.import_run({"run_id": f"20260101-00000{k}-abce", "command": "measure memory",
                           "started_utc": "2026-01-01 00:00:00", "status": "ok", "inventory": {"node": f"n{k}"}},
                          [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                            "value": bandwidth, "seq": 1}], [])
        runs = [r["run_id"] for r in db.runs()]
        rows = compare_nodes(db, runs)
        third = next(r for r in rows if r["node"] == "n2")
        assert third["mads"] == pytest.approx(10.0) and not third["outlier"]
        assert [r["node"] for r in compare_nodes(db, runs, min_deviation=0.0) if r["outlier"]] == ["n2"]
    with pytest.raises(BadValue, match="no run_id"):
        with open_store(tmp_path / "n.duckdb") as db:
            db.import_run({"command": "x"}, [], [])


def test_bad_input(tmp_path, cli):
    code, out, err = cli("campaign", "run", "--", *MEASURE, check=None)
    assert code == 2 and "give --nodes N" in err
    code, out, err = cli("campaign", "run", "--nodes", "2", "--", *MEASURE, "--store", "x.duckdb", check=None)
    assert code == 2 and "takes no --store" in err
    code, out, err = cli("campaign", "run", "--nodes", "2", "--min-deviation", "150%", "--", *MEASURE, check=None)
    assert code == 2 and err.strip() == ("error: --min-deviation '150%' is not a relative deviation in [0, 100 %]; "
                                        "allowed: a fraction such as 0.02 or a percentage such as 2%")
    code, out, err = cli("campaign", "run", "--nodes", "2", "--mads", "inf", "--", *MEASURE, check=None)
    assert code == 2 and "--mads inf: a finite distance above 0" in err
    code, out, err = cli("campaign", "run", "--launcher", "no-such-srun -N 2", "--shards", tmp_path / "s",
                         "--store", tmp_path / "l.duckdb", "--", *MEASURE, check=None)
    assert code == 2 and err.strip() == ("error: --launcher 'no-such-srun -N 2': 'no-such-srun' is not a command here; "
                                        "allowed: the site's launcher, such as srun or mpiexec")
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2]")
    code, out, err = cli("results", "import", junk, "--store", tmp_path / "s.duckdb", check=None)
    assert code == 2 and "has no run and samples" in err and not (tmp_path / "s.duckdb").exists()


def test_failed_nodes_are_named_and_fail_the_campaign(tmp_path, cli):
    """Each node's probe aborts: its run is recorded as failed and still merged, and the campaign says
    which nodes failed (exit 3). A node command refused before it records anything: no shard, exit 1."""
    store = tmp_path / "f.duckdb"
    code, out, err = cli("campaign", "run", "--nodes", "2", "--shards", tmp_path / "s1", "--store", store, "--json",
                         "--", *MEASURE, env={"XFERLAB_PROBE_FAULT": "crash=abort"}, check=None)
    last = err.strip().splitlines()[-1]
    assert code == 3 and last.startswith("error: 2 node step(s) failed (node local-0 exited 1; node local-1 exited 1)")
    assert json.loads(out)["failed_nodes"] == ["node local-0 exited 1", "node local-1 exited 1"]
    with open_store(store, read_only=True) as db:
        assert [r["status"] for r in db.runs()] == ["failed", "failed"]
    code, out, err = cli("campaign", "run", "--nodes", "2", "--shards", tmp_path / "s2", "--store", tmp_path / "g.duckdb",
                         "--", *MEASURE, "--threads", "100000", check=None)
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("error: every node refused `xferlab measure memory") and "exit 2" in last
    assert not (tmp_path / "g.duckdb").exists()
    code, out, err = cli("campaign", "run", "--nodes", "1", "--shards", tmp_path / "s3", "--store", tmp_path / "h.duckdb",
                         "--", *MEASURE, env={"XFERLAB_PROBE_FAULT": "exit=7"}, check=None)
    assert code == 3 and err.strip().splitlines()[-1].startswith("error: 1 node step(s) failed (node local-0 exited 1)")


def test_a_second_campaign_into_the_same_shards_imports_only_its_own_runs(tmp_path, cli):
    """The nodes' own stores stay in --shards; a second campaign exports and merges only what it recorded."""
    shards = tmp_path / "shards"
    def campaign(store):
        code, out, err = cli("campaign", "run", "--nodes", "1", "--shards", shards, "--store", store, "--json", "--",
                             *MEASURE, check=0)
        return json.loads(out)

    first = campaign(tmp_path / "a.duckdb")
    for stale in shards.glob("*.json"):
        stale.unlink()
    second = campaign(tmp_path / "b.duckdb")
    assert len(first["runs"]) == len(second["runs"]) == 1 and first["runs"] != second["runs"]
    with open_store(tmp_path / "b.duckdb", read_only=True) as db:
        assert [r["run_id"] for r in db.runs()] == second["runs"]


def test_figures_that_differ_in_placement_are_compared_apart(tmp_path):
    """Pinned and pageable copies of one size are two figures: a node slow only in pinned copies is flagged
    there, and its pageable figure is not."""
    with open_store(tmp_path / "p.duckdb") as db:
        for k in range(4):
            rows = []
            for kind, rate in (("pageable", 10e9), ("pinned", 20e9 if k else 8e9)):
                rows += [{"suite": "device", "test": "copy", "metric": "bandwidth_bytes_per_second", "mode": "h2d",
                          "host_kind": kind, "size_bytes": 2**20, "value": rate * (1 + (k + i) / 1000),
                          "seq": len(rows) + 1 + i} for i in range(3)]
            db.import_run({"run_id": f"20260101-00000{k}-abcf", "command": "measure device",
                           "started_utc": "2026-01-01 00:00:00", "status": "ok", "inventory": {"node": f"n{k}"}}, rows, [])
        compared = compare_nodes(db, [r["run_id"] for r in db.runs()])
    assert {r["placement"] for r in compared} == {"h2d pageable", "h2d pinned"} and len(compared) == 8
    assert [(r["node"], r["placement"]) for r in compared if r["outlier"]] == [("n0", "h2d pinned")]


def test_figures_of_another_size_class_are_not_compared(tmp_path):
    """The same 64 MiB triad on four nodes: three with an 8 MiB last-level cache (memory bandwidth) and one
    with a 256 MiB cache, where the arrays fit it and the figure is cache bandwidth, 3x faster. That node
    is not flagged as an outlier: it is not compared with the others (its class alone), and a note says so."""
    with open_store(tmp_path / "s.duckdb") as db:
        for k, (llc, rate) in enumerate([(8, 20e9), (8, 20.3e9), (8, 19.8e9), (256, 60e9)]):
            caches = [{"level": 3, "type": "Unified", "size_bytes": llc * 2**20}]
            db.import_run({"run_id": f"20260101-00000{k}-abda", "command": "measure memory",
                           "started_utc": "2026-01-01 00:00:00", "status": "ok",
                           "inventory": {"node": f"n{k}", "caches": caches}},
                          [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                            "size_bytes": 64 * 2**20, "value": rate * (1 + i / 1000), "seq": i + 1} for i in range(3)], [])
        split: list = []
        rows = compare_nodes(db, [r["run_id"] for r in db.runs()], split=split)
    assert not any(r["outlier"] for r in rows)
    assert {r["node"] for r in rows} == {"n0", "n1", "n2"} and {r["array_size_class"] for r in rows} == {"memory"}
    assert {r["statistic"] for r in rows} == {"median"}
    assert split == ["triad bandwidth_bytes_per_second at 64 MiB (–): compared only within each size class: "
                     "n0 memory, n1 memory, n2 memory, n3 cache-resident"]


@pytest.mark.parametrize("spoil, fragment", [
    (lambda d: d["samples"][0].pop("value"), "sample 0 has no 'value'"),
    (lambda d: d["samples"][1].update(seq=d["samples"][0]["seq"]), "comes twice"),
    (lambda d: d["samples"][0].update(seq="abc"), "sample 0 field 'seq' is 'abc'"),
    (lambda d: d.update(failures="oops"), "failures are not a list of dicts"),
    (lambda d: d["run"].update(inventory=[1]), "its run's inventory is a list; it must be a dict"),
    (lambda d: d["run"].update(argv="measure memory"), "its run's argv is not a list of words"),
    (lambda d: d["run"].update(started_utc="yesterday"), "its run's started_utc 'yesterday' is not a time"),
])
def test_a_bad_shard_among_good_ones_writes_nothing(spoil, fragment, tmp_path, cli):
    """Bad input: a shard whose run, samples or failures the store cannot take, given after a good one:
    one line naming the shard and the part, exit 2, and no store made (the good shard is not written either)."""
    source = tmp_path / "a.duckdb"
    cli(*MEASURE, "--store", source, check=0)
    good = tmp_path / "good.json"
    cli("results", "export", "latest", "--format", "json", "-o", good, "--store", source, check=0)
    doc = json.loads(good.read_text())
    doc["run"]["run_id"] += "x"  # another run, so that the good one would be new too
    spoil(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    target = tmp_path / "t.duckdb"
    code, out, err = cli("results", "import", good, bad, "--store", target, check=None)
    assert code == 2 and err.strip().startswith(f"error: shard '{bad}': ") and fragment in err, err
    assert len(err.strip().splitlines()) == 1 and not target.exists()


@pytest.fixture(scope="module")
def sweep_shard(tmp_path_factory):
    """A shard of a real run that costs nothing to make (a one-point sweep), and its store."""
    from xferlab.cli import main

    folder = tmp_path_factory.mktemp("shard")
    store = folder / "a.duckdb"
    assert main(["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged",
                 "--store", str(store)]) == 0
    assert main(["results", "export", "latest", "--format", "json", "-o", str(folder / "run.json"),
                 "--store", str(store)]) == 0
    return (folder / "run.json").read_text()


@pytest.mark.parametrize("spoil, fragment", [
    (lambda t: t.replace('"samples": [', '"samples": [' + "[" * 100_000 + "]" * 100_000 + ", ", 1), "nests its JSON too deep"),
    (lambda t: t.replace('"params": {', '"params": {"deep": ' + "[" * 900 + "]" * 900 + ", ", 1), "nests its values too deep"),
    (lambda t: t.replace('"value": ', '"value": 1' + "0" * 400 + ', "was": ', 1), "field 'value' is '1000"),
    (lambda t: t.replace('"threads": null', f'"threads": {2**40}', 1), "field 'threads' is 1099511627776; it must be"),
    (lambda t: t.replace('"seq": 1', f'"seq": {2**70}', 1), "field 'seq' is 1180591620717411303424"),
    (lambda t: t.replace('"run_id": "', '"run_id": "../../x', 1), "its run_id '../../x"),
    (lambda t: t.replace('"run_id": "', '"run_id": "latest", "was": "', 1), "its run_id 'latest' is not a run id"),
    (lambda t: t.replace('"started_utc": "', '"started_utc": "a\\nb", "was": "', 1), "started_utc 'a\\nb' is not a time"),
])
def test_hostile_shards_are_refused_in_one_line(spoil, fragment, sweep_shard, tmp_path, capfd):
    """Bad input: JSON nested 100,000 deep (and 900 deep in a sample's params), a whole number past a
    column's range (value 10^400, threads 2^40, seq 2^70), a run id that is a path or 'latest' (`results
    export` names its file after it; `latest` names the newest run), a newline in a time: one line, exit 2,
    before the store is opened (none is made). These were a traceback or the store's own message."""
    from xferlab.cli import main

    shard = tmp_path / "bad.json"
    text = spoil(sweep_shard)
    assert text != sweep_shard
    shard.write_text(text)
    capfd.readouterr()
    code = main(["results", "import", str(shard), "--store", str(tmp_path / "t.duckdb")])
    lines = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: shard '{shard}'") and fragment in lines[0], lines
    assert not (tmp_path / "t.duckdb").exists()

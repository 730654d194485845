"""Studies (`xferlab study`, src/xferlab/studies/): the seeds' experiments in one command, on this
machine. tiers runs local DRAM and (with --pmem) App-Direct on a file, and says why it skips the
classes this machine lacks; launch runs unpinned and pinned to each CPU; a study run again reuses
the steps already in the store; every study renders its own report section. Bad input tried: an
unknown study, a budget too small for one step, an option the study does not take, a --pmem-node
without CPUs."""

import json
import os

import pytest

from test_inventory_cxl import cxl_tree, tools
from xferlab.measure.device import devices
from xferlab.store import open_store
from xferlab.system.inventory import numa_nodes

OPENCL, _ = devices("opencl")


def test_list_names_every_study(cli):
    code, out, err = cli("study", "list", "--json", check=0)
    names = {r["study"]: r["seed_document"] for r in json.loads(out)["results"]}
    assert names == {"tiers": "seed 003", "granularity": "seed 004", "launch": "seed 004", "characterize": "seed 001",
                     "deceval": "seed 000", "offload": "seed 002"}


def test_tiers_measures_what_this_machine_has_and_reuses_it(tmp_path, cli):
    store = tmp_path / "s.duckdb"
    pmem = tmp_path / "pmem"
    pmem.mkdir()
    args = ["study", "run", "tiers", "--iterations", "3", "--pmem", pmem, "--budget", "2m", "--store", store, "--json"]
    code, out, err = cli(*args, check=0)
    doc = json.loads(out)
    classes = {r["class"] for r in doc["results"]}
    assert {"local", "app-direct"} <= classes
    assert all(r["best_bytes_per_second"] > 0 for r in doc["results"])
    assert all(r["relative_to_local"] == 1.0 for r in doc["results"] if r["class"] == "local")
    skipped = {s["class"]: s["reason"] for s in doc["skipped"]}
    if len({n["node"] for n in numa_nodes() if n["cpus"]}) == 1:  # this machine and CI: one socket
        assert {"remote", "remote-all-cores", "all-cores", "app-direct-remote"} <= set(skipped)
        assert "no remote CPUs to reach the PMem from" in skipped["app-direct-remote"]
    if len(os.sched_getaffinity(0)) < 4:
        assert "compact and spread need at least 4" in skipped["affinity"]
    assert [s["status"] for s in doc["steps"]] == ["measured"] * len(doc["steps"])
    # Again, the same options: nothing is measured again, the table is the same.
    code, out, err = cli(*args, check=0)
    again = json.loads(out)
    assert [s["status"] for s in again["steps"]] == ["reused"] * len(doc["steps"])
    assert again["results"] == doc["results"] and again["group"] == doc["group"]
    with open_store(store, read_only=True) as db:
        runs = db.runs()
    assert len(runs) == len(doc["steps"])  # one run per step, recorded once


def test_tiers_plans_the_seeds_classes_on_a_two_socket_machine_with_cxl(tmp_path, monkeypatch):
    """The plan (no measurement) on a topology given to it: two nodes with a CPU each and a memory-only
    node. Every seed 003 class this machine could run is planned, with the CPUs it names; --pmem-node
    picks the PMem's home, another node's CPUs are remote App-Direct; a --pmem-node without CPUs is refused."""
    from xferlab.errors import BadValue
    from xferlab.measure.memory import MemoryPlan
    from xferlab.studies import tiers

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs to give each node one")
    nodes = [{"node": 0, "cpus": [cpus[0]], "kind": "cpu+memory"}, {"node": 1, "cpus": [cpus[1]], "kind": "cpu+memory"},
             {"node": 2, "cpus": [], "kind": "memory-only"}]
    monkeypatch.setattr(tiers.inv, "numa_nodes", lambda: nodes)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(cpus[:2]))
    monkeypatch.setattr(MemoryPlan, "check", lambda self: None)  # nodes 1 and 2 do not exist here
    monkeypatch.setenv("PATH", tools(tmp_path / "bin"))  # ndctl and daxctl that list nothing
    monkeypatch.setenv("XFERLAB_STATE_ROOT", str(cxl_tree(tmp_path / "root", node=2)))  # a CXL region backs node 2
    options = {**tiers.TIERS.options, "pmem": str(tmp_path), "pmem_node": 1}
    plan = tiers.plan(options)
    labels = {s.key: s.label for s in plan.steps}
    assert list(labels) == ["local", "remote", "remote-all-cores", "all-cores", "cxl", "app-direct", "app-direct-remote",
                            "app-direct-remote-affinity"]
    assert labels["cxl"] == "CXL node 2: CXL region0 (ram, 2-way interleave over mem0, mem1, 8 GiB)"
    assert labels["remote-all-cores"] == "remote NUMA node 1 from every CPU (2)"
    assert labels["app-direct"].endswith("from node 1's CPUs")
    assert labels["app-direct-remote"].endswith("within node 0's CPUs (its node: 1)")
    assert labels["app-direct-remote-affinity"].endswith("pinned to one of node 0's CPUs (thread affinity) (its node: 1)")
    assert [s["class"] for s in plan.skipped] == ["app-direct-cxl", "affinity"]
    with pytest.raises(BadValue, match="--pmem-node 2: not a NUMA node with CPUs here; allowed: 0, 1"):
        tiers.plan({**options, "pmem_node": 2})
    # no CXL region: the memory-only node is not called CXL, it is a class of its own
    monkeypatch.setenv("XFERLAB_STATE_ROOT", str(tmp_path / "bare"))
    plan = tiers.plan(options)
    labels = {s.key: s.label for s in plan.steps}
    assert "cxl" not in labels and labels["memory-only"].startswith("node 2, memory-only: no CXL region")
    assert {s["class"]: s["reason"] for s in plan.skipped}["cxl"] == "no NUMA node backed by a CXL region (/sys/bus/cxl)"


def test_a_study_has_its_own_report_section(tmp_path, cli):
    store = tmp_path / "r.duckdb"
    cli("study", "run", "tiers", "--iterations", "3", "--budget", "2m", "--store", store, check=0)
    report = tmp_path / "report.html"
    cli("report", "--store", store, "--output", report, check=0)
    text = report.read_text()
    assert "Study tiers (seed 003)" in text
    assert "skipped: cxl: no NUMA node backed by a CXL region (/sys/bus/cxl)" in text and "xferlab study run tiers --iterations 3" in text


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (CI installs PoCL)")
def test_launch_pins_to_each_cpu(tmp_path, cli):
    store = tmp_path / "l.duckdb"
    code, out, err = cli("study", "run", "launch", "--count", "100", "--json", "--store", store, check=0)
    rows = json.loads(out)["results"]
    cpus = sorted(os.sched_getaffinity(0))
    assert {r["where"] for r in rows} == {"unpinned", *(f"cpu{c}" for c in cpus)}
    pinned = [r for r in rows if r["where"].startswith("cpu") and r["kernel_args"] == 0]
    assert sum(bool(r["best_cpu"]) for r in pinned) == 1 and all(r["spread_across_cpus"] >= 1 for r in pinned)
    assert all(r["governor"] for r in rows) and all(r["median_seconds"] > 0 for r in rows)
    with open_store(store, read_only=True) as db:  # the governor is the run's, read back from its samples
        run = db.runs()[0]["run_id"]
        assert {json.loads(s["params"])["governor"] if isinstance(s["params"], str) else s["params"]["governor"]
                for s in db.samples(run)} == {rows[0]["governor"]}
    assert_report_section(cli, store, "launch", "seed 004", "xferlab study run launch --count 100")


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (CI installs PoCL)")
def test_granularity_moves_one_total_in_small_and_large_transfers_both_ways(tmp_path, cli):
    store = tmp_path / "g.duckdb"
    code, out, err = cli("study", "run", "granularity", "--total", "8Mi", "--chunks", "64Ki,4Mi", "--json", "--store", store,
                         check=0)
    rows = json.loads(out)["results"]
    assert {r["direction"] for r in rows} == {"h2d", "d2h"} and {r["chunk_bytes"] for r in rows} == {65536, 4194304}
    assert {"pageable", "pinned"} <= {r["host_kind"] for r in rows}
    for r in rows:
        assert r["transfers"] == 8 * 2**20 // r["chunk_bytes"]
        assert r["transfer_median_seconds"] <= r["transfer_p99_seconds"] <= r["transfer_max_seconds"]
        assert (r["relative_to_largest_chunk"] == 1.0) == (r["chunk_bytes"] == 4194304)
    assert_report_section(cli, store, "granularity", "seed 004", "xferlab study run granularity")


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (CI installs PoCL)")
def test_characterize_gives_seed_001s_tables(tmp_path, cli):
    store = tmp_path / "c.duckdb"
    code, out, err = cli("study", "run", "characterize", "--store", store, "--json", check=0)
    doc = json.loads(out)
    parts = {}
    for r in doc["results"]:
        parts.setdefault(r["part"], []).append(r)
    assert {r["what"].split(",")[0] for r in parts["copies"]} == {"h2d", "d2h", "d2d", "bidir"}
    assert all(r["latency_median_seconds"] > 0 and r["bandwidth_median_bytes_per_second"] > 0 for r in parts["copies"])
    assert all(r["latency_mean_seconds"] > 0 and "latency_median_seconds" not in r for r in parts["network"])
    assert {r["what"] for r in parts["collaboration"]} >= {"histogram D"}
    assert next(r for r in parts["collaboration"] if r["what"] == "histogram D")["relative_to_d"] == 1.0
    assert parts["network"][0]["what"] == "intra-node, host"  # mpich is a dependency: the network step runs here
    assert [s["status"] for s in doc["steps"]] == ["measured"] * 3
    assert_report_section(cli, store, "characterize", "seed 001", "xferlab study run characterize")


def assert_report_section(cli, store, name, seed, command):
    """The study's group renders its own report section: its title, its table, the command again."""
    report = store.with_suffix(".html")
    cli("report", "--store", store, "--output", report, check=0)
    text = report.read_text()
    start = text.index(f"Study {name} ({seed})")
    assert "<table" in text[start:] and command in text[start:] and f"--store {store}" in text[start:]


@pytest.mark.parametrize("args, fragment", [
    (["study", "run", "granularity", "--total", "1Mi", "--chunks", "2Mi"], "chunk 2 MiB is larger than --total 1 MiB"),
    (["study", "run", "cache"], "study 'cache' is not known"),
    (["study", "run", "granularity", "--repeats", "0"], "--repeats 0: timed repeats of each chunk size"),
    (["study", "run", "tiers", "--budget", "0.1s"], "--budget 0.1 s is too small to run one step of the tiers study"),
    (["study", "run", "launch", "--pmem", "x"], "--pmem does not apply to the launch study; it applies to: tiers"),
    (["study", "run", "launch", "--pmem-node", "0"], "--pmem-node does not apply to the launch study; it applies to: tiers"),
    (["study", "run", "tiers", "--pmem", ".", "--pmem-node", "9"], "--pmem-node 9: not a NUMA node with CPUs here"),
])
def test_bad_input_is_one_line(args, fragment, tmp_path, cli):
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*args, "--store", store)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and fragment in lines[0], (code, err)
    assert not store.exists()


def test_a_step_left_partly_unmeasured_is_not_reused_and_equal_options_are_one_group(tmp_path):
    """A step whose run ended ok with parts skipped for the budget (or some failed) runs again on a
    re-run; only a whole one is reused. 300ns and 0.3us, or a list in another order, are one group."""
    from xferlab.studies import find
    from xferlab.studies.run import _done, group_of

    store = tmp_path / "p.duckdb"
    with open_store(store) as db:
        for step, summary in (("whole", {"steps": 2, "failed_steps": 0, "skipped_steps": 0}),
                              ("cut", {"steps": 2, "failed_steps": 0, "skipped_steps": 1}),
                              ("broken", {"steps": 2, "failed_steps": 1, "skipped_steps": 0})):
            run_id = db.start_run("study x", [], {}, {}, {"study": {"group": "g", "step": step}})
            db.finish_run(run_id, "ok", summary)
    assert set(_done(store, "g")) == {"whole"}
    study = find("offload")
    assert group_of(study, {"latencies": [3e-7, 0.0], "workloads": ["gcd", "cg"]}) == \
        group_of(study, {"latencies": [0.0, 0.1e-6 * 3], "workloads": ["cg", "gcd", "cg"]})
    assert group_of(study, {"latencies": [3e-7]}) != group_of(study, {"latencies": [4e-7]})


def test_the_budget_must_hold_the_next_steps_first_part(cli):
    """Bad input: a budget below the next step's estimate, however long (the check was capped at 10 s)."""
    code, out, err = cli("study", "run", "deceval", "--total", "1GiB", "--repeats", "1", "--budget", "10s", check=None)
    assert code == 2 and "too small to run one step of the deceval study" in err
    assert int(err.split("needs about ")[1].split(" s")[0]) > 10

"""The tiers study's App-Direct targets and thread sweep (studies/tiers_pmem.py): several targets in one run
(--pmem local=PATH,remote=PATH,cxl=PATH, or one bare PATH as before), each class swept from 1 thread to all CPUs
of its placement, seed 003's 1.b (threads confined to the node's CPUs) and 1.c (each thread pinned) as their
probe arguments, and the run here with its plot. Bad input tried: an unknown target name, a target given twice,
a bare PATH among named ones, a thread count above the CPUs of a placement (plan and command line), --plots to a
study that draws none."""

import json
import os

import pytest

from xferlab.errors import BadValue
from xferlab.measure.memory import MemoryPlan
from xferlab.studies import tiers, tiers_pmem

from test_pmdk import FORCE, needs_pmdk


def test_targets_by_name_and_the_old_single_form():
    assert tiers_pmem.targets("/mnt/pmem0") == {"local": "/mnt/pmem0"}
    assert tiers_pmem.targets("local=/a, remote=/b,cxl=/dev/dax1.0") == {"local": "/a", "remote": "/b", "cxl": "/dev/dax1.0"}
    assert tiers_pmem.targets(None) == {}
    with pytest.raises(BadValue, match="unknown target 'far'; allowed: local, remote, cxl"):
        tiers_pmem.targets("local=/a,far=/b")
    with pytest.raises(BadValue, match="target local given twice"):
        tiers_pmem.targets("local=/a,local=/b")
    with pytest.raises(BadValue, match="each is NAME=PATH"):
        tiers_pmem.targets("/a,remote=/b")


def test_the_default_sweep_goes_from_one_thread_to_every_cpu():
    assert tiers_pmem.default_sweep(1) == [1]
    assert tiers_pmem.default_sweep(2) == [1, 2]
    assert tiers_pmem.default_sweep(12) == [1, 2, 4, 8, 12]
    assert tiers_pmem.sweep([4, 1, 4], "local", [0, 1, 2, 3]) == [1, 4]
    with pytest.raises(BadValue, match=r"--threads 5: class local runs on 4 CPU\(s\) \(0-3\); allowed: 1..4"):
        tiers_pmem.sweep([1, 5], "local", [0, 1, 2, 3])


@pytest.fixture
def two_sockets(monkeypatch):
    """Two nodes with two CPUs each and a memory-only node, as tiers.plan sees them (nothing is measured)."""
    nodes = [{"node": 0, "cpus": [0, 1], "kind": "cpu+memory"}, {"node": 1, "cpus": [2, 3], "kind": "cpu+memory"},
             {"node": 2, "cpus": [], "kind": "memory-only"}]
    monkeypatch.setattr(tiers.inv, "numa_nodes", lambda: nodes)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(MemoryPlan, "check", lambda self: None)  # CPUs 2, 3 and nodes 1, 2 need not exist here
    monkeypatch.setattr(tiers_pmem, "_pmdk", lambda notes: True)
    return nodes


def _args(step):
    return [s.args for s in step.steps]


def test_three_targets_plan_seed_003s_class_1(tmp_path, two_sockets):
    options = {**tiers.TIERS.options, "pmem": f"local={tmp_path}/l,remote={tmp_path}/r,cxl={tmp_path}/c"}
    plan = tiers.plan(options)
    steps = {s.key: s for s in plan.steps}
    assert [k for k in steps if k.startswith("app-direct")] == ["app-direct", "app-direct-remote",
                                                               "app-direct-remote-affinity", "app-direct-cxl"]
    for key, path in (("app-direct", "l"), ("app-direct-remote", "r"), ("app-direct-remote-affinity", "r"),
                      ("app-direct-cxl", "c")):
        for args in _args(steps[key]):
            assert args[args.index("--pmem") + 1] == f"{tmp_path}/{path}" and args[args.index("--pmdk") + 1] == "persist"
            assert args[args.index("--cpus") + 1] == "0,1"  # from the PMem's home node's CPUs
    # 1.b: confined to the node's CPUs, left to the scheduler; 1.c: each thread pinned (thread affinity)
    assert all("--no-pin" in a for a in _args(steps["app-direct-remote"]))
    assert not any("--no-pin" in a for a in _args(steps["app-direct-remote-affinity"]))
    assert steps["app-direct-remote-affinity"].label.startswith("1.c: remote App-Direct STREAM-PMem")
    # every class swept from 1 thread to its placement's CPUs: 2 on a node, 4 for all cores
    threads = {k: [a[a.index("--threads") + 1] for a in _args(s)] for k, s in steps.items()}
    assert threads["app-direct"] == ["1", "2"] and threads["remote-all-cores"] == ["1", "2", "4"]
    assert threads["compact"] == ["2"] and threads["spread"] == ["2"]  # placements at one count
    # node 2 is memory-only with no CXL region behind it (no /sys/bus/cxl here): a class of its own, not CXL
    assert "memory-only" in steps and plan.skipped == [
        {"class": "cxl", "reason": "no NUMA node backed by a CXL region (/sys/bus/cxl)"}]


def test_a_thread_count_above_a_placement_is_refused(tmp_path, two_sockets):
    with pytest.raises(BadValue, match=r"--threads 3: class local runs on 2 CPU\(s\) \(0-1\); allowed: 1..2"):
        tiers.plan({**tiers.TIERS.options, "threads": [1, 3]})


def test_one_node_skips_remote_app_direct_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(tiers.inv, "numa_nodes", lambda: [{"node": 0, "cpus": sorted(os.sched_getaffinity(0)),
                                                          "kind": "cpu+memory"}])
    monkeypatch.setattr(MemoryPlan, "check", lambda self: None)
    monkeypatch.setattr(tiers_pmem, "_pmdk", lambda notes: True)
    plan = tiers.plan({**tiers.TIERS.options, "pmem": f"local={tmp_path},remote={tmp_path}"})
    skipped = {s["class"]: s["reason"] for s in plan.skipped}
    assert skipped["app-direct-remote-affinity"].startswith("one NUMA node in all (node 0): no memory is remote")
    assert skipped["app-direct-remote"] == skipped["app-direct-remote-affinity"]
    assert skipped["app-direct-cxl"] == "no CXL target (--pmem cxl=PATH)"
    assert "app-direct" in {s.key for s in plan.steps}


def test_without_pmdk_app_direct_runs_the_raw_mapping_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("XFERLAB_PMEMOBJ_LIB", "/nonexistent/libpmemobj.so.1")
    monkeypatch.setattr(MemoryPlan, "check", lambda self: None)
    plan = tiers.plan({**tiers.TIERS.options, "pmem": str(tmp_path)})
    step = next(s for s in plan.steps if s.key == "app-direct")
    assert all("--pmdk" not in a for a in _args(step)) and step.label.startswith("1.a: App-Direct STREAM at")
    assert any("not STREAM-PMem: PMDK's libpmemobj is not available" in n for n in plan.notes)


@needs_pmdk
def test_the_sweep_runs_here_with_its_plot(tmp_path, cli):
    pool, plots = tmp_path / "pool", tmp_path / "plots"
    pool.mkdir()
    cpus = len(os.sched_getaffinity(0))
    code, out, err = cli("study", "run", "tiers", "--pmem", f"local={pool}", "--iterations", "2", "--budget", "5m",
                         "--plots", plots, "--store", tmp_path / "s.duckdb", "--json", check=0, env=FORCE)
    doc = json.loads(out)
    rows = [r for r in doc["results"] if r["class"] in ("local", "app-direct")]
    assert {(r["class"], r["threads"]) for r in rows if r["kernel"] == "triad"} == {
        (c, t) for c in ("local", "app-direct") for t in tiers_pmem.default_sweep(cpus)}
    assert all(", pmdk, " in r["placement"] for r in rows if r["class"] == "app-direct")
    assert all(r["relative_to_local"] == 1.0 for r in rows if r["class"] == "local")
    assert sorted(p.name for p in plots.iterdir()) == [f"tiers-threads-{k}.png" for k in sorted(("add", "copy", "scale", "triad"))]
    assert all(p.stat().st_size > 1000 for p in plots.iterdir())


def test_bad_sweep_input_on_the_command_line(tmp_path, cli):
    cpus = len(os.sched_getaffinity(0))
    code, out, err = cli("study", "run", "tiers", "--threads", str(cpus + 1), "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.startswith(f"error: --threads {cpus + 1}: class local runs on {cpus} CPU(s)")
    code, out, err = cli("study", "run", "tiers", "--pmem", "local=/tmp,far=/tmp", "--store", tmp_path / "s.duckdb")
    assert code == 2 and err == "error: --pmem: unknown target 'far'; allowed: local, remote, cxl\n"
    code, out, err = cli("study", "run", "launch", "--plots", tmp_path, "--store", tmp_path / "s.duckdb")
    assert code == 2 and err == "error: --plots does not apply to the launch study; it applies to: tiers\n"
    code, out, err = cli("study", "run", "launch", "--threads", "1", "--store", tmp_path / "s.duckdb")
    assert code == 2 and "--threads does not apply to the launch study; it applies to: tiers" in err

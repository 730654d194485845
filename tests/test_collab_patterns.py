"""CHAI's PAD pattern and CHAI's method in `measure collab` (issue 30): PAD's D and U versions run on a
real OpenCL device (PoCL, and Intel's CPU runtime beside it: the `platform` fixture) and validate against
the host-only reference, the split fields are there, a damaged result is caught; the method's counts
(10 warm-ups out of the statistics, 100 timed, the mean as headline with the median and its interval
beside); bad input refused with one line. Sizes are small: the machine has 2 cores."""

import dataclasses
import os

import pytest

from xferlab.measure.collab import CollabPlan, rows_of, summary
from xferlab.measure.device import devices

from opencl_platforms import collab_device, collab_run, device_of

FOUND, WHY = devices("opencl")
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)

# 96 rows of 1000 columns padded by 37: rows whose destination covers several later rows' sources
PAD = CollabPlan(patterns=["pad"], size=96 * 1000, cols=1000, pad=37, host_threads=1, warmups=1, repeats=2)



@pytest.mark.parametrize("version", ["D", "U"])
def test_pad_runs_and_validates(version, platform):
    index, device = collab_device(platform, version)
    step, run = collab_run(dataclasses.replace(PAD, device=index), "pad", version)
    assert run.ok, run.failure
    (setup,) = [r for r in run.records if r["record"] == "setup"]
    assert (setup["pattern"], setup["rows"], setup["cols"], setup["pad"]) == ("pad", 96, 1000, 37)
    assert setup["split"] == ("static" if version == "D" else "dynamic")
    samples = [r for r in run.records if r["record"] == "sample"]
    checks = [r for r in run.records if r["record"] == "validation"]
    assert [s["warmup"] for s in samples] == [True, False, False]
    assert len(checks) == 3 and all(c["ok"] and c["wrong"] == 0 for c in checks)
    for s in samples:
        assert s["device_tasks"] + s["host_tasks"] == 96  # every row moved once, by one side or the other
        assert s["allocation_seconds"] > 0 and s["kernel_seconds"] > 0
        if version == "D":  # the device's 48 rows over (cols) and back (cols + pad)
            assert s["device_tasks"] == 48 and s["copied_bytes"] == 48 * (1000 + 1037) * 4 and s["copy_seconds"] > 0
        else:
            assert s["copy_seconds"] == 0 and s["copied_bytes"] == 0
    rows, failure = rows_of(step, run)
    assert failure is None and len(rows) == 3
    for row in rows:
        assert row["test"] == "collab-pad" and row["mode"] == version and row["value"] == row["params"]["total_seconds"]
        assert {"allocation_seconds", "copy_seconds", "kernel_seconds"} <= set(row["params"])
        assert (row["params"]["rows"], row["params"]["cols"], row["params"]["pad"]) == (96, 1000, 37)


@pytest.mark.parametrize("share, device_rows", [(0.0, 0), (0.25, 24), (1.0, 96)])
def test_pad_static_split_follows_the_share(share, device_rows):
    _, run = collab_run(dataclasses.replace(PAD, device_share=share, repeats=1), "pad", "D")
    assert run.ok, run.failure
    assert all(s["device_tasks"] == device_rows and s["host_tasks"] == 96 - device_rows
               for s in run.records if s["record"] == "sample")


@pytest.mark.parametrize("version", ["D", "U"])
def test_pad_damage_is_caught(version):
    _, run = collab_run(PAD, "pad", version, corrupt=True)
    assert not run.ok
    bad = [r for r in run.records if r["record"] == "validation" and not r["ok"]]
    assert len(bad) == 3 and "cells differ; first at row 48, column 0" in bad[0]["what"]


@pytest.mark.parametrize("version, threads, share", [("D", 1, 0.5), ("U", 1, 0.5), ("U", "all", 0.5), ("U", 1, 1.0)])
def test_pad_work_groups_leave_the_host_threads_their_cpus(version, threads, share, platform):
    """On a CPU device the compute units are this machine's CPUs, where the host threads run too: PAD
    launches a work-group for each CPU the host threads leave free (at least 1, at most the compute
    units), in D and U alike, so that no spinner waits on a row whose owner has no CPU; U with the
    device alone (--device-share 1) has no host threads to leave room for. Rows and summary say so."""
    index, device = device_of(platform)
    assert device["type"] == "cpu", device
    cpus = len(os.sched_getaffinity(0))
    threads = cpus if threads == "all" else threads
    step, run = collab_run(dataclasses.replace(PAD, device=index, host_threads=threads, device_share=share,
                                                     repeats=1), "pad", version)
    assert run.ok, run.failure
    (setup,) = [r for r in run.records if r["record"] == "setup"]
    host = threads if share < 1 else 0
    assert setup["work_groups"] == min(setup["compute_units"], max(1, cpus - host)), setup
    assert setup["work_groups_rule"].startswith("CPU device: its compute units are this machine's CPUs")
    assert f"the {cpus} CPUs this process may use less the {host} host threads" in setup["work_groups_rule"]
    rows, failure = rows_of(step, run)
    assert failure is None
    (entry,) = summary(rows)
    assert (entry["groups"], entry["groups_rule"]) == (setup["work_groups"], setup["work_groups_rule"])


def test_pad_defaults_to_chais_task_size_and_says_its_work_groups(cli, tmp_path):
    """--cols defaults to 8192 (CHAI's PAD task: 32 values x 256 work-items, one flag each): 64Ki elements
    are 8 rows; the summary rows carry the work-groups and why, and a line under the table says it."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "collab", "--patterns", "pad", "--elements", "64Ki", "--host-threads", "1",
                         "--warmup", "1", "--repeats", "2", "--store", store)
    assert code == 0, err
    assert "PAD: " in out and " work-group(s) a launch, D and U (CPU device: its compute units are this " \
        "machine's CPUs" in " ".join(out.split()), out
    import duckdb

    with duckdb.connect(str(store), read_only=True) as conn:
        shapes = conn.execute("SELECT DISTINCT json_extract(params, '$.rows')::INT, json_extract(params, '$.cols')::INT "
                              "FROM samples").fetchall()
    assert shapes == [(8, 8192)]


def test_chai_method_counts(cli, tmp_path):
    """By default 10 warm-ups, left out of the statistics, then 100 timed runs; the mean is the headline."""
    doc = cli.json("measure", "collab", "--patterns", "histogram", "--elements", "4096", "--host-threads", "1",
                   "--store", tmp_path / "s.duckdb")
    for r in doc["results"]:
        assert r["count"] == 100 and r["headline"] == "mean" and r["total_seconds"] == r["mean_seconds"]
        assert r["median_ci_low_seconds"] <= r["median_seconds"] <= r["median_ci_high_seconds"]
    import duckdb

    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as conn:
        counts = conn.execute("SELECT mode, count(*) FILTER (WHERE warmup), count(*) FILTER (WHERE NOT warmup) "
                              "FROM samples GROUP BY mode ORDER BY mode").fetchall()
    assert counts == [("D", 10, 100), ("U", 10, 100)]


def test_summary_mean_headline_leaves_warmups_out():
    rows = [{"suite": "device", "test": "collab-pad", "metric": "seconds", "value": t, "mode": "D", "iteration": i,
             "warmup": i < 10, "seconds": t,
             "params": {"allocation_seconds": 0.0, "copy_seconds": 0.0, "kernel_seconds": t, "total_seconds": t,
                        "device_share": 0.5, "host_threads": 1}}
            for i, t in enumerate([100.0] * 10 + [1.0] * 99 + [102.0])]
    (d,) = summary(rows)
    assert d["count"] == 100 and d["mean_seconds"] == pytest.approx(2.01) and d["median_seconds"] == 1.0
    assert d["total_seconds"] == d["mean_seconds"] and d["kernel_seconds"] == pytest.approx(2.01)
    assert d["median_ci_low_seconds"] == d["median_ci_high_seconds"] == 1.0


@pytest.mark.parametrize("args, fragment", [
    (["--patterns", "pad,scan"], "--patterns 'scan' is not known; allowed: histogram, taskqueue, pad"),
    (["--patterns", "pad", "--elements", "1000", "--cols", "7"], "--cols 7: PAD's rows must split --elements 1000"),
    (["--patterns", "pad", "--elements", "1000", "--cols", "2000"], "--cols 2000"),
    (["--patterns", "pad", "--elements", "1Gi", "--cols", "1024", "--pad", "1024"], "--pad 1024: the padded matrix"),
    (["--patterns", "pad", "--pad", "-1"], "--pad -1: columns added to each row, at least 0"),
    (["--patterns", "histogram", "--pad", "3"], "--pad applies only with pad in --patterns"),
    (["--warmup", "-1"], "--warmup -1"), (["--repeats", "0"], "--repeats 0"),
    (["--backend", "cuda", "--patterns", "taskqueue,pad"], "--patterns taskqueue: OpenCL devices only"),
])
def test_refusals(cli, tmp_path, args, fragment):
    code, out, err = cli("measure", "collab", "--store", tmp_path / "s.duckdb", *args)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "s.duckdb").exists()

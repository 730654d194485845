"""Loaded latency per read/write mix (measure/loaded.py, native/probe/loaded.cpp): the mix plan, the
probe's check of the generators' traffic (a generator whose count is wrong is refused, through the
probe's --miscount), a real short family run (probe and CLI, --json checked against its schema), the
plot of the family, the report's tables and the tier's read curve.

Bad input tried: an unknown mix (`4:x`, `0:0`, `17:1`, `3:0-nt`, `bogus`, ``), a mix given twice, --mixes
without --loaded, --loaded with one CPU (--cpus 0: no generator), --matrix with --mixes; the probe's own
refusal of a bad mix and of one CPU."""

from __future__ import annotations

import json
import subprocess

import pytest

from xferlab.errors import BadValue
from xferlab.measure import loaded
from xferlab.measure.memory import MemoryPlan, rows_of, steps
from xferlab.measure.probe import ProbeRun, probe_path
from xferlab.measure.steps import Step

MiB = 2**20
SMALL = ["--size", str(8 * MiB), "--min-time", "0.002", "--repeats", "6"]


def probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(probe_path()), "loaded", *args], capture_output=True, text=True, timeout=120)


def records(done: subprocess.CompletedProcess) -> list[dict]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


# -- the plan ----------------------------------------------------------------------------------------------
def test_mixes_are_parsed_as_mlc_names_them():
    assert [(m.reads, m.writes, m.nt) for m in map(loaded.parse_mix, loaded.DEFAULT_MIXES)] == [
        (1, 0, False), (3, 1, False), (2, 1, False), (1, 1, False), (0, 1, True)]
    assert loaded.parse_mix("write") == loaded.Mix("write", 0, 1, False)
    assert loaded.parse_mix("2:1-nt") == loaded.Mix("2:1-nt", 2, 1, True)
    assert loaded.parse_mix("16:0").description == "all reads"
    assert loaded.parse_mix("nt-write").description == "all writes (non-temporal stores)"
    assert loaded.parse_mixes("1:1,read") == ["1:1", "read"]  # the order given is the order run


@pytest.mark.parametrize("text", ["4:x", "0:0", "17:1", "3:0-nt", "bogus", "", "1:1:1"])
def test_an_unknown_mix_is_refused_naming_it(text):
    with pytest.raises(BadValue, match=f"'{text}' is not a read/write mix; allowed: read, write, nt-write"):
        loaded.parse_mixes(text)


def test_a_mix_given_twice_is_refused():
    with pytest.raises(BadValue, match="names 1:1 twice"):
        loaded.parse_mixes("1:1,read,1:1")


def test_the_plan_passes_the_family_to_the_probe():
    [step] = steps(MemoryPlan(bandwidth=False, loaded=True))
    assert step.args[step.args.index("--mixes") + 1] == "read,3:1,2:1,1:1,nt-write"
    [step] = steps(MemoryPlan(bandwidth=False, loaded=True, mixes=["nt-write", "2:1"]))
    assert step.args[step.args.index("--mixes") + 1] == "nt-write,2:1"
    with pytest.raises(BadValue, match="at least two CPUs"):
        MemoryPlan(bandwidth=False, loaded=True, cpus=[0]).check()
    with pytest.raises(BadValue, match="'9:y' is not a read/write mix"):
        MemoryPlan(bandwidth=False, loaded=True, mixes=["9:y"]).check()


# -- the probe: the family, and its check of the traffic -----------------------------------------------------
def test_a_short_family_run_moves_checked_traffic_of_each_mix():
    done = probe(*SMALL, "--delays", "256,0", "--mixes", "read,3:1,1:1,nt-write,write")
    recs = records(done)
    setup = recs[0]
    assert setup["record"] == "setup" and setup["traffic_threads"] >= 1 and setup["mixes"] == "read,3:1,1:1,nt-write,write"
    checks = [r for r in recs if r["record"] == "check"]
    assert [(c["mix"], c["delay"]) for c in checks] == [(m, d) for m in ("read", "3:1", "1:1", "nt-write", "write")
                                                         for d in (256, 0)]
    assert all(c["ok"] for c in checks), [c["detail"] for c in checks if not c["ok"]]
    for c in checks:  # the lines claimed are in the mix's ratio (a group of R+W lines at a time)
        m = loaded.parse_mix(c["mix"])
        assert c["lines_read"] + c["lines_written"] > 0
        assert abs(c["lines_read"] * m.writes - c["lines_written"] * m.reads) <= max(m.reads, m.writes) ** 2
        assert (c["lines_checked"] > 0) == (m.writes > 0)  # written lines are read back; a read mix has none
    samples = [r for r in recs if r["record"] == "sample"]
    assert len(samples) == 10 * 6
    for s in samples:
        m = loaded.parse_mix(s["mix"])
        assert s["latency_seconds"] > 0 and s["seconds"] >= 0.002
        assert s["traffic_bandwidth_bytes_per_second"] == pytest.approx((s["read_bytes"] + s["write_bytes"]) / s["seconds"])
        assert (s["read_bytes"] > 0 or not m.reads or s["write_bytes"] + s["read_bytes"] == 0)
        assert s["write_allocate_bytes"] == (0 if m.nt else s["write_bytes"])  # none for non-temporal stores
        if not m.writes:
            assert s["write_bytes"] == 0
    # through the converter: every window validated, a point per (mix, delay) with both medians and intervals
    step = Step("loaded", "loaded", [], {"node": "default", "mode": "memory", "threads": 2}, 1.0)
    rows, failure = rows_of(step, ProbeRun([], recs))
    assert failure is None and rows and all(r["validated"] for r in rows)
    points = loaded.points(rows)
    assert [(p["mix"], p["delay"]) for p in points] == [(c["mix"], c["delay"]) for c in checks]
    for p in points:
        assert p["count"] == 6 and p["counting"] == "loaded"
        assert p["median_ci_low_seconds"] <= p["median_seconds"] <= p["median_ci_high_seconds"]
        assert p["median_ci_low_bytes_per_second"] <= p["median_bytes_per_second"] <= p["best_bytes_per_second"]


def test_many_generators_each_have_their_part_and_their_check():
    """More generators than this machine has spare CPUs (--cpus repeats them): each walks its own part of
    the buffers, and each one's claim is checked (a miscount is named for the first generator)."""
    args = ["--cpus", "0,1,1,1,0", *SMALL, "--delays", "0", "--mixes", "read,1:1,nt-write"]
    recs = records(probe(*args))
    assert recs[0]["traffic_threads"] == 4 and recs[0]["traffic_buffer_bytes"] == 2 * MiB
    checks = [r for r in recs if r["record"] == "check"]
    assert len(checks) == 3 and all(c["ok"] for c in checks)
    assert [c["lines_checked"] > 0 for c in checks] == [False, True, True]
    bad = [r for r in records(probe(*args, "--miscount", "5")) if r["record"] == "check"]
    assert not any(c["ok"] for c in bad) and all(c["detail"].startswith("generator 0 (CPU 1): ") for c in bad)


@pytest.mark.parametrize("mix, why", [("read", "the words it read add up to"), ("3:1", "claims"),
                                      ("nt-write", "lines written; line"), ("write", "lines written; line")])
def test_a_generator_whose_count_is_wrong_is_refused(mix, why):
    """--miscount 1: every generator claims one line more than it touched; the check must see it, and no
    row of the point is shown (its rows are stored unvalidated, the step names the failed check)."""
    recs = records(probe(*SMALL, "--delays", "4096,0", "--mixes", mix, "--miscount", "1"))
    checks = [r for r in recs if r["record"] == "check"]
    assert len(checks) == 2 and not any(c["ok"] for c in checks)
    assert all(c["detail"].startswith("generator 0 (CPU ") and why in c["detail"] for c in checks), checks
    step = Step("loaded", "loaded", [], {"node": "default", "mode": "memory", "threads": 2}, 1.0)
    rows, failure = rows_of(step, ProbeRun([], recs))
    assert rows and not any(r["validated"] for r in rows)
    assert failure.startswith("traffic check failed") and f"mix {mix} delay 4096" in failure
    assert loaded.points(rows) == []


def test_a_point_without_its_check_is_not_shown():
    """A probe that ended before a point's check: that point's windows are not vouched for."""
    recs = records(probe(*SMALL, "--delays", "0", "--mixes", "read,1:1"))
    cut = [r for r in recs if not (r["record"] == "check" and r["mix"] == "1:1")]
    step = Step("loaded", "loaded", [], {"node": "default", "mode": "memory", "threads": 2}, 1.0)
    rows, _ = rows_of(step, ProbeRun([], cut))
    assert [p["mix"] for p in loaded.points(rows)] == ["read"]


@pytest.mark.parametrize("args, fragment", [
    (["--mixes", "3:x"], "--mixes: '3:x' is not a mix"),
    (["--mixes", "read,0:0"], "--mixes: '0:0' is not a mix"),
    (["--cpus", "0"], "needs at least two CPUs"),
])
def test_the_probe_refuses_bad_input_in_one_line(args, fragment):
    done = probe(*args)
    assert done.returncode == 2 and fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


# -- the CLI -------------------------------------------------------------------------------------------------
def test_measure_memory_loaded_prints_the_family(cli, tmp_path):
    store = tmp_path / "s.duckdb"
    out = cli.json("measure", "memory", "--loaded", "--mixes", "read,nt-write", "--size", "8MiB", "--kernels", "read",
                   "--iterations", "2", "--store", store)
    points = [r for r in out["results"] if r["test"] == "loaded-latency"]
    assert [p["mix"] for p in points] == ["read"] * 7 + ["nt-write"] * 7
    assert [p["delay"] for p in points[:7]] == [4096, 1024, 256, 64, 16, 4, 0]
    for p in points:
        assert p["counting"] == "loaded" and p["count"] == 8 and p["traffic_threads"] >= 1
        assert p["median_seconds"] > 0 and p["median_bytes_per_second"] > 0
        assert p["write_allocate_median_bytes_per_second"] == 0  # reads, and non-temporal stores, allocate nothing
    assert "loaded" in out["conventions"]["counting"] and "stream" in out["conventions"]["counting"]
    with __import__("xferlab.store", fromlist=["open_store"]).open_store(store, read_only=True) as db:
        run = db.runs()[0]["run_id"]
        stats = [s for s in db.stats(run) if s["test"] == "loaded-latency"]
        assert run and db.run(run)["params"]["mixes"] == ["read", "nt-write"]
    assert {(s["variant"], s["delay"]) for s in stats} == {(p["mix"], p["delay"]) for p in points}
    # the report shows the family of the node measured: its table and its plot
    report = tmp_path / "out" / "report.html"
    cli("report", "-o", report, "--store", store, check=0, env={"XFERLAB_PROFILES": str(tmp_path / "profiles")})
    html = report.read_text()
    assert "Loaded latency, memory node default: the chase under each read/write mix" in html
    assert "nt-write: all writes (non-temporal stores)" in html and "loaded latency · reproduce" in html


@pytest.mark.parametrize("extra, fragment", [
    (["--mixes", "read"], "--mixes read applies to loaded latency; give --loaded with it"),
    (["--loaded", "--mixes", "5:z"], "--mixes: '5:z' is not a read/write mix"),
    (["--loaded", "--mixes", "read,read"], "--mixes names read twice"),
    (["--loaded", "--cpus", "0"], "--loaded needs at least two CPUs"),
    (["--matrix", "--mixes", "read"], "--matrix with --mixes"),
])
def test_bad_mixes_are_refused_before_anything_runs(cli, tmp_path, extra, fragment):
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "memory", *extra, "--store", store)
    assert code == 2 and err.startswith("error: ") and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not out and not store.exists()


# -- what shows the family: the plot, the report's tables, the tier ----------------------------------------
def _point(node, mix, delay, bw, lat):
    return {"node": node, "mix": mix, "delay": delay, "count": 8, "median_seconds": lat, "median_ci_low_seconds": lat * 0.9,
            "median_ci_high_seconds": lat * 1.1, "median_bytes_per_second": bw, "median_ci_low_bytes_per_second": bw * 0.9,
            "median_ci_high_bytes_per_second": bw * 1.1, "best_bytes_per_second": bw * 1.2,
            "write_allocate_median_bytes_per_second": 0.0, "traffic_threads": 1, "counting": "loaded"}


FAMILY = [_point(n, m, d, bw * k, lat * k) for n in ("0", "1") for k, m in ((1, "read"), (1.3, "1:1"))
          for d, bw, lat in ((4096, 1e9, 100e-9), (0, 10e9, 180e-9))]


def test_the_plot_draws_a_family_per_node(tmp_path):
    from xferlab.measure.loaded import curves, title
    from xferlab.plots.measured import plot_loaded

    written = plot_loaded(curves(FAMILY), title, tmp_path)
    assert [p.name for p in written] == ["loaded-latency-node0.png", "loaded-latency-node1.png"]
    assert all(p.stat().st_size > 10_000 for p in written)
    [one] = plot_loaded(curves([p for p in FAMILY if p["node"] == "0"]), title, tmp_path / "one")
    assert one.name == "loaded-latency.png"


def test_the_report_has_a_table_per_memory_node():
    from xferlab.report.memory_section import loaded_tables

    tables = loaded_tables(FAMILY)
    assert [t.title.split(":")[0] for t in tables] == ["Loaded latency, memory node 0", "Loaded latency, memory node 1"]
    assert [r["mix"] for r in tables[0].rows] == ["read: all reads"] * 2 + ["1:1 reads:writes (ordinary stores)"] * 2
    assert tables[0].rows[0]["latency_ci"] == "± 10.0 %" and any(n.startswith("counting (loaded)") for n in tables[0].notes)


def test_the_tier_keeps_the_read_curve():
    from xferlab.fit.tiers import fit_tiers

    recs = records(probe(*SMALL, "--delays", "1024,0", "--mixes", "1:1,read"))
    step = Step("loaded", "loaded", [], {"node": "0", "mode": "memory", "threads": 2}, 1.0)
    rows, failure = rows_of(step, ProbeRun([], recs))
    assert failure is None
    [tier] = fit_tiers(rows, "run-x")
    reads = {p["delay"]: p for p in loaded.points(rows) if p["mix"] == "read"}
    assert sorted((p.delay, p.traffic) for p in tier.loaded_latency) == [(0, "read"), (1024, "read")]
    for p in tier.loaded_latency:
        assert p.latency_seconds == reads[p.delay]["median_seconds"]
        assert p.bandwidth_bytes_per_second == reads[p.delay]["median_bytes_per_second"]

"""DecEval for real (`xferlab study deceval`, native/probe/deceval.cpp, studies/deceval.py): seed 000's
application runs on the OpenCL device, every flow validated, and the simulator predicts each flow from
the stages alone; the simulator's finite buffers, copy-engine-less devices and non-chain pipelines.
Bad input tried: a chunk larger than the input, a --total above the memory there is, a depth of 0, a
budget too small for the run, an option of another study, a size that is not a whole number of
doubles (the probe), a negative hand-off, a corrupted value (the validation fails the step)."""

import json

import numpy as np
import pytest

from xferlab.errors import BadValue
from xferlab.measure.deceval import DecevalPlan, rows_of, steps, summary
from xferlab.measure.device import devices
from xferlab.measure.probe import run_probe
from xferlab.sim import ops_for_pipeline, pipeline, pipeline_makespan, simulate
from xferlab.sim import flows
from xferlab.store import open_store
from xferlab.system.models import System, Workflow

OPENCL, _ = devices("opencl")
needs_device = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (CI installs PoCL)")


@needs_device
def test_deceval_runs_every_flow_validated_and_predicts_it(tmp_path, cli):
    store = tmp_path / "d.duckdb"
    args = ["study", "deceval", "--total", "4MiB", "--chunks", "256KiB,1MiB", "--repeats", "2", "--budget", "2m",
            "--store", store, "--json"]
    code, out, err = cli(*args, check=0)
    assert code == 0, err
    doc = json.loads(out)
    flows_seen = {(r["flow"], r["chunk_bytes"]) for r in doc["results"] if r["part"] == "flow"}
    assert flows_seen == {("staged", 4 * 2**20), ("direct", 4 * 2**20), ("pipelined", 256 * 2**10), ("pipelined", 2**20)}
    for r in doc["results"]:
        assert r["measured_seconds"] > 0 and r["predicted_seconds"] > 0
        assert r["error"] == pytest.approx(r["predicted_seconds"] / r["measured_seconds"] - 1)
    stages = {r["flow"] for r in doc["results"] if r["part"] == "stage"}
    assert stages == {"decompress", "copy", "integrate", "decompress-submit", "handoff"}
    # Stored as one run of the study's group; run again, it is reused.
    again = json.loads(cli(*args, check=0)[1])
    assert [s["status"] for s in again["steps"]] == ["reused"] and again["results"] == doc["results"]
    with open_store(store, read_only=True) as db:
        assert len(db.runs()) == 1
    report = tmp_path / "report.html"
    cli("report", "--store", store, "--output", report, check=0)
    text = report.read_text()
    assert "Study deceval (seed 000)" in text and "xferlab study deceval --total 4194304" in text


@needs_device
def test_a_corrupted_value_fails_the_validation():
    plan = DecevalPlan(size=2**20, chunks=[2**18], repeats=1)
    plan.check()
    step = steps(plan, corrupt=True)[0]
    run = run_probe(step.args, timeout=60, env=step.env)
    rows, failure = rows_of(step, run)
    assert rows == [] and "validation failed" in failure and "pi from the device" in failure


@needs_device
def test_the_summary_keeps_only_validated_repeats():
    plan = DecevalPlan(size=2**20, chunks=[2**18], repeats=1)
    plan.check()
    step = steps(plan)[0]
    rows, failure = rows_of(step, run_probe(step.args, timeout=60, env=step.env))
    assert failure is None and all(r["validated"] for r in rows)
    names = {(s["kind"], s["name"]) for s in summary(rows)}
    assert ("flow", "pipelined") in names and ("stage", "decompress-submit") in names
    assert all(s["count"] == 1 for s in summary(rows))  # the warm-up is left out


def test_bad_input_is_refused_with_one_line(cli, tmp_path):
    code, out, err = cli("study", "deceval", "--total", "1MiB", "--chunks", "2MiB", check=None)
    assert code == 2 and "chunk 2 MiB is larger than the input (1 MiB)" in err
    code, out, err = cli("study", "deceval", "--total", "1TiB", check=None)
    assert code == 2 and err.startswith("error: --total 1 TiB needs about") and "available" in err
    code, out, err = cli("study", "deceval", "--depth", "0", check=None)
    assert code == 2 and "--depth 0" in err
    code, out, err = cli("study", "deceval", "--budget", "1s", "--store", tmp_path / "b.duckdb", check=None)
    assert code == 2 and "too small to run one step of the deceval study" in err
    code, out, err = cli("study", "deceval", "--count", "3", check=None)
    assert code == 2 and "--count does not apply to the deceval study" in err


def test_the_probe_refuses_a_size_that_is_not_whole_doubles():
    run = run_probe(["deceval", "--size", "10001"], timeout=30)
    assert run.returncode == 2 and "not a whole number of doubles" in (run.failure or "")


# -- the simulator's new terms -------------------------------------------------------------------

def _loop(t, depth, release=None, handoff=0.0):
    """The finite-buffer recurrence chunk by chunk: the reference the scan and the engine must match.
    Stage s + 1 frees its input ``release[s + 1]`` into its run; the producer learns it ``handoff`` later."""
    stages, n = t.shape
    f = np.zeros((stages, n))
    for i in range(n):
        for s in range(stages):
            ready = max(f[s - 1, i] if s else 0.0, f[s, i - 1] if i else 0.0)
            if depth and s + 1 < stages and i >= depth:
                held = max(t[s + 1, i - depth] - release[s + 1], 0.0) if release is not None else 0.0
                ready = max(ready, f[s + 1, i - depth] - held + handoff)
            f[s, i] = ready + t[s, i]
    return f


@pytest.mark.parametrize("depth", [None, 1, 2, 3, 5])
def test_finite_buffers_match_the_recurrence_on_the_scan_and_the_engine(depth):
    rng = np.random.default_rng(7)
    for _ in range(30):
        t = rng.random((int(rng.integers(1, 5)), int(rng.integers(1, 25))))
        ref = _loop(t, depth)
        assert np.allclose(pipeline(t, depth), ref)
        resources, ops = ops_for_pipeline([f"r{k}" for k in range(t.shape[0])], t, depth=depth)
        assert simulate(resources, ops).makespan == pytest.approx(ref[-1, -1], rel=1e-12)


@pytest.mark.parametrize("depth", [None, 1, 2, 3])
def test_early_release_and_handoff_match_the_recurrence(depth):
    """Uniform chunks (the closed forms, or the scan with a hand-off) and the engine's split ops."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        stages, n = int(rng.integers(1, 5)), int(rng.integers(1, 20))
        t, release, handoff = rng.random(stages), rng.random(stages), float(rng.random()) * rng.integers(0, 2)
        ref = _loop(np.repeat(t[:, None], n, 1), depth, release, handoff)[-1, -1]
        assert pipeline_makespan(t, n, depth, release, handoff) == pytest.approx(ref, rel=1e-12)
        resources, ops = ops_for_pipeline([f"r{k}" for k in range(stages)], np.repeat(t[:, None], n, 1), depth=depth,
                                          release=release, handoff=handoff)
        assert simulate(resources, ops).makespan == pytest.approx(ref, rel=1e-12)
    with pytest.raises(BadValue, match="handoff"):
        pipeline_makespan(t, n, 1, release, -1.0)


def test_one_buffer_paces_the_pipeline_at_its_slowest_pair():
    t = np.array([1.0, 3.0, 1.0])  # unbounded: the slowest stage (3) paces; one buffer: the slowest pair (4)
    assert pipeline_makespan(t, 10) == pytest.approx(5 + 9 * 3)
    assert pipeline_makespan(t, 10, depth=1) == pytest.approx(5 + 9 * 4)
    assert pipeline_makespan(t, 10, depth=2) == pytest.approx(5 + 9 * 3)
    assert pipeline_makespan(t, 10, depth=1) == pytest.approx(_loop(np.repeat(t[:, None], 10, 1), 1)[-1, -1])
    with pytest.raises(BadValue, match="depth = 0"):
        pipeline_makespan(t, 10, depth=0)


def _system(copy_engines):
    return System.model_validate({
        "name": "s", "host": "host",
        "devices": [{"name": "host", "kind": "cpu"}, {"name": "dev", "copy_engines": copy_engines}],
        "links": [{"between": ["host", "dev"], "link": "simple:bandwidth=1GB/s"}]})


def test_a_device_without_copy_engines_moves_data_between_its_tasks():
    wf = Workflow.model_validate({"name": "w", "depth": 2, "tasks": [
        {"name": "a", "device": "host", "seconds": 1.0}, {"name": "b", "device": "dev", "seconds": 1.0}],
        "edges": [{"from": "a", "to": "b", "bytes": "1GB"}]})
    # Staged: a, then the copy (1 s at 1 GB/s), then b, wherever the copy runs.
    assert flows.run(_system(0), wf, "staged").timeline.makespan == pytest.approx(3.0)
    # Pipelined in 10 chunks: with a copy engine the copy overlaps b (three stages of 0.1 s);
    # without one, copy and b are one stage of 0.2 s on the device's queue.
    with_engine = flows.pipelined(_system(1), wf, 10**8)
    without = flows.pipelined(_system(0), wf, 10**8)
    assert with_engine.fast_path_seconds == pytest.approx(0.3 + 9 * 0.1)
    assert without.fast_path_seconds == pytest.approx(0.3 + 9 * 0.2)
    assert without.timeline.makespan == pytest.approx(without.fast_path_seconds)
    assert "dev->host" not in {op.resource for op in without.timeline.ops}


def test_a_workflow_that_is_not_a_chain_is_pipelined_on_the_engine():
    system = System.model_validate({
        "name": "s", "host": "a",
        "devices": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "links": [{"between": ["a", "b"], "link": "simple:bandwidth=1e15"}, {"between": ["a", "c"], "link": "simple:bandwidth=1e15"}]})
    wf = Workflow.model_validate({"name": "fan-out", "strategy": "pipelined", "chunk": 250, "tasks": [
        {"name": "split", "device": "a", "seconds": 4.0}, {"name": "left", "device": "b", "seconds": 2.0},
        {"name": "right", "device": "c", "seconds": 2.0}],
        "edges": [{"from": "split", "to": "left", "bytes": 1000}, {"from": "split", "to": "right", "bytes": 1000}]})
    result = flows.run(system, wf)
    # 4 chunks: split paces at 1 s a chunk, each branch takes its last chunk 0.5 s after it.
    assert result.chunks == 4 and result.timeline.makespan == pytest.approx(4.5, rel=1e-6)
    assert flows.run(system, wf, "staged").timeline.makespan == pytest.approx(6.0, rel=1e-6)
    with pytest.raises(BadValue, match="not a chain"):
        flows.chunk_sweep(system, wf, [250, 500])


def test_the_stage_fits_are_never_negative_and_the_model_builds_from_convex_copies():
    """Copies whose time grows faster than the chunk count (a convex set) fit a negative fixed part by
    plain least squares, which made a link of negative bandwidth the simulator refused (a traceback):
    the fit keeps both parts >= 0 and the model builds."""
    from xferlab.studies.deceval import fit_line, model

    convex = [(64, 2.0e-3), (16, 0.3e-3), (4, 0.2e-3)]
    w, o = fit_line(convex)
    assert w >= 0 and o > 0
    assert fit_line([(4, 1.0), (16, 1.0)]) == pytest.approx((1.0, 0.0))
    stats = [{"kind": "stage", "name": name, "chunks": n, "median_seconds": t, "size": 2**26, "depth": 2}
             for name in ("decompress", "integrate", "decompress-submit") for n, t in [(4, 0.09), (16, 0.091)]]
    stats += [{"kind": "stage", "name": "copy", "chunks": n, "median_seconds": t, "size": 2**26, "depth": 2}
              for n, t in convex]
    stats += [{"kind": "stage", "name": "handoff", "chunks": n, "median_seconds": n * 4e-5, "size": 2**26, "depth": 2}
              for n in (4, 16)]
    system, workflow, terms = model(stats)
    assert terms["copy"][0] >= 0 and system.links[0].link.startswith("simple:bandwidth=")

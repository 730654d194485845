"""DecEval for real (`xferlab study run deceval`, native/probe/deceval.cpp, studies/deceval.py): seed 000's
application runs on the OpenCL device, every flow validated, in two configurations (decompress-bound,
device-bound); the stages and the flows are runs of their own, the simulator predicts each flow from
the stage runs alone (held-out chunk sizes included) beside the sum and the max of its stages, and a
verdict says where it did not beat them; the simulator's finite buffers, copy-engine-less devices and
non-chain pipelines. Bad input tried: a chunk larger than the input (fit or held out), a --total above
the memory there is, a depth of 0, a budget too small for the run, an option of another study (and
--held-out on another), --repeats 0, a held-out chunk that is also a fit chunk, --evaluations 0 and above 4096, a
size that is not a whole number of doubles, --evaluations 0 and an unknown item (the probe), a negative
hand-off, a corrupted value at 1 and 16 evaluations (the validation fails the step)."""

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
from xferlab.studies.deceval import STAGES
from xferlab.system.models import System, Workflow

OPENCL, _ = devices("opencl")
needs_device = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (CI installs PoCL)")


STUDY_ARGS = ["study", "run", "deceval", "--total", "4MiB", "--chunks", "256KiB,1MiB", "--held-out", "128KiB,512KiB",
              "--evaluations", "1,16", "--repeats", "2", "--budget", "3m"]


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    """One small study, both configurations, into its own store: (its --json document, the store)."""
    from conftest import Cli

    store = tmp_path_factory.mktemp("deceval") / "d.duckdb"
    return Cli().json(*STUDY_ARGS, "--store", store), store


def _step_rows(store):
    """The study's rows by step key, read back from the store as the report does, and the runs by step."""
    with open_store(store, read_only=True) as db:
        runs = db.query("SELECT run_id, json_extract_string(params, '$.study.step') AS step FROM runs")
        return {r["step"]: db.samples(r["run_id"]) for r in runs}, {r["step"]: r["run_id"] for r in runs}


def _rounds(rows, what, k):
    """Every round's rows of the stages or flows runs of configuration k."""
    return [x for key, members in rows.items() if key.startswith(f"{what}-{k}-") for x in members]


STEPS = ["stages-1-1", "flows-1-1", "stages-1-2", "flows-1-2", "stages-16-1", "flows-16-1", "stages-16-2", "flows-16-2"]


@needs_device
def test_stages_and_flows_are_runs_of_their_own_and_every_flow_is_predicted(study_run, cli):
    doc, store = study_run
    # per configuration, two rounds (--repeats 2) of a stages run then a flows run
    assert [s["key"] for s in doc["steps"]] == STEPS
    assert all(s["status"] == "measured" for s in doc["steps"])
    rows, runs = _step_rows(store)
    assert set(rows) == set(STEPS) and len(set(runs.values())) == 8
    for key, members in rows.items():  # a stages run holds stage samples only, a flows run flow samples only
        what, k, _ = key.split("-")
        assert {r["params"]["kind"] for r in members} == {"stage" if what == "stages" else "flow"}
        assert {r["params"]["evaluations"] for r in members} == {int(k)}
    flows_seen = {(r["evaluations"], r["flow"], r["chunk_bytes"]) for r in doc["results"] if r["part"] == "flow"}
    pipelined = {128 * 2**10, 256 * 2**10, 512 * 2**10, 2**20}
    assert flows_seen == {(k, f, c) for k in (1, 16) for f, c in [("staged", 4 * 2**20), ("direct", 4 * 2**20)]
                          + [("pipelined", c) for c in pipelined]}
    for r in (r for r in doc["results"] if r["part"] == "flow"):
        # measured: the median of the flow's own validated repeats in the flows run, read back here
        values = sorted(x["value"] for x in _rounds(rows, "flows", r["evaluations"])
                        if x["mode"] == r["flow"] and x["size_bytes"] == r["chunk_bytes"] and not x["warmup"])
        assert len(values) == 2 and r["measured_seconds"] == pytest.approx(sum(values) / 2)
        assert r["relative_error"] == pytest.approx(r["predicted_seconds"] / r["measured_seconds"] - 1)
        # staged: one stage after the other, the sum; direct: the device reads the host's buffer in place, at
        # most as fast as its copy; pipelined: no better than perfect overlap, no worse than none plus the waits
        low, high = {"staged": (r["stage_sum_seconds"], r["stage_sum_seconds"]), "direct": (r["stage_sum_seconds"], 2 * r["stage_sum_seconds"]),
                     "pipelined": (r["stage_max_seconds"], r["stage_sum_seconds"] + r["chunks"] * 2e-3)}[r["flow"]]
        assert low * (1 - 1e-5) <= r["predicted_seconds"] <= high * (1 + 1e-5), r  # the link's rate: 6 digits
    assert {r["flow"] for r in doc["results"] if r["part"] == "stage"} == set(STAGES)
    assert any("the simulator beat both baselines" in n or "did not beat" in n or "cannot tell" in n
               for n in doc["notes"])
    # Run again, every step is reused and the table is the same.
    again = json.loads(cli(*STUDY_ARGS, "--store", store, "--json", check=0)[1])
    assert [s["status"] for s in again["steps"]] == ["reused"] * 8 and again["results"] == doc["results"]
    report = store.parent / "report.html"
    cli("report", "--store", store, "--output", report, check=0)
    text = report.read_text()
    assert "Study deceval (seed 000)" in text and "--held-out 131072,524288" in text  # --evaluations 1,16: the default
    assert "pipelined flows&#39; mean |error| simulator" in text or "pipelined flows' mean |error| simulator" in text


@needs_device
def test_held_out_chunk_sizes_are_in_no_fit(study_run):
    doc, store = study_run
    rows, _ = _step_rows(store)
    for k in (1, 16):
        fitted = {r["size_bytes"] for r in _rounds(rows, "stages", k)}
        assert fitted == {256 * 2**10, 2**20}
        table = [r for r in doc["results"] if r["evaluations"] == k]
        held = {r["chunk_bytes"] for r in table if r["part"] == "flow" and r["held_out"]}
        assert held == {128 * 2**10, 512 * 2**10, 4 * 2**20} and not held & fitted
        assert all(not r["held_out"] for r in table if r["part"] == "flow" and r["chunk_bytes"] in fitted)


@needs_device
def test_the_prediction_never_reads_a_flow_measurement(study_run):
    """The flows' samples scaled (3x) or replaced by noise: every prediction and baseline stays, only the
    measured column and the errors move. (Checked to fail with fit() fed the flow rows as well.)"""
    from xferlab.studies.deceval import table

    _, store = study_run
    rows, _ = _step_rows(store)
    before = table(rows)
    rng = np.random.default_rng(3)
    for change in (lambda v: 3 * v, lambda v: float(rng.uniform(1e-4, 1.0))):
        corrupted = {key: [{**r, "value": change(r["value"])} if key.startswith("flows-") else r for r in members]
                     for key, members in rows.items()}
        after = table(corrupted)
        assert len(after) == len(before)
        for b, a in zip(before, after):
            assert (a["part"], a["flow"], a["chunk_bytes"]) == (b["part"], b["flow"], b["chunk_bytes"])
            for key in ("predicted_seconds", "stage_sum_seconds", "stage_max_seconds", "configuration", "held_out"):
                assert a.get(key) == b.get(key), (key, a, b)
            if a["part"] == "flow":
                assert a["measured_seconds"] != b["measured_seconds"] and a["relative_error"] != pytest.approx(b["relative_error"])
    # and the stage rows do move it: the stages 2x slower, every prediction grows
    slower = {key: [{**r, "value": 2 * r["value"]} if key.startswith("stages-") else r for r in members]
              for key, members in rows.items()}
    for b, a in zip(before, table(slower)):
        if a["part"] == "flow":
            assert a["predicted_seconds"] == pytest.approx(2 * b["predicted_seconds"], rel=0.05)


@needs_device
def test_more_evaluations_per_element_make_the_device_the_slower_side(study_run):
    doc, _ = study_run
    stage = {(r["evaluations"], r["flow"], r["chunk_bytes"]): r["measured_seconds"] for r in doc["results"]
             if r["part"] == "stage"}
    # 16 times the integrand's evaluations on the same data: the integrate stage grows by several times,
    # the decompress stage does not (each run still validated pi, to the finer rule's bound)
    assert stage[(16, "integrate", 2**20)] > 4 * stage[(1, "integrate", 2**20)]
    assert stage[(16, "decompress", 2**20)] < 2 * stage[(1, "decompress", 2**20)]
    configs = {r["evaluations"]: r["configuration"] for r in doc["results"]}
    assert configs[1] == "x1 decompress-bound" and configs[16] == "x16 device-bound"


def _flow(evaluations, chunk, measured, predicted, summed, most, held_out=False):
    return {"configuration": f"x{evaluations}", "evaluations": evaluations, "device_share": 0.7, "part": "flow",
            "flow": "pipelined", "chunk_bytes": chunk, "chunks": 4, "held_out": held_out, "measured_seconds": measured,
            "predicted_seconds": predicted, "stage_sum_seconds": summed, "stage_max_seconds": most,
            "relative_error": predicted / measured - 1, "stage_sum_relative_error": summed / measured - 1,
            "stage_max_relative_error": most / measured - 1}


def test_the_verdict_names_each_flow_the_simulator_did_not_win():
    from xferlab.studies.deceval import notes, verdicts

    rows = [_flow(16, 2**20, 1.0, 1.02, 1.6, 0.9),                 # beats both
            _flow(16, 2**18, 1.0, 1.20, 1.6, 0.95, held_out=True),  # loses to max (5 % off against 20 %)
            _flow(1, 2**20, 1.0, 1.01, 1.03, 1.0)]                   # baselines within 5 %: no contest
    v = {x["evaluations"]: x for x in verdicts(rows)}
    assert (v[16]["compared"], v[16]["beaten"]) == (2, 1) and v[16]["lost"][0]["chunk_bytes"] == 2**18
    assert v[16]["held_out_worst"] == pytest.approx(0.2) and v[1]["held_out_worst"] is None
    assert v[16]["mean_abs_error"]["max"] == pytest.approx((0.1 + 0.05) / 2)
    text = notes(rows)
    assert "beat both baselines at 1 of 2 pipelined flows" in text[1]
    assert "did not beat the max of stages at 256 KiB chunks: simulator +20.0%, sum +60.0%, max -5.0%" in text[2]
    assert "within 5% of each other" in text[0] and "cannot tell the simulator from them" in text[0]
    # a tie is not a win
    assert verdicts([_flow(16, 2**20, 1.0, 1.05, 1.6, 0.95)])[0]["beaten"] == 0


@needs_device
def test_the_lab_runs_the_configurations_its_share_holds(tmp_path):
    """DecEval's share of the lab's budget: both configurations, one (said in the note) or none (said why)."""
    from xferlab.lab.steps import deceval_stage

    entry, failure = deceval_stage(1.0, tmp_path / "s.duckdb")
    assert failure is None and entry["skipped"].startswith("needs about") and "its share of the budget is 1 s" in entry["skipped"]
    entry, failure = deceval_stage(15.0, tmp_path / "s.duckdb")  # the default lab budget's share (5 % of 5 min)
    assert failure is None, failure
    assert "only the x1 configuration" in entry["note"] and {r["configuration"] for r in entry["flows"]} == {"x1 decompress-bound"}
    assert entry["verdicts"][0].startswith("x1 decompress-bound") and len(entry["run_ids"]) == 4  # 2 rounds


@needs_device
@pytest.mark.parametrize("evaluations", [1, 16])
def test_a_corrupted_value_fails_the_validation(evaluations):
    plan = DecevalPlan(size=2**20, chunks=[2**18], repeats=1, evaluations=evaluations)
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
    code, out, err = cli("study", "run", "deceval", "--total", "1MiB", "--chunks", "2MiB", check=None)
    assert code == 2 and "chunk 2 MiB is larger than the input (1 MiB)" in err
    code, out, err = cli("study", "run", "deceval", "--total", "1TiB", check=None)
    assert code == 2 and err.startswith("error: --total 1 TiB needs about") and "available" in err
    code, out, err = cli("study", "run", "deceval", "--depth", "0", check=None)
    assert code == 2 and "--depth 0" in err
    code, out, err = cli("study", "run", "deceval", "--budget", "1s", "--store", tmp_path / "b.duckdb", check=None)
    assert code == 2 and "too small to run one step of the deceval study" in err
    code, out, err = cli("study", "run", "deceval", "--count", "3", check=None)
    assert code == 2 and "--count does not apply to the deceval study" in err
    code, out, err = cli("study", "run", "deceval", "--chunks", "256KiB,1MiB", "--held-out", "1MiB", check=None)
    assert code == 2 and err.strip() == ("error: --held-out 1 MiB is also a fit chunk size (--chunks); allowed: "
                                         "held-out chunk sizes that no stage is measured at")
    code, out, err = cli("study", "run", "deceval", "--total", "1MiB", "--chunks", "256KiB", "--held-out", "2MiB", check=None)
    assert code == 2 and "chunk 2 MiB is larger than the input (1 MiB)" in err
    code, out, err = cli("study", "run", "deceval", "--evaluations", "0", check=None)
    assert code == 2 and "--evaluations '0' is not a count" in err
    code, out, err = cli("study", "run", "deceval", "--evaluations", "1,5000", check=None)
    assert code == 2 and "--evaluations 5000: the integrand's evaluations per element, 1 to 4096" in err
    code, out, err = cli("study", "run", "deceval", "--repeats", "0", check=None)
    assert code == 2 and "--repeats 0: rounds of a stages run and a flows run, 1 to 100" in err
    code, out, err = cli("study", "run", "launch", "--held-out", "1MiB", check=None)
    assert code == 2 and "--held-out does not apply to the launch study; it applies to: deceval" in err


def test_the_probe_refuses_a_size_that_is_not_whole_doubles():
    run = run_probe(["deceval", "--size", "10001"], timeout=30)
    assert run.returncode == 2 and "not a whole number of doubles" in (run.failure or "")
    run = run_probe(["deceval", "--evaluations", "0"], timeout=30)
    assert run.returncode == 2 and "evaluations" in (run.failure or "")
    run = run_probe(["deceval", "--items", "stages,flows"], timeout=30)
    assert run.returncode == 2 and "flows" in (run.failure or "")


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
    from xferlab.studies.deceval import fit, fit_line, model

    convex = [(64, 2.0e-3), (16, 0.3e-3), (4, 0.2e-3)]
    w, o = fit_line(convex)
    assert w >= 0 and o > 0
    assert fit_line([(4, 1.0), (16, 1.0)]) == pytest.approx((1.0, 0.0))
    def stage(name, n, t):
        return {"kind": "stage", "name": name, "chunks": n, "chunk_bytes": 2**26 // n, "median_seconds": t,
                "size": 2**26, "depth": 2}

    stats = [stage(name, n, t) for name in ("decompress", "integrate", "decompress-submit")
             for n, t in [(4, 0.09), (16, 0.091)]]
    stats += [stage("copy", n, t) for n, t in convex] + [stage("handoff", n, n * 4e-5) for n in (4, 16)]
    m = fit(stats)
    system, workflow = model(m)
    assert m.lines["copy"][0] >= 0 and system.links[0].link.startswith("simple:bandwidth=")
    with pytest.raises(ValueError, match="stage rows only"):
        fit(stats + [{**stats[0], "kind": "flow"}])

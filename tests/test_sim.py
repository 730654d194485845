"""The flow simulator: the SimPy engine's semantics, and the fast path against the engine and seed 000."""

import numpy as np
import pytest

from xferlab.errors import BadValue
from xferlab.links import SimpleLink
from xferlab.sim import (
    Op, Resource, balanced_formula, ops_for_pipeline, pipeline, pipeline_makespan, pipeline_uniform,
    simulate,
)


def engine_finish_times(stage_seconds):
    """Simulate a linear pipeline with the engine; finish times as a (stages, chunks) array."""
    names = [f"stage{s}" for s in range(stage_seconds.shape[0])]
    timeline = simulate(*ops_for_pipeline(names, stage_seconds))
    ends = [[timeline.spans[f"{name}#{i}"].end for i in range(stage_seconds.shape[1])] for name in names]
    return np.array(ends), timeline


@pytest.mark.parametrize("seed", range(50))
def test_fast_path_equals_engine_on_random_pipelines(seed):
    rng = np.random.default_rng(seed)
    stages, chunks = rng.integers(1, 6), rng.integers(1, 201)
    t = rng.lognormal(mean=-9.0, sigma=1.5, size=(stages, chunks))
    fast = pipeline(t)
    engine, timeline = engine_finish_times(t)
    np.testing.assert_allclose(fast, engine, rtol=1e-9, atol=0)
    assert pipeline_makespan(t) == pytest.approx(timeline.makespan, rel=1e-9)
    assert fast[-1, -1] == pytest.approx(timeline.makespan, rel=1e-9)


def recurrence(t):
    """f_s[i] = max(f_{s-1}[i], f_s[i-1]) + t_s[i], as a plain loop."""
    f = np.zeros(t.shape)
    for s in range(t.shape[0]):
        for i in range(t.shape[1]):
            f[s, i] = max(f[s - 1, i] if s else 0.0, f[s, i - 1] if i else 0.0) + t[s, i]
    return f


@pytest.mark.parametrize("block", [1, 2, 7, 64, None])
def test_blocked_scan_equals_the_recurrence(monkeypatch, block):
    from xferlab.sim import fastpath

    if block:
        monkeypatch.setattr(fastpath, "BLOCK", block)
    rng = np.random.default_rng(block or 0)
    for _ in range(10):
        t = rng.lognormal(size=(rng.integers(1, 6), rng.integers(1, 300)))
        expected = recurrence(t)
        np.testing.assert_allclose(pipeline(t), expected, rtol=1e-12, atol=0)
        assert pipeline_makespan(t) == pytest.approx(expected[-1, -1], rel=1e-12)


@pytest.mark.parametrize("d, n", [(1, 1), (3, 4), (3, 100), (5, 37)])
def test_balanced_pipeline_is_the_seed_formula(d, n):
    t_stage = 70.9e-3 / 7  # any value: the seed's Figure 6 has d = 3, n = 4
    expected = (d + n - 1) * t_stage
    assert balanced_formula(d, n, t_stage, 0.0) == pytest.approx(expected, rel=1e-12)
    stage_seconds = np.full(d, t_stage)
    assert pipeline_uniform(stage_seconds, n)[-1, -1] == pytest.approx(expected, rel=1e-12)
    assert pipeline_makespan(stage_seconds, n) == pytest.approx(expected, rel=1e-12)
    _, timeline = engine_finish_times(np.full((d, n), t_stage))
    assert timeline.makespan == pytest.approx(expected, rel=1e-12)
    assert balanced_formula(d, n, t_stage, s=0.5) == pytest.approx(expected + 0.5)


def test_uniform_closed_form_equals_scan():
    t = np.array([3.0, 7.0, 2.0, 9.0, 1.0])
    full = pipeline_uniform(t, 50)
    i = np.arange(50)
    closed = np.cumsum(t)[:, None] + i * np.maximum.accumulate(t)[:, None]
    np.testing.assert_allclose(full, closed, rtol=1e-12)
    assert pipeline_makespan(t, 50) == pytest.approx(full[-1, -1], rel=1e-12)
    assert pipeline_makespan(t, 0) == 0.0 and pipeline(np.zeros((3, 0))).shape == (3, 0)


def test_fast_path_rejects_bad_durations():
    with pytest.raises(BadValue, match="stage 1, chunk 2 is -1.0"):
        pipeline(np.array([[1.0, 1.0, 1.0], [1.0, 1.0, -1.0]]))
    with pytest.raises(BadValue, match="nan"):
        pipeline_makespan(np.array([[1.0, np.nan]]))
    with pytest.raises(BadValue, match="shape"):
        pipeline(np.ones(3))
    with pytest.raises(BadValue, match="chunks"):
        pipeline_uniform([1.0], -1)


def test_two_equal_transfers_share_a_link():
    link = SimpleLink(bandwidth="10GB/s")  # no latency: time = bytes / rate
    n = 1e9
    one = float(link.time(n))
    alone = simulate([Resource("pcie.h2d")], [Op("a", "pcie.h2d", one, bytes=n, kind="transfer")])
    assert alone.makespan == pytest.approx(one)
    ops = [Op(name, "pcie.h2d", one, bytes=n, kind="transfer") for name in ("a", "b")]
    both = simulate([Resource("pcie.h2d")], ops)
    assert both.spans["a"].end == pytest.approx(2 * one, rel=1e-12)
    assert both.spans["b"].end == pytest.approx(2 * one, rel=1e-12)
    usage = both.resources["pcie.h2d"]
    assert usage.busy_seconds == pytest.approx(2 * n / link.bandwidth, rel=1e-12)
    assert usage.bytes == 2 * n and usage.ops == 2 and usage.utilization == pytest.approx(1.0)
    # Two independent channels: both run at full speed.
    two = simulate([Resource("pcie.h2d", capacity=2)], ops)
    assert two.makespan == pytest.approx(one)


def test_fair_share_rates_change_when_transfers_start_and_end():
    # a (4 s alone) starts at 0; b (1 s alone) starts at 2 after a 2 s task. From 2, each gets half:
    # b finishes at 4 (1 s of work at rate 1/2), a has 1 s left at 4, alone again: it finishes at 5.
    ops = [Op("a", "link", 4.0, kind="transfer"), Op("wait", "cpu", 2.0),
           Op("b", "link", 1.0, after=("wait",), kind="transfer")]
    timeline = simulate([Resource("link"), Resource("cpu")], ops)
    assert timeline.spans["b"].start == pytest.approx(2.0)
    assert timeline.spans["b"].end == pytest.approx(4.0)
    assert timeline.spans["a"].end == pytest.approx(5.0)
    assert timeline.resources["link"].busy_seconds == pytest.approx(5.0)


def test_device_capacity():
    ops = [Op(name, "gpu", 1.0) for name in ("a", "b", "c")]
    two = simulate([Resource("gpu", capacity=2)], ops)
    assert (two.spans["a"].end, two.spans["b"].end, two.spans["c"].end) == (1.0, 1.0, 2.0)
    one = simulate([Resource("gpu")], ops)
    assert [one.spans[x].start for x in "abc"] == [0.0, 1.0, 2.0]  # FIFO in op order
    assert one.resources["gpu"].busy_seconds == 3.0 and one.critical_path == ["a", "b", "c"]


def test_ready_ties_are_broken_by_op_order():
    # "late" and "early" become ready at the same instant; "early" is listed first and runs first.
    ops = [Op("p", "cpu", 1.0), Op("q", "cpu2", 1.0),
           Op("early", "gpu", 1.0, after=("q",)), Op("late", "gpu", 1.0, after=("p",))]
    resources = [Resource("cpu"), Resource("cpu2"), Resource("gpu")]
    timeline = simulate(resources, ops)
    assert timeline.spans["early"].start == 1.0 and timeline.spans["late"].start == 2.0
    assert timeline.critical_path == ["q", "early", "late"]


def test_critical_path_of_a_diamond():
    ops = [Op("load", "cpu", 1.0), Op("left", "fpga", 2.0, after=("load",)),
           Op("right", "gpu", 5.0, after=("load",)), Op("join", "cpu", 1.0, after=("left", "right"))]
    timeline = simulate([Resource("cpu"), Resource("fpga"), Resource("gpu")], ops)
    assert timeline.makespan == 7.0
    assert timeline.critical_path == ["load", "right", "join"]
    assert timeline.spans["join"].start == 6.0
    assert timeline.resources["cpu"].busy_seconds == 2.0
    assert timeline.resources["cpu"].utilization == pytest.approx(2 / 7)
    assert timeline.start.tolist() == [0.0, 1.0, 1.0, 6.0] and timeline.end.tolist() == [1.0, 3.0, 6.0, 7.0]
    assert timeline.spans["right"] == ("gpu", 1.0, 6.0, "task", 0.0)


def test_empty_flow():
    timeline = simulate([Resource("cpu")], [])
    assert timeline.makespan == 0.0 and timeline.critical_path == [] and timeline.resources["cpu"].ops == 0


@pytest.mark.parametrize("ops, message", [
    ([Op("a", "cpu", 1.0, after=("c",)), Op("b", "cpu", 1.0, after=("a",)), Op("c", "cpu", 1.0, after=("b",))],
     r"cycle: [abc] -> [abc] -> [abc] -> [abc]"),
    ([Op("a", "cpu", 1.0, after=("a",))], r"op 'a'.*cycle: a -> a"),
    ([Op("a", "cpus", 1.0)], r"op 'a': resource = 'cpus' is not defined; did you mean cpu"),
    ([Op("a", "cpu", 1.0, after=("zz",))], r"op 'a': after = 'zz' is not an op"),
    ([Op("a", "cpu", -1.0)], r"op 'a': seconds = -1.0"),
    ([Op("a", "cpu", float("nan"))], r"op 'a': seconds = nan"),
    ([Op("a", "cpu", 1.0, bytes=-5)], r"op 'a': bytes = -5"),
    ([Op("a", "cpu", 1.0, kind="copy")], r"op 'a': kind = 'copy'"),
    ([Op("a", "cpu", 1.0), Op("a", "cpu", 1.0)], r"op 'a': name is defined twice"),
    ([Op("a", "cpu", 1.0), Op("b", "cpu", 1.0, kind="transfer")], r"op 'b': kind = 'transfer' on resource 'cpu'"),
])
def test_bad_input_names_the_op_and_field(ops, message):
    with pytest.raises(BadValue, match=message):
        simulate([Resource("cpu")], ops)


def test_bad_resources():
    with pytest.raises(BadValue, match="resource 'cpu': capacity = 0"):
        simulate([Resource("cpu", capacity=0)], [])
    with pytest.raises(BadValue, match="resource 'cpu': name is defined twice"):
        simulate([Resource("cpu"), Resource("cpu")], [])


def test_ops_for_pipeline_checks_its_input():
    # Bad input: a resource used by two stages; the message names the stage and the resource only
    # (it used to print the whole list: megabytes for a long chain).
    with pytest.raises(BadValue, match="stage 3 of 3 uses 'a' again") as info:
        ops_for_pipeline(["a", "b", "a"], np.ones((3, 3)))
    assert "'b'" not in str(info.value)
    with pytest.raises(BadValue, match="shape"):
        ops_for_pipeline(["a"], np.ones((2, 3)))
    resources, ops = ops_for_pipeline(["fpga", "cxl"], np.ones((2, 2)), stage_bytes=64)
    assert [op.name for op in ops] == ["fpga#0", "cxl#0", "fpga#1", "cxl#1"]
    assert ops[3].after == ("fpga#1",) and ops[3].bytes == 64.0
    timeline = simulate(resources, ops)
    assert timeline.resources["cxl"].bytes == 128.0
    assert timeline.rows()[0] == {"op": "fpga#0", "resource": "fpga", "kind": "task", "start_seconds": 0.0,
                                  "end_seconds": 1.0, "size_bytes": 64.0}


def test_transfers_of_different_sizes_started_together_share_fairly():
    # Processor sharing from time 0: the k-th smallest of n transfers ends at
    # f_k = f_{k-1} + (n - k + 1) * (w_k - w_{k-1}); the link is busy for the sum of the works.
    works = np.random.default_rng(5).lognormal(size=7)
    ops = [Op(f"x{k}", "nvlink", float(w), kind="transfer") for k, w in enumerate(works)]
    timeline = simulate([Resource("nvlink")], ops)
    w = np.sort(works)
    expected = np.cumsum((len(w) - np.arange(len(w))) * np.diff(np.r_[0.0, w]))
    np.testing.assert_allclose(np.sort(timeline.end), expected, rtol=1e-12)
    assert timeline.resources["nvlink"].busy_seconds == pytest.approx(works.sum(), rel=1e-12)

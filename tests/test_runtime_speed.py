"""The emulated device's compute speed and seed 002's P/O (issue 29), and the opportunity statistics' window and
issue-to-use time (runtime/stream.py). Real runs, small: cg on the emulated bus at latency 0, the host spending
--work rounds on every operation and the device work / speed on every request. Bad input tried: a device speed of
0, below 0, not a number, past the maximum; negative work; --device-speed with --backend opencl; a window of 0
(open_runtime, `runtime bench`, `study run offload`, the statistics)."""

from __future__ import annotations

import math

import pytest

from xferlab.advise.offload import break_even_speed, offload
from xferlab.errors import BadValue
from xferlab.links.simple import SimpleLink
from xferlab.runtime import DEFAULT_WORK, device_work, open_runtime
from xferlab.runtime.stream import statistics


def test_the_model_break_even_speed_is_where_p_over_o_is_one():
    """s* = T_cpu / (T_cpu - T_lat): at s*, seed 000's verdict (advise.offload) has P/O = 1, above it pays."""
    host, lat = 3e-3, 1e-3
    s = break_even_speed(host, lat)
    assert s == pytest.approx(1.5)
    link = SimpleLink(bandwidth=1e30, latency=lat / 2)  # the task's T_lat as two legs: d_in + d_out
    assert offload(link, 1, 1, host, host / s).p_over_o == pytest.approx(1.0, rel=1e-6)
    assert offload(link, 1, 1, host, host / (1.1 * s)).pays and not offload(link, 1, 1, host, host / (0.9 * s)).pays
    assert break_even_speed(1e-3, 1e-3) is None and break_even_speed(1e-3, 2e-3) is None  # the bus alone costs more
    with pytest.raises(BadValue, match="non-negative"):
        break_even_speed(-1.0, 0.0)


def test_work_and_speed_give_the_rounds_of_each_side():
    assert device_work(None, None) == (0, 0)  # the emulator as it was: no work on either side
    assert device_work(None, 4.0) == (DEFAULT_WORK, DEFAULT_WORK // 4)
    assert device_work(1000, 3.0) == (1000, 333) and device_work(512, None) == (512, 512)


def test_p_over_o_passes_one_above_the_break_even_speed():
    """gcd (one host read at the end) in forward mode on a free bus, the host spending 8192 rounds on every
    operation: a device 8x the host beats the host (P/O > 1: the offloaded run is faster), one 4x slower does
    not; the device thread's measured busy time follows the work it was given; the model's break-even speed
    lies between, and so does the measured one."""
    from xferlab.runtime.bench import bench, break_even

    rows = bench("emulated", [0.0], ["gcd"], ["forward"], size=8, repeats=1, speeds=[0.25, 8.0], work=8192)
    slow, fast = sorted(rows, key=lambda r: r["device_speed"])
    assert (slow["work_rounds"], slow["device_rounds"], fast["device_rounds"]) == (8192, 32768, 1024)
    assert slow["pays"] is False and fast["pays"] is True, (slow, fast)
    assert fast["seconds"] < fast["host_seconds"] and slow["seconds"] > slow["host_seconds"]
    assert slow["p_over_o"] is None or slow["p_over_o"] < 1, slow  # empty where the run hid the bus in the noise
    assert fast["p_over_o"] is None or fast["p_over_o"] > 1, fast
    assert slow["device_busy_seconds"] > 8 * fast["device_busy_seconds"]  # 32x the rounds, the interpreter besides
    assert slow["measured_device_speed"] < 1 < fast["measured_device_speed"]
    (even,) = break_even(rows)
    assert 0.25 < even["break_even_speed"] < 8.0 and even["measured_break_even_speed"] == pytest.approx(math.sqrt(2.0))
    # the model: T_lat a round trip per wait (one, here) and the records at the bus's bandwidth
    assert even["break_even_speed"] == pytest.approx(fast["host_seconds"] / (fast["host_seconds"]
                                                                              - fast["model_communication_seconds"]),
                                                     rel=0.01)


def _traced(program, **options):
    rt = open_runtime("emulated", "forward", latency=0.0, **options)
    rt.trace()
    program(rt)
    traced = rt.traced
    rt.close()
    return traced


def _fan(rt):
    x = rt.posit(2.0)
    r1, r2, r3, r4 = x * x, x + x, x - x, x * x  # 1-4: independent
    r5 = r1 + r2                                 # 5: 1, 2
    r6 = r3 + r4                                 # 6: 3, 4
    r7 = r5 * r6                                 # 7: 5, 6
    x + x                                        # 8: independent, never used
    float(r7)


def test_the_window_changes_the_parallelism_as_counted_by_hand():
    t = _traced(_fan)
    assert t["producers"][12:21] == [1, 2, 0, 3, 4, 0, 5, 6, 0]
    # window 8 (the default, the seed's): levels {1, 2, 3, 4, 8}, {5, 6}, {7}: 8 / 3
    assert statistics(t["producers"], t["read_at"])["level_width_mean"] == pytest.approx(8 / 3)
    # window 4: {1..4} one level (4); {5..8}: 5, 6, 8 ready (their inputs came before), 7 after: 4 / 2 = 2
    assert statistics(t["producers"], t["read_at"], window=4)["level_width_mean"] == pytest.approx(3.0)
    # window 2: every pair is one level ({7, 8}: 7's inputs are in the window before)
    assert statistics(t["producers"], t["read_at"], window=2)["level_width_mean"] == pytest.approx(2.0)
    assert statistics(t["producers"], t["read_at"], window=32)["window"] == 32
    with pytest.raises(BadValue, match="--window 0 is not allowed"):
        statistics(t["producers"], t["read_at"], window=0)


def test_issue_to_use_distance_in_time():
    # by hand: request 1 used by 2 (issued at 1.0 s), 2 by 3 (at 3.0 s), 3 read by the host at 3.5 s
    s = statistics([0, 0, 0, 1, 0, 0, 2, 1, 0], [0, 0, 3], issued_seconds=[0.0, 1.0, 3.0],
                   read_seconds=[-1.0, -1.0, 3.5])
    assert s["use_distance_mean_seconds"] == pytest.approx(3.5 / 3)
    assert (s["use_distance_median_seconds"], s["use_distance_max_seconds"]) == (1.0, 2.0)
    with pytest.raises(BadValue, match="issue times"):
        statistics([0, 0, 0], [0], issued_seconds=[], read_seconds=[])
    # the runtime's own timestamps: issues in order, the host's read after its request's issue
    t = _traced(_fan)
    issued, read = t["issued_seconds"], t["read_seconds"]
    assert len(issued) == len(read) == 8 and issued == sorted(issued) and issued[0] >= 0
    assert read[6] >= issued[6] and [r for k, r in enumerate(read) if k != 6] == [-1.0] * 7
    real = statistics(t["producers"], t["read_at"], issued_seconds=issued, read_seconds=read)
    assert 0 <= real["use_distance_median_seconds"] <= real["use_distance_max_seconds"] <= read[6] - issued[0]


@pytest.mark.parametrize("kwargs, message", [
    ({"device_speed": 0.0}, "--device-speed 0 is not allowed"),
    ({"device_speed": -2.0}, "--device-speed -2 is not allowed"),
    ({"device_speed": float("nan")}, "--device-speed nan is not allowed"),
    ({"device_speed": 1e9}, "at most"),
    ({"work": -1}, "--work -1 is not allowed"),
    ({"backend": "opencl", "device_speed": 2.0}, "--backend opencl computes at its own speed"),
])
def test_bad_speed_and_work(kwargs, message):
    with pytest.raises(BadValue, match=message):
        open_runtime(**kwargs)


@pytest.mark.parametrize("args, message", [
    (["runtime", "bench", "--device-speed", "0"], "--device-speed 0 is not allowed"),
    (["runtime", "bench", "--device-speed", "1,-4"], "--device-speed -4 is not allowed"),
    (["runtime", "bench", "--device-speed", "fast"], "--device-speed 'fast' is not a number"),
    (["runtime", "bench", "--work", "-5"], "--work -5 is not allowed"),
    (["runtime", "bench", "--backend", "opencl", "--device-speed", "2"], "--device-speed sets the emulated bus"),
    (["study", "run", "offload", "--window", "0"], "--window 0 is not allowed"),
    (["study", "run", "offload", "--device-speeds", "0"], "--device-speeds 0 is not allowed"),
    (["study", "run", "deceval", "--window", "8"], "--window does not apply to the deceval study"),
])
def test_bad_input_is_one_line_and_stores_nothing(cli, tmp_path, args, message):
    code, out, err = cli(*args, "--store", tmp_path / "s.duckdb", check=None)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (code, err)
    assert not (tmp_path / "s.duckdb").exists()

"""Adaptive repetition (--precision, --max-time): the probe's order-statistic interval of the median
(native/probe/precision.hpp) against exact binomial ranks and xferlab.stats.median_interval, its stopping
rule, real PoCL and STREAM runs that stop by it, and the bad values the probe and the CLI refuse."""

import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from xferlab.errors import BadValue
from xferlab.measure import precision
from xferlab.measure.device import devices
from xferlab.measure.probe import run_probe
from xferlab.stats import median_interval

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "precision_driver.cpp"
IN_CI = os.environ.get("CI") == "true"


def exact_rank(n):
    """The largest l with P(Binomial(n, 1/2) <= l - 1) <= 0.025, in exact integer arithmetic (0: none)."""
    total, cdf, rank = 2**n, 0, 0
    for k in range(n):
        cdf += math.comb(n, k)
        if 40 * cdf > total:  # cdf / 2^n > 0.025
            break
        rank = k + 1
    return rank


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None:
        if IN_CI:
            pytest.fail("no g++ in CI")
        pytest.skip("no g++ on this machine (make test's sysdeps installs it)")
    exe = tmp_path_factory.mktemp("precision") / "precision_driver"
    built = subprocess.run([compiler, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "native" / "probe"),
                            str(DRIVER), "-o", str(exe)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return exe


def intervals(driver, samples):
    out = subprocess.run([str(driver), "interval"], input="".join(" ".join(map(repr, s)) + "\n" for s in samples),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [(int(n), int(rank), float(med), float(lo), float(hi)) for n, rank, med, lo, hi in map(str.split, out)]


def test_cpp_interval_matches_exact_ranks_and_python(driver):
    rng = random.Random(7)
    sizes = list(range(1, 70)) + [99, 100, 101, 257, 1000, 4097]
    samples = []
    for n in sizes:  # skewed timings, some with many ties (a coarse clock)
        draw = [rng.lognormvariate(-10, 0.6) for _ in range(n)]
        samples.append([round(v, 6) for v in draw] if n % 3 == 0 else draw)
    for data, (n, rank, med, lo, hi) in zip(samples, intervals(driver, samples)):
        assert n == len(data) and rank == exact_rank(n), n
        ordered = sorted(data)
        py_lo, py_hi = median_interval(data)
        if rank == 0:  # below 6 samples no interval reaches 95 %
            assert n < 6 and math.isnan(lo) and math.isnan(hi) and math.isnan(py_lo) and math.isnan(py_hi)
            continue
        assert (lo, hi) == (ordered[rank - 1], ordered[n - rank]) == (py_lo, py_hi), n
        assert lo <= med <= hi
        assert med == (ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)
    assert exact_rank(6) == 1 and exact_rank(5) == 0  # 2^-6 <= 0.025 < 2^-5


def test_large_n_uses_the_normal_approximation_within_one_rank(driver):
    # Above 100,000 samples the probe uses floor(n/2 + 1/2 - 1.96 sqrt(n)/2) for the rank; Python's exact one agrees.
    data = [float(i) for i in range(100_001)]  # x(k) = k - 1: the interval's ends are its ranks
    ((n, rank, med, lo, hi),) = intervals(driver, [data])
    py_lo, py_hi = median_interval(data)
    assert n == 100_001 and lo == rank - 1 and hi == n - rank and med == 50_000
    assert abs(lo - py_lo) <= 1 and abs(hi - py_hi) <= 1


def repeat(driver, values, min_it, max_it, min_time=0.0, target=0.0, max_time=0.0):
    out = subprocess.run([str(driver), "repeat", str(min_it), str(max_it), repr(min_time), repr(target), repr(max_time)],
                         input="\n".join(map(repr, values)) + "\n", capture_output=True, text=True, check=True).stdout
    stopped, iterations, *rest = out.split()
    return stopped, int(iterations), [float(x) for x in rest]


def test_fixed_loop_counts_as_before(driver):
    # Without a target: at least MIN, then on until MIN_TIME of work, at most MAX (the old transfer loop).
    assert repeat(driver, [1e-3] * 100, 5, 1000)[:2] == ("fixed", 5)
    assert repeat(driver, [1e-3] * 100, 5, 1000, min_time=0.02)[:2] == ("fixed", 20)
    assert repeat(driver, [1e-3] * 100, 5, 8, min_time=0.02)[:2] == ("fixed", 8)
    assert repeat(driver, [1e-3] * 100, 10, 3)[:2] == ("fixed", 3)  # a cap below the minimum wins, as before


def test_adaptive_loop_stops_by_precision_cap_or_time(driver):
    rng = random.Random(3)
    quiet = [1e-3 * (1 + 0.01 * rng.random()) for _ in range(5000)]
    stopped, n, (med, lo, hi, rhw) = repeat(driver, quiet, 5, 5000, target=0.02)
    assert stopped == "precision" and 6 <= n <= 10 and rhw <= 0.02 and lo <= med <= hi
    noisy = [1e-3 * rng.lognormvariate(0, 1.0) for _ in range(5000)]
    stopped, n, (*_, rhw) = repeat(driver, noisy, 5, 300, target=0.001)
    assert stopped == "max-iterations" and n == 300 and rhw > 0.001
    stopped, n, _ = repeat(driver, noisy, 5, 5000, target=0.001, max_time=0.05)
    assert stopped == "max-time" and 0.05 <= sum(noisy[:n]) < 0.05 + max(noisy[:n])
    # Tighter targets need more samples: the half-width shrinks about as 1/sqrt(n).
    assert repeat(driver, noisy, 5, 5000, target=0.05)[1] > repeat(driver, noisy, 5, 5000, target=0.2)[1]


FOUND, WHY = devices("opencl")
needs_device = pytest.mark.skipif(not FOUND and not IN_CI, reason=f"no OpenCL device here: {WHY}")


@needs_device
def test_pocl_copies_report_how_each_point_stopped():
    max_time = 0.05
    run = run_probe(["transfer", "--kinds", "pinned", "--directions", "h2d,d2h", "--sizes", "64,65536,1048576",
                     "--iterations", "5", "--max-iterations", "100000", "--precision", "0.02", "--max-time", str(max_time)],
                    timeout=120)
    assert run.ok, run.failure
    points = [r for r in run.records if r.get("record") == "point"]
    assert len(points) == 6
    for p in points:
        samples = [r["host_seconds"] for r in run.records if r.get("record") == "sample" and
                   (r["direction"], r["size_bytes"]) == (p["direction"], p["size_bytes"])]
        assert p["stopped"] in ("precision", "max-time", "max-iterations") and p["iterations"] == len(samples) >= 5
        assert p["precision"] == 0.02
        # max-time is respected: the point stops within one copy of it
        assert math.isclose(p["timed_seconds"], sum(samples), rel_tol=1e-6)
        assert p["timed_seconds"] < max_time + max(samples)
        if p["stopped"] == "precision":
            assert p["relative_half_width"] <= 0.02
        lo, hi = median_interval(samples)
        assert (p["median_ci_low_seconds"], p["median_ci_high_seconds"]) == pytest.approx((lo, hi), rel=1e-9)


@needs_device
def test_measure_device_json_shows_the_interval_and_stopped(cli, tmp_path):
    out = cli.json("measure", "device", "--kinds", "pinned", "--directions", "h2d", "--sizes", "64B,4KiB", "--chunks", "",
                   "--no-launch", "--precision", "5%", "--max-time", "100ms", "--store", tmp_path / "s.duckdb")
    rows = [r for r in out["results"] if r["test"] == "transfer"]
    assert len(rows) == 2
    for r in rows:
        assert r["stopped"] in ("precision", "max-time", "max-iterations")
        assert r["median_ci_low_seconds"] <= r["median_seconds"] <= r["median_ci_high_seconds"]
        assert r["median_ci_low_bytes_per_second"] <= r["median_bytes_per_second"] <= r["median_ci_high_bytes_per_second"]
    assert out["overview"][0]["latency_ci_low_seconds"] <= out["overview"][0]["latency_seconds"]


def test_stream_with_a_loose_target_stops_by_precision():
    # STREAM on 8 MiB arrays is quiet enough for ±20 % within a few iterations on any machine.
    run = run_probe(["stream", "--size", str(8 << 20), "--kernels", "copy,triad", "--iterations", "3",
                     "--precision", "0.2", "--max-time", "5"], timeout=120)
    assert run.ok, run.failure
    points = {p["kernel"]: p for p in run.records if p.get("record") == "point"}
    assert set(points) == {"copy", "triad"}
    for kernel, p in points.items():
        timed = [r for r in run.records if r.get("record") == "sample" and r["kernel"] == kernel and not r["warmup"]]
        assert p["stopped"] == "precision" and p["relative_half_width"] <= 0.2 and p["iterations"] == len(timed) >= 6
    assert next(r for r in run.records if r.get("record") == "validation")["ok"]


def test_without_a_target_stream_runs_its_fixed_count():
    run = run_probe(["stream", "--size", str(4 << 20), "--kernels", "copy", "--iterations", "4"], timeout=60)
    assert run.ok and len([r for r in run.records if r.get("record") == "sample"]) == 4
    (point,) = [r for r in run.records if r.get("record") == "point"]
    assert point["stopped"] == "fixed" and point["iterations"] == 3 and point["precision"] is None


def test_latency_points_respect_max_time():
    run = run_probe(["latency", "--sizes", "4096,262144", "--min-time", "0.002", "--repeats", "3",
                     "--precision", "0.0001", "--max-time", "0.05"], timeout=60)
    assert run.ok, run.failure
    points = [r for r in run.records if r.get("record") == "point"]
    assert len(points) == 2
    for p in points:  # a 0.01 % target is out of reach: each size stops at its time limit, at the first
        # sample that reaches it (how far past depends on that sample's length, which a loaded machine stretches)
        samples = [r for r in run.records if r.get("record") == "sample" and r["size_bytes"] == p["size_bytes"]]
        last = samples[-1]["latency_seconds"] * samples[-1]["loads"]
        assert p["stopped"] == "max-time" and len(samples) == p["iterations"]
        assert p["timed_seconds"] >= 0.05 > p["timed_seconds"] - last * (1 + 1e-9)


@pytest.mark.parametrize("value", ["0", "1", "-0.1", "1.5", "abc", "nan"])
def test_probe_refuses_bad_precision(value):
    """Bad input: a --precision outside (0, 1) or not a number; the probe exits 2 naming it."""
    run = run_probe(["stream", "--size", "4096", "--precision", value], timeout=30)
    assert run.returncode == 2 and f"--precision '{value}'" in run.failure


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1e9"])
def test_probe_refuses_bad_max_time(value):
    """Bad input: a --max-time that is not a positive number of seconds up to a day; exit 2 naming it."""
    run = run_probe(["latency", "--sizes", "4096", "--max-time", value], timeout=30)
    assert run.returncode == 2 and f"--max-time '{value}'" in run.failure


def test_parse_precision_accepts_percent_and_fraction():
    assert precision.parse_precision("2%") == pytest.approx(0.02)
    assert precision.parse_precision("0.02") == 0.02
    assert precision.parse_precision(" 50 % ") == 0.5
    assert precision.parse_precision(None) is None
    assert precision.probe_args(0.02, 2.0) == ["--precision", "0.02", "--max-time", "2.0"]


@pytest.mark.parametrize("value", ["0", "0%", "51%", "0.6", "-2%", "two", "", "2%%", "inf", "nan"])
def test_parse_precision_refuses(value):
    """Bad input: zero, above 50 %, negative, not a number; one-line BadValue naming the value."""
    with pytest.raises(BadValue, match=r"--precision '.*' is not a relative precision in \(0, 50 %\]"):
        precision.parse_precision(value)


@pytest.mark.parametrize("command,option,value", [
    ("memory", "--precision", "60%"), ("device", "--precision", "abc"), ("launch", "--precision", "0"),
    ("memory", "--max-time", "0s"), ("device", "--max-time", "soon"), ("launch", "--max-time", "2d"),
])
def test_cli_refuses_bad_values(cli, tmp_path, command, option, value):
    """Bad input: --precision outside (0, 50 %] or not a number, --max-time not a positive time: exit 2, one
    line naming the value, nothing recorded."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", command, option, value, "--store", store)
    assert code == 2, (out, err)
    assert f"'{value}'" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not store.exists()

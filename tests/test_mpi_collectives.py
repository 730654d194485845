"""The collectives OSU has beside allreduce & co. (gather, scatter, reduce_scatter, alltoallv, allgatherv), the
non-blocking ones with OSU's overlap method (iallreduce, ialltoall, ibcast, iallgather, ireduce, igather, iscatter,
ibarrier: native/probe/network_nbc.cpp) and nccl-tests' bus bandwidth beside the algorithm bandwidth
(measure/network_results.py), on the three MPIs of tests/mpis.py, 2 ranks, tiny sizes, few iterations. Bad input
tried: --tests iallreduc (no such test), reduce_scatter with messages below one float per rank; data that arrive
wrong in a new blocking and a non-blocking collective."""

import json
import subprocess
import sys

import pytest

from xferlab.measure.network import NONBLOCKING, NetworkPlan, rows_of, step
from xferlab.measure.network_results import bus_terms, overlap_of, summary
from xferlab.measure.probe import run_probe
from xferlab.store import open_store
from mpis import NAMES, option, shim_cache  # noqa: F401 (shim_cache: a module fixture, the shims to a cache of its own)

BLOCKING = ["gather", "scatter", "reduce_scatter", "alltoallv", "allgatherv"]
FEW = ["--collective-iterations", "20", "--collective-warmup", "2"]


@pytest.fixture(scope="module", params=NAMES)
def recorded(request, tmp_path_factory):
    """Every new collective at 8 B and 4 KiB between 2 ranks on each MPI, with allreduce beside them."""
    store = tmp_path_factory.mktemp("coll") / "coll.duckdb"
    done = subprocess.run([sys.executable, "-m", "xferlab", "measure", "network", "--mpi", option(request.param),
                           "--tests", ",".join(["allreduce", *BLOCKING, *NONBLOCKING]), "--collective-sizes", "8,4Ki",
                           *FEW, "--store", str(store), "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return store, json.loads(done.stdout)


def test_every_new_collective_is_measured_validated_and_stored(recorded):
    store, doc = recorded
    results = doc["results"]
    assert doc["unvalidated_samples"] == 0 and not doc["failures"]
    got = {(r["test"], r["size_bytes"]) for r in results}
    assert got == {(t, s) for t in ["allreduce", *BLOCKING, *NONBLOCKING] if t != "ibarrier" for s in (8, 4096)} | {
        ("ibarrier", 0)}
    assert all(r["ranks"] == 2 and r["count"] == 40 for r in results)  # 20 calls at each of the 2 ranks
    with open_store(store, read_only=True) as db:
        samples = db.samples(doc["run_id"])
    assert len(samples) == sum(r["count"] for r in results) and all(s["validated"] for s in samples)
    nbc = [s for s in samples if s["test"] in NONBLOCKING]
    assert nbc and all(s["params"]["compute_seconds"] > 0 and s["params"]["pure_seconds"] > 0 for s in nbc)


def test_bus_bandwidth_is_the_algorithm_bandwidth_times_nccl_tests_factor(recorded):
    _, doc = recorded
    by = {(r["test"], r["size_bytes"]): r for r in doc["results"]}
    # 2 ranks: allreduce's factor 2(n-1)/n = 1; gather, scatter, the v-variants, reduce_scatter (n-1)/n = 1/2;
    # S is the message for allreduce and bcast, every rank's block (2 x size) for the gathers, scatters, alltoalls.
    expect = {"allreduce": (4096, 1.0), "gather": (8192, 0.5), "scatter": (8192, 0.5), "alltoallv": (8192, 0.5),
              "allgatherv": (8192, 0.5), "reduce_scatter": (4096, 0.5), "iallreduce": (4096, 1.0), "ibcast": (4096, 1.0),
              "ialltoall": (8192, 0.5), "iallgather": (8192, 0.5), "ireduce": (4096, 1.0)}
    for test, (moved, factor) in expect.items():
        r = by[(test, 4096)]
        assert (r["algorithm_bytes"], r["bus_factor"]) == (moved, factor), test
        seconds = r["pure_mean_seconds"] if test in NONBLOCKING else r["mean_seconds"]
        assert r["algorithm_mean_bytes_per_second"] == pytest.approx(moved / seconds)
        assert r["bus_mean_bytes_per_second"] == pytest.approx(moved / seconds * factor)
        assert r["bus_median_bytes_per_second"] == pytest.approx(r["algorithm_median_bytes_per_second"] * factor)
    assert "bus_factor" not in by[("ibarrier", 0)]


def test_non_blocking_rows_carry_overall_compute_pure_and_osus_overlap(recorded):
    _, doc = recorded
    for r in (r for r in doc["results"] if r["test"] in NONBLOCKING):
        overall, compute, pure = r["mean_seconds"], r["compute_mean_seconds"], r["pure_mean_seconds"]
        assert r["overlap"] == pytest.approx(max(0.0, 1 - (overall - compute) / pure)) and 0 <= r["overlap"] <= 1
        # The compute was sized on each rank to that rank's pure time: a descheduled compute only grows.
        assert compute >= 0.25 * pure, r
        assert overall >= compute


def test_the_tables_show_bus_bandwidth_and_overlap(tmp_path, cli):
    code, out, err = cli("measure", "network", "--mpi", "wheel", "--tests", "allgatherv,iallreduce",
                         "--collective-sizes", "4Ki", *FEW, "--store", tmp_path / "t.duckdb")
    assert code == 0, err
    assert "busbw" in out and "algbw" in out and "Non-blocking collectives" in out and "overlap" in out and " %" in out


def test_nccl_tests_factors_and_osus_overlap_formula():
    assert bus_terms("allreduce", 1024, 4) == (1024, 1.5)
    assert bus_terms("bcast", 1024, 4) == bus_terms("reduce", 1024, 4) == (1024, 1.0)
    assert bus_terms("allgather", 1024, 4) == bus_terms("alltoallv", 1024, 4) == (4096, 0.75)
    assert bus_terms("gather", 1024, 4) == bus_terms("iscatter", 1024, 4) == (4096, 0.75)
    assert bus_terms("reduce_scatter", 1000, 4) == (992, 0.75)  # 62 floats to each of 4 ranks, OSU's size the whole
    assert bus_terms("ibarrier", 0, 4) is None and bus_terms("barrier", 0, 4) is None
    assert overlap_of(15e-6, 10e-6, 10e-6) == pytest.approx(0.5)
    assert overlap_of(10e-6, 10e-6, 10e-6) == 1.0
    assert overlap_of(30e-6, 10e-6, 10e-6) == 0.0  # OSU's max(0, …): a compute that hid nothing and slowed the rest


def test_wrong_data_fail_validation_in_new_and_non_blocking_collectives():
    plan = NetworkPlan(tests=["scatter", "alltoallv", "iallreduce", "iallgather"], collective_sizes=[64],
                       collective_counts=((10, 1), (2, 1)))
    s = step(plan)
    run = run_probe([*s.args, "--corrupt"], 120, launcher=s.launcher, env=s.env)
    rows, failure = rows_of(s, run)
    assert failure.startswith("validation failed at 4 point(s)") and "rank 1 received a wrong byte" in failure
    assert rows and not any(r["validated"] for r in rows) and summary(rows) == []


@pytest.mark.parametrize("args, fragment", [
    (["--tests", "iallreduc"], "--tests 'iallreduc' is not a test; allowed: point-to-point"),
    (["--tests", "reduce_scatter", "--collective-sizes", "4"],
     "--collective-sizes 4 B: reduce_scatter takes messages of at least 8 B (one float per rank)"),
])
def test_bad_input_is_one_line_and_nothing_is_stored(args, fragment, tmp_path, cli):
    store = tmp_path / "s.duckdb"
    got, out, err = cli("measure", "network", "--mpi", "wheel", *args, "--store", store)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert got == 2 and len(lines) == 1 and fragment in lines[0], (got, err)
    assert not store.exists()

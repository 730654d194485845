"""One-sided communication in `xferlab measure network` (measure/network_rma.py, the probe's network_rma.cpp):
MPI_Put and MPI_Get between 2 ranks with OSU's definitions (osu_put_latency, osu_get_latency, osu_put_bw,
osu_get_bw, osu_put_bibw), on the three MPIs of tests/mpis.py, every synchronization (OSU's -s) and both windows
(OSU's -w), every received byte checked. Bad input tried: --rma-sync zzz, --rma-window dynamic, put_bibw with a
passive-target sync, --rma-sync without a one-sided test, one-sided tests with device buffers, --sizes 0 for
put_bw alone; an MPI without one-sided calls (a stand-in: xferlab's shim built with its window and put/get entry
points renamed away), refused by xferlab before any rank starts and by the probe itself. Counts are small: 2
cores, other tests beside."""

import json
import subprocess
from pathlib import Path

import pytest

from xferlab.measure.mpi_site import choose
from xferlab.measure.network import NetworkPlan, rows_of, step
from xferlab.measure.probe import run_probe
from xferlab.store import open_store
from mpis import NAMES, option, require_wheel, shim_cache  # noqa: F401 (shim_cache: a module fixture)

require_wheel()

ALL = "put_latency,get_latency,put_bw,get_bw,put_bibw"
SMALL = ["--iterations", "40", "--warmup", "4", "--bw-iterations", "5", "--bw-warmup", "1", "--window", "8"]
SHIM = Path(__file__).parents[1] / "src" / "xferlab" / "measure" / "mpi_shim.c"



@pytest.mark.parametrize("name", NAMES)
def test_put_and_get_measure_validate_and_store_with_osus_defaults(name, tmp_path, cli):
    store = tmp_path / "rma.duckdb"
    code, out, err = cli("measure", "network", "--mpi", option(name), "--tests", ALL, "--sizes", "16,4Ki,64Ki", *SMALL,
                         "--store", store, "--json", check=0)
    doc = json.loads(out)
    rows = {(r["test"], r["size_bytes"]): r for r in doc["results"]}
    assert set(rows) == {(t, s) for t in ALL.split(",") for s in (16, 4096, 65536)}
    for (test, size), r in rows.items():
        # OSU's defaults: MPI_Win_allocate; flush, and pscw for put_bibw (which takes only fence and pscw)
        assert (r["rma_sync"], r["rma_window"]) == ("pscw" if test == "put_bibw" else "flush", "allocate")
        assert r["pair"] == "intra-node" and r["path"] == "host" and r["median_seconds"] > 0
        if test.endswith("latency"):
            assert r["count"] == (40 if size <= 8192 else 4)  # OSU's large-message share: a tenth
        else:  # a window of 8 ops per sample; put_bibw both ranks' windows
            assert r["count"] == (5 if size <= 8192 else 1)
            assert r["iteration_bytes"] == size * 8 * (2 if test == "put_bibw" else 1)
            assert r["mean_bytes_per_second"] == pytest.approx(r["iteration_bytes"] / r["mean_seconds"])
    assert doc["unvalidated_samples"] == 0 and not doc["failures"]
    with open_store(store, read_only=True) as db:
        samples = db.samples(doc["run_id"])
        params = db.run(doc["run_id"])["params"]
    assert len(samples) == sum(r["count"] for r in doc["results"]) and all(s["validated"] for s in samples)
    assert {(s["test"], s["params"]["rma_sync"], s["params"]["rma_window"]) for s in samples} >= {
        ("put_latency", "flush", "allocate"), ("put_bibw", "pscw", "allocate")}
    assert params["rma_sync"]["put_bibw"] == "pscw" and params["rma_window"] == "allocate"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sync", ["lock", "flush", "flush_local", "lock_all", "fence", "pscw"])
def test_every_synchronization_moves_the_right_bytes(sync, name, cli):
    tests = ALL if sync in ("fence", "pscw") else "put_latency,get_latency,put_bw,get_bw"
    doc = cli.json("measure", "network", "--mpi", option(name), "--tests", tests, "--sizes", "16,64Ki", "--rma-sync", sync,
                   "--iterations", "20", "--warmup", "2", "--bw-iterations", "5", "--bw-warmup", "1", "--window", "4")
    assert {r["test"] for r in doc["results"]} == set(tests.split(","))
    assert {r["rma_sync"] for r in doc["results"]} == {sync}
    assert doc["unvalidated_samples"] == 0 and not doc["failures"]


@pytest.mark.parametrize("name", NAMES)
def test_a_window_over_xferlabs_own_buffer(name, cli):
    """--rma-window create: MPI_Win_create over the probe's host buffer, from 1 B (small windows too)."""
    doc = cli.json("measure", "network", "--mpi", option(name), "--tests", "put_latency,get_bw", "--sizes", "1,8,4Ki",
                   "--rma-window", "create", "--rma-sync", "lock", *SMALL)
    assert {(r["test"], r["size_bytes"], r["rma_window"]) for r in doc["results"]} == {
        (t, s, "create") for t in ("put_latency", "get_bw") for s in (1, 8, 4096)}
    assert doc["unvalidated_samples"] == 0


@pytest.mark.parametrize("sync", ["flush", "fence"])
def test_wrong_bytes_in_a_window_fail_validation(sync):
    """--corrupt: the rank that received data (the target of a put, the origin of a get) sees one wrong byte."""
    plan = NetworkPlan(tests=["put_latency", "get_latency", "put_bw"], sizes=[64], rma_sync=sync,
                       latency_counts=((20, 2), (2, 1)), bandwidth_counts=((3, 1), (1, 0)), window=4)
    s = step(plan)
    run = run_probe([*s.args, "--corrupt"], 120, launcher=s.launcher, env=s.env)
    rows, failure = rows_of(s, run)
    assert failure.startswith("validation failed at 3 point(s), first put_latency 64 B (host): rank ")
    assert "received a wrong byte at offset" in failure
    assert rows and not any(r["validated"] for r in rows)
    assert {r["params"]["rma_sync"] for r in rows} == {sync}


@pytest.mark.parametrize("args, fragment", [
    (["--tests", "put_latency", "--rma-sync", "zzz"], "--rma-sync 'zzz' is not allowed; allowed: lock, flush, "
                                                       "flush_local, lock_all, fence, pscw"),
    (["--tests", "put_latency", "--rma-window", "dynamic"], "--rma-window 'dynamic' is not allowed; allowed: allocate, create"),
    (["--tests", "put_bibw", "--rma-sync", "flush"], "--rma-sync flush: put_bibw takes fence or pscw"),
    (["--tests", "latency", "--rma-sync", "fence"], "--rma-sync applies only with a one-sided test in --tests"),
    (["--tests", "bw", "--rma-window", "create"], "--rma-window applies only with a one-sided test"),
    (["--tests", "put_latency", "--buffers", "host,device"], "the one-sided tests (put_latency) run on host memory only"),
    (["--tests", "put_bw", "--sizes", "0"], "put_bw takes messages of at least 1 B"),
    (["--tests", "put_lat"], "--tests 'put_lat' is not a test; allowed: point-to-point latency"),
])
def test_bad_one_sided_input_is_one_line_and_nothing_is_stored(args, fragment, tmp_path, cli):
    store = tmp_path / "s.duckdb"
    got, out, err = cli("measure", "network", *args, "--store", store)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert got == 2 and len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], (got, err)
    assert not store.exists()


def _without_one_sided(folder: Path) -> Path:
    """xferlab's shim, built with Debian's MPICH, its window and put/get entry points renamed away: an MPI
    library the probe can load whose one-sided calls are missing."""
    mpicc = option("mpich")
    library = folder / "libxferlab_mpi_shim.so"
    renamed = [f"-Dxferlab_MPI_{n}=standin_no_{n}" for n in ("Win_create", "Win_allocate", "Put", "Get")]
    subprocess.run([mpicc, "-shared", "-fPIC", "-O1", *renamed, "-o", str(library), str(SHIM)], check=True,
                   capture_output=True, timeout=120)
    return library


def test_an_mpi_without_one_sided_calls_is_refused_before_any_rank_starts(tmp_path, cli):
    library = _without_one_sided(tmp_path)
    store = tmp_path / "s.duckdb"
    got, out, err = cli("measure", "network", "--mpi", "wheel", "--tests", "latency,put_latency", "--sizes", "16",
                        "--store", store, env={"XFERLAB_MPI_LIB": str(library)})
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert got == 2 and len(lines) == 1, (got, err)
    assert lines[0].startswith("error: --mpi 'wheel': ") and "has no one-sided communication (it does not export " \
        "xferlab_MPI_Win_create, xferlab_MPI_Win_allocate, xferlab_MPI_Put, xferlab_MPI_Get)" in lines[0]
    assert not store.exists()
    # Without a one-sided test the same library runs the two-sided ones (the calls are optional).
    code, out, err = cli("measure", "network", "--mpi", "wheel", "--tests", "latency", "--sizes", "16", "--iterations", "20",
                         "--warmup", "2", "--store", store, env={"XFERLAB_MPI_LIB": str(library)})
    assert code == 0, err


def test_the_probe_itself_refuses_an_mpi_without_one_sided_calls(tmp_path):
    """A rank that loads such a library (under a site launcher, past xferlab's check) says so and runs nothing."""
    library = _without_one_sided(tmp_path)
    mpich = choose(option("mpich"))
    plan = NetworkPlan(tests=["put_latency"], sizes=[16], latency_counts=((5, 1), (1, 0)), mpi=option("mpich"))
    s = step(plan)
    run = run_probe(s.args, 120, launcher=s.launcher, env={**mpich.env, "XFERLAB_MPI_LIB": str(library)})
    assert not run.ok and not run.of("samples")
    assert "has no one-sided communication (it does not export xferlab_MPI_Win_create" in run.failure, run.failure


def test_one_sided_tests_are_not_in_the_default_set():
    from xferlab.measure.network import ONE_SIDED, TESTS

    assert not set(ONE_SIDED) & set(TESTS) and NetworkPlan().tests == list(TESTS)

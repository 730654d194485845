"""STREAM-PMem on PMDK (`measure memory --pmem PATH --pmdk`, native/probe/pmdk.cpp, measure/pmdk.py): the arrays
in a real libpmemobj pool on a file (PMDK's pmem emulation forced, PMEM_IS_PMEM_FORCE=1, so the rows say
emulated), validated as STREAM validates, beside the raw mapping in the same run, with PMDK's overhead computed
from the two rows. Bad input tried: PMDK absent (XFERLAB_PMEMOBJ_LIB naming no library), a pool on a read-only
file system (a tmpfs mounted read-only), a character device that is not device-DAX (/dev/null), a /dev/daxN.M
that does not exist, an existing file, --pmdk without --pmem, --pmdk with --persist (probe)."""

import json
import os
import subprocess

import pytest

from xferlab.measure import pmdk
from xferlab.measure.probe import run_probe

SMALL = str(8 * 2**20)
FORCE = {"PMEM_IS_PMEM_FORCE": "1"}
ABSENT = {"XFERLAB_PMEMOBJ_LIB": "/nonexistent/libpmemobj.so.1"}

try:
    pmdk.library()
    HAVE_PMDK = True
except Exception:  # noqa: BLE001 - the refusal is tested below
    HAVE_PMDK = False
needs_pmdk = pytest.mark.skipif(not HAVE_PMDK and os.environ.get("CI") != "true",
                                reason="PMDK's libpmemobj is not installed (Debian: libpmemobj1; `make test` installs it)")


def stream(*extra, env=FORCE):
    return run_probe(["stream", "--size", SMALL, "--iterations", "3", "--kernels", "copy,triad", *extra], timeout=120,
                     env=env)


@needs_pmdk
@pytest.mark.parametrize("mode, label", [("persist", "pmdk"), ("tx", "pmdk-tx")])
def test_stream_pmem_runs_in_a_pool_and_validates(tmp_path, mode, label):
    run = stream("--pmem", str(tmp_path), "--pmdk", mode)
    assert run.ok, run.failure
    setup = run.first("setup")
    assert setup["mode"] == label and setup["emulated"] is True and setup["dax"] is False
    assert setup["pool_bytes"] >= 3 * 8 * 2**20
    assert setup["persist_mechanism"].startswith("pmemobj_tx" if mode == "tx" else "pmemobj_persist")
    assert "write-back + fence" in setup["persist_mechanism"]  # the emulation: no msync
    assert run.first("validation") == {**run.first("validation"), "ok": True}
    # tx: every kernel run committed one transaction per thread (each has a chunk); persist: none
    assert {r["transactions"] for r in run.of("sample")} == {setup["threads"] if mode == "tx" else 0}
    assert list(tmp_path.iterdir()) == []  # the pool's file is gone


@needs_pmdk
def test_stream_pmem_without_the_emulation_persists_with_msync(tmp_path):
    run = stream("--pmem", str(tmp_path), "--pmdk", "persist", env={"PMEM_IS_PMEM_FORCE": "0"})
    assert run.ok, run.failure
    setup = run.first("setup")
    assert setup["emulated"] is False and setup["persist_mechanism"].endswith("msync (libpmem: not persistent memory)")


@needs_pmdk
def test_validation_covers_the_pools_arrays(tmp_path):
    run = stream("--pmem", str(tmp_path), "--pmdk", "tx", "--corrupt", "1000")
    assert run.returncode == 1 and not run.first("validation")["ok"]
    assert run.first("validation")["detail"] == "array a: 1 elements wrong, first at index 1000"


@needs_pmdk
def test_measure_memory_pmdk_gives_the_overhead_against_the_raw_mapping(tmp_path, cli):
    pool = tmp_path / "pool"
    pool.mkdir()
    code, out, err = cli("measure", "memory", "--pmem", pool, "--pmdk", "--size", "8Mi", "--iterations", "3",
                         "--kernels", "copy,triad", "--store", tmp_path / "s.duckdb", "--json", check=0, env=FORCE)
    doc = json.loads(out)
    rows = {(r["test"], r["mode"]): r for r in doc["results"] if r.get("mode")}
    assert {m for _, m in rows} == {"app-direct", "app-direct+persist", "pmdk", "pmdk-tx"}
    assert all(r["emulated"] is True for r in rows.values())
    for kernel in ("copy", "triad"):
        reference = rows[(kernel, "app-direct+persist")]["best_bytes_per_second"]
        for mode in ("pmdk", "pmdk-tx"):
            row = rows[(kernel, mode)]
            assert row["reference_mode"] == "app-direct+persist"
            assert row["reference_best_bytes_per_second"] == reference
            assert row["pmdk_overhead"] == pytest.approx(1 - row["best_bytes_per_second"] / reference)
    assert {(r["test"], r["mode"]) for r in doc["pmdk_overheads"]} == {(k, m) for k in ("copy", "triad")
                                                                       for m in ("pmdk", "pmdk-tx")}
    code, out, err = cli("measure", "memory", "--pmem", pool, "--pmdk", "--size", "8Mi", "--iterations", "2",
                         "--kernels", "triad", "--store", tmp_path / "s.duckdb", check=0, env=FORCE)
    assert "PMDK's overhead" in out and "emulated: PMEM_IS_PMEM_FORCE=1" in out and "pmdk_overhead = 1 - best" in out


def test_the_overhead_is_the_share_of_the_reference_lost():
    rows = [{"test": "triad", "mode": "app-direct+persist", "threads": 2, "node": "default", "size_bytes": 8,
             "best_bytes_per_second": 10.0},
            {"test": "triad", "mode": "pmdk", "threads": 2, "node": "default", "size_bytes": 8, "best_bytes_per_second": 8.5},
            {"test": "triad", "mode": "pmdk-tx", "threads": 1, "node": "default", "size_bytes": 8, "best_bytes_per_second": 5.0}]
    table = pmdk.annotate(rows, [{"mode": "pmdk", "emulated": True}, {"mode": "app-direct+persist", "emulated": True}])
    assert rows[1]["pmdk_overhead"] == pytest.approx(0.15) and rows[1]["emulated"] is True
    assert rows[2]["pmdk_overhead"] is None  # no reference at 1 thread: nothing to set it against
    assert [r["mode"] for r in table] == ["pmdk", "pmdk-tx"]


def test_pmdk_absent_is_one_line_and_exit_2(tmp_path, cli):
    run = stream("--pmem", str(tmp_path), "--pmdk", "persist", env=ABSENT)
    assert run.returncode == 2 and "--pmdk: PMDK's libpmemobj is not available" in run.failure
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "memory", "--pmem", tmp_path, "--pmdk", "--store", store, env=ABSENT)
    assert code == 2 and err.startswith("error: --pmdk: PMDK's libpmemobj is not available") and err.count("\n") == 1
    assert not store.exists()  # refused before a run was recorded


@pytest.fixture
def read_only(tmp_path):
    """A tmpfs mounted read-only (root alone cannot write there: a chmod'ed folder would not stop root)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64m", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@needs_pmdk
def test_a_pool_on_a_read_only_file_system_is_refused(read_only, tmp_path, cli):
    run = stream("--pmem", str(read_only), "--pmdk", "persist")
    assert run.returncode == 2 and "cannot create a pool there (Read-only file system)" in run.failure
    run = stream("--pmem", str(read_only / "pool"), "--pmdk", "persist")
    assert run.returncode == 2 and "PMDK cannot make a pool" in run.failure
    code, out, err = cli("measure", "memory", "--pmem", read_only, "--pmdk", "--store", tmp_path / "s.duckdb", env=FORCE)
    assert code == 2 and err.startswith("error: --pmem") and err.count("\n") == 1


@needs_pmdk
def test_a_device_that_is_not_device_dax_is_refused(tmp_path, cli):
    run = stream("--pmem", "/dev/null", "--pmdk", "persist")
    assert run.returncode == 2 and "'/dev/null' is a character device that is not device-DAX" in run.failure
    for path in ("/dev/null", "/dev/dax9.9"):
        code, out, err = cli("measure", "memory", "--pmem", path, "--pmdk", "--store", tmp_path / "s.duckdb")
        assert code == 2 and "device-DAX" in err and err.count("\n") == 1, err
    assert not os.path.exists("/dev/dax9.9")


@needs_pmdk
def test_an_existing_file_is_left_alone(tmp_path):
    existing = tmp_path / "data.bin"
    existing.write_bytes(b"keep me")
    run = stream("--pmem", str(existing), "--pmdk", "persist")
    assert run.returncode == 2 and "existing file" in run.failure and existing.read_bytes() == b"keep me"


@pytest.mark.parametrize("args, fragment", [
    (["--pmdk", "persist"], "--pmdk needs --pmem"), (["--pmem", "/tmp", "--pmdk", "tx", "--persist"], "--pmdk persists"),
    (["--pmem", "/tmp", "--pmdk", "undo"], "'undo' is not allowed"),
])
def test_probe_refuses_pmdk_misuse(args, fragment):
    run = stream(*args)
    assert run.returncode == 2 and fragment in run.failure


def test_cli_refuses_pmdk_without_pmem(tmp_path, cli):
    code, out, err = cli("measure", "memory", "--pmdk", "--store", tmp_path / "s.duckdb")
    assert code == 2 and err == "error: --pmdk needs --pmem PATH: the pool is made there, beside the raw mapping\n"

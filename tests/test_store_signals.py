"""The exit code, the last line and the stored status agree when SIGINT or SIGTERM comes at a chosen point of
the store's write path (the test hook XFERLAB_SIGNAL_AT makes the process signal itself there: no timing
luck): while a run starts, while a step's samples commit, right after they committed, while the run
finishes. A run stored ``ok`` exits 0; a command that exits 130/143 leaves its run ``interrupted`` and says
how many samples the store holds for it (counted in the store, not by the command)."""

import re
import signal

import pytest

from xferlab.store import open_store

MEASURE = ["measure", "memory", "--kernels", "triad", "--size", "8MiB", "--iterations", "3"]
SWEEP = """kind: sweep
name: signalled
systems: [seed-testbed]
replace: pcie3x16
links: [pcie3x16, pcie4x16]
workflows: [deceval]
strategies: [staged, pipelined]
chunks: [1MiB, 4MiB]
"""
LAST = re.compile(r"interrupted by (SIGINT|SIGTERM): run (\S+) kept (\d+) samples, status interrupted")


def stored(store):
    with open_store(store, read_only=True) as db:
        (run,) = db.runs()
        return run


def assert_agree(code, err, store, signum):
    """Exit code == the signal's, the last line names the run and the store's count, the run is interrupted."""
    assert code == 128 + signum, err
    assert "Traceback" not in err
    last = LAST.fullmatch(err.strip().splitlines()[-1])
    assert last, err
    run = stored(store)
    assert last.group(1) == signal.Signals(signum).name
    assert (last.group(2), int(last.group(3))) == (run["run_id"], run["samples"]), (err, run)
    assert run["status"] == "interrupted" and not run["incomplete"] and run["finished_utc"], run
    return run


@pytest.mark.parametrize("point,signum", [("finish", signal.SIGTERM), ("finish", signal.SIGINT),
                                          ("samples:1", signal.SIGTERM), ("after-samples:1", signal.SIGINT),
                                          ("start", signal.SIGTERM)])
def test_measure_signalled_at_a_chosen_point(tmp_path, cli, point, signum):
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*MEASURE, "--store", store, env={"XFERLAB_SIGNAL_AT": f"{signal.Signals(signum).name}@{point}"})
    run = assert_agree(code, err, store, signum)
    if point.startswith(("samples", "after-samples", "finish")):
        assert run["samples"] > 0  # the step's commit went through: its samples are counted
    else:
        assert run["samples"] == 0


def test_measure_without_a_signal_is_ok_and_exits_0(tmp_path, cli):
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*MEASURE, "--store", store)
    run = stored(store)
    assert code == 0 and run["status"] == "ok" and run["samples"] > 0, err


@pytest.mark.parametrize("point", ["finish", "samples:1"])
def test_sweep_signalled_at_a_chosen_point(tmp_path, cli, point):
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP)
    store = tmp_path / "s.duckdb"
    code, out, err = cli("sweep", "run", spec, "--batch", "2", "--store", store,
                         env={"XFERLAB_SIGNAL_AT": f"SIGTERM@{point}"})
    run = assert_agree(code, err, store, signal.SIGTERM)
    assert run["samples"] == (6 if point == "finish" else 2)
    code, out, err = cli("sweep", "run", spec, "--store", tmp_path / "whole.duckdb")
    assert code == 0 and stored(tmp_path / "whole.duckdb")["status"] == "ok", err


def test_a_study_stopped_as_its_samples_commit_counts_them(tmp_path, cli):
    """A study's step is a run: SIGTERM while its first samples commit keeps them and says how many."""
    store = tmp_path / "t.duckdb"
    code, out, err = cli("study", "run", "tiers", "--iterations", "3", "--budget", "2m", "--store", store,
                         env={"XFERLAB_SIGNAL_AT": "SIGTERM@samples:1"})
    run = assert_agree(code, err, store, signal.SIGTERM)
    assert run["samples"] > 0 and run["command"] == "study tiers"


@pytest.mark.parametrize("value", ["SIGKILL@finish", "SIGTERM@commit", "SIGTERM@finish:0", "SIGTERM@finish:x", "finish"])
def test_a_malformed_hook_is_refused(tmp_path, cli, value):
    code, out, err = cli(*MEASURE, "--store", tmp_path / "s.duckdb", env={"XFERLAB_SIGNAL_AT": value})
    assert code == 2 and err.strip().splitlines() == [
        f"error: XFERLAB_SIGNAL_AT={value!r} is not allowed: give SIGINT|SIGTERM@POINT[:N], POINT one of start, samples, "
        "failure, finish, after-samples, N >= 1"], err

"""Faults injected into the real probe (XFERLAB_PROBE_FAULT, see native/probe/fault.hpp), driven through the
real CLI: a crash, a hang, a garbage line, a bad exit code, a corrupted copy. Each must end as a failed step
with its reason, a non-zero exit (1: every step failed, 3: some did), the JSON still printed, and the
samples the probe printed before dying kept in the store as unvalidated, out of every statistic."""

import json
import os
import stat
import subprocess

import pytest

from xferlab.measure.device import devices
from xferlab.measure.probe import probe_path
from xferlab.store import open_store

MEMORY = ["measure", "memory", "--size", "8MiB", "--iterations", "3", "--threads", "1", "--kernels", "copy"]


def validated(sample: dict):
    """The flag a stored sample carries: a column of its own, or (older stores) in its params."""
    if "validated" in sample and sample["validated"] is not None:
        return sample["validated"]
    return (sample.get("params") or {}).get("validated")


def stored(store, run_id):
    with open_store(store, read_only=True) as s:
        return s.run(run_id), s.samples(run_id), s.failures(run_id)


def test_probe_crash_after_three_samples_is_a_failed_step_with_unvalidated_samples(cli, tmp_path):
    """SIGBUS after the 3rd sample of the only step: exit 1, the signal named, 3 samples stored unvalidated."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*MEMORY, "--store", store, "--json", env={"XFERLAB_PROBE_FAULT": "crash=SIGBUS@3"})
    assert code == 1, err
    doc = json.loads(out)
    (failure,) = doc["failures"]
    assert failure["reason"].startswith("killed by SIGBUS after: ") and "fault injected" in failure["reason"]
    assert failure["unvalidated_samples"] == 3 and doc["unvalidated_samples"] == 3
    assert doc["results"] == []  # two timed copies printed, but none validated: no statistics
    last = err.strip().splitlines()[-1]
    assert last == (f"error: 1 of 1 steps failed (first: {failure['step']}: {failure['reason']}); "
                    f"results kept in run {doc['run_id']}")
    run, samples, failures = stored(store, doc["run_id"])
    assert len(samples) == 3 and all(validated(s) is False for s in samples)
    assert [f["reason"] for f in failures] == [failure["reason"]]


def test_crash_in_one_step_of_two_exits_3_and_keeps_the_other(cli, tmp_path):
    """The stream step prints 3 samples (no crash at @5); the latency step dies after its 5th: exit 3."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*MEMORY, "--latency", "--store", store, "--json",
                         env={"XFERLAB_PROBE_FAULT": "crash=SIGSEGV@5"})
    assert code == 3, err
    doc = json.loads(out)
    (failure,) = doc["failures"]
    assert failure["step"].startswith("latency") and failure["reason"].startswith("killed by SIGSEGV")
    assert failure["unvalidated_samples"] == 5
    assert {r["test"] for r in doc["results"]} == {"copy"}  # the latency samples are not in the statistics
    assert err.strip().splitlines()[-1].startswith("error: 1 of 2 steps failed (first: latency")
    # The table output leaves them out too, and says they are kept.
    code, out, err = cli(*MEMORY, "--latency", "--store", store, env={"XFERLAB_PROBE_FAULT": "crash=SIGSEGV@5"})
    assert code == 3 and "Load-to-use latency" not in out and "5 unvalidated samples kept in the store" in err


def test_a_hang_is_killed_after_the_timeout(cli, tmp_path):
    """The probe stops after its first sample and never returns; --timeout 2s kills it."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*MEMORY, "--timeout", "2s", "--store", store, "--json", env={"XFERLAB_PROBE_FAULT": "hang@1"})
    assert code == 1, err
    (failure,) = json.loads(out)["failures"]
    assert failure["reason"] == "killed after its timeout of 2 s" and failure["unvalidated_samples"] == 1


@pytest.mark.parametrize("timeout", ["0s", "-1s", "8d"])
def test_timeout_must_be_positive_and_sane(cli, tmp_path, timeout):
    """Bad input: a zero, negative or longer-than-a-week --timeout is refused before anything runs."""
    code, _, err = cli(*MEMORY, "--timeout", timeout, "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.startswith("error: ") and "--timeout" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()


def test_a_garbage_line_fails_the_step(cli, tmp_path):
    """A line on stdout that is not JSON: the step fails with 'unparseable output line' and the line."""
    code, out, err = cli(*MEMORY, "--store", tmp_path / "s.duckdb", "--json", env={"XFERLAB_PROBE_FAULT": "garbage@2"})
    assert code == 1, err
    (failure,) = json.loads(out)["failures"]
    assert failure["reason"] == "unparseable output line: xferlab-probe fault injection: this line is not JSON"


def test_an_unexpected_exit_code_keeps_the_probes_last_words(cli, tmp_path):
    """exit=5 before the probe starts: the reason is its last stderr line, nothing is stored."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli(*MEMORY, "--store", store, "--json", env={"XFERLAB_PROBE_FAULT": "exit=5"})
    assert code == 1, err
    doc = json.loads(out)
    (failure,) = doc["failures"]
    assert failure["reason"] == "xferlab-probe: fault injected: exit 5 before starting"
    assert failure["unvalidated_samples"] == 0
    assert stored(store, doc["run_id"])[1] == []


@pytest.mark.parametrize("spec", ["crash=SIGKILL", "exit=300", "hang@0", "garbage@x"])
def test_the_probe_refuses_a_fault_it_cannot_inject(spec):
    """Bad input to the hook itself: an unknown signal, an exit code past 255, @0, @x: exit 2, one line."""
    done = subprocess.run([str(probe_path()), "stream", "--size", "4096", "--iterations", "2"], capture_output=True,
                          text=True, env={**os.environ, "XFERLAB_PROBE_FAULT": spec})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"xferlab-probe: error: XFERLAB_PROBE_FAULT '{spec}'") and "allowed:" in done.stderr


def test_faults_leave_inventory_commands_alone():
    """`version`, `nodes` and `devices` answer the checks made before a run: a fault never hits them."""
    for args in (["version"], ["nodes"]):
        done = subprocess.run([str(probe_path()), *args], capture_output=True, text=True,
                              env={**os.environ, "XFERLAB_PROBE_FAULT": "crash=SIGSEGV"})
        assert done.returncode == 0 and json.loads(done.stdout)


found, why = devices("opencl")
needs_device = pytest.mark.skipif(not found, reason=f"no OpenCL device: {why}")


@needs_device
def test_device_crash_after_three_copies(cli, tmp_path):
    """SIGBUS after the 3rd copy sample, before its point's validation record: 3 unvalidated samples, exit 1."""
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "device", "--sizes", "4KiB,64KiB", "--kinds", "pageable", "--directions", "h2d",
                         "--iterations", "3", "--min-time", "0", "--chunks", "", "--no-launch", "--store", store,
                         "--json", env={"XFERLAB_PROBE_FAULT": "crash=SIGBUS@3"})
    assert code == 1, err
    doc = json.loads(out)
    (failure,) = doc["failures"]
    assert failure["reason"].startswith("killed by SIGBUS") and failure["unvalidated_samples"] == 3
    assert doc["results"] == [] and doc["overview"] == []
    samples = stored(store, doc["run_id"])[1]
    assert len(samples) == 3 and all(validated(s) is False for s in samples)


@needs_device
def test_device_crash_after_a_validated_point_keeps_that_point(cli, tmp_path):
    """Crash after the 4th sample: the first point (3 copies + its validation) counts, the 4th does not."""
    code, out, err = cli("measure", "device", "--sizes", "4KiB,64KiB", "--kinds", "pageable", "--directions", "h2d",
                         "--iterations", "3", "--min-time", "0", "--chunks", "",
                         "--no-launch", "--store", tmp_path / "s.duckdb", "--json",
                         env={"XFERLAB_PROBE_FAULT": "crash=abort@4"})
    assert code == 1, err
    doc = json.loads(out)
    assert doc["failures"][0]["reason"].startswith("killed by SIGABRT")
    assert doc["failures"][0]["unvalidated_samples"] == 1
    (point,) = [r for r in doc["results"] if r["test"] == "transfer"]
    assert point["size_bytes"] == 4096 and point["count"] == 3


@needs_device
def test_a_corrupted_copy_is_a_validation_failure(cli, tmp_path):
    """The probe's --corrupt-copy hook damages every copied buffer: the step fails validation, nothing stored."""
    wrapper = tmp_path / "xferlab-probe"
    wrapper.write_text(f"#!/bin/sh\ncase \"$1\" in transfer) exec {probe_path()} \"$@\" --corrupt-copy ;; "
                       f"*) exec {probe_path()} \"$@\" ;; esac\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "device", "--sizes", "4KiB", "--kinds", "pageable", "--directions", "h2d,d2h",
                         "--iterations", "3", "--min-time", "0", "--chunks", "", "--no-launch", "--store", store,
                         "--json", env={"XFERLAB_PROBE": str(wrapper)})
    assert code == 1, err
    doc = json.loads(out)
    (failure,) = doc["failures"]
    assert failure["reason"].startswith("validation failed: 2 copies wrong, first pageable h2d 4096 B at byte 2048")
    assert doc["results"] == [] and stored(store, doc["run_id"])[1] == []


def test_steps_skipped_by_the_budget_are_reported_not_failed(cli, tmp_path):
    """A 1 ms --budget: later steps are skipped; that is reported on stderr and in JSON, and exits 0."""
    code, out, err = cli("measure", "memory", "--size", "8MiB", "--iterations", "3", "--threads", "1,1", "--kernels",
                         "copy", "--budget", "1ms", "--store", tmp_path / "s.duckdb", "--json")
    assert code == 0, err
    skipped = [f for f in json.loads(out)["failures"] if f["reason"].startswith("skipped:")]
    assert skipped and "error:" not in err
    code, out, err = cli("measure", "memory", "--size", "8MiB", "--iterations", "3", "--threads", "1,1", "--kernels",
                         "copy", "--budget", "1ms", "--store", tmp_path / "s.duckdb")
    assert code == 0 and "skipped: stream memory node default, 1 thread: the time budget was used up" in err

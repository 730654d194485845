"""The native probe: built with the package, found by the Python side, JSON lines out."""

import stat
import subprocess

import pytest

from xferlab import __version__
from xferlab.errors import Unavailable
from xferlab.measure.probe import probe_path, run_probe


def test_probe_is_installed_and_reports_its_version():
    run = run_probe(["version"])
    assert run.ok, run.failure
    (record,) = run.records
    assert record["probe"] == "version" and record["version"] == __version__
    assert record["cxx_standard"] >= 201703


def test_clock_resolution():
    run = run_probe(["clock", "--samples", "100000"])
    assert run.ok, run.failure
    (record,) = run.records
    assert record["clock"] == "std::chrono::steady_clock"
    assert 0 < record["reported_resolution_seconds"] <= 1e-3
    assert 0 < record["observed_tick_seconds"] <= 1e-3
    assert 0 < record["call_overhead_seconds"] < 1e-5
    assert record["statistic"].startswith("median")


@pytest.mark.parametrize("args, fragment", [
    (["warp"], "unknown command 'warp'"), (["clock", "--samples", "5"], "'5'"), (["clock", "--fast"], "'--fast'"),
])
def test_bad_arguments_exit_2(args, fragment):
    done = subprocess.run([str(probe_path()), *args], capture_output=True, text=True)
    assert done.returncode == 2 and fragment in done.stderr and done.stdout == ""
    run = run_probe(args)
    assert not run.ok and fragment in run.failure


def test_a_hanging_probe_is_killed_and_reported(tmp_path, monkeypatch):
    fake = tmp_path / "xferlab-probe"
    fake.write_text("#!/bin/sh\necho '{\"probe\":\"partial\"}'\nsleep 30\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("XFERLAB_PROBE", str(fake))
    run = run_probe(["clock"], timeout=0.5)
    assert not run.ok and "timeout" in run.failure
    assert run.records == [{"probe": "partial"}]  # what finished before the kill is kept


def test_missing_probe_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("XFERLAB_PROBE", str(tmp_path / "nothing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    import xferlab.measure.probe as probe

    monkeypatch.setattr(probe, "__file__", str(tmp_path / "x" / "probe.py"))
    monkeypatch.setattr(probe.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(Unavailable, match="xferlab-probe"):
        probe_path()


@pytest.mark.parametrize("rc, err, reason", [
    (-7, "xferlab-probe: stream: mapped\n", "killed by SIGBUS after: xferlab-probe: stream: mapped"),
    (-11, "", "killed by SIGSEGV"), (-6, "  \n", "killed by SIGABRT"),
    (1, "first\nlast line\n", "last line"), (5, "", "exit code 5"),
    # Open MPI's mpiexec draws rules around its message: the message is the reason, not the rule
    (1, "---\nmpiexec noticed that process rank 1 exited on signal 11 (Segmentation fault).\n-----\n",
     "mpiexec noticed that process rank 1 exited on signal 11 (Segmentation fault)."),
])
def test_exit_reason_names_the_signal_and_keeps_the_last_line(rc, err, reason):
    """A probe killed by a signal is no longer 'exit code -7': the signal's name, then its last stderr line."""
    from xferlab.measure.probe import exit_reason

    assert exit_reason(rc, err) == reason


def test_a_probe_killed_by_a_real_signal(tmp_path, monkeypatch):
    """A stand-in probe that kills itself with SIGBUS after one line: the line is kept, the signal named."""
    fake = tmp_path / "xferlab-probe"
    fake.write_text("#!/bin/sh\necho '{\"record\":\"sample\"}'\necho 'about to die' >&2\nkill -BUS $$\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("XFERLAB_PROBE", str(fake))
    run = run_probe(["stream"])
    assert run.returncode == -7 and run.failure == "killed by SIGBUS after: about to die"
    assert run.records == [{"record": "sample"}]


def test_impossible_times_are_dropped_and_reported():
    """The probe prints a non-finite time as null; such a sample (and a zero one) is dropped, not stored."""
    from xferlab.measure.memory import rows_of
    from xferlab.measure.probe import ProbeRun
    from xferlab.measure.steps import Step

    def sample(i, seconds):
        return {"record": "sample", "kernel": "copy", "iteration": i, "warmup": i == 0, "seconds": seconds,
                "bytes": 2e6, "write_allocate_bytes": 1e6}

    run = ProbeRun([], [{"record": "setup", "array_bytes": 10**6}, sample(0, 1e-3), sample(1, None), sample(2, 0.0),
                        sample(3, 2e-3), {"record": "validation", "ok": True, "detail": ""}], returncode=0)
    rows, failure = rows_of(Step("s", "stream", [], {"node": "default"}, 1.0), run)
    assert [r["iteration"] for r in rows] == [0, 3] and all(r["validated"] for r in rows)
    assert failure == "dropped 2 samples with a non-positive or non-finite time (first: copy iteration 1: None s)"

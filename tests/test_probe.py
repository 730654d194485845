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

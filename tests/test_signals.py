"""SIGTERM and SIGINT during a real `xferlab measure memory`: the run is finished as interrupted with the
finished steps' samples kept, the probe child is killed, and the process exits 143 (SIGTERM) or 130
(SIGINT) with one line on stderr. Also: a reader answers while the measurement records."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xferlab.measure.probe import probe_path
from xferlab.store import open_store

# two steps (1 and 2 threads) of about 3 s and 5 s on a small machine
MEASURE = ["measure", "memory", "--threads", "1,2", "--size", "128MiB", "--iterations", "30"]


def start(args, store, env=None):
    return subprocess.Popen([sys.executable, "-m", "xferlab", *args, "--store", str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def probe_children(pid, subcommand="stream"):
    """PIDs of the xferlab-probe processes whose parent is ``pid`` running ``subcommand``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == pid and name.startswith("xferlab-probe"):
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if subcommand.encode() in argv:
                found.append(int(entry.name))
    return found


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "Z"  # a zombie: dead, not yet reaped by its parent (also dead)


def samples_so_far(store):
    if not store.exists():
        return 0
    try:
        with open_store(store, read_only=True) as db:
            runs = db.runs()
    except Exception:  # created but not yet set up
        return 0
    return runs[0]["samples"] if runs else 0


def wait_for(predicate, limit, what):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_after_the_first_step_keeps_its_samples(tmp_path, signum):
    store = tmp_path / "s.duckdb"
    proc = start(MEASURE, store)
    try:
        kept = wait_for(lambda: samples_so_far(store), 120, "the first step's samples")
        probes = wait_for(lambda: probe_children(proc.pid), 30, "the second step's probe")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signum, err
    lines = err.strip().splitlines()
    name = signal.Signals(signum).name
    with open_store(store, read_only=True) as db:
        (run,) = db.runs()
        samples = db.samples(run["run_id"])
    assert lines[-1] == f"interrupted by {name}: run {run['run_id']} kept {kept} samples, status interrupted", err
    assert "Traceback" not in err
    assert run["status"] == "interrupted" and not run["incomplete"] and len(samples) == kept == 120
    for pid in probes:
        wait_for(lambda: gone(pid), 5, f"probe {pid} to end")


def fault_injection() -> bool:
    """Whether the probe in use takes XFERLAB_PROBE_FAULT (an older build ignores it)."""
    done = subprocess.run([str(probe_path()), "stream", "--size", "4096"], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "XFERLAB_PROBE_FAULT": "bogus"})
    return "XFERLAB_PROBE_FAULT" in done.stderr


def test_sigterm_kills_a_hanging_probe(tmp_path):
    """A probe that never returns (fault injection: hang) is killed when SIGTERM stops the run."""
    if not fault_injection():
        pytest.skip(f"the probe {probe_path()} predates fault injection (XFERLAB_PROBE_FAULT); set XFERLAB_PROBE "
                    "to a current build")
    store = tmp_path / "s.duckdb"
    proc = start(["measure", "memory", "--kernels", "triad", "--size", "8MiB", "--iterations", "3"], store,
                 env={"XFERLAB_PROBE_FAULT": "hang"})
    try:
        (probe,) = wait_for(lambda: probe_children(proc.pid), 60, "the hanging probe")
        time.sleep(0.3)
        assert not gone(probe)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("interrupted by SIGTERM: run ")
    assert err.strip().endswith("kept 0 samples, status interrupted")
    wait_for(lambda: gone(probe), 5, "the hanging probe to be killed")
    with open_store(store, read_only=True) as db:
        (run,) = db.runs()
    assert run["status"] == "interrupted" and run["samples"] == 0


# A C extension whose initialization a signal cuts short: pybind11's PYBIND11_MODULE catches the
# handler's exception and raises ImportError("initialization failed") from it (its
# PYBIND11_CATCH_INIT_EXCEPTIONS). The script runs the real CLI; a meta-path finder stands in for
# that module at an import made while the run is recording (or after it, where `measure network`
# imports matplotlib for its plots): it sends the process a real SIGTERM, which xferlab's handler
# turns into signals.Terminated inside the import, and wraps that as pybind11 does.
CUT_IMPORT = r"""
import os, signal, sys
from xferlab.measure import run as measure_run

class Extension:
    def find_spec(self, name, path, target=None):
        if name != "cut_c_extension":
            return None
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises Terminated here
            signal.sigtimedwait([], 1.0)
        except BaseException as error:
            raise ImportError("initialization failed") from error
        raise AssertionError("SIGTERM was not turned into an exception")

sys.meta_path.insert(0, Extension())
when = sys.argv[1]  # read now: main() puts its own argv in sys.argv while it runs
steps, measure = measure_run.run_steps, measure_run.measure
def run_steps(*args, **kwargs):  # while the run records
    if when == "during":
        import cut_c_extension
    return steps(*args, **kwargs)
def measured(*args, **kwargs):  # after the run, where a command imports matplotlib for its plots
    outcome = measure(*args, **kwargs)
    if when == "after":
        import cut_c_extension
    return outcome
measure_run.run_steps, measure_run.measure = run_steps, measured
from xferlab.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_sigterm_inside_an_import_is_an_interrupted_run(tmp_path):
    """The import fails with an ImportError raised from Terminated while the run records: the run is
    stored interrupted, exit 143, and the last line is the one "interrupted by SIGTERM" line (before
    the fix: exit 1, a traceback, the run stored failed)."""
    for when in ("during", "after"):
        store = tmp_path / f"{when}.duckdb"
        done = subprocess.run([sys.executable, "-c", CUT_IMPORT, when, "measure", "memory", "--size", "1MiB",
                               "--iterations", "2", "--threads", "1", "--kernels", "copy", "--store", str(store)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 143, (when, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr and "ImportError" not in done.stderr
        last = done.stderr.strip().splitlines()[-1]
        with open_store(store, read_only=True) as db:
            (run,) = db.runs()
        if when == "during":
            assert run["status"] == "interrupted"
            assert last == f"interrupted by SIGTERM: run {run['run_id']} kept 0 samples, status interrupted"
        else:  # the signal came after the run's last commit: the CLI still exits as interrupted
            assert last == "interrupted by SIGTERM"


def test_the_signal_is_found_behind_the_error_it_caused():
    from xferlab import signals

    def raised(make):
        try:
            make()
        except BaseException as error:
            return error

    def wrapped():
        try:
            raise signals.Terminated()
        except KeyboardInterrupt as error:
            raise ImportError("initialization failed") from error

    def during():
        try:
            raise signals.Interrupted()
        except KeyboardInterrupt:
            raise OSError("cleanup failed")

    assert isinstance(signals.behind(raised(wrapped)), signals.Terminated)
    assert isinstance(signals.behind(raised(during)), signals.Interrupted)
    assert signals.behind(raised(lambda: 1 / 0)) is None
    assert signals.behind(None) is None


def test_the_note_of_the_work_a_signal_stopped_survives_a_second_interruption(capsys):
    """One SIGTERM can surface twice: as the handler's exception, noted by the code it stopped (an export), and
    again as DuckDB's "Query interrupted" turned into an interruption while the first unwinds (the store closing).
    The CLI's line keeps the first one's note; without a note anywhere it says the signal alone."""
    from xferlab import signals
    from xferlab.cli import _interrupted

    def twice():
        try:
            first = signals.Terminated()
            first.xferlab_note = "export of run r to 'x.csv' stopped; nothing was written there"
            raise first
        except KeyboardInterrupt:
            raise signals.Terminated()  # the second surfacing, noteless, with the first as its context

    try:
        twice()
    except KeyboardInterrupt as error:
        assert _interrupted(error) == 143
    assert capsys.readouterr().err.strip() == ("interrupted by SIGTERM: export of run r to 'x.csv' stopped; "
                                               "nothing was written there")
    assert _interrupted(signals.Interrupted()) == 130
    assert capsys.readouterr().err.strip() == "interrupted by SIGINT"

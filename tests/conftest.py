"""Shared fixtures, and how the suite runs in parallel (``make test``: ``pytest -n auto`` with
pytest-xdist, then the tests marked ``serial`` alone).

* Every test runs in a folder of its own (and module fixtures in one per session), so that a
  command that writes to its defaults (``./xferlab-results/xferlab.duckdb``, ``./xferlab-results/
  profiles``, a report or a lab folder) never meets another test's files, in this process or in a
  parallel worker.
* Tests that compare timings (cache steps, launch latency, speedups, the emulated bus's spinning
  threads) are marked ``serial``: run beside other tests on a small machine they would measure the
  other tests. ``make test`` runs them after the parallel part, one at a time.
* Tests go to whichever worker is free, one at a time (``--dist loadgroup``), except those that take
  a module-scoped fixture (a recorded run, a browser): ``pytest_itemcollected`` below marks them
  ``xdist_group`` by their file, so that the fixture is built once, on one worker. (Whole files per
  worker, ``--dist loadfile``, left a core idle while one long file finished.)
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import opencl_platforms
from json_output import check_output

# The OpenCL platforms `make test` gives the suite: the system's (PoCL) and Intel's CPU runtime where the extra
# `intel` installed it, through the vendor folder of scripts/opencl_vendors.sh (set before any test module asks
# the probe for its devices). Device tests take the `platform` fixture below to run on each.
opencl_platforms.use_vendor_folder()

# Child processes (`python -m xferlab`) must import the same xferlab after a test changes folder:
# a relative PYTHONPATH (`PYTHONPATH=src pytest`) is made absolute once, here.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)
# pytest-xdist's workers set COLUMNS=80 (and LINES); the CLI would then draw 80-column tables in
# some workers and 120-column ones (its width for a pipe) in others. Tests see the pipe's width.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# A shell without job control starts a background command (`make test &`) with SIGINT ignored, and
# an ignored signal stays ignored across exec: every `xferlab` a test starts would then shrug off the
# Ctrl-C the signal tests send (the CLI keeps an ignored SIGINT ignored, as nohup wants). The tests'
# processes get Python's own handler, so their children start with SIGINT at its default.
import signal as _signal

if _signal.getsignal(_signal.SIGINT) is _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)

# Tests that time things and compare the times, and those whose threads spin (the emulated bus: its host and device
# threads each need a core; beside other tests every hand-over waits a scheduler quantum, and a 3 s test took 15
# minutes on the busy 2-vCPU VM): run alone (`-m serial`), never beside others. A name with its [parameters] marks
# that case alone.
SERIAL = (
    "tests/test_memory.py::test_latency_steps_match_the_caches",
    "tests/test_memory.py::test_app_direct_on_a_file_with_and_without_persistence",
    "tests/test_device.py::test_launch_latency_both_clocks",
    "tests/test_device.py::test_budget_scales_the_launch_count",
    "tests/test_probe.py::test_clock_resolution",
    "tests/test_runtime.py::test_bench_records_and_reports",
    "tests/test_runtime.py::test_every_workload_validates",
    "tests/test_runtime.py::test_the_bus_counts_what_crossed_it[emulated]",
    "tests/test_runtime_speed.py::test_p_over_o_passes_one_above_the_break_even_speed",
    "tests/test_study_offload.py::test_p_over_o_passes_1_only_above_the_break_even_speed",
    "tests/test_scenario_zipper.py::test_every_row_has_a_status_and_a_reason",  # its speedup: sync / forward wall time
    "tests/test_schemas.py::test_real_output_matches_its_schema[runtime bench --backend]",
    "tests/test_schemas.py::test_real_output_matches_its_schema[study run offload]",
)


def pytest_itemcollected(item):
    nodeid = item.nodeid.split("[")[0]
    if any(n == name or n.endswith("/" + name) for name in SERIAL for n in (nodeid, item.nodeid)):
        item.add_marker(pytest.mark.serial)
    # Marked here, before pytest-xdist reads the marks (its pytest_collection_modifyitems, under --dist loadgroup).
    scopes = {d.scope for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs}
    if scopes & {"module", "class"}:
        item.add_marker(pytest.mark.xdist_group(nodeid.split("::")[0]))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """pytest-xdist 3.8 groups an ``xdist_group`` by appending ``@group`` to ``item._nodeid``, which pytest 9 no longer
    reads (an item's nodeid is ``item._id``): without this the group's tests went to both workers."""
    if not getattr(config.option, "loadgroup", False):  # set on the workers by pytest-xdist
        return
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is not None and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
            item._id = type(item._id).parse(f"{item.nodeid}@{mark.args[0]}")


@pytest.fixture(scope="session", autouse=True)
def _session_folder(tmp_path_factory):
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("session-cwd"))
    # Profiles go to the user's data folder: never the real one (module fixtures included).
    saved = {k: os.environ.pop(k, None) for k in ("XDG_DATA_HOME", "XFERLAB_PROFILES")}
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("session-data"))
    yield
    os.chdir(before)
    os.environ.pop("XDG_DATA_HOME", None)
    os.environ.update({k: v for k, v in saved.items() if v is not None})


@pytest.fixture(autouse=True)
def _own_folder(tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))  # each test its own profiles


class Cli:
    """Runs `python -m xferlab …` as a user would, returning (exit code, stdout, stderr). A run with --json
    that succeeds must print strict JSON that its command's schema accepts (tests/json_output.py): every
    test that reads a --json output checks it against the schema too."""

    def __call__(self, *args, check=None, env=None):
        import os

        args = [str(a) for a in args]
        done = subprocess.run([sys.executable, "-m", "xferlab", *args], capture_output=True, text=True,
                              timeout=300, env={**os.environ, **(env or {})})
        if check is not None:
            assert done.returncode == check, (done.returncode, done.stdout, done.stderr)
        own = args[:args.index("--")] if "--" in args else args  # after --: a campaign's node command
        if done.returncode == 0 and "--json" in own:
            check_output(done.stdout)
        return done.returncode, done.stdout, done.stderr

    def json(self, *args):
        code, out, err = self(*args, "--json", check=0)
        return json.loads(out)


@pytest.fixture
def cli():
    return Cli()


@pytest.fixture(params=[opencl_platforms.POCL, opencl_platforms.INTEL], ids=["pocl", "intel"])
def platform(request) -> str:
    """Each OpenCL implementation's platform name in turn (its device: ``opencl_platforms.device_of``). Intel's
    is skipped with the reason where its runtime is not installed; in CI (CI=true) a missing one fails."""
    opencl_platforms.need(request.param)
    return request.param


def build_stand_in(source: str, path: Path, *flags: str) -> Path:
    """A stand-in library (tests/fake_libcuda.c, tests/fake_libopencl.c) compiled to ``path``, ``flags`` after the
    source (libraries to link); skips without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        pytest.skip(f"no C compiler to build the stand-in {source}")
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(path), str(Path(__file__).with_name(source)), *flags],
                   check=True, capture_output=True)
    return path


def build_fake_libcuda(path: Path, *flags: str) -> Path:
    """The stand-in for libcuda.so.1 (tests/fake_libcuda.c) compiled to ``path``; its PAD kernel runs on threads."""
    return build_stand_in("fake_libcuda.c", path, *flags, "-pthread")

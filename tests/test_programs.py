"""Issue 26, "Programs from binaries, and copies with no program at all": every probe command that
may open an OpenCL device ends with a "program" record saying how many programs it made and how
(native/probe/programs.hpp). Copies (transfer, chunks) make none; a launch builds its one program
from source (until --program gives it a binary). Run on a real OpenCL device (PoCL in CI)."""

import os

import pytest

from xferlab.measure.device import devices
from xferlab.measure.probe import run_probe

FOUND, WHY = devices("opencl")
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)


def program_of(args):
    run = run_probe(args, timeout=300)
    assert run.ok, run.failure
    records = run.of("program")
    assert len(records) == 1, records  # exactly one, at the end
    assert run.records[-1] is records[0]
    return run, records[0]


def test_copies_build_no_program():
    run, program = program_of(["transfer", "--sizes", "4096", "--iterations", "2", "--warmup", "0",
                               "--directions", "h2d,d2h,d2d", "--kinds", "pageable,pinned"])
    assert all(r["ok"] for r in run.of("validation")) and run.of("validation")  # the copies did run
    assert program == {"probe": "transfer", "record": "program", "made": "none", "source_builds": 0,
                       "binary_loads": 0, "il_loads": 0}


def test_granularity_builds_no_program():
    run, program = program_of(["chunks", "--total", "65536", "--chunks", "4096,65536", "--repeats", "1"])
    assert run.of("sample")
    assert program["made"] == "none" and program["source_builds"] == 0


def test_a_launch_builds_one_program_from_source():
    run, program = program_of(["launch", "--count", "3", "--args", "0,2", "--warmup", "0"])
    assert len(run.of("point")) == 2  # both argument counts launched from the one program
    assert program["made"] == "source" and program["source_builds"] == 1 and program["binary_loads"] == 0

"""CHAI's TRNS in `measure collab` (issue 30): the in-place transposition by cycle following, D (the device
alone, as CHAI's D) and U (device work-groups and host threads popping cycle starts from one SVM counter,
a flag a super-element), run on a real OpenCL device (PoCL, and Intel's CPU runtime beside it: the
`platform` fixture) and validated float by float against a host-only out-of-place transpose; the split
fields and task counts, one side alone, super-elements of 1 and 256 floats, a damaged result caught, bad
dimensions refused with one line (CLI and probe). Sizes are small: the machine has 2 cores."""

import dataclasses
import os
import subprocess

import pytest

from xferlab.measure.collab import CollabPlan, probe_args, rows_of, steps
from xferlab.measure.device import devices
from xferlab.measure.probe import probe_path

from opencl_platforms import collab_device, collab_run

FOUND, WHY = devices("opencl")
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)

# 37 rows of 96 floats in super-elements of 4: a 37 x 24 matrix of super-elements, not square, so that the
# transposition has cycles of several lengths; 888 super-elements, 887 cycle starts (CHAI's tasks)
TRNS = CollabPlan(patterns=["trns"], height=37, width=96, super_element=4, host_threads=1, warmups=1, repeats=2)
FLOATS, TILES, STARTS = 37 * 96, 37 * 24, 37 * 24 - 1



def records(run, kind):
    return [r for r in run.records if r["record"] == kind]


@pytest.mark.parametrize("version", ["D", "U"])
def test_trns_runs_and_validates(version, platform):
    index, device = collab_device(platform, version)
    step, run = collab_run(dataclasses.replace(TRNS, device=index), "trns", version)
    assert run.ok, run.failure
    (setup,) = records(run, "setup")
    assert (setup["pattern"], setup["height"], setup["width"], setup["super_element"]) == ("trns", 37, 96, 4)
    assert setup["size"] == FLOATS and setup["tasks"] == STARTS
    assert setup["split"] == ("device alone" if version == "D" else "dynamic")
    samples, checks = records(run, "sample"), records(run, "validation")
    assert [s["warmup"] for s in samples] == [True, False, False]
    assert len(checks) == 3 and all(c["ok"] and c["wrong"] == 0 for c in checks)
    for s in samples:
        assert s["device_tasks"] + s["host_tasks"] == STARTS  # every cycle start popped once, by one side or the other
        assert s["allocation_seconds"] > 0 and s["kernel_seconds"] > 0
        if version == "D":  # the matrix, the flags and the counter over, the matrix back
            assert s["device_tasks"] == STARTS and s["device_share"] == 1.0 and s["copy_seconds"] > 0
            assert s["copied_bytes"] == (2 * FLOATS + TILES + 1) * 4
        else:
            assert s["copy_seconds"] == 0 and s["copied_bytes"] == 0
    rows, failure = rows_of(step, run)
    assert failure is None and len(rows) == 3
    for row in rows:
        assert row["test"] == "collab-trns" and row["mode"] == version and row["value"] == row["params"]["total_seconds"]
        assert {"allocation_seconds", "copy_seconds", "kernel_seconds"} <= set(row["params"])
        assert (row["params"]["height"], row["params"]["width"], row["params"]["super_element"]) == (37, 96, 4)
        assert row["size_bytes"] == FLOATS * 4


@pytest.mark.parametrize("version, share, device_starts", [("D", 0.0, 0), ("U", 0.0, 0), ("U", 1.0, STARTS)])
def test_trns_one_side_alone(version, share, device_starts):
    """--device-share 0 leaves the transposition to the host threads (D in host memory, U in SVM), 1 to the device."""
    _, run = collab_run(dataclasses.replace(TRNS, device_share=share, repeats=1), "trns", version)
    assert run.ok, run.failure
    assert records(run, "setup")[0]["split"] == {"D": "host alone", "U": "dynamic"}[version]
    for s in records(run, "sample"):
        assert s["device_tasks"] == device_starts and s["host_tasks"] == STARTS - device_starts
        assert s["copied_bytes"] == 0


@pytest.mark.parametrize("version", ["D", "U"])
@pytest.mark.parametrize("height, width, element", [(33, 40, 1), (5, 768, 256)])
def test_trns_super_element_sizes(version, height, width, element):
    """A plain transpose (super-elements of one float) and the largest super-element, 4 floats a work-item."""
    plan = dataclasses.replace(TRNS, height=height, width=width, super_element=element, repeats=1)
    _, run = collab_run(plan, "trns", version)
    assert run.ok, run.failure
    starts = height * (width // element) - 1
    assert all(c["ok"] for c in records(run, "validation"))
    assert all(s["device_tasks"] + s["host_tasks"] == starts for s in records(run, "sample"))


@pytest.mark.parametrize("version", ["D", "U"])
def test_trns_damage_is_caught(version):
    _, run = collab_run(TRNS, "trns", version, corrupt=True)
    assert not run.ok
    bad = [r for r in records(run, "validation") if not r["ok"]]
    # float 1776 of the transposed matrix (24 rows of 37 x 4 floats): row 12, column 0
    assert len(bad) == 3 and bad[0]["wrong"] == 1 and bad[0]["first_wrong_index"] == FLOATS // 2
    assert "1 of 3552 floats differ; first at row 12, column 0 of the transposed matrix" in bad[0]["what"]


def test_probe_args_and_steps():
    args = probe_args(TRNS, "trns", "U")
    assert "--size" not in args
    assert args[args.index("--height") + 1:args.index("--height") + 6] == ["37", "--width", "96", "--super-element", "4"]
    assert [s.label for s in steps(TRNS)] == ["collab trns D", "collab trns U"]


@pytest.mark.parametrize("args, fragment", [
    (["--width", "100"], "--width 100: TRNS moves whole super-elements, so the width must be a positive multiple of "
                         "--super-element 32"),
    (["--width", "96", "--super-element", "0"], "--super-element 0: floats moved as one, allowed 1..256"),
    (["--width", "600", "--super-element", "300"], "--super-element 300"),
    (["--height", "0"], "--height 0: rows of TRNS's matrix, allowed 1..2147483647"),
    (["--height", "65536", "--width", "65536"], "--height 65536 x --width 65536: 4294967296 floats"),
    (["--height", "2", "--width", "1Gi"], None),  # not a count: typer refuses it
    (["--elements", "4096"], "--elements applies only with histogram, taskqueue or pad in --patterns"),
])
def test_cli_refusals(cli, tmp_path, args, fragment):
    code, out, err = cli("measure", "collab", "--patterns", "trns", "--store", tmp_path / "s.duckdb", *args)
    assert code == 2 and not (tmp_path / "s.duckdb").exists(), err
    if fragment:
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and fragment in err, err


@pytest.mark.parametrize("option", [["--height", "10"], ["--width", "64"], ["--super-element", "8"]])
def test_trns_options_need_trns(cli, tmp_path, option):
    code, out, err = cli("measure", "collab", "--patterns", "histogram", "--elements", "4096", "--host-threads", "1",
                         "--warmup", "0", "--repeats", "1", "--store", tmp_path / "s.duckdb", *option)
    assert code == 2 and err.strip() == f"error: {option[0]} applies only with trns in --patterns", err


@pytest.mark.parametrize("args, fragment", [
    (["--size", "1024"], "--size does not apply to --pattern trns: its matrix is --height x --width floats"),
    (["--width", "50", "--super-element", "8"], "--width 50 is not a multiple of --super-element 8"),
    (["--super-element", "257"], "--super-element"),
    (["--height", "65536", "--width", "65536"], "at most 2^31-1 floats in at most 2^30 super-elements"),
])
def test_probe_refusals(args, fragment):
    done = subprocess.run([str(probe_path()), "collab", "--pattern", "trns", "--repeats", "1", "--warmup", "0", *args],
                          capture_output=True, text=True, timeout=120)
    code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("xferlab-probe: error: collab: ") and fragment in err, err

"""CHAI's BS (Bézier surface) in `measure collab` (issue 30): D and U run on a real OpenCL device (PoCL, and
Intel's CPU runtime beside it: the `platform` fixture) and match the host-only reference bit for bit (the
kernel and the host use only +, - and * in the same order, without contraction: collab_bs.cpp), tiles split
statically (D, with edge tiles that are cut short) or taken from one SVM counter (U), the split fields are
there, a damaged result is caught; bad input refused with one line (tried: --resolution 1 and 16385,
--tile 0 and larger than the resolution, --resolution/--tile without bs, --elements with bs alone, the probe's
--tile above its --resolution). Sizes are small: the machine has 2 cores."""

import dataclasses
import os
import subprocess

import pytest

from xferlab.measure.collab import CollabPlan, rows_of
from xferlab.measure.device import devices
from xferlab.measure.probe import probe_path

from opencl_platforms import collab_device, collab_run, device_of

FOUND, WHY = devices("opencl")
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)

# 45 x 45 points in tiles of 8: 6 x 6 = 36 tiles, the last row and column of tiles 5 points wide
BS = CollabPlan(patterns=["bs"], resolution=45, tile=8, host_threads=1, warmups=1, repeats=2)



@pytest.mark.parametrize("version", ["D", "U"])
def test_bs_runs_and_matches_the_host_exactly(version, platform):
    index, device = collab_device(platform, version)
    step, run = collab_run(dataclasses.replace(BS, device=index), "bs", version)
    assert run.ok, run.failure
    (setup,) = [r for r in run.records if r["record"] == "setup"]
    assert (setup["pattern"], setup["resolution"], setup["tile"], setup["tasks"], setup["degree"]) == ("bs", 45, 8, 36, 3)
    assert setup["split"] == ("static" if version == "D" else "dynamic") and setup["size"] == 45 * 45 * 3
    samples = [r for r in run.records if r["record"] == "sample"]
    checks = [r for r in run.records if r["record"] == "validation"]
    assert [s["warmup"] for s in samples] == [True, False, False]
    assert len(checks) == 3 and all(c["ok"] and c["wrong"] == 0 for c in checks)
    for s in samples:
        assert s["device_tasks"] + s["host_tasks"] == 36  # every tile computed once, by one side or the other
        assert s["allocation_seconds"] > 0 and s["kernel_seconds"] > 0
        if version == "D":  # control points in (16 x 12 bytes), the 3 tile rows (24 rows) of the device's 18 tiles back
            assert s["device_tasks"] == 18 and s["copied_bytes"] == 16 * 12 + 24 * 45 * 12 and s["copy_seconds"] > 0
        else:
            assert s["copy_seconds"] == 0 and s["copied_bytes"] == 0
    rows, failure = rows_of(step, run)
    assert failure is None and len(rows) == 3
    for row in rows:
        assert row["test"] == "collab-bs" and row["mode"] == version and row["value"] == row["params"]["total_seconds"]
        assert {"allocation_seconds", "copy_seconds", "kernel_seconds"} <= set(row["params"])
        assert (row["params"]["resolution"], row["params"]["tile"]) == (45, 8)


@pytest.mark.parametrize("share, device_tiles, span", [(0.0, 0, 0), (0.25, 9, 16), (0.5, 18, 24), (1.0, 36, 45)])
def test_bs_static_split_follows_the_share(share, device_tiles, span):
    _, run = collab_run(dataclasses.replace(BS, device_share=share, repeats=1), "bs", "D")
    assert run.ok, run.failure
    for s in (r for r in run.records if r["record"] == "sample"):
        assert s["device_tasks"] == device_tiles and s["host_tasks"] == 36 - device_tiles
        assert s["copied_bytes"] == 16 * 12 + span * 45 * 12  # the rows the device's tiles span come back


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_bs_u_one_side_alone(share, platform):
    """--device-share 0 or 1 in U: the host alone, or the device alone (so its tiles are checked on every
    platform: in the shared run the host thread may take them all)."""
    _, run = collab_run(dataclasses.replace(BS, device=device_of(platform)[0], device_share=share, repeats=1), "bs", "U")
    assert run.ok, run.failure
    assert all(s["device_tasks"] == 36 * share and s["host_tasks"] == 36 * (1 - share)
               for s in run.records if s["record"] == "sample")


@pytest.mark.parametrize("version", ["D", "U"])
def test_bs_damage_is_caught(version):
    _, run = collab_run(BS, "bs", version, corrupt=True)
    assert not run.ok
    bad = [r for r in run.records if r["record"] == "validation" and not r["ok"]]
    assert len(bad) == 3 and "1 of 6075 coordinates differ; first at row 22, column 0 (x)" in bad[0]["what"]


def test_cli_runs_bs(cli, tmp_path):
    doc = cli.json("measure", "collab", "--patterns", "bs", "--resolution", "40", "--tile", "16", "--host-threads", "1",
                   "--warmup", "1", "--repeats", "2", "--store", tmp_path / "s.duckdb")
    assert [(r["pattern"], r["version"], r["count"]) for r in doc["results"]] == [("bs", "D", 2), ("bs", "U", 2)]
    assert not doc["failures"]


@pytest.mark.parametrize("args, fragment", [
    (["--patterns", "bs", "--resolution", "1"], "--resolution 1: BS's points per side must be in 2..16384"),
    (["--patterns", "bs", "--resolution", "16385"], "--resolution 16385: BS's points per side must be in 2..16384"),
    (["--patterns", "bs", "--tile", "0"], "--tile 0: BS's points per tile side must be in 1..300"),
    (["--patterns", "bs", "--resolution", "40", "--tile", "41"], "--tile 41: BS's points per tile side must be in 1..40"),
    (["--patterns", "pad", "--tile", "8"], "--tile applies only with bs in --patterns"),
    (["--patterns", "histogram", "--resolution", "64"], "--resolution applies only with bs in --patterns"),
    (["--patterns", "bs", "--elements", "4096"], "--elements applies only with histogram, taskqueue or pad"),
    (["--patterns", "bs,scan"], "--patterns 'scan' is not known; allowed: histogram, taskqueue, pad, trns, bs"),
])
def test_refusals(cli, tmp_path, args, fragment):
    code, out, err = cli("measure", "collab", "--store", tmp_path / "s.duckdb", *args)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize("args, fragment", [
    (["--resolution", "40", "--tile", "41"], "--tile 41 is larger than --resolution 40; allowed: 1..40"),
    (["--resolution", "1"], "--resolution '1'"),
])
def test_probe_refusals(args, fragment):
    done = subprocess.run([str(probe_path()), "collab", "--pattern", "bs", *args, "--repeats", "1", "--warmup", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1 and fragment in done.stderr, done.stderr

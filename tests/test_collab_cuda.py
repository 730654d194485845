"""CHAI's PAD on the CUDA backend (issue 30), without a GPU: `collab --backend cuda --pattern pad` in D
and U run against ``fake_libcuda.c`` (the stand-in libcuda.so.1 of test_cuda.py, whose PAD kernel pops
rows on threads of its own while the probe's host threads pop theirs, the same counter and flags in U),
validate against the host-only reference, and the cuMemAdvise hints --advise names arrive as the driver
documents them (a managed range, a CUmem_advise value, the GPU or CU_DEVICE_CPU). A driver without
cuMemAdvise refuses the hints in one line; without a driver PAD is "not available" (exit 3). Bad input
tried: --advise with OpenCL, with D, with the histogram, an unknown hint; a size that is not whole rows.
The stand-in is not CUDA: nothing here measures a GPU."""

import pytest

from conftest import build_fake_libcuda
from test_cuda import probe, with_fake

ROWS, COLS, PAD = 96, 1000, 37  # rows whose destination covers several later rows' sources
PADDED = ROWS * (COLS + PAD) * 4
FLAGS = (ROWS + 1) * 4  # a flag a row, then the row counter


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """The stand-in driver, and a variant without cuMemAdvise (a driver before CUDA 8.0's)."""
    out = tmp_path_factory.mktemp("fake_cuda_pad")
    return {"libcuda.so.1": str(build_fake_libcuda(out / "libcuda.so.1")),
            "libcuda-noadvise.so": str(build_fake_libcuda(out / "libcuda-noadvise.so", "-DFAKE_NO_ADVISE"))}


def pad(fake, version, *extra, repeats=2, library="libcuda.so.1", **env):
    code, records, err, launches = with_fake(fake, "collab", "--backend", "cuda", "--pattern", "pad", "--version", version,
                                             "--size", str(ROWS * COLS), "--cols", str(COLS), "--pad", str(PAD),
                                             "--host-threads", "2", "--warmup", "1", "--repeats", str(repeats), *extra,
                                             library=library, **env)
    advice = next(line for line in err.splitlines() if line.startswith("fake-cuda: launches=")).split("advice=")[1]
    return code, records, err, launches, advice


def of(records, kind):
    return [r for r in records if r.get("record") == kind]


@pytest.mark.parametrize("version", ["D", "U"])
def test_pad_runs_and_validates_on_cuda(fake, version):
    code, records, err, launches, advice = pad(fake, version)
    assert code == 0, err
    (setup,) = of(records, "setup")
    assert (setup["backend"], setup["pattern"], setup["rows"], setup["cols"], setup["pad"]) == ("cuda", "pad", ROWS, COLS, PAD)
    assert setup["split"] == ("static" if version == "D" else "dynamic")
    assert ("atom.sys" in setup["atomics_path"]) == (version == "U")
    checks = of(records, "validation")
    assert len(checks) == 3 and all(c["ok"] and c["wrong"] == 0 for c in checks)
    assert launches == 3  # one kernel a run, warm-up included
    samples = of(records, "sample")
    assert [s["warmup"] for s in samples] == [True, False, False]
    for s in samples:
        assert s["device_tasks"] + s["host_tasks"] == ROWS  # every row moved once, by one side or the other
        assert s["allocation_seconds"] > 0 and s["kernel_seconds"] > 0
        if version == "D":  # the device's 48 rows over (cols) and back (cols + pad)
            assert s["device_tasks"] == 48 and s["copied_bytes"] == 48 * (COLS + COLS + PAD) * 4 and s["copy_seconds"] > 0
        else:
            assert s["copy_seconds"] == 0 and s["copied_bytes"] == 0
    if version == "D":  # no managed memory, no hints
        assert setup["advise"] == "none" and advice == "-"
    else:  # the default, as CHAI's CUDA-U PAD: no hints (no hint did much better on an H200, docs/device.md)
        assert setup["advise"] == "none" and advice == "-"


@pytest.mark.parametrize("share, device_rows, launches", [(0.0, 0, 0), (1.0, ROWS, 3)])
def test_pad_u_on_one_side_alone(fake, share, device_rows, launches):
    """--device-share 0 runs the host threads alone (no launch), 1 the kernel alone: each still pads right."""
    code, records, err, launched, _ = pad(fake, "U", "--device-share", str(share))
    assert code == 0, err
    assert launched == launches
    assert all(s["device_tasks"] == device_rows and s["host_tasks"] == ROWS - device_rows for s in of(records, "sample"))
    assert all(c["ok"] for c in of(records, "validation"))


@pytest.mark.parametrize("advise, hints, text", [
    ("none", [], "none"),
    ("preferred-device", [f"3:0:{PADDED}"], "matrix: CU_MEM_ADVISE_SET_PREFERRED_LOCATION (device 0)"),
    ("accessed-by", [f"5:0:{PADDED}"], "matrix: CU_MEM_ADVISE_SET_ACCESSED_BY (device 0)"),
    ("read-mostly", [f"1:0:{PADDED}"], "matrix: CU_MEM_ADVISE_SET_READ_MOSTLY"),
    ("flags-accessed-by", [f"5:0:{FLAGS}"], "flags and row counter: CU_MEM_ADVISE_SET_ACCESSED_BY (device 0)"),
])
def test_each_advice_arrives_as_documented(fake, advise, hints, text):
    code, records, err, _, advice = pad(fake, "U", "--advise", advise, repeats=1)
    assert code == 0, err
    (setup,) = of(records, "setup")
    assert setup["advise"] == advise and setup["advice"] == text
    assert advice == (",".join(hints * 2) if hints else "-")  # warm-up and timed run alike
    assert all(c["ok"] for c in of(records, "validation"))


@pytest.mark.parametrize("version", ["D", "U"])
def test_pad_damage_on_cuda_is_caught(fake, version):
    code, records, err, _, _ = pad(fake, version, "--corrupt")
    assert code == 1 and "validation failed in 3 of 3 repeats" in err
    assert "cells differ; first at row 48, column 0" in of(records, "validation")[0]["what"]


def test_a_driver_without_cumemadvise(fake):
    """The hints need cuMemAdvise (CUDA 8.0+): asked for them, the U version refuses in one line (exit 3);
    --advise none (the default) runs without them, and D never needs them."""
    code, records, err, launches, _ = pad(fake, "U", "--advise", "preferred-device", library="libcuda-noadvise.so")
    assert code == 3 and records == [] and launches == 0
    (line,) = [l for l in err.splitlines() if not l.startswith("fake-cuda:")]
    assert "not available: the CUDA driver does not export cuMemAdvise (CUDA 8.0+), which --advise preferred-device " \
           "needs; run with --advise none" in line
    for version, extra in (("U", ["--advise", "none"]), ("U", []), ("D", [])):
        code, records, err, _, advice = pad(fake, version, *extra, library="libcuda-noadvise.so")
        assert code == 0 and advice == "-" and all(c["ok"] for c in of(records, "validation")), err


def test_pad_u_needs_concurrent_managed_access(fake):
    code, records, err, _, _ = pad(fake, "U", FAKE_CUDA_NO_CMA="1")
    assert code == 3 and records == [] and "concurrentManagedAccess" in err


def test_without_a_driver_cuda_pad_is_not_available():
    code, out, err = probe("collab", "--backend", "cuda", "--pattern", "pad", "--version", "U", "--size", "1000",
                           "--cols", "100", env={"XFERLAB_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"})
    assert code == 3 and out == "" and "collab: not available: " in err and "/nonexistent/libcuda.so.1" in err


@pytest.mark.parametrize("args, fragment", [
    (["--backend", "opencl", "--pattern", "pad", "--version", "U", "--advise", "none"], "--advise none: the cuMemAdvise hints apply only"),
    (["--backend", "cuda", "--pattern", "pad", "--version", "D", "--advise", "accessed-by"], "--advise accessed-by: the cuMemAdvise"),
    (["--backend", "cuda", "--pattern", "histogram", "--version", "U", "--advise", "none"], "apply only with --backend cuda --pattern pad"),
    (["--backend", "cuda", "--pattern", "pad", "--version", "U", "--advise", "prefered"], "preferred-device"),
    (["--backend", "cuda", "--pattern", "pad", "--size", "1001", "--cols", "100"], "--size 1001 with --cols 100"),
])
def test_probe_refusals(fake, args, fragment):
    """Refused before the driver is opened (exit 2, one line), even with a driver there."""
    code, out, err = probe("collab", *args, env={"XFERLAB_CUDA_LIBRARY": fake["libcuda.so.1"]})
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and fragment in err, err


@pytest.mark.parametrize("args, fragment", [
    (["--advise", "accessed-by"], "--advise applies only with --backend cuda and pad in --patterns"),
    (["--backend", "cuda", "--patterns", "histogram", "--advise", "none"], "--advise applies only with --backend cuda"),
    (["--backend", "cuda", "--patterns", "pad", "--advise", "bogus"],
     "--advise 'bogus' is not known; allowed: none, preferred-device, accessed-by, read-mostly, flags-accessed-by"),
])
def test_measure_collab_refuses_advise_where_it_does_not_apply(cli, tmp_path, args, fragment):
    code, out, err = cli("measure", "collab", "--store", tmp_path / "s.duckdb", *args)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "s.duckdb").exists()


def test_measure_collab_passes_the_advice_to_pad_u_only():
    from xferlab.measure.collab import CollabPlan, probe_args

    plan = CollabPlan(backend="cuda", patterns=["histogram", "pad"], size=ROWS * COLS, cols=COLS, advise="read-mostly")
    plan.check(probe_devices=False)
    assert probe_args(plan, "pad", "U")[-2:] == ["--advise", "read-mostly"]
    assert "--advise" not in probe_args(plan, "pad", "D") and "--advise" not in probe_args(plan, "histogram", "U")

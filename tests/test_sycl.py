"""The SYCL backend (`--backend sycl`): USM copies and launches through a SYCL runtime, reached by the
probe through dpctl's C API (native/loaders/sycl_loader.*, native/probe/sycl_backend.cpp).

Without dpctl (no `xferlab[sycl]` extra) the tests that need a SYCL device skip, saying so; the
"not available" answers are tested on every machine by pointing the probe at a library that is not
there. With dpctl, a USM-capable device is needed: Intel's OpenCL CPU runtime (intel-opencl-rt,
pulled by the extra) under DPC++; its ICD file names a placeholder path, so the fixture writes an
ICD folder (the system's ICDs and the wheel's libintelocl.so) and points OCL_ICD_VENDORS at it.
PoCL shows up as a SYCL device too, without USM.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xferlab.measure.probe import probe_path

HAVE_DPCTL = importlib.util.find_spec("dpctl") is not None
INTEL_OCL = Path(sys.prefix) / "lib" / "libintelocl.so"
needs_sycl = pytest.mark.skipif(not HAVE_DPCTL, reason="dpctl is not installed (pip install 'xferlab[sycl]')")


@pytest.fixture
def vendors(tmp_path, monkeypatch):
    """An OpenCL ICD folder with the system's ICDs and Intel's CPU runtime from the environment."""
    if not INTEL_OCL.exists():
        pytest.skip(f"Intel's OpenCL CPU runtime is not installed ({INTEL_OCL}; pip install intel-opencl-rt)")
    folder = tmp_path / "vendors"
    folder.mkdir()
    system = Path("/etc/OpenCL/vendors")
    for icd in sorted(system.glob("*.icd")) if system.is_dir() else []:
        (folder / icd.name).write_text(icd.read_text())
    (folder / "intel-cpu.icd").write_text(f"{INTEL_OCL}\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(folder))
    return folder


def probe(*args, env=None):
    done = subprocess.run([str(probe_path()), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")], done.stderr


def usm_device():
    code, records, err = probe("devices", "--backend", "sycl")
    assert code == 0, err
    found = [r["device"] for r in records if r["device"]["usm_device_allocations"]]
    if not found:
        pytest.skip("no SYCL device with USM device allocations")
    return found[0]


def test_without_dpctl_the_probe_says_not_available():
    """A missing SYCL library: exit 3 and one line naming it and how to install dpctl."""
    code, records, err = probe("devices", "--backend", "sycl", env={"XFERLAB_SYCL_LIBRARY": "/nonexistent/libDPCTL.so"})
    assert code == 3 and records == []
    assert "not available" in err and "/nonexistent/libDPCTL.so" in err and "xferlab[sycl]" in err


@pytest.mark.parametrize("command", ["device", "launch"])
def test_without_dpctl_the_cli_says_one_line(cli, tmp_path, command):
    """`--backend sycl` without dpctl: one line, exit 2, no run stored (as --backend cuda without a driver)."""
    code, out, err = cli("measure", command, "--backend", "sycl", "--store", tmp_path / "s.duckdb",
                         env={"XFERLAB_SYCL_LIBRARY": "/nonexistent/libDPCTL.so"})
    assert code == 2 and err.startswith("error: the sycl backend is not available") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()


@needs_sycl
def test_inventory_names_the_runtime_and_usm(vendors):
    device = usm_device()
    assert device["backend"] == "sycl" and device["sycl_runtime"].startswith("DPC++ ")
    assert device["sycl_backend"] == "opencl" and device["platform"] and device["driver"]
    assert device["host_kinds"][0] == "pageable" and set(device["host_kinds"]) <= {"pageable", "usm-host", "usm-shared"}
    assert Path(device["library"]).name == "libDPCTLSyclInterface.so"


@needs_sycl
def test_copies_in_every_usm_kind_validate(vendors):
    """Every host kind × direction, sizes up to 1 MiB: the probe reads every copy back."""
    device = usm_device()
    kinds = ",".join(device["host_kinds"])
    code, records, err = probe("transfer", "--backend", "sycl", "--device", str(device["index"]), "--kinds", kinds,
                               "--sizes", "1,4097,1048576", "--iterations", "2", "--min-time", "0")
    assert code == 0, err
    checks = [r for r in records if r.get("record") == "validation"]
    assert len(checks) == len(device["host_kinds"]) * 3 * 4 and all(r["ok"] for r in checks)
    samples = [r for r in records if r.get("record") == "sample"]
    assert all(s["host_seconds"] > 0 for s in samples)
    assert all(s["device_seconds"] > 0 for s in samples if s["direction"] != "bidir")  # profiling events


@needs_sycl
def test_a_wrong_copy_is_caught(vendors):
    device = usm_device()
    code, records, err = probe("transfer", "--backend", "sycl", "--device", str(device["index"]), "--kinds", "pageable",
                               "--sizes", "4096", "--directions", "h2d,d2h", "--iterations", "1", "--min-time", "0",
                               "--corrupt-copy")
    assert code == 1 and "validation failed" in err
    assert [r["ok"] for r in records if r.get("record") == "validation"] == [False, False]


@needs_sycl
def test_measure_device_rows_record_backend_and_kinds(cli, tmp_path, vendors):
    device = usm_device()
    doc = cli.json("measure", "device", "--backend", "sycl", "--device", device["index"], "--sizes", "4KiB,256KiB",
                   "--iterations", "2", "--min-time", "0", "--chunks", "64KiB", "--total", "256KiB", "--no-launch",
                   "--store", tmp_path / "s.duckdb")
    assert doc["device"]["backend"] == "sycl" and doc["device"]["sycl_runtime"].startswith("DPC++")
    copies = {(r["host_kind"], r["direction"]) for r in doc["results"] if r["test"] == "transfer"}
    assert copies == {(k, d) for k in device["host_kinds"] for d in ("h2d", "d2h", "d2d", "bidir")}
    chunked = {r["host_kind"] for r in doc["results"] if r["test"] == "chunks"}
    assert chunked == set(device["host_kinds"])  # pageable and usm-host explicit, usm-shared the shared kind


@needs_sycl
def test_launch_runs_sycl_beside_opencl_with_the_ratio(cli, tmp_path, vendors):
    """Seed 004's comparison: the empty kernel through SYCL and through OpenCL on the same device."""
    device = usm_device()
    doc = cli.json("measure", "launch", "--backend", "sycl", "--device", device["index"], "--count", "300",
                   "--args", "0,2", "--store", tmp_path / "s.duckdb")
    rows = {(r["backend"], r["kernel_args"]): r for r in doc["results"] if r["test"] == "launch"}
    assert set(rows) == {("sycl", 0), ("sycl", 2), ("opencl", 0), ("opencl", 2)}
    for args in (0, 2):
        sycl, opencl = rows[("sycl", args)], rows[("opencl", args)]
        assert sycl["count"] == opencl["count"] == 300
        assert sycl["relative_to_opencl"] == pytest.approx(sycl["median_seconds"] / opencl["median_seconds"])
        assert opencl["relative_to_opencl"] is None


@needs_sycl
@pytest.mark.parametrize("args, fragment", [
    (["--kinds", "usm-device"], "memory kind 'usm-device' is not known"),      # USM device memory is not a host kind
    (["--kinds", "svm-coarse"], "memory kind 'svm-coarse' is not supported"),  # an OpenCL kind
    (["--device", "99"], "--device 99 does not exist"),
])
def test_bad_input(cli, tmp_path, vendors, args, fragment):
    device = usm_device()
    extra = [] if "--device" in args else ["--device", device["index"]]
    code, out, err = cli("measure", "device", "--backend", "sycl", *extra, *args, "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.startswith("error: ") and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.duckdb").exists()


@needs_sycl
def test_a_device_without_usm_is_refused_in_one_line(cli, tmp_path, vendors):
    code, records, err = probe("devices", "--backend", "sycl")
    without = [r["device"]["index"] for r in records if not r["device"]["usm_device_allocations"]]
    if not without:
        pytest.skip("every SYCL device here has USM")
    code, out, err = cli("measure", "launch", "--backend", "sycl", "--device", without[0], "--store", tmp_path / "s.duckdb")
    assert code == 2 and "cannot allocate USM device memory" in err and len(err.strip().splitlines()) == 1, err


@needs_sycl
def test_granularity_study_with_usm_kinds(cli, tmp_path, vendors):
    """Seed 004's granularity study through SYCL: explicit (pageable, usm-host) and shared (usm-shared)
    host memory, nothing reported as skipped for want of shared memory."""
    device = usm_device()
    doc = cli.json("study", "run", "granularity", "--backend", "sycl", "--device", device["index"], "--total", "8Mi",
                   "--chunks", "64Ki,4Mi", "--store", tmp_path / "g.duckdb")
    rows = doc["results"]
    assert {r["host_kind"] for r in rows} == set(device["host_kinds"])
    assert {(r["direction"], r["chunk_bytes"]) for r in rows} == {(d, c) for d in ("h2d", "d2h") for c in (65536, 4194304)}
    assert not any("shared memory" in str(s) for s in doc.get("skipped", []))

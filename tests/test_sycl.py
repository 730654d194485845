"""The SYCL backend (`--backend sycl`): USM copies and launches through a SYCL runtime, reached by the
probe through dpctl's C API (native/loaders/sycl_loader.*, native/probe/sycl_backend.cpp).

Without dpctl (no `xferlab[sycl]` extra) the tests that need a SYCL device skip, saying so (in CI,
CI=true, they fail); the "not available" answers are tested on every machine by pointing the probe at a
library that is not there. With dpctl, a USM-capable device is needed: Intel's OpenCL CPU runtime
(intel-opencl-rt, in both extras) under DPC++, made visible by the suite's vendor folder
(scripts/opencl_vendors.sh, set by tests/conftest.py as by `make test`). PoCL shows up as a SYCL device
too, without USM.
"""

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

import opencl_platforms
from xferlab.measure.device import DevicePlan, steps
from xferlab.measure.probe import probe_path
from xferlab.measure.sycl import ROUNDS
from xferlab.store import open_store

HAVE_DPCTL = importlib.util.find_spec("dpctl") is not None


@pytest.fixture
def intel():
    """dpctl and Intel's OpenCL CPU runtime (the SYCL device with USM here): skipped, saying why, where
    either is missing; a failure in CI, which installs both (make test)."""
    if not HAVE_DPCTL:
        if opencl_platforms.IN_CI:
            pytest.fail("CI runs the SYCL tests: dpctl is not installed (the extra sycl: make test installs it)")
        pytest.skip("dpctl is not installed (pip install 'xferlab[sycl]'; make test does)")
    opencl_platforms.need(opencl_platforms.INTEL)


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
    # Intel's CPU runtime where it is there (the FPGA emulator, an accelerator with USM too, launches ~30x slower)
    return next((d for d in found if d["platform"] == opencl_platforms.INTEL), found[0])


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


def test_inventory_names_the_runtime_and_usm(intel):
    device = usm_device()
    assert device["backend"] == "sycl" and device["sycl_runtime"].startswith("DPC++ ")
    assert device["sycl_backend"] == "opencl" and device["platform"] and device["driver"]
    assert device["host_kinds"][0] == "pageable" and set(device["host_kinds"]) <= {"pageable", "usm-host", "usm-shared"}
    assert Path(device["library"]).name == "libDPCTLSyclInterface.so"


def test_copies_in_every_usm_kind_validate(intel):
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


def test_a_wrong_copy_is_caught(intel):
    device = usm_device()
    code, records, err = probe("transfer", "--backend", "sycl", "--device", str(device["index"]), "--kinds", "pageable",
                               "--sizes", "4096", "--directions", "h2d,d2h", "--iterations", "1", "--min-time", "0",
                               "--corrupt-copy")
    assert code == 1 and "validation failed" in err
    assert [r["ok"] for r in records if r.get("record") == "validation"] == [False, False]


def test_measure_device_rows_record_backend_and_kinds(cli, tmp_path, intel):
    device = usm_device()
    doc = cli.json("measure", "device", "--backend", "sycl", "--device", device["index"], "--sizes", "4KiB,256KiB",
                   "--iterations", "2", "--min-time", "0", "--chunks", "64KiB", "--total", "256KiB", "--no-launch",
                   "--store", tmp_path / "s.duckdb")
    assert doc["device"]["backend"] == "sycl" and doc["device"]["sycl_runtime"].startswith("DPC++")
    copies = {(r["host_kind"], r["direction"]) for r in doc["results"] if r["test"] == "transfer"}
    assert copies == {(k, d) for k in device["host_kinds"] for d in ("h2d", "d2h", "d2d", "bidir")}
    chunked = {r["host_kind"] for r in doc["results"] if r["test"] == "chunks"}
    assert chunked == set(device["host_kinds"])  # pageable and usm-host explicit, usm-shared the shared kind


def test_launch_runs_sycl_beside_opencl_with_the_ratio(cli, tmp_path, intel):
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
    with open_store(tmp_path / "s.duckdb", read_only=True) as db:  # rounds: an API's iterations count on, 0..299
        samples = [s for s in db.samples(db.runs()[0]["run_id"]) if s["test"] == "launch"]
    for api in ("sycl", "opencl"):
        for args in (0, 2):
            mine = sorted(s["iteration"] for s in samples if _params(s)["backend"] == api and s["kernel_args"] == args)
            assert mine == list(range(300))


def _params(sample):
    return json.loads(sample["params"]) if isinstance(sample["params"], str) else sample["params"]


def test_launch_study_through_sycl_runs_sycl_launches(cli, tmp_path, intel):
    """`study run launch --backend sycl`: SYCL's launches per CPU, one row per place and argument count
    (OpenCL's run beside them in `measure launch`, not here), and a note saying so."""
    device = usm_device()
    doc = cli.json("study", "run", "launch", "--backend", "sycl", "--device", device["index"], "--count", "200",
                   "--cpus", "0", "--store", tmp_path / "l.duckdb")
    rows = doc["results"]
    places = sorted((r["where"], r["kernel_args"]) for r in rows)
    assert places == sorted((w, a) for w in ("unpinned", "cpu0") for a in (0, 1, 4, 8))  # once each: no OpenCL rows
    assert all(r["count"] == 200 and r["median_seconds"] > 0 for r in rows)
    assert any("SYCL's launches alone" in n for n in doc.get("notes", [])), doc.get("notes")


def test_program_with_sycl_is_refused_in_one_line(cli, tmp_path, intel):
    """--program is the OpenCL backend's: SYCL builds the shipped OpenCL C source (exit 2, nothing stored)."""
    device = usm_device()
    binary = tmp_path / "launch.bin"
    binary.write_bytes(b"not a program")
    code, out, err = cli("measure", "launch", "--backend", "sycl", "--device", device["index"], "--program", binary,
                         "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.startswith("error: --program ") and len(err.strip().splitlines()) == 1, err
    assert "SYCL builds its empty kernels from the OpenCL C source" in err and "--backend opencl" in err
    assert not (tmp_path / "s.duckdb").exists()


def test_launch_rounds_alternate_sycl_and_opencl():
    """SYCL's and OpenCL's launches in alternating rounds (so that both see the machine in the same state),
    the count split between an API's rounds and its iterations counted on across them (no device needed)."""
    plan = DevicePlan(backend="sycl", device=1, transfers=False, launch=True, launch_count=10, launch_args=[0, 2],
                      opencl_twin=3)
    launches = steps(plan)
    apis = [s.args[s.args.index("--backend") + 1] for s in launches]
    assert apis == ["sycl", "opencl"] * ROUNDS
    assert {s.args[s.args.index("--device") + 1] for s in launches if "opencl" in s.args} == {"3"}
    for api in ("sycl", "opencl"):
        mine = [s for s, a in zip(launches, apis) if a == api]
        counts = [int(s.args[s.args.index("--count") + 1]) for s in mine]
        assert sum(counts) == 10 and [s.placement["first_iteration"] for s in mine] == [0, 3, 6, 8]
    alone = steps(DevicePlan(backend="sycl", device=1, transfers=False, launch=True, launch_count=10))
    assert len(alone) == 1 and alone[0].args[alone[0].args.index("--count") + 1] == "10"  # no OpenCL twin: one step


@pytest.mark.parametrize("args, fragment", [
    (["--kinds", "usm-device"], "memory kind 'usm-device' is not known"),      # USM device memory is not a host kind
    (["--kinds", "svm-coarse"], "memory kind 'svm-coarse' is not supported"),  # an OpenCL kind
    (["--device", "99"], "--device 99 does not exist"),
])
def test_bad_input(cli, tmp_path, intel, args, fragment):
    device = usm_device()
    extra = [] if "--device" in args else ["--device", device["index"]]
    code, out, err = cli("measure", "device", "--backend", "sycl", *extra, *args, "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.startswith("error: ") and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.duckdb").exists()


def test_a_device_without_usm_is_refused_in_one_line(cli, tmp_path, intel):
    code, records, err = probe("devices", "--backend", "sycl")
    without = [r["device"]["index"] for r in records if not r["device"]["usm_device_allocations"]]
    if not without:
        pytest.skip("every SYCL device here has USM")
    code, out, err = cli("measure", "launch", "--backend", "sycl", "--device", without[0], "--store", tmp_path / "s.duckdb")
    assert code == 2 and "cannot allocate USM device memory" in err and len(err.strip().splitlines()) == 1, err


def test_granularity_study_with_usm_kinds(cli, tmp_path, intel):
    """Seed 004's granularity study through SYCL: explicit (pageable, usm-host) and shared (usm-shared)
    host memory, nothing reported as skipped for want of shared memory."""
    device = usm_device()
    doc = cli.json("study", "run", "granularity", "--backend", "sycl", "--device", device["index"], "--total", "8Mi",
                   "--chunks", "64Ki,4Mi", "--store", tmp_path / "g.duckdb")
    rows = doc["results"]
    assert {r["host_kind"] for r in rows} == set(device["host_kinds"])
    assert {(r["direction"], r["chunk_bytes"]) for r in rows} == {(d, c) for d in ("h2d", "d2h") for c in (65536, 4194304)}
    assert not any("shared memory" in str(s) for s in doc.get("skipped", []))

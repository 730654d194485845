"""Other OpenCL implementations beside PoCL: Intel's OpenCL CPU runtime and its FPGA emulator from PyPI (the extra
`intel`), made visible by scripts/opencl_vendors.sh (a vendor folder for OCL_ICD_VENDORS), and `--platform NAME|N`
on every device command, the platform recorded in each run's params. The device runs take the `platform` fixture
(tests/conftest.py): each platform installed; Intel's is skipped where the wheel is not (a failure in CI). Bad
input tried: an unknown platform name, a platform index past the last, an empty name, a part naming several
platforms, --device past the chosen platform's last device, --platform with --backend cuda, with host buffers,
with the emulated bus and with a study that takes no device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opencl_platforms import FPGA_EMU, INTEL, device_of, need, vendor_folder

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)


@pytest.fixture(scope="module")
def vendors() -> str:
    """The vendor folder the suite runs with (tests/conftest.py sets it from scripts/opencl_vendors.sh, as make test
    does, unless OCL_ICD_VENDORS names one already)."""
    return os.environ.get("OCL_ICD_VENDORS") or vendor_folder()


def xferlab(vendors: str, *args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OCL_ICD_VENDORS=vendors)
    return subprocess.run([str(VENV / "bin" / "xferlab"), *args, "--store", str(tmp / "x.duckdb")],
                          capture_output=True, text=True, env=env, timeout=300)


def platforms(vendors: str) -> list[str]:
    env = dict(os.environ, OCL_ICD_VENDORS=vendors)
    run = subprocess.run([str(VENV / "bin" / "xferlab-probe"), "devices"], capture_output=True, text=True, env=env)
    return list(dict.fromkeys(json.loads(line)["device"]["platform"] for line in run.stdout.splitlines()))


def test_the_vendor_folder_names_real_libraries(vendors):
    icds = sorted(Path(vendors).glob("*.icd"))
    assert icds
    for icd in icds:
        lib = icd.read_text().strip()
        assert "anaconda" not in lib  # the wheel's placeholder path is not copied
        assert not lib.startswith("/") or Path(lib).exists(), icd
    assert (Path(vendors) / "intel-cpu.icd").exists() == (INTEL in platforms(vendors))


def test_both_implementations_are_listed(vendors):
    need(INTEL)
    names = platforms(vendors)
    assert "Intel(R) OpenCL" in names and len(names) >= 2


def test_launch_and_copies_run_on_each_platform(vendors, tmp_path, platform):
    run = xferlab(vendors, "measure", "device", "--platform", platform, "--kinds", "pinned", "--sizes", "4KiB,1MiB",
                  "--directions", "h2d,d2h", "--chunks", "", "--iterations", "3", "--min-time", "1ms", "--json",
                  tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["device"]["platform"] == platform  # the device of the platform asked for
    assert out["failures"] == [] and out["unvalidated_samples"] == 0
    copies = {(r["direction"], r["size_bytes"]) for r in out["results"] if r["test"] == "transfer"}
    assert copies == {(d, s) for d in ("h2d", "d2h") for s in (4096, 1 << 20)}
    assert any(r["test"] == "launch" and r["median_seconds"] > 0 for r in out["results"])


@pytest.mark.parametrize("bad, said", [("nope", "is not one of"), ("7", "is not one of"), ("", "is not one of")])
def test_an_unknown_platform_is_refused_listing_them(vendors, tmp_path, bad, said):
    run = xferlab(vendors, "measure", "launch", "--platform", bad, tmp=tmp_path)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --platform") and said in lines[0]
    assert "0: Portable Computing Language" in lines[0]


def test_a_device_past_the_platforms_last_is_refused(vendors, tmp_path):
    run = xferlab(vendors, "measure", "launch", "--platform", "0", "--device", "9", tmp=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("error: --device 9 does not exist on platform")


def test_platform_is_for_opencl_only(vendors, tmp_path):
    run = xferlab(vendors, "measure", "launch", "--backend", "cuda", "--platform", "0", tmp=tmp_path)
    assert run.returncode == 2 and "is for --backend opencl" in run.stderr


def test_the_inventory_names_each_devices_platform(vendors):
    env = dict(os.environ, OCL_ICD_VENDORS=vendors, COLUMNS="400")  # each name on one line
    run = subprocess.run([str(VENV / "bin" / "xferlab"), "inventory"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    for name in platforms(vendors):
        assert name in run.stdout


@pytest.mark.parametrize("command", [["measure", "collab"], ["measure", "kernels"]])
def test_the_kernel_commands_take_the_platform_too(vendors, tmp_path, command):
    run = xferlab(vendors, *command, "--platform", "no-such", tmp=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("error: --platform 'no-such' is not one of")


def test_each_run_records_its_platform(cli, tmp_path, platform):
    """`measure launch --platform P`: the run's params name the platform its device belongs to."""
    store = tmp_path / "s.duckdb"
    doc = cli.json("measure", "launch", "--platform", platform, "--count", "200", "--args", "0", "--store", store)
    assert doc["device"]["platform"] == platform
    run = cli.json("results", "show", doc["run_id"], "--store", store)["run"]
    assert run["params"]["platform"] == platform and run["inventory"]["accelerator"]["platform"] == platform


@pytest.mark.parametrize("command, said", [
    (["measure", "network", "--buffers", "device"], "is not one of"),
    (["runtime", "bench", "--backend", "opencl", "--repeats", "1"], "is not one of"),
    (["study", "run", "launch"], "is not one of"),
    (["study", "run", "deceval"], "is not one of"),
])
def test_the_other_device_commands_take_the_platform(cli, tmp_path, command, said):
    code, out, err = cli(*command, "--platform", "no-such", "--store", tmp_path / "s.duckdb")
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: --platform 'no-such' " + said), err
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize("command, said", [
    (["measure", "network"], "--platform applies only with --buffers device"),          # host buffers: no device
    (["runtime", "bench", "--repeats", "1"], "--platform applies only with --backend opencl"),  # the emulated bus
    (["study", "run", "tiers"], "--platform does not apply to the tiers study; it applies to: "),
])
def test_the_platform_is_refused_where_no_opencl_device_is_used(cli, tmp_path, command, said):
    code, out, err = cli(*command, "--platform", "0", "--store", tmp_path / "s.duckdb")
    assert code == 2 and len(err.strip().splitlines()) == 1 and said in err, err
    assert not (tmp_path / "s.duckdb").exists()


def test_the_fpga_emulator_is_an_accelerator_that_copies_and_launches(cli, tmp_path):
    """Intel's FPGA emulation platform (intel-opencl-fpga-emu-rt, loaded beside the CPU runtime of the same
    2025.0.5): an accelerator-type device; copies validate and an empty kernel launches on it."""
    need(FPGA_EMU)
    _, device = device_of(FPGA_EMU)
    assert device["type"] == "accelerator"
    doc = cli.json("measure", "device", "--platform", "FPGA Emulation", "--kinds", "pinned", "--sizes", "4KiB",
                   "--directions", "h2d,d2h", "--chunks", "", "--iterations", "3", "--min-time", "1ms",
                   "--no-launch", "--store", tmp_path / "s.duckdb")
    assert doc["device"]["platform"] == FPGA_EMU and doc["failures"] == [] and doc["unvalidated_samples"] == 0
    assert {(r["direction"], r["size_bytes"]) for r in doc["results"]} == {("h2d", 4096), ("d2h", 4096)}
    doc = cli.json("measure", "launch", "--platform", "FPGA Emulation", "--count", "200", "--args", "0",
                   "--store", tmp_path / "s.duckdb")
    (row,) = doc["results"]
    assert doc["device"]["platform"] == FPGA_EMU and row["count"] == 200 and row["median_seconds"] > 0


def test_a_part_naming_several_platforms_is_refused(vendors, tmp_path):
    """With the FPGA emulator beside the CPU runtime, 'Intel' names two platforms: refused, listing them."""
    need(FPGA_EMU)
    run = xferlab(vendors, "measure", "launch", "--platform", "intel", tmp=tmp_path)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert run.stderr.startswith("error: --platform 'intel' names several of the OpenCL platforms") and INTEL in run.stderr


def test_a_study_runs_on_the_platform_and_records_it(cli, tmp_path):
    """`study run launch --platform`: the study's options (in each step's params, and its group) name the platform."""
    need(INTEL)
    doc = cli.json("study", "run", "launch", "--platform", INTEL, "--count", "100", "--store", tmp_path / "s.duckdb")
    assert doc["options"]["platform"] == INTEL and doc["options"]["device"] == device_of(INTEL)[0]
    assert doc["results"] and all(r["median_seconds"] > 0 for r in doc["results"])

"""The CUDA backend of the probe, without a GPU.

What is checked here: the embedded PTX of the empty kernels (`xferlab-probe cuda-ptx`); the
"not available" answer (exit 3, naming the library) when there is no driver, as on this machine
and CI; and the backend's calls, run against ``fake_libcuda.c``: a stand-in for libcuda.so.1
written for these tests that implements the driver calls over host memory and rejects wrong ones
(a host-to-device copy whose destination is not device memory, a launch whose parameters are not
device pointers, a free of something never allocated) and reports leaks. The stand-in shows that
the backend drives the API as documented and that its data arrive; it is not CUDA, and nothing
here measures a GPU.
"""

import ctypes
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import build_fake_libcuda
from xferlab.measure.probe import probe_path, run_probe


def probe(*args, env=None):
    done = subprocess.run([str(probe_path()), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    return done.returncode, done.stdout, done.stderr


def cuda_driver_installed():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True




def test_embedded_ptx_declares_nine_empty_kernels():
    run = run_probe(["cuda-ptx"])
    assert run.ok, run.failure
    (record,) = run.records
    assert record["probe"] == "cuda-ptx" and record["valid"] is True
    assert record["max_args"] == 8
    assert record["entries"] == [f"xferlab_empty{n}" for n in range(9)]
    assert 1000 < record["ptx_bytes"] < 10000


def test_cuda_ptx_takes_no_options():
    code, out, err = probe("cuda-ptx", "--arch", "sm_90")
    assert code == 2 and "'--arch'" in err and out == ""


@pytest.mark.parametrize("library", [
    pytest.param(None, marks=pytest.mark.skipif(cuda_driver_installed(), reason="this machine has a CUDA driver")),
    "/nonexistent/libcuda.so.1",
])
def test_without_a_driver_cuda_is_not_available(library, monkeypatch):
    monkeypatch.delenv("XFERLAB_CUDA_LIBRARY", raising=False)
    env = {"XFERLAB_CUDA_LIBRARY": library} if library else {}
    code, out, err = probe("devices", "--backend", "cuda", env=env)
    assert code == 3 and out == ""
    assert "not available: " in err and (library or "libcuda.so.1") in err
    assert "cannot open shared object file" in err


# --- the stand-in driver -------------------------------------------------------------------


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """Builds the stand-in driver (and a variant lacking one entry point, as an old driver would)."""
    out = tmp_path_factory.mktemp("fake_cuda")
    built = {name: str(build_fake_libcuda(out / name, *flags))
             for name, flags in {"libcuda.so.1": [], "libcuda-old.so": ["-DFAKE_OLD_DRIVER"]}.items()}
    return built


def with_fake(fake, *args, library="libcuda.so.1", **env):
    code, out, err = probe(*args, env={"XFERLAB_CUDA_LIBRARY": fake[library], "FAKE_CUDA_REPORT": "1", **env})
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    report = [line for line in err.splitlines() if line.startswith("fake-cuda: launches=")]
    assert len(report) == 1, err
    counts = dict(item.split("=") for item in report[0].split(": ")[1].split())
    assert counts["bad"] == "0", err  # every call was made as the API documents it
    assert counts["live"] == "0", err  # everything allocated was freed
    return code, records, err, int(counts["launches"])


def test_a_driver_without_devices_is_not_available(fake):
    code, records, err, _ = with_fake(fake, "devices", "--backend", "cuda", FAKE_CUDA_INIT="100")
    assert code == 3 and records == []
    assert "not available: cuInit returned 100 (no CUDA-capable device is detected)" in err


def test_a_driver_lacking_an_entry_point_is_not_available(fake):
    code, _, err, _ = with_fake(fake, "devices", "--backend", "cuda", library="libcuda-old.so")
    assert code == 3
    assert f"not available: {fake['libcuda-old.so']} does not export cuMemcpyDtoDAsync_v2" in err


def test_devices_describes_the_device_from_its_attributes(fake):
    code, records, err, _ = with_fake(fake, "devices", "--backend", "cuda")
    assert code == 0, err
    (record,) = records
    device = record["device"]
    assert device["name"] == 'xferlab "fake" device 0'  # quotes survive the JSON
    assert device["compute_capability"] == "8.6" and device["driver_version"] == "12.4"
    assert device["pci_bus_id"] == "0000:65:00.0"
    assert device["global_memory_bytes"] == 2**30 and device["max_allocation_bytes"] == 2**28
    assert device["unified_addressing"] and device["concurrent_managed_access"]
    assert device["host_kinds"] == ["pageable", "pinned", "managed", "managed-prefetch"]


def test_prefetch_is_offered_only_with_concurrent_managed_access(fake):
    code, records, err, _ = with_fake(fake, "devices", "--backend", "cuda", FAKE_CUDA_NO_CMA="1")
    assert code == 0, err
    assert records[0]["device"]["host_kinds"] == ["pageable", "pinned", "managed"]
    code, _, err, _ = with_fake(fake, "transfer", "--backend", "cuda", "--kinds", "managed-prefetch",
                                FAKE_CUDA_NO_CMA="1")
    assert code == 2 and "'managed-prefetch' is not supported" in err


def test_a_missing_device_names_the_index_and_the_count(fake):
    code, _, err, _ = with_fake(fake, "launch", "--backend", "cuda", "--device", "1")
    assert code == 2 and "device 1 does not exist; the CUDA driver sees 1 device (0..0)" in err


def test_transfers_of_every_kind_and_direction_arrive(fake):
    kinds = ["pageable", "pinned", "managed", "managed-prefetch"]
    sizes = [1, 4096, 65536]
    code, records, err, _ = with_fake(fake, "transfer", "--backend", "cuda", "--kinds", ",".join(kinds),
                                      "--sizes", ",".join(map(str, sizes)), "--iterations", "2", "--min-time", "0",
                                      "--warmup", "1")
    assert code == 0, err
    validations = [r for r in records if r.get("record") == "validation"]
    assert len(validations) == len(kinds) * len(sizes) * 4 and all(v["ok"] for v in validations)
    samples = [r for r in records if r.get("record") == "sample"]
    assert {(s["kind"], s["direction"]) for s in samples} == {(k, d) for k in kinds
                                                               for d in ("h2d", "d2h", "d2d", "bidir")}
    assert all(s["host_seconds"] > 0 and s["device_seconds"] >= 0 for s in samples)


def test_every_copy_of_managed_memory_crosses_the_bus(fake):
    """On a GPU (an H200), managed memory stayed where the first copy left it, on the device, and every
    later "h2d" copy ran at device-to-device speed (2 TB/s). The stand-in keeps managed pages where a real
    driver does and counts each copy that found them left on the device by an earlier copy: none may."""
    for kinds, cma in (("managed,managed-prefetch", {}), ("managed", {"FAKE_CUDA_NO_CMA": "1"})):
        code, records, err, _ = with_fake(fake, "transfer", "--backend", "cuda", "--kinds", kinds, "--sizes",
                                          "4096,65536", "--iterations", "3", "--min-time", "0", "--warmup", "1", **cma)
        assert code == 0, err
        assert all(r["ok"] for r in records if r.get("record") == "validation")
        resident = re.search(r"resident_copies=(\d+)", err)
        # without concurrent managed access the host's touch moves the pages back, which the stand-in cannot see
        assert resident and (int(resident.group(1)) == 0) == (not cma), err


def test_launches_pass_as_many_device_pointers_as_the_kernel_declares(fake):
    code, records, err, launches = with_fake(fake, "launch", "--backend", "cuda", "--args", "0,1,8", "--count", "5",
                                             "--warmup", "1")
    assert code == 0, err
    samples = [r for r in records if r.get("record") == "samples"]
    assert [s["args"] for s in samples] == [0, 1, 8]
    assert all(len(s["host_seconds"]) == 5 and len(s["device_seconds"]) == 5 for s in samples)
    assert launches == 3 * (1 + 5) * 2  # each launch_empty launches once per clock


# --- device STREAM and first touch on CUDA (kernels_cuda.cpp) -----------------------------------


def test_stream_kernels_on_every_cuda_memory_kind(fake):
    """The stand-in does each kernel's arithmetic on the host: the probe's arguments, launch shapes,
    memory kinds and checks are what is tested (the PTX itself is assembled by the test below)."""
    code, records, err, launches = with_fake(fake, "kernels", "--backend", "cuda", "--size", "65536", "--iterations", "2",
                                             "--memory", "device,pinned,managed,managed-prefetch",
                                             "--types", "float,double", "--widths", "1,4", "--instances", "1,2")
    assert code == 0, err
    checks = [r for r in records if r.get("record") == "validation"]
    assert len(checks) == 4 * 2 * 2 * 6 and all(c["ok"] for c in checks)
    assert {c["memory"] for c in checks} == {"device", "pinned", "managed", "managed-prefetch"}
    samples = [r for r in records if r.get("record") == "sample"]
    assert all(s["host_seconds"] > 0 and s["width"] == 1 for s in samples)
    assert next(r for r in records if r.get("record") == "unavailable")["reason"].startswith("width 4")
    assert launches == sum(2 + 2 for c in checks for _ in range(c["instances"]))  # 2 warm-ups + 2 timed each


def opencl_device():
    from xferlab.measure.device import devices

    found, _ = devices("opencl")
    return bool(found)


STREAM_ARGS = ("kernels", "--size", "65536", "--iterations", "3", "--warmup", "1", "--kernels", "copy,triad,dot",
               "--types", "float,double", "--instances", "1,2")


def test_one_stream_driver_for_both_models(fake):
    """Device STREAM's options, sweep, timed loop, check and records are one driver's
    (native/probe/kernels_driver.cpp): the OpenCL model (PoCL here) and the CUDA one (the stand-in)
    give the same records, field for field and in the same order, for the same flags."""
    if not opencl_device() and os.environ.get("CI") != "true":
        pytest.skip("no OpenCL device here (CI installs pocl-opencl-icd)")
    code, cuda_records, err, _ = with_fake(fake, *STREAM_ARGS, "--backend", "cuda")
    assert code == 0, err
    code, out, err = probe(*STREAM_ARGS)
    assert code == 0, err
    opencl_records = [json.loads(line) for line in out.splitlines()]
    points = {}
    for backend, records in (("cuda", cuda_records), ("opencl", opencl_records)):
        kinds = [r["record"] for r in records]
        # the last record says how the programs were made (native/probe/programs.hpp): the models differ there
        assert kinds[0] == "setup" and kinds[-1] == "program" and set(kinds[1:-1]) == {"sample", "validation"}, kinds
        for kind in ("sample", "validation"):
            layouts = {tuple(r) for r in records if r["record"] == kind}
            assert len(layouts) == 1, (backend, kind, layouts)
            points[backend, kind] = layouts.pop()
        checks = [r for r in records if r["record"] == "validation"]
        assert all(c["ok"] for c in checks), checks
        assert [(c["kernel"], c["type"], c["instances"]) for c in checks] == [
            (k, t, i) for t in ("float", "double") for i in (1, 2) for k in ("copy", "triad", "dot")]
        samples = [r for r in records if r["record"] == "sample"]
        assert [s["iteration"] for s in samples] == [0, 1, 2] * len(checks)  # warm-up not recorded
        assert all(s["bytes"] == {"copy": 2, "triad": 3, "dot": 2}[s["kernel"]] * 65536 * s["instances"] for s in samples)
    assert points["cuda", "sample"] == points["opencl", "sample"]
    assert points["cuda", "validation"] == points["opencl", "validation"]


@pytest.mark.parametrize("args, message", [
    (["--widths", "3"], "--widths 3 is not a vector width; allowed: 1, 2, 4, 8, 16"),
    (["--size", "10"], "--size '10' is not an integer in 1024..1099511627776"),
    (["--iterations", "0"], "--iterations '0' is not an integer in 1..1000000"),
    (["--kernels", "nstream"], "--kernels 'nstream' is not allowed; allowed: copy, mul, add, triad, dot, read"),
    (["--instances", "65"], "--instances item '65' is not an integer in 1..64"),
    (["--max-time", "-1"], "--max-time '-1' is not a number in 0..3600"),
])
def test_stream_options_are_refused_alike_on_both_models(fake, args, message):
    """One option parser: a bad STREAM option is the same one-line error, exit 2, on CUDA as on
    OpenCL (a width of 3 was reported 'unavailable' on CUDA, exit 0)."""
    code, records, err, launches = with_fake(fake, "kernels", "--backend", "cuda", *args)
    assert code == 2 and records == [] and launches == 0
    (line,) = [e for e in err.splitlines() if not e.startswith("fake-cuda:")]
    assert line.startswith("xferlab-probe: error: kernels: ") and message in line
    if opencl_device():
        code, out, err_cl = probe("kernels", *args)
        assert code == 2 and out == "" and err_cl.strip() == line


def test_max_time_ends_a_points_timed_loop_after_two_samples_on_cuda(fake):
    code, records, err, launches = with_fake(fake, "kernels", "--backend", "cuda", "--size", "8192", "--kernels", "copy,dot",
                                             "--iterations", "50", "--warmup", "1", "--max-time", "1e-9")
    assert code == 0, err
    samples = [r for r in records if r.get("record") == "sample"]
    assert [(s["kernel"], s["iteration"]) for s in samples] == [("copy", 0), ("copy", 1), ("dot", 0), ("dot", 1)]
    assert launches == 2 * 3


@pytest.mark.parametrize("kernel", ["copy", "mul", "add", "triad", "dot", "read"])
def test_a_wrong_cuda_result_is_caught(fake, kernel):
    """The stand-in writes one element (or the sum) off by one: the driver's check names it."""
    code, records, err, _ = with_fake(fake, "kernels", "--backend", "cuda", "--size", "4096", "--kernels", kernel,
                                      "--iterations", "1", "--types", "float,double", FAKE_CUDA_CORRUPT="1")
    assert code == 0, err
    checks = [r for r in records if r.get("record") == "validation"]
    assert len(checks) == 2 and not any(c["ok"] for c in checks)
    for c in checks:
        n = 4096 // (8 if c["type"] == "double" else 4)
        assert c["what"].startswith("instance 0: sum " if kernel in ("dot", "read") else f"instance 0: element {n - 1} is ")


def test_first_touch_of_managed_memory(fake):
    code, records, err, launches = with_fake(fake, "kernels", "--backend", "cuda", "--mode", "faults",
                                             "--size", "1048576", "--repeats", "2")
    assert code == 0, err
    samples = [r for r in records if r.get("record") == "sample"]
    assert {s["memory"] for s in samples} == {"managed", "managed-prefetch"} and all(s["ok"] for s in samples)
    assert all(s["touches"] == 256 for s in samples) and launches == 2 * 2 * 2


def test_a_wrong_first_touch_is_caught(fake):
    """First touch's driver (kernels_driver.cpp) reads back every touched byte: the stand-in writes the
    last one wrong, and the record names it."""
    code, records, err, _ = with_fake(fake, "kernels", "--backend", "cuda", "--mode", "faults", "--size", "65536",
                                      "--strides", "4096", "--repeats", "1", FAKE_CUDA_CORRUPT="1")
    assert code == 0, err
    samples = [r for r in records if r.get("record") == "sample"]
    assert len(samples) == 2 and [(s["ok"], s["what"]) for s in samples] == [(False, "touch 15 wrong")] * 2
    assert all("first_device_seconds" not in s for s in samples)  # CUDA's touches are timed by the host only


@pytest.mark.parametrize("version", ["D", "U"])
def test_chai_histogram_on_cuda(fake, version):
    """Seed 001's CHAI U version on managed memory (system-scope atomics), beside D; a damaged result
    is caught."""
    code, records, err, launches = with_fake(fake, "collab", "--backend", "cuda", "--pattern", "histogram",
                                             "--version", version, "--size", "100000", "--warmup", "1",
                                             "--repeats", "2", "--host-threads", "2")
    assert code == 0, err
    setup = next(r for r in records if r.get("record") == "setup")
    assert setup["backend"] == "cuda" and ("atom.sys" in setup["atomics_path"]) == (version == "U")
    checks = [r for r in records if r.get("record") == "validation"]
    assert len(checks) == 3 and all(c["ok"] for c in checks) and launches == 3
    samples = [r for r in records if r.get("record") == "sample"]
    assert all(s["total_seconds"] > 0 and s["device_share"] == 0.5 for s in samples)
    assert (samples[0]["copied_bytes"] > 0) == (version == "D")
    code, out, err = probe("collab", "--backend", "cuda", "--pattern", "histogram", "--version", version,
                           "--size", "1000", "--warmup", "0", "--repeats", "1", "--corrupt", env={"XFERLAB_CUDA_LIBRARY": fake["libcuda.so.1"]})
    assert code == 1 and "validation failed in 1 of 1 repeats" in err


def test_u_needs_concurrent_managed_access(fake):
    code, records, err, _ = with_fake(fake, "collab", "--backend", "cuda", "--version", "U", "--size", "1000",
                                      FAKE_CUDA_NO_CMA="1")
    assert code == 3 and "concurrentManagedAccess" in err


def test_stream_ptx_assembles_for_every_architecture_from_maxwell_to_hopper(tmp_path):
    """ptxas (NVIDIA's PTX assembler, from the nvidia-cuda-nvcc-cu12 wheel of the dev extra) accepts
    every kernel of the module for sm_50 … sm_90: the PTX is valid without a GPU to JIT it."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    ptxas = next((Path(r) / "cuda_nvcc" / "bin" / "ptxas" for r in roots if (Path(r) / "cuda_nvcc" / "bin" / "ptxas").exists()),
                 None)
    if ptxas is None and os.environ.get("CI") != "true":
        pytest.skip("no ptxas (pip install nvidia-cuda-nvcc-cu12)")
    assert ptxas is not None, "the dev extra installs nvidia-cuda-nvcc-cu12, which has ptxas"
    code, out, err = probe("kernels", "--backend", "cuda", "--mode", "ptx")
    assert code == 0, err
    stream, histogram, pad = (r for r in map(json.loads, out.splitlines()) if r.get("record") != "program")
    assert stream["unclosed_braces"] == 0 and len(stream["entries"]) == 13
    assert pad["module"] == "collab-pad" and ".entry xferlab_pad_d(" in pad["ptx"] and ".entry xferlab_pad_u(" in pad["ptx"]
    os.chmod(ptxas, 0o755)
    # The histogram's and PAD's U versions use system-scope atomics: sm_60 and later.
    for module, arches in ((stream, ("sm_50", "sm_70", "sm_80", "sm_90")), (histogram, ("sm_60", "sm_80", "sm_90")),
                           (pad, ("sm_60", "sm_70", "sm_80", "sm_90"))):
        source = tmp_path / f"{module['module']}.ptx"
        source.write_text(module["ptx"])
        for arch in arches:
            done = subprocess.run([str(ptxas), f"-arch={arch}", str(source), "-o", str(tmp_path / f"{arch}.cubin")],
                                  capture_output=True, text=True)
            assert done.returncode == 0, (module["module"], arch, done.stderr)

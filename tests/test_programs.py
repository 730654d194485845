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


# --- Programs from binaries: `xferlab kernels build` writes them, --program loads them (issue 26). ---

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every program for device 0, as `xferlab kernels build` writes them (one build serves the module)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("programs") / "pocl"
    done = subprocess.run([sys.executable, "-m", "xferlab", "kernels", "build", "--device", "0", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def _manifest(folder):
    import json

    return json.loads((folder / "manifest.json").read_text())


def test_kernels_build_writes_one_binary_per_program_and_options(built):
    folder, shown = built
    manifest = _manifest(folder)
    device = FOUND[0]
    assert manifest["device_name"] == device["name"] and manifest["driver_version"] == device["driver"]
    written = {(p["program"], p["options"]) for p in manifest["programs"]}
    assert ("launch", "") in written
    stream = {o for name, o in written if name == "stream"}
    floats, doubles = [{o for o in stream if f"-DTYPE={t} " in o} for t in ("float", "double")]
    assert len(floats) == 5 and len(doubles) in (0, 5) and floats | doubles == stream  # widths 1, 2, 4, 8, 16
    assert any(name == "deceval" for name, _ in written) == bool(doubles)  # DecEval where the device has double
    for p in manifest["programs"]:
        assert (folder / p["file"]).stat().st_size == p["bytes"] > 0
        assert p["file"] in shown  # the table names each file


def test_a_launch_from_the_binary_builds_nothing(built):
    folder, _ = built
    run, program = program_of(["launch", "--count", "3", "--args", "0,2", "--warmup", "0", "--program", str(folder)])
    assert len(run.of("point")) == 2
    assert program["made"] == "binary" and program["source_builds"] == 0 and program["binary_loads"] == 1


def _validations(run):
    return sorted((r["kernel"], r["memory"], r["type"], r["width"], r["ok"], r["what"]) for r in run.of("validation"))


def test_stream_kernels_from_binaries_validate_as_from_source(built):
    folder, _ = built
    args = ["kernels", "--mode", "stream", "--memory", "device", "--types", "float", "--widths", "1,4",
            "--size", "65536", "--iterations", "2"]
    source, from_source = program_of(args)
    binary, from_binary = program_of([*args, "--program", str(folder)])
    assert _validations(source) and _validations(binary) == _validations(source)
    assert all(v[4] for v in _validations(binary))  # every kernel's result checked against the host's replay
    assert from_source["made"] == "source" and from_source["source_builds"] == 2
    assert from_binary["made"] == "binary" and from_binary["source_builds"] == 0 and from_binary["binary_loads"] == 2


def test_deceval_from_the_binary_computes_the_same_pi(built):
    folder, _ = built
    if not any(p["program"] == "deceval" for p in _manifest(folder)["programs"]):
        pytest.skip("DecEval integrates in double; the device has no cl_khr_fp64")
    args = ["deceval", "--size", "65536", "--chunks", "8192", "--repeats", "1", "--items", "staged"]
    source, _ = program_of(args)
    binary, program = program_of([*args, "--program", str(folder)])
    pis = lambda run: [(r["name"], r["ok"], r["pi"]) for r in run.of("validation")]  # noqa: E731
    assert pis(source) and pis(binary) == pis(source) and all(ok for _, ok, _ in pis(binary))
    assert program["made"] == "binary" and program["source_builds"] == 0


def test_collab_from_the_binary_of_the_options_the_device_takes(built):
    """collab tries option sets in turn (collab.cpp build_kernels); from a DIR it skips the sets without a
    binary and loads the one `kernels build` wrote: the same atomics path, the same validated histogram."""
    folder, _ = built
    written = [p for p in _manifest(folder)["programs"] if p["program"] == "collab"]
    assert len(written) == 1
    args = ["collab", "--pattern", "histogram", "--version", "D", "--size", "65536", "--repeats", "2",
            "--host-threads", "1"]
    source, from_source = program_of(args)
    binary, from_binary = program_of([*args, "--program", str(folder)])
    setup = lambda run: {k: v for k, v in run.first("setup").items() if k in ("build_options", "atomics")}  # noqa: E731
    assert setup(binary) == setup(source) and setup(binary)["build_options"] == written[0]["options"]
    checks = lambda run: [(r["ok"], r["wrong"]) for r in run.of("validation")]  # noqa: E731
    assert checks(source) and checks(binary) == checks(source) and all(ok for ok, _ in checks(binary))
    assert from_binary["made"] == "binary" and from_binary["source_builds"] == 0 and from_binary["binary_loads"] == 1
    assert from_source["source_builds"] >= 1 and from_source["binary_loads"] == 0


def _refused(args, fragment):
    run = run_probe(args, timeout=120)
    assert run.returncode == 2 and fragment in (run.failure or ""), run.failure
    assert "--program" in run.failure


def test_programs_that_are_not_for_the_device_are_refused_in_one_line(built, tmp_path, cli):
    """Bad input tried: a path that does not exist, a folder without a manifest, binaries whose manifest names
    another device, a file that is no program binary (CL_INVALID_BINARY), SPIR-V on a device that takes no IL
    (or a malformed module on one that does), a folder lacking one option set, another program's binary as FILE (no such kernel)."""
    folder, _ = built
    _refused(["launch", "--count", "1", "--program", str(tmp_path / "nowhere")], "does not exist")
    _refused(["launch", "--count", "1", "--program", str(tmp_path)], "has no manifest.json")
    other = tmp_path / "other"
    other.mkdir()
    for f in folder.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    manifest = (other / "manifest.json").read_text().replace(FOUND[0]["name"], "Another Device 9000")
    (other / "manifest.json").write_text(manifest)
    _refused(["launch", "--count", "1", "--program", str(other)], "was built for another device")
    garbage = tmp_path / "lone" / "empty.bin"
    garbage.parent.mkdir()
    garbage.write_bytes(b"not a program binary" * 10)
    _refused(["launch", "--count", "1", "--program", str(garbage)], "is not a program for this device")
    spirv = tmp_path / "lone" / "module.spv"  # SPIR-V's magic number; PoCL here reports no IL version
    spirv.write_bytes(bytes.fromhex("03022307") + bytes(60))
    run = run_probe(["launch", "--count", "1", "--program", str(spirv)], timeout=120)
    assert run.returncode == 2 and ("is SPIR-V, and this device takes no intermediate language" in run.failure
                                    or "is not a program for this device" in run.failure), run.failure
    missing = tmp_path / "missing"
    missing.mkdir()
    for f in folder.iterdir():
        if not f.name.startswith("stream-"):
            (missing / f.name).write_bytes(f.read_bytes())
    _refused(["kernels", "--memory", "device", "--widths", "4", "--size", "65536", "--iterations", "1",
              "--program", str(missing)], "has no binary for the stream kernels")
    # Another program's binary given as FILE: it loads, but lacks the command's kernels (seen on NVIDIA's
    # OpenCL as clCreateKernel's CL_INVALID_KERNEL_NAME, exit 1, before make_kernel refused it).
    launch_file = next(folder.glob("launch-*.bin"))
    _refused(["kernels", "--memory", "device", "--widths", "1", "--types", "float", "--size", "65536",
              "--iterations", "1", "--program", str(launch_file)], "holds no kernel 'stream_")
    stream_file = next(folder.glob("stream-*.bin"))
    _refused(["launch", "--count", "1", "--program", str(stream_file)], "holds no kernel 'xferlab_empty0'")
    # The CLI: the same refusals as one line and exit 2, before or as the probe meets them.
    for path, fragment in ((tmp_path / "nowhere", "does not exist"), (other, "was built for another device"),
                           (garbage, "is not a program for this device"), (stream_file, "holds no kernel")):
        code, out, err = cli("measure", "launch", "--count", "1", "--args", "0", "--program", path)
        lines = err.strip().splitlines()
        assert code == 2 and lines[-1].startswith("error: --program ") and fragment in lines[-1], err


def test_measure_kernels_from_binaries(built, cli):
    folder, _ = built
    code, out, err = cli("measure", "kernels", "--memory", "device", "--kernels", "copy,triad", "--widths", "1",
                         "--size", "64K", "--iterations", "2", "--program", folder, "--json", check=0)
    assert code == 0, err
    assert out.strip()


def test_the_kernel_sources_are_package_data():
    """The .cl files the probe embeds are in the installed package, for offline compilers (docs/device.md)."""
    from xferlab.measure.programs import sources

    found = sources()
    assert sorted(found) == ["collab", "deceval", "launch", "runtime", "stream"]  # runtime.cl: CMake installs it
    assert "__kernel void xf_window(" in found["runtime"] or "kernel void xf_window(" in found["runtime"]
    assert all(f"__kernel void xferlab_empty{n}(" in found["launch"] for n in range(9))
    assert "STREAM(triad," in found["stream"] and "__kernel void integrate(" in found["deceval"]
    assert "-cl-std=CL2.0 -DXFERLAB_C11=1" in found["collab"]


def test_the_deceval_study_from_binaries(built, cli, tmp_path):
    """`study run deceval --program DIR`: its runs load the kernel built for their options; a configuration the
    DIR has no binary for (EVALS=16: `kernels build --evaluations 1` wrote 1 only) and a study that builds no
    program are refused in one line, exit 2."""
    folder, _ = built
    if not any(p["program"] == "deceval" for p in _manifest(folder)["programs"]):
        pytest.skip("DecEval integrates in double; the device has no cl_khr_fp64")
    args = ["study", "run", "deceval", "--total", "1MiB", "--chunks", "256KiB", "--held-out", "128KiB",
            "--repeats", "1", "--store", tmp_path / "d.duckdb", "--program", folder]
    done = cli.json(*args, "--evaluations", "1")
    assert done["options"]["program"] == str(folder) and all(s["status"] == "measured" for s in done["steps"])
    code, out, err = cli(*args, "--evaluations", "16")
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: --program ") and "-DEVALS=16" in err, err
    code, out, err = cli("study", "run", "launch", "--program", folder)
    assert code == 2 and "--program does not apply to the launch study; it applies to: deceval" in err, err


def test_kernels_build_refuses_bad_input_in_one_line(cli, tmp_path):
    """Bad input tried: --out naming a file, a device that does not exist, --evaluations 0 and x."""
    (tmp_path / "afile").write_text("")
    for args, fragment in ((["--out", tmp_path / "afile"], "is an existing file"),
                           (["--device", "99", "--out", tmp_path / "d"], "--device 99 does not exist"),
                           (["--out", tmp_path / "d", "--evaluations", "0"], "--evaluations '0'"),
                           (["--out", tmp_path / "d", "--evaluations", "x"], "--evaluations 'x'")):
        code, out, err = cli("kernels", "build", *args)
        assert code == 2 and err.strip().splitlines() == [err.strip()] and fragment in err, err
    assert not (tmp_path / "d").exists()  # nothing written


# --- A device that cannot build from source, and SPIR-V (issue 26) ---

def _no_compiler_library(tmp_path):
    """tests/fake_libopencl.c built: the system's OpenCL with every device saying CL_DEVICE_COMPILER_AVAILABLE
    false (no device here compiles nothing; an FPGA's runtime does), for XFERLAB_OPENCL_LIBRARY."""
    from conftest import build_stand_in

    path = build_stand_in("fake_libopencl.c", tmp_path / "libnocompiler.so", "-Wl,--no-as-needed", "-l:libOpenCL.so.1",
                          "-ldl")
    return {"XFERLAB_OPENCL_LIBRARY": str(path)}


def test_a_device_without_a_compiler_is_refused_naming_program_and_runs_from_binaries(built, tmp_path, cli):
    """The probe (launch, kernels) and the runtime each refuse in one line naming --program, exit 2, nothing
    stored; with --program DIR the same commands run, validated, from the binaries."""
    folder, _ = built
    env = _no_compiler_library(tmp_path)
    launch = ["launch", "--count", "3", "--args", "0", "--warmup", "0"]
    run = run_probe(launch, timeout=120, env=env)
    assert run.returncode == 2 and "the device cannot build OpenCL C from source (CL_DEVICE_COMPILER_AVAILABLE is " \
                                   "false): give --program FILE|DIR" in (run.failure or ""), run.failure
    run = run_probe([*launch, "--program", str(folder)], timeout=120, env=env)
    assert run.ok and run.of("point") and run.records[-1]["made"] == "binary", run.failure
    from xferlab.store import open_store

    for n, args in enumerate((["measure", "launch", "--count", "1", "--args", "0"],
                              ["measure", "kernels", "--memory", "device", "--widths", "1", "--size", "64K",
                               "--iterations", "1"],
                              ["runtime", "bench", "--backend", "opencl", "--workload", "gcd", "--repeats", "1"])):
        store = tmp_path / f"s{n}.duckdb"
        code, out, err = cli(*args, "--store", store, env=env)
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert err.strip().startswith("error: the device cannot build OpenCL C from source") and "--program" in err, err
        if store.exists():  # a run may be opened before the device refuses: nothing measured in it
            with open_store(store, read_only=True) as db:
                assert all(not db.samples(r["run_id"]) for r in db.runs())
        code, out, err = cli(*args, "--store", store, "--program", folder, env=env)
        assert code == 0, (args, err)


def _il_device():
    """Intel's CPU runtime: it takes SPIR-V (CL_DEVICE_IL_VERSION SPIR-V_1.0..1.4); PoCL 3.1 here does not."""
    import shutil

    import opencl_platforms
    from xferlab.measure.programs import SPIRV_TOOLS

    opencl_platforms.need(opencl_platforms.INTEL)
    missing = [t for t in SPIRV_TOOLS if not shutil.which(t)]
    if missing:  # (not installed by `make test`: docs/device.md says why)
        pytest.skip(f"SPIR-V needs {', '.join(missing)} (apt-get install clang-14 llvm-spirv-14)")
    return opencl_platforms.device_of(opencl_platforms.INTEL)[0]


@pytest.fixture(scope="module")
def spirv_built(tmp_path_factory):
    import subprocess
    import sys

    device = _il_device()
    out = tmp_path_factory.mktemp("spirv") / "intel"
    done = subprocess.run([sys.executable, "-m", "xferlab", "kernels", "build", "--device", str(device), "--spirv",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return device, out


def test_spirv_from_the_shipped_sources_loads_through_il_and_validates(spirv_built):
    """`kernels build --spirv`: every program a SPIR-V module (its magic number), loaded on Intel's CPU runtime
    with clCreateProgramWithIL (il_loads, no source build): launches run, STREAM kernels and DecEval's pi
    validate as from source, and the runtime's interpreter gives the same posit bits."""
    device, folder = spirv_built
    manifest = _manifest(folder)
    assert {p["program"] for p in manifest["programs"]} >= {"launch", "stream", "collab", "runtime"}
    for p in manifest["programs"]:
        assert p["format"] == "spirv" and (folder / p["file"]).read_bytes()[:4] == bytes.fromhex("03022307")
    on = ["--device", str(device)]
    run, program = program_of(["launch", *on, "--count", "3", "--args", "0,2", "--warmup", "0", "--program", str(folder)])
    assert len(run.of("point")) == 2
    assert program["made"] == "il" and program["il_loads"] == 1 and program["source_builds"] == 0
    args = ["kernels", *on, "--mode", "stream", "--memory", "device", "--types", "float", "--widths", "1,4",
            "--size", "65536", "--iterations", "2"]
    source, _ = program_of(args)
    il, program = program_of([*args, "--program", str(folder)])
    assert _validations(il) == _validations(source) and all(v[4] for v in _validations(il))
    assert program["made"] == "il" and program["il_loads"] == 2 and program["source_builds"] == 0
    if any(p["program"] == "deceval" for p in manifest["programs"]):
        args = ["deceval", *on, "--size", "65536", "--chunks", "8192", "--repeats", "1", "--items", "staged"]
        pis = lambda run: [(r["name"], r["ok"], r["pi"]) for r in run.of("validation")]  # noqa: E731
        assert pis(program_of([*args, "--program", str(folder)])[0]) == pis(program_of(args)[0])
    from test_runtime import _chain
    from xferlab.runtime import open_runtime

    rt = open_runtime("opencl", "forward", window=8, device=device, program=folder)
    assert rt.programs == {"made": "il", "source_builds": 0, "binary_loads": 0, "il_loads": 1}
    assert _chain(rt) == _chain(open_runtime("opencl", "forward", window=8, device=device))


def test_kernels_build_spirv_without_the_tools_is_one_line(cli, tmp_path):
    """Bad input tried: --spirv where clang-14 and llvm-spirv-14 are not on PATH: one line naming both, exit 2,
    nothing written."""
    empty = tmp_path / "bin"
    empty.mkdir()
    code, out, err = cli("kernels", "build", "--spirv", "--out", tmp_path / "d", env={"PATH": str(empty)})
    assert code == 2 and err.strip().splitlines() == [err.strip()], err
    assert "--spirv needs clang-14 and llvm-spirv-14" in err and "not found: clang-14, llvm-spirv-14" in err, err
    assert not (tmp_path / "d").exists()

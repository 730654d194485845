"""OpenCL programs from binaries (issue 26): ``xferlab kernels build --device N --out DIR`` and the
``--program FILE|DIR`` that ``measure launch``, ``kernels`` and ``collab``, ``study run deceval`` and
``xferlab lab`` pass to the probe, and ``runtime bench`` to the offload runtime (the same C++ code makes the
programs in both: native/loaders/opencl_programs.hpp).

The probe builds every program it runs from the OpenCL C files of this package (``xferlab/kernels/*.cl``,
embedded in it at build time); ``xferlab-probe programs`` builds each of them with every set of build
options the commands use and writes their ``CL_PROGRAM_BINARIES`` with a ``manifest.json`` naming the device
and driver they are for. ``--program DIR`` makes the probe load those instead of compiling: a device whose
runtime compiles nothing at run time (an FPGA's) needs it. The checks here refuse, before any measuring, a
path that does not exist and binaries built for another device (the manifest's device and driver against the
inventory's); the probe refuses a file that is no program for the device (``CL_INVALID_BINARY``) and a device
that cannot build from source, in lines that name ``--program`` (:func:`refused`)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue, XferlabError
from .probe import ProbeRun, run_probe

MANIFEST = "manifest.json"
#: `kernels build --spirv`: the compiler to LLVM IR for SPIR and the translator to SPIR-V, one LLVM version
#: (Debian bookworm's packages of the same names).
SPIRV_TOOLS = ("clang-14", "llvm-spirv-14")
ALLOWED = "allowed: a DIR written by `xferlab kernels build --device N --out DIR`, or one program binary FILE"


def sources() -> dict[str, str]:
    """The OpenCL C files the probe embeds, by program name: launch, stream, deceval and collab (the offload
    runtime's program, "runtime", is native/runtime/ops/*.h, embedded in the probe and the runtime)."""
    folder = resources.files("xferlab") / "kernels"
    return {p.name[:-3]: p.read_text() for p in folder.iterdir() if p.name.endswith(".cl")}


def manifest_of(path: Path) -> Path:
    return path / MANIFEST if path.is_dir() else path.parent / MANIFEST


def check_program(path: Optional[Path], backend: str, device: dict[str, Any]) -> Optional[Path]:
    """``--program PATH`` for device ``device`` (its inventory record): refused in one line when it does
    not exist, is not for the OpenCL backend, or its manifest names another device or driver."""
    if path is None:
        return None
    if backend != "opencl":
        raise BadValue(f"--program '{path}': programs from binaries are the OpenCL backend's; allowed with "
                       "--backend opencl")
    if not path.exists():
        raise BadValue(f"--program '{path}' does not exist; {ALLOWED}")
    manifest = manifest_of(path)
    if not manifest.is_file():
        if path.is_dir():
            raise BadValue(f"--program '{path}' has no {MANIFEST}; {ALLOWED}")
        return path  # a lone binary: the probe asks the device whether it is one of its programs
    try:
        written = json.loads(manifest.read_text())
    except (OSError, ValueError) as error:
        raise BadValue(f"--program '{path}': {manifest} is not a manifest xferlab wrote ({error}); {ALLOWED}") from None
    for key, field in (("device_name", "name"), ("driver_version", "driver")):
        if written.get(key) != device.get(field):
            raise BadValue(f"--program '{path}' was built for another device: {key} '{written.get(key)}' in {manifest}, "
                           f"this device's is '{device.get(field)}'; build them for it with `xferlab kernels build "
                           f"--device N --out DIR`")
    return path


def serves(path: Optional[Path], device: dict[str, Any]) -> bool:
    """Whether ``--program`` ``path`` is for ``device`` (an OpenCL inventory record): its manifest names
    the device's name and driver (:func:`check_program`'s test)."""
    if path is None:
        return False
    try:
        check_program(path, "opencl", device)
    except BadValue:
        return False
    return True


def check_dir_for_some_device(path: Path, found: list[dict[str, Any]]) -> Path:
    """``xferlab lab --program DIR``: a DIR from ``kernels build`` (with its manifest) for one of ``found``,
    this machine's OpenCL devices; refused in one line before the lab starts otherwise."""
    if not path.exists():
        raise BadValue(f"--program '{path}' does not exist; {ALLOWED}")
    if not path.is_dir():
        raise BadValue(f"--program '{path}' is not a folder; allowed: a DIR written by `xferlab kernels build "
                       "--device N --out DIR` (the lab runs several programs on a device, one binary each)")
    if not manifest_of(path).is_file():
        raise BadValue(f"--program '{path}' has no {MANIFEST}; {ALLOWED}")
    if not any(serves(path, d) for d in found):
        try:
            written = json.loads(manifest_of(path).read_text())
        except (OSError, ValueError) as error:
            raise BadValue(f"--program '{path}': {manifest_of(path)} is not a manifest xferlab wrote ({error}); "
                           f"{ALLOWED}") from None
        names = ", ".join(f"'{d.get('name')}' (driver {d.get('driver')})" for d in found) or "none"
        raise BadValue(f"--program '{path}' was built for '{written.get('device_name')}' (driver "
                       f"{written.get('driver_version')}), none of this machine's OpenCL devices: {names}")
    return path


def program_args(path: Optional[Path]) -> list[str]:
    return [] if path is None else ["--program", str(path)]


def refused(run: ProbeRun) -> None:
    """A probe that refused its programs (exit 2, a line naming --program: a file that is no program
    for the device, a device that cannot build from source) ends the command in that line, exit 2."""
    if run.returncode == 2 and run.failure and "--program" in run.failure:
        raise BadValue(_own_line(run))


def _own_line(run: ProbeRun) -> str:
    """The probe's one-line error without its prefix ("xferlab-probe: error: launch: ")."""
    text = (run.failure or "").split("error: ", 1)[-1]
    command = run.args[0] + ": " if run.args else ""
    return text[len(command):] if command and text.startswith(command) else text


def build(device: int, out: Path, evaluations: list[int], timeout: float) -> dict[str, Any]:
    """Builds every program for ``device`` into ``out`` (checked by the caller: outputs.check_folder);
    returns the manifest the probe wrote."""
    run = run_probe(["programs", "--device", str(device), "--out", str(out),
                     "--evaluations", ",".join(map(str, evaluations))], timeout=timeout)
    if run.returncode == 2:
        raise BadValue(_own_line(run))
    if not run.ok:
        raise XferlabError(f"building the programs failed: {run.failure}")
    return json.loads(manifest_of(out).read_text())


def spirv_tools() -> list[str]:
    """The paths of :data:`SPIRV_TOOLS`; one line naming the missing ones (and how to get them) otherwise."""
    found = [shutil.which(tool) for tool in SPIRV_TOOLS]
    missing = [tool for tool, path in zip(SPIRV_TOOLS, found) if not path]
    if missing:
        raise BadValue(f"--spirv needs {' and '.join(SPIRV_TOOLS)} on PATH (Debian/Ubuntu: apt-get install "
                       f"{' '.join(SPIRV_TOOLS)}); not found: {', '.join(missing)}")
    return [p for p in found if p]


def to_spirv(out: Path, manifest: dict[str, Any], tools: list[str], timeout: float) -> dict[str, Any]:
    """Each program of ``manifest`` (what ``build`` wrote into ``out``) compiled again from the package's
    source with its build options, to SPIR-V (``clang-14 -target spir64 -emit-llvm``, then ``llvm-spirv-14``),
    over its binary: the same file name, so ``--program DIR`` loads it through clCreateProgramWithIL (the
    probe and the runtime tell SPIR-V by its magic number). The option sets stay the device's (those
    ``build`` found it takes). Returns the manifest, rewritten with each file's ``bytes`` and ``format``."""
    clang, translator = tools
    texts = sources()
    with tempfile.TemporaryDirectory(prefix="xferlab-spirv-") as tmp:
        for entry in manifest["programs"]:
            source = Path(tmp) / f"{entry['program']}.cl"
            source.write_text(texts[entry["program"]])
            bitcode = Path(tmp) / f"{entry['program']}.bc"
            for command in ([clang, "-c", "-target", "spir64", "-O2", "-emit-llvm", "-cl-std=CL1.2",
                             *shlex.split(entry["options"]), str(source), "-o", str(bitcode)],
                            [translator, str(bitcode), "-o", str(out / entry["file"])]):
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
                if done.returncode != 0:
                    raise XferlabError(f"{Path(command[0]).name} failed on {entry['program']} "
                                       f"('{entry['options']}'): {done.stderr.strip()[-500:]}")
            entry.update(bytes=(out / entry["file"]).stat().st_size, format="spirv")
    # As the probe wrote it (no spaces): the probe finds the device's "key":"value" pairs in it verbatim.
    (out / MANIFEST).write_text(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False) + "\n")
    return manifest

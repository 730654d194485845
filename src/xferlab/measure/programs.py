"""OpenCL programs from binaries (issue 26): ``xferlab kernels build --device N --out DIR`` and the
``--program FILE|DIR`` that ``measure launch`` and ``measure kernels`` pass to the probe.

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
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue, XferlabError
from .probe import ProbeRun, run_probe

MANIFEST = "manifest.json"
ALLOWED = "allowed: a DIR written by `xferlab kernels build --device N --out DIR`, or one program binary FILE"


def sources() -> dict[str, str]:
    """The OpenCL C files the probe embeds, by program name (launch, stream, deceval)."""
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

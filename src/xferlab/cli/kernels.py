"""`xferlab kernels build`: the OpenCL programs of the probe and the offload runtime compiled for one device and
written as binaries (or SPIR-V, --spirv), for `--program DIR` (issue 26; the work is in measure/programs.py and the
probe's programs.cpp)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..units import parse_list
from .common import DEVICE, TIMEOUT, timeout_seconds
from .output import Column, emit

app = typer.Typer(no_args_is_help=True, help="The OpenCL programs xferlab runs: built offline, loaded as binaries.")


@app.command("build")
def build(device_: int = DEVICE,
          out: Path = typer.Option(..., "--out", help="Folder for the binaries and manifest.json (created if needed).",
                                   metavar="DIR"),
          evaluations: str = typer.Option("1", "--evaluations", metavar="LIST",
                                          help="DecEval's integrand evaluations per element to build for (each is a "
                                               "build option: one binary each)."),
          spirv: bool = typer.Option(False, "--spirv",
                                     help="Write SPIR-V instead of device binaries: each program and option set the "
                                          "device takes, compiled from the package's sources by clang-14 and "
                                          "llvm-spirv-14 (loaded with clCreateProgramWithIL on a device that reports "
                                          "CL_DEVICE_IL_VERSION)."),
          timeout: str = TIMEOUT) -> None:
    """Build every OpenCL program of `measure launch`, `measure collab`, `measure kernels`, DecEval and the offload
    runtime for device N from the package's sources (xferlab/kernels/*.cl) with each set of build options they use,
    and write each one's CL_PROGRAM_BINARIES into DIR with manifest.json (device, driver, program, options, file).
    Give DIR to --program: the probe and `runtime bench` then load these and compile nothing (docs/device.md,
    'Programs from binaries')."""
    from ..errors import BadValue
    from ..measure.device import find_device
    from ..measure.programs import build as build_programs, spirv_tools, to_spirv
    from ..outputs import check_folder

    def whole(item: str, where: str) -> int:
        if item.strip().isdigit() and 1 <= int(item) <= 4096:
            return int(item)
        raise BadValue(f"{where} '{item.strip()}' is not a number of evaluations; allowed: 1..4096")

    counts = [int(v) for v in parse_list(evaluations, whole, "--evaluations", max_items=64)]
    timeout_s = timeout_seconds(timeout)
    tools = spirv_tools() if spirv else []  # before any work: the compilers are there
    check_folder(out, "--out")  # before any work: a folder that exists or can be made, and written in
    info = find_device("opencl", device_)
    manifest = build_programs(device_, out, counts, timeout_s)
    if spirv:
        manifest = to_spirv(out, manifest, tools, timeout_s)
    emit("kernels build", manifest["programs"], [
        Column("program", "Program", justify="left"), Column("options", "Build options", justify="left"),
        Column("file", "File", justify="left", no_wrap=True), Column("bytes", "Bytes", lambda b: f"{b:,}"),
    ], "table", title=f"{'SPIR-V modules' if spirv else 'Programs'} for OpenCL device {device_} ({info.get('name')}, "
                      f"driver {info.get('driver')}) in {out}",
        notes=[f"Load them with --program {out} (measure launch, measure collab, measure kernels, study run deceval, "
               "runtime bench --backend opencl, lab)."])

"""One OpenCL kernel run through xferlab's own run-time OpenCL loader (tests/cl_kernel_driver.cpp),
for the tests of the runtime's OpenCL C operation sets: they run wherever an OpenCL ICD is installed
(PoCL in CI, which `make test` installs), with no pyopencl. Without any OpenCL device the test is
skipped with the reason, except in CI, where that is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().parent / "cl_kernel_driver.cpp"
IN_CI = os.environ.get("CI") == "true"
NO_DEVICE = 3  # the driver's exit code when there is no OpenCL device


def build(folder: Path) -> Path:
    """Compile the driver with the loader into ``folder``."""
    compiler = shutil.which("g++")
    if compiler is None and not IN_CI:
        pytest.skip("no g++ here to build tests/cl_kernel_driver.cpp (make test's sysdeps installs it)")
    exe = folder / "cl_kernel_driver"
    done = subprocess.run([compiler or "g++", "-O1", "-std=c++17", "-I", str(ROOT / "native" / "loaders"), str(DRIVER),
                           str(ROOT / "native" / "loaders" / "opencl_loader.cpp"), "-ldl", "-o", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return exe


def run(exe: Path, source: str, kernel: str, global_size: int, args: list) -> tuple[dict, list[np.ndarray]]:
    """Run ``kernel`` of ``source`` over ``global_size`` work items. ``args``: numpy arrays (read-only
    buffers), ``("out", dtype, count)`` (write-only buffers, returned in order), or ``("u32", n)``.
    Returns the device's description (name, extensions) and the output arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "kernel.cl").write_text(source)
        argv, outs = [], []
        for k, arg in enumerate(args):
            if isinstance(arg, np.ndarray):
                path = folder / f"in{k}"
                path.write_bytes(np.ascontiguousarray(arg).tobytes())
                argv.append(f"in:{path}")
            elif arg[0] == "out":
                dtype, count = np.dtype(arg[1]), int(arg[2])
                path = folder / f"out{k}"
                argv.append(f"out:{dtype.itemsize * count}:{path}")
                outs.append((path, dtype))
            else:
                argv.append(f"{arg[0]}:{int(arg[1])}")
        done = subprocess.run([str(exe), str(folder / "kernel.cl"), kernel, str(global_size), *argv],
                              capture_output=True, text=True, timeout=600)
        if done.returncode == NO_DEVICE:
            if IN_CI:
                pytest.fail(f"{done.stderr.strip()} (CI installs pocl-opencl-icd)")
            pytest.skip(f"{done.stderr.strip()} (make test installs pocl-opencl-icd)")
        assert done.returncode == 0, done.stderr
        info = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
        return info, [np.frombuffer(path.read_bytes(), dtype=dtype) for path, dtype in outs]

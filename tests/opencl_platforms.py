"""The OpenCL platforms the device tests run on, each by name: PoCL (the system's pocl-opencl-icd, which
`make test` installs) and Intel's OpenCL CPU runtime from PyPI (the extra `intel`). Both are made visible by
scripts/opencl_vendors.sh, a vendor folder for the ICD loader (OCL_ICD_VENDORS); tests/conftest.py points
the suite at it, as `make test` does, and its `platform` fixture yields each platform's name in turn."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
IN_CI = os.environ.get("CI") == "true"
POCL = "Portable Computing Language"
INTEL = "Intel(R) OpenCL"
FPGA_EMU = "Intel(R) FPGA Emulation Platform for OpenCL(TM)"
MISSING = {POCL: "PoCL is not installed (pocl-opencl-icd: make test installs it)",
           INTEL: "Intel's OpenCL CPU runtime is not installed here (pip install '.[intel]': make test does; x86-64 Linux only)",
           FPGA_EMU: "Intel's FPGA emulator is not installed here (intel-opencl-fpga-emu-rt, in the extra intel)"}


def vendor_folder() -> str:
    """The folder scripts/opencl_vendors.sh writes for this venv: the system's .icd files and Intel's."""
    return subprocess.run(["sh", str(ROOT / "scripts" / "opencl_vendors.sh"), str(VENV)], capture_output=True,
                          text=True, check=True).stdout.strip()


def use_vendor_folder() -> None:
    """Points this process and its children at the vendor folder, unless OCL_ICD_VENDORS is set already
    (make test sets it) or Intel's runtime is not in this venv (the system's folder then serves alone)."""
    if "OCL_ICD_VENDORS" not in os.environ and (VENV / "lib" / "libintelocl.so").exists():
        os.environ["OCL_ICD_VENDORS"] = vendor_folder()


@functools.lru_cache(maxsize=None)
def _found() -> tuple[dict[str, Any], ...]:
    from xferlab.measure.device import devices

    return tuple(devices("opencl")[0])


def names() -> list[str]:
    """The platforms present, in the order the probe lists them."""
    return list(dict.fromkeys(d.get("platform", "") for d in _found()))


def device_of(platform: str) -> tuple[int, dict[str, Any]]:
    """The probe's device number (its --device) and the inventory of ``platform``'s first device."""
    device = next(d for d in _found() if d.get("platform") == platform)
    return device["index"], device


def collab_device(platform: str, version: str) -> tuple[int, dict[str, Any]]:
    """device_of(platform) for a CHAI pattern's ``version``: U needs fine-grained SVM with atomics, which
    both CPU platforms have, so a device without them fails the test rather than skipping it."""
    import pytest

    index, device = device_of(platform)
    if version == "U" and not (device.get("svm_fine_grain") and device.get("svm_atomics")):
        pytest.fail(f"the device lacks fine-grained SVM with atomics: {device}")
    return index, device


def collab_run(plan: Any, pattern: str, version: str, corrupt: bool = False):
    """One probe run of ``pattern``'s ``version`` as `measure collab` plans it: (its Step, the ProbeRun)."""
    from xferlab.measure.collab import probe_args
    from xferlab.measure.probe import run_probe
    from xferlab.measure.steps import Step

    args = probe_args(plan, pattern, version, corrupt=corrupt)
    return Step(f"collab {pattern} {version}", "collab", args, {"node": None, "mode": version}, 1.0), run_probe(args, timeout=300)


def need(platform: str) -> None:
    """Skips the test, saying why, where ``platform`` is not present; in CI (CI=true) that is a failure."""
    import pytest

    if platform not in names():
        if IN_CI:
            pytest.fail(f"CI runs the device tests on {platform!r}: {MISSING[platform]}")
        pytest.skip(MISSING[platform])

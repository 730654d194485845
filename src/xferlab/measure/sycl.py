"""The SYCL backend's checks and launch plan (``--backend sycl``: dpctl's C API over Intel's SYCL runtime,
in the probe's native/probe/sycl_backend.cpp).

Every SYCL step copies to and launches with USM device memory, so a device without the
``usm_device_allocations`` aspect (PoCL under DPC++) is refused before any allocation. A SYCL run's
launches run beside the same device's OpenCL launches (seed 004's DPC++ against OpenCL), matched by name
and driver version (both runtimes report CL_DRIVER_VERSION), in alternating rounds so that both APIs see
the same state of a busy machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import BadValue

ROUNDS = 4  # launch rounds per API where SYCL's and OpenCL's alternate


def usm_devices(found: list[dict[str, Any]]) -> str:
    """The SYCL devices that allocate USM device memory, as ``index (name, platform)``."""
    return ", ".join(f"{d.get('index')} ({d.get('name')}, {d.get('platform')})" for d in found
                     if d.get("usm_device_allocations"))


def check(device: int, info: dict[str, Any], launch: bool, program: Optional[Path],
          devices: Callable[[str], tuple[list[dict[str, Any]], Optional[str]]]) -> Optional[int]:
    """Refuses a SYCL device without USM device memory, and ``--program`` (one line each, naming what is
    allowed); returns the OpenCL index of the same device for a launch run (None: it has none).
    ``devices``: device.py's inventory of a backend (passed in: device.py imports this module)."""
    if program is not None:
        raise BadValue(f"--program '{program}': SYCL builds its empty kernels from the OpenCL C source xferlab "
                       "ships (kernels/launch.cl) through the runtime; programs from binaries are for --backend opencl")
    if not info.get("usm_device_allocations"):
        raise BadValue(f"--device {device}: SYCL device '{info.get('name')}' ({info.get('platform')}) cannot "
                       f"allocate USM device memory; SYCL devices with USM: {usm_devices(devices('sycl')[0]) or 'none'}")
    if not launch:
        return None
    twins, _ = devices("opencl")
    return next((d.get("index") for d in twins if d.get("name") == info.get("name")
                 and d.get("driver") == info.get("driver")), None)


def launch_rounds(backend: str, where: list[str], twin: Optional[int],
                  count: int) -> list[tuple[str, list[str], int, int]]:
    """The launch steps as (API, the probe's device options, launches per argument count, first iteration):
    one step of ``count`` launches, or for SYCL beside an OpenCL twin ROUNDS rounds of each API in turn
    (SYCL, OpenCL, SYCL, …), ``count`` split between them; iterations count on across an API's rounds."""
    if backend != "sycl" or twin is None:
        return [(backend, where, count, 0)]
    twin_where = ["--backend", "opencl", "--device", str(twin)]
    rounds = min(ROUNDS, count)
    share = [count // rounds + (1 if r < count % rounds else 0) for r in range(rounds)]
    firsts = [sum(share[:r]) for r in range(rounds)]
    return [(api, api_where, share[r], firsts[r]) for r in range(rounds)
            for api, api_where in ((backend, where), ("opencl", twin_where))]

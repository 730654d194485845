"""xferlab's latency-tolerant offload runtime (Zipper-style, seed 002), for Python.

The runtime is C++ (``native/runtime``: the request windows, the result-slot ring, forwarding, the
OpenCL and emulated backends, the posit32 and enc64 operation sets), bound with nanobind as
``xferlab._runtime``. This module checks the options (bad ones are the user's: :class:`BadValue`, exit 2)
and names the latency presets of the bus the emulated backend stands for.

>>> rt = open_runtime("emulated", mode="forward", latency=1e-6)
>>> x = rt.posit(1.5)
>>> y = x * x + x            # two requests, pending: the result stays on the device
>>> float(y)                 # the host reads it: one result read crosses the bus
3.75
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue

MODES = ("sync", "parallel", "forward")
BACKENDS = ("emulated", "opencl")
OPSETS = ("posit32", "enc64")
MAX_SLOTS = 2**20      # result slots (and requests per window) at most: 8 MiB of device memory
MAX_LATENCY = 1.0      # seconds: an emulated leg longer than this is a typo, not a bus
MAX_WORK = 2**20       # rounds of work a request: ~1 ms on a 2 GHz core, past any request the seeds consider
DEFAULT_WORK = 1024    # rounds when only --device-speed is given: ~1.5 us a request here, past the runtime's own cost
MAX_SPEED = 1e6        # a device speed beyond this leaves no round of work on the device for any --work
#: The key of SPECK-64/128's published test vector (Beaulieu et al., ePrint 2013/404), as l2, l1, l0, k0.
SPECK_TEST_KEY = (0x1b1a1918, 0x13121110, 0x0b0a0908, 0x03020100)

#: One-way bus latencies of the issue's and seeds' buses, by name (``--latency ccip``).
LATENCY_PRESETS: dict[str, float] = {
    "cxl": 40e-9,          # seed 000: CXL t_s = 40 ns (CXL 1.1 training videos)
    "ccip": 500e-9,        # seed 002: ~1000 ns a round trip on the FPGA's coherent bus (CCI-P), ~500 ns a leg
    "pcie3": 738.77e-9,    # seed 000: PCIe Gen3 t_s = 738.77 ns (Neugebauer et al., SIGCOMM 2018)
}


def _native():
    try:
        from .. import _runtime
    except ImportError as error:  # pragma: no cover - the package is always built with it
        raise BadValue(f"the runtime extension is not built ({error}); reinstall xferlab (make test builds it)") from None
    return _runtime


def device_work(work: Optional[int], speed: Optional[float]) -> tuple[int, int]:
    """(host rounds, device rounds) a request for ``--work`` and ``--device-speed`` (issue 29): the host's plain
    computation spends ``work`` rounds of SPECK-64's round function on every operation, the emulated device
    ``round(work / speed)`` on every request beside its interpreter, so it computes a request ``speed`` times
    faster than the host. Neither given: (0, 0), the emulator as it always was (the device is this CPU running
    the interpreter). Speed alone: work = DEFAULT_WORK; work alone: speed 1."""
    if speed is not None and not (0 < speed <= MAX_SPEED):  # (NaN fails this too)
        raise BadValue(f"--device-speed {speed:g} is not allowed: a speed relative to the host above 0, at most "
                       f"{MAX_SPEED:g} (4: the device computes a request 4x faster than the host)")
    if work is not None and (not isinstance(work, int) or not 0 <= work <= MAX_WORK):
        raise BadValue(f"--work {work} is not allowed: rounds of work a request, 0 to {MAX_WORK:,}")
    if speed is None:
        return (work or 0, work or 0)
    host = DEFAULT_WORK if work is None else work
    return host, int(round(host / speed))


def open_runtime(backend: str = "emulated", mode: str = "forward", ring: int = 256, window: int = 32,
                 latency: float = 1e-6, bandwidth: float = 16e9, device: int = 0,
                 key: tuple[int, int, int, int] = SPECK_TEST_KEY, program: Optional[Path] = None,
                 work: Optional[int] = None, device_speed: Optional[float] = None) -> Any:
    """A runtime on ``backend`` in ``mode``; options checked with one-line errors naming the value.
    ``key``: enc64's SPECK-64/128 key as four 32-bit words (default: the SPECK paper's test-vector key;
    give your own for anything but a demonstration). ``program``: the OpenCL backend's program from a
    binary, ``--program FILE|DIR`` as the probe takes it (a DIR from ``xferlab kernels build`` holds
    the runtime's, ``runtime-<hash>.bin``); its ``programs`` property then says ``made: binary``. ``work``,
    ``device_speed``: the emulated device's compute speed relative to the host (:func:`device_work`)."""
    if backend not in BACKENDS:
        raise BadValue(f"backend '{backend}' is not known; allowed: {', '.join(BACKENDS)}")
    if mode not in MODES:
        raise BadValue(f"mode '{mode}' is not known; allowed: {', '.join(MODES)}")
    for name, value in (("--ring", ring), ("--window", window)):
        if not isinstance(value, int) or not 1 <= value <= MAX_SLOTS:
            raise BadValue(f"{name} {value} is not allowed: 1 to {MAX_SLOTS:,} (a slot ring or window of 0 holds nothing)")
    if not 0 <= device < 2**31:
        raise BadValue(f"--device {device} is not allowed: a device index, 0 or more (see `xferlab inventory`)")
    if not 0 <= latency <= MAX_LATENCY:
        raise BadValue(f"--latency {latency:g} s is not allowed: an emulated latency from 0 s to {MAX_LATENCY:g} s")
    if len(key) != 4 or not all(isinstance(k, int) and 0 <= k < 2**32 for k in key):
        raise BadValue(f"key {key!r} is not allowed: four whole numbers of 32 bits (SPECK-64/128)")
    if not 0 < bandwidth < float("inf"):
        raise BadValue(f"--bandwidth {bandwidth:g} B/s is not allowed: above 0")
    host_rounds, device_rounds = device_work(work, device_speed)
    if backend != "emulated" and (work is not None or device_speed is not None):
        raise BadValue(f"--work and --device-speed set the emulated device's compute; --backend {backend} computes "
                       "at its own speed")
    if program is not None and backend != "opencl":
        raise BadValue(f"--program '{program}' gives the OpenCL backend its program; --backend {backend} builds none")
    native = _native()
    try:
        return native.Runtime(backend, mode, ring, window, latency, bandwidth, device, list(key),
                              str(program) if program is not None else "", host_rounds, device_rounds)
    except (RuntimeError, ValueError) as error:
        if backend == "opencl":  # no platform, no such device, a --program that does not serve: the user's
            raise BadValue(str(error).split("\n")[0]) from None
        raise


def workload_names() -> list[str]:
    return list(_native().workload_names())


def workload_opset(name: str) -> str:
    return _native().workload_opset(name)

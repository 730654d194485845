"""The accelerator's side: what a device does with memory once the data are there, and what touching
host memory from a kernel costs (seed 004: STREAM per HBM channel, SpMV scaling with memory ports
and kernel copies, the DMA hazard; seed 001: a GPU kernel streaming CPU memory, page-fault cost).

The probe's ``kernels`` subcommand (``native/probe/kernels.cpp``, OpenCL) runs four kinds of step:

* ``stream``: BabelStream's kernels (copy, mul, add, triad, dot) and a read-only sum over arrays in a
  memory kind: ``device`` memory, ``pinned`` host memory (CL_MEM_ALLOC_HOST_PTR), the application's
  ``host`` memory (CL_MEM_USE_HOST_PTR over posix_memalign'ed pages) and ``svm-coarse``/``svm-fine``
  shared virtual memory, i.e. kernels on host memory (zero-copy) beside device memory; float or
  double; 1 to 16 elements per work-item; over work-group counts and concurrent instances (the
  scaling table); each point checked against a host replay;
* ``faults``: a kernel touching fresh SVM one byte per stride, first touch against second;
* ``align``: H2D and D2H copies from host buffers at offsets from a page, runtime- or
  application-allocated (seed 004's DMA hazard);
* ``spmv``: CSR y = A x of a generated or Matrix Market matrix, checked here against SciPy.

Rows (suite ``kernels``): ``test`` the kernel (copy … read, spmv, first-touch) or the copy direction
(h2d, d2h for align); ``host_kind`` the memory the kernel works on (device, pinned, host,
svm-coarse, svm-fine) or the allocator of an aligned copy (runtime, application); ``params.variant``
names the rest of the point (type, width, groups, instances; the offset), and the store's
statistics group by it. A STREAM row also records ``llc_bytes``, the last-level cache its arrays
are judged against, and ``array_size_class`` (memory, mixed or cache-resident: measure/sizeclass.py,
STREAM's rule of arrays at least 4x that cache).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..errors import BadValue
from ..units import format_size
from . import sizeclass
from .probe import ProbeRun
from .programs import check_program, program_args
from .spmv import load_matrix, spmv_vector, write_matrix
from .steps import Step, good_time, step_failure
from ..system.locality import cpu_text

KERNELS = ("copy", "mul", "add", "triad", "dot", "read")
MEMORIES = ("device", "pinned", "host", "svm-coarse", "svm-fine")
CUDA_MEMORIES = ("device", "pinned", "managed", "managed-prefetch")
TYPES = ("float", "double")
WIDTHS = (1, 2, 4, 8, 16)
OFFSETS = (0, 1, 8, 16, 32, 64, 256, 4096)
ALLOCATORS = ("runtime", "application")
STRUCTURES = ("random", "banded")
#: BabelStream's byte counting: arrays each kernel reads or writes once.
ARRAYS = sizeclass.DEVICE_ARRAYS
DEFAULT_SIZE = 64 * 2**20
MAX_INSTANCES = 64
#: A scaling sweep's points with few work-groups are slow (one group streams the arrays alone):
#: each stops after this many timed seconds (and at least 2 launches) unless --max-time says otherwise.
SCALING_MAX_TIME = 0.5


def variant(r: dict[str, Any]) -> str:
    """The point's name beyond kernel and memory: 'float x4, 4096 groups, 1 instance'."""
    if r.get("offset_bytes") is not None:
        return f"offset {r['offset_bytes']} B"
    parts = [f"{r.get('type', 'float')} x{r.get('width', 1)}" if r.get("width") else str(r.get("type", ""))]
    parts.append(f"{r['groups']} groups")
    n = r.get("instances", 1)
    parts.append(f"{n} instance{'s' * (n != 1)}")
    return ", ".join(p for p in parts if p)


@dataclass
class KernelPlan:
    backend: str = "opencl"
    device: int = 0
    kernels: list[str] = field(default_factory=lambda: list(KERNELS))
    memories: Optional[list[str]] = None  # default: device, pinned, svm-fine (OpenCL); device, pinned, managed (CUDA)
    types: list[str] = field(default_factory=lambda: ["float"])
    widths: list[int] = field(default_factory=lambda: [1])
    size: Optional[int] = None     # bytes per array; None: STREAM's rule (rule_size), once checked
    groups: list[int] = field(default_factory=lambda: [0])
    instances: list[int] = field(default_factory=lambda: [1])
    iterations: int = 20
    max_time: float = 0.0          # timed seconds per point at most (0: no cap; a scaling sweep: SCALING_MAX_TIME)
    scaling: bool = False
    faults: bool = False
    strides: list[int] = field(default_factory=lambda: [4096])
    fault_repeats: int = 5
    align: bool = False
    offsets: list[int] = field(default_factory=lambda: list(OFFSETS))
    allocators: list[str] = field(default_factory=lambda: list(ALLOCATORS))
    align_size: int = 16 * 2**20
    spmv: Optional[str] = None     # a .mtx file, or a row count to generate
    spmv_structure: str = "random"
    spmv_per_row: int = 16
    spmv_type: str = "double"
    peer: Optional[int] = None     # a second device: device-to-device copies
    cpus: Optional[list[int]] = None  # --cpus: the host thread placed on these CPUs once the device is open
    info: dict[str, Any] = field(default_factory=dict)
    program: Optional[Path] = None  # --program: the kernels from binaries (measure/programs.py)
    spmv_matrix: Any = None        # scipy.sparse CSR, once prepared
    llc_bytes: int = 0             # the cache STREAM's arrays must outgrow (sizeclass.device_llc), once checked
    llc_what: str = ""

    def check(self, probe_devices: bool = True) -> None:
        if self.backend not in ("opencl", "cuda"):
            raise BadValue(f"--backend '{self.backend}' is not allowed; allowed: opencl, cuda")
        if self.backend == "cuda":
            asked = [o for o, on in (("--align", self.align), ("--spmv", self.spmv is not None)) if on]
            if asked:
                raise BadValue(f"{', '.join(asked)}: OpenCL devices only for now (on CUDA: STREAM kernels, --faults "
                               "and --peer)")
        if self.memories is None:
            self.memories = ["device", "pinned", "managed"] if self.backend == "cuda" else ["device", "pinned", "svm-fine"]
        memories = CUDA_MEMORIES if self.backend == "cuda" else MEMORIES
        for name, values, allowed in (("--kernels", self.kernels, KERNELS), ("--memory", self.memories, memories),
                                      ("--types", self.types, TYPES), ("--allocators", self.allocators, ALLOCATORS)):
            if not values:
                raise BadValue(f"{name} is empty; allowed: {', '.join(allowed)}")
            for v in values:
                if v not in allowed:
                    raise BadValue(f"{name} '{v}' is not allowed; allowed: {', '.join(allowed)}")
        for w in self.widths:
            if w not in WIDTHS:
                raise BadValue(f"--widths {w} is not a vector width; allowed: {', '.join(map(str, WIDTHS))}")
        if self.size is not None and not 1024 <= self.size <= 2**40:
            raise BadValue(f"--size {format_size(self.size)}: bytes per array must be in 1 KiB..1 TiB")
        for g in self.groups:
            if not 0 <= g <= 2**24:
                raise BadValue(f"--groups {g}: work-groups in 1..2^24 (0: the probe's choice)")
        for n in self.instances:
            if not 1 <= n <= MAX_INSTANCES:
                raise BadValue(f"--instances {n}: concurrent kernel instances in 1..{MAX_INSTANCES}")
        if not 1 <= self.iterations <= 1_000_000:
            raise BadValue(f"--iterations {self.iterations}: in 1..1,000,000")
        for o in self.offsets:
            if not 0 <= o <= 2**20:
                raise BadValue(f"--align offset {o}: bytes from a page boundary, in 0..1 MiB")
        for s in self.strides:
            if not 1 <= s <= 2**30:
                raise BadValue(f"--strides {s}: bytes between touches, in 1..1 GiB")
        if self.spmv_structure not in STRUCTURES:
            raise BadValue(f"--structure '{self.spmv_structure}' is not allowed; allowed: {', '.join(STRUCTURES)}")
        if not probe_devices:
            self.size = self.size or DEFAULT_SIZE
            return
        from .device import find_device

        self.info = find_device(self.backend, self.device)
        self.program = check_program(self.program, self.backend, self.info)
        self.llc_bytes, self.llc_what = sizeclass.device_llc(self.info, sizeclass.host_llc())
        limit = int(self.info.get("max_allocation_bytes") or 2**62)
        if self.size is None:
            self.size = sizeclass.rule_size(self.llc_bytes, limit, DEFAULT_SIZE)
        if self.size > limit:
            raise BadValue(f"--size {format_size(self.size)} is above the device's largest allocation, {format_size(limit)}")
        if "double" in self.types and self.info.get("double") is False:
            raise BadValue("--types double: the device has no double precision (cl_khr_fp64)")
        if self.peer is not None:
            if self.peer == self.device:
                raise BadValue(f"--peer {self.peer} is --device itself; allowed: another device's index")
            find_device(self.backend, self.peer)
        if self.spmv is not None:
            self.spmv_matrix = load_matrix(self.spmv, self.spmv_structure, self.spmv_per_row)
            nbytes = self.spmv_matrix.nnz * (8 if self.spmv_type == "double" else 4)
            if nbytes > limit:
                raise BadValue(f"--spmv {self.spmv}: its {self.spmv_matrix.nnz:,} values need {format_size(nbytes)}, "
                               f"above the device's largest allocation, {format_size(limit)}")

    def scaling_lists(self) -> tuple[list[int], list[int]]:
        """The work-group counts and instance counts a scaling sweep runs: 1, 2, 4 … to 8 per compute
        unit (and the probe's own choice, 0), and 1, 2, 4 instances."""
        if not self.scaling:
            return self.groups, self.instances
        units = int(self.info.get("compute_units") or 4)
        groups, g = [], 1
        while g <= 8 * units:
            groups.append(g)
            g *= 2
        return [*groups, 0], sorted({1, 2, 4, *self.instances})


def probe_args(plan: KernelPlan, memory: str) -> list[str]:
    groups, instances = plan.scaling_lists()
    args = ["kernels", "--backend", plan.backend, "--device", str(plan.device), "--mode", "stream",
            "--kernels", ",".join(plan.kernels), "--memory", memory, "--types", ",".join(plan.types),
            "--widths", ",".join(map(str, plan.widths)), "--size", str(plan.size),
            "--groups", ",".join(map(str, groups)), "--instances", ",".join(map(str, instances)),
            "--iterations", str(plan.iterations), *program_args(plan.program)]
    cap = plan.max_time or (SCALING_MAX_TIME if plan.scaling else 0.0)
    if cap:
        args += ["--max-time", repr(float(cap))]
    return args


def steps(plan: KernelPlan, folder: Optional[Path] = None) -> list[Step]:
    """One step per memory kind (a kind the device lacks fails alone), then faults, align, spmv."""
    out = []
    groups, instances = plan.scaling_lists()
    points = len(plan.kernels) * len(plan.types) * len(plan.widths) * len(groups) * len(instances)
    for memory in plan.memories:
        seconds = points * (plan.iterations + 2) * plan.size * 3 * max(instances) / 5e9
        cap = plan.max_time or (SCALING_MAX_TIME if plan.scaling else 0.0)
        if cap:
            seconds = min(seconds, points * max(instances) * cap * 1.5)
        out.append(Step(f"{plan.backend} #{plan.device} STREAM kernels on {memory} memory", "stream",
                        probe_args(plan, memory), {"node": None, "memory": memory, "llc_bytes": plan.llc_bytes},
                        2.0 + seconds))
    if plan.faults:
        out.append(Step(f"{plan.backend} #{plan.device} first touch of shared memory", "faults",
                        ["kernels", "--backend", plan.backend, "--device", str(plan.device), "--mode", "faults",
                         "--size", str(plan.size), "--strides", ",".join(map(str, plan.strides)),
                         "--repeats", str(plan.fault_repeats), *program_args(plan.program)], {"node": None}, 2.0 + plan.fault_repeats * 0.2))
    if plan.align:
        out.append(Step(f"{plan.backend} #{plan.device} copies by host offset and allocator", "align",
                        ["kernels", "--backend", plan.backend, "--device", str(plan.device), "--mode", "align",
                         "--size", str(plan.align_size), "--offsets", ",".join(map(str, plan.offsets)),
                         "--allocators", ",".join(plan.allocators), "--iterations", str(max(3, plan.iterations // 2))],
                        {"node": None}, 2.0 + len(plan.offsets) * 2 * plan.iterations * plan.align_size / 5e9))
    if plan.peer is not None:
        out.append(Step(f"{plan.backend} #{plan.device} to #{plan.peer}, device to device", "d2d",
                        ["kernels", "--backend", plan.backend, "--device", str(plan.device), "--mode", "d2d",
                         "--peer", str(plan.peer), "--size", str(plan.size), "--iterations", str(plan.iterations)],
                        {"node": None}, 2.0 + 2 * plan.iterations * plan.size * 3 / 5e9))
    if plan.spmv_matrix is not None and folder is not None:
        matrix_file = folder / "spmv.csr"
        write_matrix(plan.spmv_matrix, spmv_vector(plan.spmv_matrix.shape[1]), matrix_file, plan.spmv_type)
        out.append(Step(f"{plan.backend} #{plan.device} SpMV ({plan.spmv_matrix.shape[0]:,} rows, "
                        f"{plan.spmv_matrix.nnz:,} entries)", "spmv",
                        ["kernels", "--backend", plan.backend, "--device", str(plan.device), "--mode", "spmv",
                         "--matrix", str(matrix_file), "--output", str(folder / "spmv.y"),
                         "--groups", ",".join(map(str, groups)), "--instances", ",".join(map(str, instances)),
                         "--iterations", str(plan.iterations), *program_args(plan.program)],
                        {"node": None, "matrix": plan.spmv_matrix, "spmv": plan.spmv, "type": plan.spmv_type},
                        2.0 + plan.spmv_matrix.nnz * 12 * plan.iterations * len(groups) * sum(instances) / 2e9))
    if plan.cpus is not None:  # every mode's host thread placed on the set
        for step in out:
            step.args += ["--cpus", cpu_text(plan.cpus)]
            step.placement["cpus"] = cpu_text(plan.cpus)
    return out


def _key(r: dict[str, Any]) -> tuple:
    return (r.get("kernel"), r.get("memory"), r.get("type"), r.get("width"), r.get("groups"), r.get("instances"))


def rows_of(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """Tidy rows of one kernels step, and why it failed (None if it did not). A point is validated
    once its check came out right (the probe's, or for SpMV SciPy's here); rows of a failed check are
    kept unvalidated and fail the step."""
    setup = run.first("setup")
    base = {"suite": "kernels", "device_name": setup.get("device_name"), "device_index": setup.get("device_index")}
    rows: list[dict[str, Any]] = []
    dropped: list[str] = []
    failure = run.failure
    bad: list[str] = []
    unavailable = [f"{r.get('memory', '')} {r.get('type', '')}".strip() + f": {r['reason']}"
                   for r in run.records if r.get("record") == "unavailable"]
    step.learned["unavailable"] = unavailable
    if step.test == "d2d":
        checks = {r["path"]: r for r in run.records if r.get("record") == "validation"}
        bad = [f"{p}: {r.get('what')}" for p, r in checks.items() if not r.get("ok")]
        for r in run.of("sample"):
            if not good_time(r.get("host_seconds")):
                dropped.append(f"d2d {r.get('path')}: {r.get('host_seconds')} s")
                continue
            rows.append({**base, "test": "d2d-devices", "metric": "bandwidth_bytes_per_second",
                         "value": r["size_bytes"] / r["host_seconds"], "size_bytes": r["size_bytes"],
                         "iteration": r["iteration"], "warmup": False, "seconds": r["host_seconds"],
                         "bytes": r["size_bytes"], "validated": bool(checks.get(r["path"], {}).get("ok")),
                         "params": {"variant": f"{r['path']}, #{setup.get('device_index')} to #{setup.get('peer_index')}",
                                    "path": r["path"], "peer_index": setup.get("peer_index"),
                                    "device_seconds": r["device_seconds"] if good_time(r.get("device_seconds")) else None,
                                    "peer_name": setup.get("peer_name"), "device_name": base["device_name"]}})
    elif step.test in ("stream", "align"):
        checks = run.of("validation")
        keyf = _key if step.test == "stream" else (lambda r: (r.get("allocator"), r.get("offset_bytes"), r.get("direction")))
        good = {keyf(r) for r in checks if r.get("ok")}
        bad = [f"{' '.join(str(v) for v in keyf(r) if v is not None)}: {r.get('what')}" for r in checks if not r.get("ok")]
        for r in run.of("sample"):
            if not good_time(r.get("host_seconds")):
                dropped.append(f"{keyf(r)}: {r.get('host_seconds')} s")
                continue
            device = r["device_seconds"] if good_time(r.get("device_seconds")) else None
            if step.test == "stream":
                rows.append({**base, "test": r["kernel"], "metric": "bandwidth_bytes_per_second",
                             "value": r["bytes"] / r["host_seconds"], "host_kind": r["memory"], "size_bytes": r["size_bytes"],
                             "iteration": r["iteration"], "warmup": False, "seconds": r["host_seconds"], "bytes": r["bytes"],
                             "validated": keyf(r) in good,
                             "params": {"variant": variant(r), "type": r["type"], "width": r["width"], "groups": r["groups"],
                                        "local": r["local"], "instances": r["instances"], "device_seconds": device,
                                        "llc_bytes": step.placement.get("llc_bytes") or None,
                                        "array_size_class": sizeclass.size_class(
                                            r["size_bytes"], step.placement.get("llc_bytes"), ARRAYS[r["kernel"]]),
                                        **{k: v for k, v in base.items() if k != "suite"}}})
            else:
                rows.append({**base, "test": r["direction"], "metric": "bandwidth_bytes_per_second",
                             "value": r["size_bytes"] / r["host_seconds"], "host_kind": r["allocator"],
                             "size_bytes": r["size_bytes"], "iteration": r["iteration"], "warmup": False,
                             "seconds": r["host_seconds"], "bytes": r["size_bytes"], "validated": keyf(r) in good,
                             "params": {"variant": variant(r), "offset_bytes": r["offset_bytes"], "device_seconds": device,
                                        "device_name": base["device_name"]}})
    elif step.test == "faults":
        for r in run.of("sample"):
            if not good_time(r.get("first_seconds")) or not good_time(r.get("second_seconds")):
                dropped.append(f"{r.get('memory')} repeat {r.get('repeat')}")
                continue
            if not r.get("ok"):
                bad.append(f"{r['memory']} stride {r['stride_bytes']}: {r.get('what')}")
            per_touch = (r["first_seconds"] - r["second_seconds"]) / r["touches"]
            rows.append({**base, "test": "first-touch", "metric": "seconds", "value": r["first_seconds"],
                         "host_kind": r["memory"], "size_bytes": r["size_bytes"], "iteration": r["repeat"], "warmup": False,
                         "seconds": r["first_seconds"], "bytes": r["size_bytes"], "validated": bool(r.get("ok")),
                         "params": {"variant": f"stride {r['stride_bytes']} B", "stride_bytes": r["stride_bytes"],
                                    "touches": r["touches"], "second_seconds": r["second_seconds"],
                                    "first_device_seconds": r.get("first_device_seconds"),
                                    "second_device_seconds": r.get("second_device_seconds"),
                                    "host_back_seconds": r.get("host_back_seconds"), "fault_seconds_per_touch": per_touch,
                                    "device_name": base["device_name"]}})
    else:  # spmv: the probe wrote each point's y; SciPy says whether it is right
        matrix = step.placement["matrix"]
        want = matrix @ spmv_vector(matrix.shape[1])
        dtype = np.float64 if step.placement["type"] == "double" else np.float32
        tol = 1e-10 if dtype is np.float64 else 1e-4
        good = set()
        for r in run.of("result"):
            try:
                got = np.fromfile(r["file"], dtype=dtype).reshape(r["instances"], matrix.shape[0])
                Path(r["file"]).unlink()
            except (OSError, ValueError) as error:
                bad.append(f"{r['groups']} groups x {r['instances']}: y unreadable: {error}")
                continue
            err = np.max(np.abs(got - want[None, :]) / np.maximum(1.0, np.abs(want[None, :])))
            if err <= tol:
                good.add((r["groups"], r["instances"]))
            else:
                bad.append(f"{r['groups']} groups x {r['instances']}: y differs from SciPy's by {err:.2g} (relative)")
        for r in run.of("sample"):
            if not good_time(r.get("host_seconds")):
                dropped.append(f"spmv {r.get('groups')} groups: {r.get('host_seconds')} s")
                continue
            rows.append({**base, "test": "spmv", "metric": "bandwidth_bytes_per_second",
                         "value": r["bytes"] / r["host_seconds"], "host_kind": "device", "size_bytes": r["nnz"],
                         "iteration": r["iteration"], "warmup": False, "seconds": r["host_seconds"], "bytes": r["bytes"],
                         "validated": (r["groups"], r["instances"]) in good,
                         "params": {"variant": variant(r), "type": r["type"], "groups": r["groups"], "local": r["local"],
                                    "instances": r["instances"], "rows": r["rows"], "nnz": r["nnz"], "flops": r["flops"],
                                    "matrix": str(step.placement.get("spmv")),
                                    "device_seconds": r["device_seconds"] if good_time(r.get("device_seconds")) else None,
                                    "device_name": base["device_name"]}})
    if bad:
        failure = failure or f"validation failed at {len(bad)} point(s), first {bad[0]}"
    if not rows and failure is None and unavailable:
        failure = "not available: " + "; ".join(unavailable)
    return rows, step_failure(rows, failure, dropped)

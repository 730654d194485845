"""Collaborative CPU–device patterns, CHAI-style: the comparison of seed 001's Figure 4.

The AC922 paper runs the CHAI benchmarks in two versions: 'D' (device buffers, explicit copies,
kernel launch and termination for synchronization) and 'U' (unified memory, system coherence and
system atomics), and charts each one's time split into allocation, copy and kernel, normalized to
D's total. Here the probe's ``collab`` subcommand runs five of CHAI's collaboration patterns on an
OpenCL device while host threads work beside it (and the histogram and PAD on a CUDA GPU, their U
versions on managed memory with system-scope atomics, ``collab_cuda.cpp`` and ``collab_cuda_pad.cpp``;
PAD's U with the cuMemAdvise hints ``advise`` names, seed 001's remedy for PAD's U):

* ``histogram`` (data partitioning, CHAI HSTI): the device bins one part of the input, the host
  threads the rest, into one histogram (U: fine-grained SVM with SVM atomics) or two merged on
  the host after a read-back (D);
* ``taskqueue`` (task partitioning, CHAI TQH): blocks of an array transformed in place, the tasks
  split statically and copied over and back (D), or popped by device work-groups and host threads
  alike from one atomic counter in fine-grained SVM (U);
* ``pad`` (CHAI PAD, fine-grained synchronization): a rows x cols matrix padded in place to rows x
  (cols + pad), rows moved from the last with a flag per row; the rows split statically, the device's
  copied over and back (D), or popped by device work-groups and host threads from one SVM counter,
  each waiting on the flags of the rows its destination covers (U);
* ``trns`` (CHAI TRNS, in-place transposition, PTTWAC): a height x width matrix of floats seen as
  super-elements of ``super_element`` floats, transposed in place by following cycles with a flag
  per super-element swapped atomically; the device alone, the matrix copied over and back (D: CHAI's
  D runs one side alone), or device work-groups and host threads popping cycle starts from one SVM
  counter and swapping the same flags (U).
* ``bs`` (CHAI BS, data partitioning over output tiles): a Bézier surface of degree 3 evaluated at
  resolution x resolution points, tiles of tile x tile points split statically, the control points
  copied in and the device's tiles copied back and merged (D), or taken by device work-groups and host
  threads from one SVM counter (U); validated exactly (``native/probe/collab_bs.cpp`` says why).

Each step is one probe run of one (pattern, version) with CHAI's method (seed 001 and CHAI's
``-w 10 -r 100``): ``warmups`` runs (default 10) out of the statistics, then ``repeats`` timed runs
(default 100); every run is validated against a host-only reference. Rows carry the split
(``allocation_seconds``, ``copy_seconds``, ``kernel_seconds``) with ``value`` = ``seconds`` = the run's
total. The summary's headline is CHAI's: the mean over the timed runs (``mean_seconds`` =
``total_seconds``), with the median and its 95 % interval beside, normalized, as in Figure 4, by D's
mean total for the same pattern.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue
from . import checks
from .probe import ProbeRun
from .programs import check_program, program_args
from .samples import validated, value_of
from ..stats import summarize
from ..system.locality import cpu_text
from .steps import Step, good_time, step_failure

PATTERNS = ("histogram", "taskqueue", "pad", "trns", "bs")
VERSIONS = ("D", "U")
PHASES = ("allocation", "copy", "kernel")
DEFAULT_SIZE = 2**20      # values (histogram) or floats (task queue): 110 runs a step stay short
DEFAULT_BLOCK = 4096       # floats per task: 256 tasks of 4096 floats
DEFAULT_COLS = 8192        # PAD: columns of the matrix (the size makes the rows: 128 by default); a row is a task
                           # with one flag, CHAI's PAD task size (32 values x 256 work-items): 128 hand-offs a run
DEFAULT_PAD = 16           # PAD: columns added to each row
#: PAD U on CUDA: the cuMemAdvise hints on its managed memory (collab_cuda_pad.cpp says which advice each
#: gives); the default is seed 001's cudaMemAdvise on the data array, read as its preferred location the GPU.
ADVICE = ("none", "preferred-device", "accessed-by", "read-mostly", "flags-accessed-by")
DEFAULT_ADVISE = "none"  # CHAI's CUDA-U PAD gives no hints; on an H200 no hint did much better (docs/device.md)
DEFAULT_HEIGHT = 197       # TRNS: CHAI's matrix height (-m 197)
DEFAULT_WIDTH = 2048       # TRNS: matrix width in floats (CHAI's -n 35588, cut to keep 110 runs short)
DEFAULT_SUPER_ELEMENT = 32  # TRNS: CHAI's super-element size (-s 32)
TRNS_MAX_SUPER_ELEMENT = 256  # 4 floats a work-item of a 64-item work-group, as CHAI's kernel holds
DEFAULT_RESOLUTION = 300   # BS: points per side of the surface (CHAI's -n 300)
DEFAULT_TILE = 16          # BS: points per side of a tile, the unit of partitioning (CHAI's -i 16)
MAX_RESOLUTION = 16384     # the probe's limit (collab.cpp)


def default_host_threads() -> int:
    """Half the CPUs this process may use (the device's runtime gets the other half), at least 1."""
    return max(1, len(os.sched_getaffinity(0)) // 2)


@dataclass
class CollabPlan:
    backend: str = "opencl"
    device: int = 0
    patterns: list[str] = field(default_factory=lambda: list(PATTERNS))
    versions: list[str] = field(default_factory=lambda: list(VERSIONS))
    size: int = DEFAULT_SIZE
    block: int = DEFAULT_BLOCK
    iterations: int = 16
    cols: int = DEFAULT_COLS
    pad: int = DEFAULT_PAD
    height: int = DEFAULT_HEIGHT
    width: int = DEFAULT_WIDTH
    super_element: int = DEFAULT_SUPER_ELEMENT
    resolution: int = DEFAULT_RESOLUTION
    tile: int = DEFAULT_TILE
    host_threads: Optional[int] = None  # default: default_host_threads()
    repeats: int = 100                  # timed runs per (pattern, version), CHAI's -r 100
    warmups: int = 10                   # runs before them, out of the statistics, CHAI's -w 10
    device_share: float = 0.5
    cpus: Optional[list[int]] = None    # --cpus: the host thread and the host threads it starts placed on these CPUs
    info: dict[str, Any] = field(default_factory=dict)
    program: Optional[Path] = None      # --program: the kernels from a binary (measure/programs.py)
    advise: str = DEFAULT_ADVISE        # --advise: PAD U's cuMemAdvise hints (CUDA)

    @property
    def threads(self) -> int:
        return self.host_threads if self.host_threads is not None else default_host_threads()

    def check(self, probe_devices: bool = True) -> None:
        """Validate the values, then (``probe_devices``) the device itself."""
        if self.backend not in ("opencl", "cuda"):
            raise BadValue(f"--backend '{self.backend}' is not allowed for collab; allowed: opencl, cuda "
                           "(the U versions need shared memory with atomics: OpenCL's SVM, CUDA's managed memory)")
        if not self.patterns:
            raise BadValue("--patterns is empty; allowed: " + ", ".join(PATTERNS))
        for p in self.patterns:
            if p not in PATTERNS:
                raise BadValue(f"--patterns '{p}' is not known; allowed: {', '.join(PATTERNS)}")
        if self.backend == "cuda" and set(self.patterns) - {"histogram", "pad"}:
            other = ",".join(p for p in self.patterns if p not in ("histogram", "pad"))
            raise BadValue(f"--patterns {other}: OpenCL devices only for now; on --backend cuda: histogram, pad")
        if self.advise not in ADVICE:
            raise BadValue(f"--advise '{self.advise}' is not known; allowed: {', '.join(ADVICE)}")
        for v in self.versions:
            if v not in VERSIONS:
                raise BadValue(f"version '{v}' is not known; allowed: {', '.join(VERSIONS)}")
        if not 1 <= self.size <= 2**31 - 1:
            raise BadValue(f"--elements {self.size}: the number of values must be in 1..{2**31 - 1}")
        if not 1 <= self.block <= 2**24:
            raise BadValue(f"--block {self.block}: floats per task must be in 1..{2**24}")
        if self.iterations < 0:
            raise BadValue(f"--math-iterations {self.iterations}: at least 0")
        checks.in_range(self.iterations, "--math-iterations", *checks.COLLAB_ITERATIONS, what="math iterations per float")
        if "taskqueue" in self.patterns and -(-self.size // self.block) > checks.COLLAB_TASKS:
            raise BadValue(f"--elements {self.size} / --block {self.block} gives {-(-self.size // self.block):,} tasks; "
                           f"allowed: at most 2^30 (a larger --block)")
        if "pad" in self.patterns:
            if not 1 <= self.cols <= self.size or self.size % self.cols:
                raise BadValue(f"--cols {self.cols}: PAD's rows must split --elements {self.size} evenly "
                               f"(a divisor of it, e.g. {DEFAULT_COLS} for a multiple of {DEFAULT_COLS})")
            if self.pad < 0:
                raise BadValue(f"--pad {self.pad}: columns added to each row, at least 0")
            if self.padded() > 2**31 - 1:
                raise BadValue(f"--pad {self.pad}: the padded matrix of {self.size // self.cols} rows x "
                               f"{self.cols + self.pad} columns holds {self.padded()} floats; allowed: at most {2**31 - 1}")
        if "trns" in self.patterns:
            self.check_trns()
        if "bs" in self.patterns:
            if not 2 <= self.resolution <= MAX_RESOLUTION:
                raise BadValue(f"--resolution {self.resolution}: BS's points per side must be in 2..{MAX_RESOLUTION}")
            if not 1 <= self.tile <= self.resolution:
                raise BadValue(f"--tile {self.tile}: BS's points per tile side must be in 1..{self.resolution} "
                               "(the --resolution)")
        if not 1 <= self.threads <= 1024:
            raise BadValue(f"--host-threads {self.threads}: must be in 1..1024")
        checks.in_range(self.repeats, "--repeats", *checks.COLLAB_REPEATS, what="timed runs per pattern and version")
        checks.in_range(self.warmups, "--warmup", *checks.COLLAB_WARMUPS, what="warm-up runs per pattern and version")
        if not 0.0 <= self.device_share <= 1.0:
            raise BadValue(f"--device-share {self.device_share}: a fraction in 0..1")
        if not probe_devices:
            return
        from .device import find_device

        self.info = find_device(self.backend, self.device)
        self.program = check_program(self.program, self.backend, self.info)
        limit = int(self.info.get("max_allocation_bytes") or 2**62)
        floats = max(self.size, self.padded() if "pad" in self.patterns else 0,
                     self.height * self.width if "trns" in self.patterns else 0)
        if floats * 4 > limit:
            raise BadValue(f"--elements {self.size} needs {floats * 4}-byte buffers, above the device's largest "
                           f"allocation of {limit} bytes")
        if "bs" in self.patterns and self.surface() * 4 > limit:
            raise BadValue(f"--resolution {self.resolution}: BS's surface needs {self.surface() * 4}-byte buffers, "
                           f"above the device's largest allocation of {limit} bytes")

    def check_trns(self) -> None:
        """TRNS's dimensions: whole super-elements a row, the matrix within the probe's limits."""
        if not 1 <= self.super_element <= TRNS_MAX_SUPER_ELEMENT:
            raise BadValue(f"--super-element {self.super_element}: floats moved as one, allowed 1..{TRNS_MAX_SUPER_ELEMENT} "
                           "(4 floats a work-item of a 64-item work-group)")
        if not 1 <= self.height <= 2**31 - 1:
            raise BadValue(f"--height {self.height}: rows of TRNS's matrix, allowed 1..{2**31 - 1}")
        if not 1 <= self.width <= 2**31 - 1 or self.width % self.super_element:
            raise BadValue(f"--width {self.width}: TRNS moves whole super-elements, so the width must be a positive "
                           f"multiple of --super-element {self.super_element}")
        tiles = self.height * (self.width // self.super_element)
        if self.height * self.width > 2**31 - 1 or tiles > checks.COLLAB_TASKS:
            raise BadValue(f"--height {self.height} x --width {self.width}: {self.height * self.width} floats in {tiles} "
                           f"super-elements; allowed: at most {2**31 - 1} floats and 2^30 super-elements")

    def padded(self) -> int:
        """PAD's padded matrix, in floats: rows x (cols + pad)."""
        return self.size // max(1, self.cols) * (self.cols + self.pad)

    def surface(self) -> int:
        """BS's output, in floats: resolution^2 points of x, y, z."""
        return self.resolution ** 2 * 3

    def shared_memory(self) -> bool:
        """Whether the device has what the U version needs (unknown counts as yes: the probe says)."""
        if not self.info:
            return True
        if self.backend == "cuda":  # managed memory that host and GPU may use at once, system-scope atomics (6.0+)
            major = str(self.info.get("compute_capability", "0")).split(".")[0]
            return bool(self.info.get("concurrent_managed_access")) and major.isdigit() and int(major) >= 6
        return bool(self.info.get("svm_fine_grain")) and bool(self.info.get("svm_atomics"))


def probe_args(plan: CollabPlan, pattern: str, version: str, corrupt: bool = False) -> list[str]:
    args = ["collab", "--backend", plan.backend, "--device", str(plan.device), "--pattern", pattern,
            "--version", version, "--size", str(plan.size), "--host-threads", str(plan.threads),
            "--repeats", str(plan.repeats), "--warmup", str(plan.warmups), "--device-share", repr(float(plan.device_share)),
            *program_args(plan.program)]
    if pattern == "taskqueue":
        args += ["--block", str(plan.block), "--iterations", str(plan.iterations)]
    if pattern == "pad":
        args += ["--cols", str(plan.cols), "--pad", str(plan.pad)]
        if plan.backend == "cuda" and version == "U":
            args += ["--advise", plan.advise]
    if pattern == "trns":  # its matrix is height x width floats, not --size
        at = args.index("--size")
        del args[at:at + 2]
        args += ["--height", str(plan.height), "--width", str(plan.width), "--super-element", str(plan.super_element)]
    if pattern == "bs":
        args += ["--resolution", str(plan.resolution), "--tile", str(plan.tile)]
    if plan.cpus is not None:
        args += ["--cpus", cpu_text(plan.cpus)]
    if corrupt:
        args.append("--corrupt")
    return args


def steps(plan: CollabPlan) -> list[Step]:
    """One step per (pattern, version), D before U so that a U failure keeps D's figures."""
    out = []
    for pattern in plan.patterns:
        for version in plan.versions:
            # ~3 passes over 4-byte values at ~1 GB/s on a small machine, plus the reference, per repeat
            elements = plan.height * plan.width if pattern == "trns" else plan.size
            work = elements * 4 * (1 + (plan.iterations / 8 if pattern == "taskqueue" else 0))
            if pattern == "bs":  # ~200 flops a point, as much as 50 passes over its 12 bytes
                work = plan.surface() * 4 * 50
            out.append(Step(f"collab {pattern} {version}", "collab", probe_args(plan, pattern, version),
                            {"node": None, "mode": version, "pattern": pattern,
                             "cpus": None if plan.cpus is None else cpu_text(plan.cpus)},
                            1.0 + (plan.warmups + plan.repeats + 1) * work * 3 / 1e9))
    return out


def rows_of(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """Tidy rows of one probe run (one per repeat), and why it failed (None if it did not).

    A repeat whose result differs from the host-only reference fails the whole step: its rows are
    dropped and the reason names the repeat and what differed. The probe prints each repeat's
    validation record right after its sample: a row is ``validated`` once that record came out
    right; a repeat printed before a crash or kill is kept, unvalidated, out of the statistics.
    Samples with a non-positive or non-finite total time are dropped."""
    setup = run.first("setup")
    checks = run.of("validation")
    bad = [r for r in checks if not r.get("ok")]
    if bad:
        first = bad[0]
        return [], (f"validation failed in {len(bad)} repeat(s) of {first.get('pattern')} {first.get('version')}: "
                    f"repeat {first.get('repeat')}: {first.get('what')}")
    checked = {(r.get("pattern"), r.get("version"), r.get("repeat")) for r in checks}
    rows = []
    dropped: list[str] = []
    for r in run.of("sample"):
        if not good_time(r.get("total_seconds")):
            dropped.append(f"repeat {r.get('repeat')}: {r.get('total_seconds')} s")
            continue
        pattern = r["pattern"]
        rows.append({
            "suite": "device", "test": f"collab-{pattern}", "metric": "seconds", "value": r["total_seconds"],
            "mode": r["version"], "iteration": r["repeat"], "warmup": bool(r["warmup"]),
            "seconds": r["total_seconds"], "threads": r["host_threads"],
            "size_bytes": setup.get("size", 0) * 4 if setup else None, "bytes": r.get("copied_bytes"),
            "node": step.placement.get("node"),
            "validated": (pattern, r["version"], r["repeat"]) in checked,
            "params": {
                "pattern": pattern, "version": r["version"],
                "allocation_seconds": r["allocation_seconds"], "copy_seconds": r["copy_seconds"],
                "kernel_seconds": r["kernel_seconds"], "total_seconds": r["total_seconds"],
                "device_share": r["device_share"], "host_threads": r["host_threads"],
                "device_tasks": r.get("device_tasks"), "host_tasks": r.get("host_tasks"),
                "size": setup.get("size"), "block": setup.get("block"),
                "rows": setup.get("rows"), "cols": setup.get("cols"), "pad": setup.get("pad"), "iterations": setup.get("iterations"),
                "height": setup.get("height"), "width": setup.get("width"), "super_element": setup.get("super_element"),
                "split": setup.get("split", "static"), "advise": setup.get("advise"),
                # work-groups a launch (PAD on a CPU device: the CPUs the host threads leave free, and why)
                "groups": setup.get("work_groups") if (setup.get("work_groups") or 0) > 0 else None,
                "groups_rule": setup.get("work_groups_rule"),
                "resolution": setup.get("resolution"), "tile": setup.get("tile"),
                # the atomics on memory shared with the host: only the U version has any
                "atomics_path": setup.get("atomics_path") if r["version"] == "U" else None,
                "backend": setup.get("backend"), "device_name": setup.get("device_name"),
                "device_index": setup.get("device_index"),
            },
        })
    return rows, step_failure(rows, run.failure, dropped, "repeats")


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (pattern, version), over the validated timed runs (warm-ups out): CHAI's headline, the mean
    total (``total_seconds`` = ``mean_seconds``), the median total and its 95 % interval beside, the mean
    of each phase, and the same divided by D's mean total for the pattern (Figure 4 of seed 001).
    ``dm`` is allocation + copy, the paper's "data movement"."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if str(r.get("test", "")).startswith("collab-") and not r.get("warmup") and validated(r):
            groups.setdefault((r["test"].removeprefix("collab-"), r["mode"]), []).append(r)
    means: dict[tuple[str, str], dict[str, Any]] = {}
    for (pattern, version), members in groups.items():
        total = summarize(value_of(m, "total_seconds") for m in members)
        entry: dict[str, Any] = {"pattern": pattern, "version": version, "count": total["count"], "headline": "mean",
                                 "total_seconds": total["mean"], "mean_seconds": total["mean"],
                                 "median_seconds": total["median"], "median_ci_low_seconds": total["median_ci_low"],
                                 "median_ci_high_seconds": total["median_ci_high"], "total_cov": total["cov"],
                                 "total_min_seconds": total["min"], "total_max_seconds": total["max"]}
        for phase in PHASES:
            entry[f"{phase}_seconds"] = summarize(value_of(m, f"{phase}_seconds") for m in members)["mean"]
        entry["dm_seconds"] = entry["allocation_seconds"] + entry["copy_seconds"]
        entry["device_share"] = summarize(value_of(m, "device_share") for m in members)["mean"]
        entry["host_threads"] = value_of(members[0], "host_threads")
        entry["atomics_path"] = (members[0].get("params") or {}).get("atomics_path", members[0].get("atomics_path"))
        for key in ("groups", "groups_rule"):  # PAD: the work-groups launched, and why (a CPU device's CPUs)
            if (members[0].get("params") or {}).get(key) is not None:
                entry[key] = members[0]["params"][key]
        means[(pattern, version)] = entry
    out = []
    for (pattern, version), entry in sorted(means.items(), key=lambda kv: (PATTERNS.index(kv[0][0])
                                                                            if kv[0][0] in PATTERNS else 9, kv[0][1])):
        base = means.get((pattern, "D"), {}).get("total_seconds")
        for phase in (*PHASES, "dm", "total"):
            entry[f"{phase}_normalized"] = entry[f"{phase}_seconds"] / base if base else None
        entry["speedup_vs_d"] = base / entry["total_seconds"] if base and entry["total_seconds"] else None
        out.append(entry)
    return out

"""DecEval for real: seed 000's application (Cabrera, Young and Vetter, ExHET '22) run on this machine.

The probe's ``deceval`` subcommand (``native/probe/deceval.cpp``, where everything is timed)
decompresses a zlib stream of doubles on the host (the seed's FPGA stage) and integrates pi over
them on an OpenCL device (the seed's GPU stage): each stage alone at every chunk size, and the flows
end to end (staged through host memory, direct into a device buffer mapped into the host, pipelined
in chunks through ``depth`` buffers), every repeat validated (zlib's check value, a sample of the
values, pi within the midpoint rule's bound). This module plans that run and turns its records into
rows; :mod:`xferlab.studies.deceval` fits the stage models and asks the simulator to predict each flow.

Placement: where the device is the host's own CPUs (PoCL), the decompressing thread is pinned to the
last CPU this process may use and the device is given the others (``POCL_MAX_PTHREAD_COUNT``), so the
two stages are two resources, as the seed's FPGA and GPU were; the run records it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue
from ..system.inventory import memory_available
from ..units import format_size
from .probe import ProbeRun
from .programs import check_program, program_args
from .samples import validated
from .steps import Step, good_time, step_failure
from ..stats import summarize

DEFAULT_SIZE = 64 * 2**20
DEFAULT_CHUNKS = (256 * 2**10, 4 * 2**20)
STAGE_ITEMS = ("stages",)                          # each stage alone, at every chunk size
FLOW_ITEMS = ("staged", "direct", "pipelined")     # the flows end to end
ITEMS = STAGE_ITEMS + FLOW_ITEMS
MAX_EVALUATIONS = 4096
# The estimate's rates, on the slow side of what a busy 2-CPU VM gives (each step's estimate decides
# whether a budget can hold it): zlib's inflate, output bytes a second; the kernel, seconds per evaluation
# of the integrand and per byte read.
INFLATE_RATE = 0.25e9
EVALUATION_SECONDS = 4e-9
DEVICE_READ_RATE = 2e9
HANDOFF_SECONDS = 2e-4


@dataclass
class DecevalPlan:
    device: int = 0
    size: int = DEFAULT_SIZE
    chunks: list[int] = field(default_factory=lambda: list(DEFAULT_CHUNKS))
    depth: int = 2
    repeats: int = 3
    level: int = 1
    items: list[str] = field(default_factory=lambda: list(ITEMS))
    evaluations: int = 1  # the integrand's evaluations per element (more: the device's stage grows, not the data)
    info: dict[str, Any] = field(default_factory=dict)
    program: Optional[Path] = None  # --program: the kernel from a binary (measure/programs.py)

    def check(self, probe_devices: bool = True) -> None:
        if not 8192 <= self.size <= 2**40 or self.size % 8:
            raise BadValue(f"--total {self.size} bytes: the decompressed data, a whole number of doubles (8 bytes) "
                           "from 8 KiB to 1 TiB")
        if not self.chunks:
            raise BadValue("--chunks is empty; give one chunk size or more")
        for c in self.chunks:
            if c > self.size:
                raise BadValue(f"chunk {format_size(c)} is larger than the input ({format_size(self.size)}); allowed: "
                               "chunks up to the input's size")
            if c < 8 or c % 8:
                raise BadValue(f"chunk {c} bytes is not a whole number of doubles (8 bytes)")
        if not 1 <= self.depth <= 64:
            raise BadValue(f"--depth {self.depth}: buffers between the stages, 1 to 64")
        if not 1 <= self.repeats <= 10000:
            raise BadValue(f"--repeats {self.repeats}: 1 to 10000 (one more runs first as a warm-up)")
        if not 1 <= self.evaluations <= MAX_EVALUATIONS:
            raise BadValue(f"--evaluations {self.evaluations}: the integrand's evaluations per element, 1 to "
                           f"{MAX_EVALUATIONS}")
        if not self.items or set(self.items) - set(ITEMS):
            raise BadValue(f"items {self.items}: some of {', '.join(ITEMS)}")
        if not 1 <= self.level <= 9:
            raise BadValue(f"--level {self.level}: zlib's compression level, 1 to 9")
        needed = self.memory_bytes()
        available = memory_available()
        if available and needed > available:
            raise BadValue(f"--total {format_size(self.size)} needs about {format_size(needed)} of memory (input, host "
                           f"buffer, device buffers), above the {format_size(available)} available; allowed: a smaller size")
        if not probe_devices:
            return
        from .device import find_device

        self.info = find_device("opencl", self.device)
        self.program = check_program(self.program, "opencl", self.info)
        limit = int(self.info.get("max_allocation_bytes") or 2**62)
        if self.size > limit:
            raise BadValue(f"--total {format_size(self.size)} is above the device's largest allocation "
                           f"({format_size(limit)}); allowed: a smaller size")

    def memory_bytes(self) -> int:
        """The host memory a run takes: the compressed input (at most the data), the host buffer and, on a
        device that is the host's CPUs, the device and mapped buffers and the slots."""
        return 4 * self.size + 2 * self.depth * max(self.chunks)

    def placement(self) -> tuple[Optional[int], dict[str, str]]:
        """The CPU the decompressing thread is pinned to and the device's environment, when the device
        shares the host's CPUs; (None, {}) otherwise or with one CPU."""
        cpus = sorted(os.sched_getaffinity(0))
        if self.info.get("type") != "cpu" or len(cpus) < 2:
            return None, {}
        return cpus[-1], {"POCL_MAX_PTHREAD_COUNT": str(len(cpus) - 1)}

    def probe_args(self, corrupt: bool = False) -> list[str]:
        cpu, _ = self.placement()
        args = ["deceval", "--device", str(self.device), "--size", str(self.size),
                "--chunks", ",".join(str(c) for c in self.chunks), "--depth", str(self.depth),
                "--repeats", str(self.repeats), "--level", str(self.level), "--items", ",".join(self.items),
                "--evaluations", str(self.evaluations), *program_args(self.program)]
        if cpu is not None:
            args += ["--cpu", str(cpu)]
        return args + (["--corrupt"] if corrupt else [])

    def params(self) -> dict[str, Any]:
        cpu, env = self.placement()
        return {"device": self.device, "platform": self.info.get("platform"), "size": self.size,
                "chunks": list(self.chunks), "depth": self.depth, "repeats": self.repeats, "level": self.level,
                "items": list(self.items), "evaluations": self.evaluations, "decompress_cpu": cpu, "device_env": env,
                **({"program": str(self.program)} if self.program else {})}

    def estimate_seconds(self) -> float:
        """How long the run takes, from the slow rates above: deflating the input once, then per repeat
        (one more as a warm-up) each item's inflate passes and device passes."""
        inflate = self.size / INFLATE_RATE
        device = self.size / 8 * self.evaluations * EVALUATION_SECONDS + self.size / DEVICE_READ_RATE
        per_repeat = 0.0
        for chunk in self.chunks:
            n = -(-self.size // chunk)
            if "stages" in self.items:  # decompress, decompress-submit; copy, integrate, the submitted kernels; handoff
                per_repeat += 2 * inflate + 2 * device + n * HANDOFF_SECONDS
            if "pipelined" in self.items:
                per_repeat += max(inflate, device) + n * HANDOFF_SECONDS
        per_repeat += sum(inflate + device for item in ("staged", "direct") if item in self.items)
        return 2.0 + self.size / 100e6 + (self.repeats + 1) * per_repeat


def steps(plan: DecevalPlan, corrupt: bool = False) -> list[Step]:
    cpu, env = plan.placement()
    return [Step("deceval", "deceval", plan.probe_args(corrupt), {"cpus": None if cpu is None else str(cpu)},
                 plan.estimate_seconds(), env=env or None)]


def rows_of(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """One row per sample (a stage at a chunk size, or a flow), ``validated`` once its validation
    record came out right; a failed validation fails the step, naming what was wrong."""
    setup = run.first("setup")
    checks = run.of("validation")
    bad = [r for r in checks if not r.get("ok")]
    if bad:
        first = bad[0]
        return [], (f"validation failed in {len(bad)} sample(s): {first.get('name')} at {first.get('chunk_bytes')} B, "
                    f"repeat {first.get('repeat')}: {first.get('what')}")
    checked = {(r.get("name"), r.get("chunk_bytes"), r.get("repeat")) for r in checks}
    rows, dropped = [], []
    for r in run.of("sample"):
        if not good_time(r.get("seconds")):
            dropped.append(f"{r.get('name')} repeat {r.get('repeat')}: {r.get('seconds')} s")
            continue
        rows.append({
            "suite": "deceval", "test": f"deceval-{r['kind']}", "metric": "seconds", "value": r["seconds"],
            "mode": r["name"], "iteration": r["repeat"], "warmup": bool(r["warmup"]), "seconds": r["seconds"],
            "size_bytes": r["chunk_bytes"], "bytes": r["size"],
            "validated": (r["name"], r["chunk_bytes"], r["repeat"]) in checked,
            "params": {
                "kind": r["kind"], "name": r["name"], "chunk_bytes": r["chunk_bytes"], "chunks": r["chunks"],
                "depth": r["depth"], "size": r["size"],
                **{k: r[k] for k in ("decompress_seconds", "copy_seconds", "integrate_seconds", "wait_seconds",
                                     "submit_seconds") if k in r},
                **{k: setup.get(k) for k in ("device_name", "compressed_bytes", "level", "layout", "cpu",
                                             "pocl_max_pthread_count", "compute_units", "evaluations")},
            },
        })
    return rows, step_failure(rows, run.failure, dropped, "samples")


def _field(row: dict[str, Any], key: str) -> Any:
    return row.get(key, (row.get("params") or {}).get(key))


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kind, name, chunk): the median over validated non-warm-up repeats, its 95 % interval and
    spread, and the medians of the parts a flow reports."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if str(r.get("test", "")).startswith("deceval-") and not r.get("warmup") and validated(r):
            groups.setdefault((_field(r, "kind"), _field(r, "name"), int(_field(r, "chunk_bytes"))), []).append(r)
    out = []
    for (kind, name, chunk), members in sorted(groups.items()):
        stats = summarize(m["value"] for m in members)
        entry = {"kind": kind, "name": name, "chunk_bytes": chunk, "chunks": _field(members[0], "chunks"),
                 "size": _field(members[0], "size"), "depth": _field(members[0], "depth"),
                 "evaluations": _field(members[0], "evaluations") or 1, "count": stats["count"],
                 "median_seconds": stats["median"], "median_ci_low_seconds": stats["median_ci_low"],
                 "median_ci_high_seconds": stats["median_ci_high"], "min_seconds": stats["min"], "max_seconds": stats["max"]}
        for part in ("decompress_seconds", "copy_seconds", "integrate_seconds", "wait_seconds", "submit_seconds"):
            values = [v for v in (_field(m, part) for m in members) if isinstance(v, (int, float))]
            if values:
                entry[part] = summarize(values)["median"]
        out.append(entry)
    return out

"""The lab's accelerator stage: every device found (:func:`quick_device_plans`) measured in its share
of the budget (copies, granularity, launches), then its CHAI-style collaboration patterns and device
STREAM (:func:`kernels_stage`) when time is left; each point's timed work sized by :func:`per_point`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..measure.collab import CollabPlan
from ..measure.collab import rows_of as collab_rows
from ..measure.collab import steps as collab_steps
from ..measure.collab import summary as collab_summary
from ..measure.device import BACKENDS, SEED_CHUNKS, DevicePlan, devices
from ..measure.device import rows_of as device_rows
from ..measure.device import steps as device_steps
from ..measure.results import device_results
from ..measure.run import measure
from ..outputs import write_json
from ..system import inventory as inv
from .context import Lab
from .memory import MIN_TIME_PER_POINT, PRECISION

MAX_TIME_DEVICE = 0.25  # seconds of timed work per device point (size x direction, chunk size), at most
DEVICE_SHARE = 0.6  # of what is left, per accelerator
FALLBACK_RATE = 1e9  # bytes/s: device STREAM is sized with this when no host copy rate was measured


def accelerators_stage(lab: Lab) -> None:
    lab.plans, missing = quick_device_plans()
    for plan in lab.plans:  # --program DIR: its device's launches, collaboration and STREAM from its binaries
        plan.program = lab.program_for(plan.backend, plan.info)
    lab.summary["accelerators_not_available"] = missing
    try:
        for plan in lab.plans:
            if lab.left() < 0.15 * lab.seconds:
                lab.summary.setdefault("skipped_devices", []).append(f"{plan.backend} #{plan.device}: time budget used up")
                continue
            lab.device_runs.append(device_stage(lab, plan))
    finally:  # what was measured is written even when a device stops the stage
        lab.summary["devices"] = [{"backend": d["backend"], "device": d["device"], "run_id": d["run_id"]}
                                  for d in lab.device_runs]
        write_json(lab.folder / "devices.json", lab.device_runs, "lab file")


def device_stage(lab: Lab, plan: DevicePlan) -> dict[str, Any]:
    """One accelerator: copies, granularity and launches, then its collaboration patterns and device
    STREAM when time is left; returns its entry of devices.json."""
    share = DEVICE_SHARE * lab.left()
    plan.max_time = per_point(share, device_points(plan), MAX_TIME_DEVICE)
    given = {"program": str(plan.program)} if plan.program else {}  # --program DIR: recorded in each run's params
    run = measure("lab", device_steps(plan), device_rows, "device", {"backend": plan.backend, "device": plan.device, **given},
                  lab.store, timeout=max(60.0, lab.seconds), budget=share, extra_inventory={"accelerator": plan.info})
    result = device_results(run, lab.folder / f"{plan.backend}{plan.device}")
    lab.add_run(run.run_id if run.rows else None)
    lab.measured = lab.measured or bool(run.rows)
    lab.stage_failures(f"{plan.backend} #{plan.device}", result["failures"], bool(run.rows))
    entry = {"backend": plan.backend, "device": plan.device, "name": plan.info.get("name"), "run_id": run.run_id,
             **{k: v for k, v in result.items() if k not in ("transfers", "plots")}}
    collab_plan = CollabPlan(backend=plan.backend, device=plan.device, size=4 * 2**20, warmups=1, repeats=2, info=plan.info,
                             program=plan.program)
    if plan.backend == "opencl" and collab_plan.shared_memory():
        if lab.left() < 0.1 * lab.seconds:
            lab.summary.setdefault("skipped_collab", []).append(f"{plan.backend} #{plan.device}: time budget used up")
        else:
            entry["collab"] = collab_stage(lab, plan, collab_plan)
    if plan.backend in ("opencl", "cuda"):
        if lab.left() < 0.1 * lab.seconds:
            lab.summary.setdefault("skipped_kernels", []).append(f"{plan.backend} #{plan.device}: time budget used up")
        else:
            entry["kernels"], run_id, kernel_failures = kernels_stage(plan, 0.5 * lab.left(), lab.store, lab.seconds,
                                                                      copy_rate(lab.memory, entry))
            lab.add_run(run_id)
            lab.stage_failures(f"{plan.backend} #{plan.device} kernels", kernel_failures, bool(run_id))
    return entry


def collab_stage(lab: Lab, plan: DevicePlan, collab_plan: CollabPlan) -> list[dict[str, Any]]:
    """CHAI-style collaboration on an OpenCL device with shared memory, in half the time left; its summary."""
    collab_plan.check()
    given = {"program": str(collab_plan.program)} if collab_plan.program else {}
    run = measure("lab", collab_steps(collab_plan), collab_rows, "device", {"collab": True, **given}, lab.store,
                  timeout=max(60.0, lab.seconds), budget=0.5 * lab.left(), extra_inventory={"accelerator": plan.info})
    summary = collab_summary(run.rows)
    lab.add_run(run.run_id if run.rows else None)
    lab.stage_failures(f"{plan.backend} #{plan.device} collaboration",
                       [{"step": r.step.label, "reason": r.failure} for r in (run.results or []) if r.failure],
                       bool(run.rows))
    if summary:
        from ..plots.measured import plot_collab  # matplotlib only when there is something to plot

        plot_collab(summary, lab.folder / f"{plan.backend}{plan.device}" / "collab.png")
    return summary


def per_point(share: float, points: int, most: float) -> float:
    """The timed seconds each of ``points`` points may take so that they fit in ``share`` (half of it:
    the rest is kept for the fixed repetitions, the probe's set-up, the store, and a machine busier
    than when the share was set), between MIN_TIME_PER_POINT and ``most``."""
    return max(MIN_TIME_PER_POINT, min(most, 0.5 * share / max(1, points)))


def device_points(plan: DevicePlan) -> int:
    """The adaptive points of a device plan: size x direction x host kind, chunk sizes, launch argument counts."""
    return (len(plan.size_list()) * len(plan.directions) * len(plan.kind_list()) + len(plan.chunks or [])
            + len(plan.launch_args or []))


def kernels_stage(plan: DevicePlan, share: float, store: Optional[Path], seconds: float,
                  rate: Optional[float] = None) -> tuple[dict[str, Any], Optional[str], list[dict]]:
    """Device STREAM (copy, triad, dot; widths 1 and 4 on OpenCL) on device memory and on host memory
    (pinned; fine-grained SVM where an OpenCL device has it, managed memory on CUDA), and the first
    touch of shared memory, within ``share`` seconds. The arrays are sized for STREAM's rule first
    (4x the device's last-level cache: measure/sizeclass.py) and for the share second
    (measure/kernel_sizing.py, from ``rate``, the host STREAM copy rate this lab measured,
    :data:`FALLBACK_RATE` without one): where the share cannot hold rule-sized arrays they are
    cache-resident, and labelled so. Returns {"overview": per memory kind, "sizing": what was chosen
    and why}, the run id (None: nothing measured) and the failed steps."""
    from ..measure.kernel_results import overview, stream_summary
    from ..measure.kernel_sizing import size_for_rule
    from ..measure.kernels import KernelPlan, rows_of as kernel_rows, steps as kernel_steps

    if plan.backend == "cuda":
        memories, widths, faults = ["device", "pinned", "managed"], [1], True
    else:
        shared = bool(plan.info.get("svm_fine_grain"))
        memories, widths, faults = ["device", "pinned"] + (["svm-fine"] if shared else []), [1, 4], shared
    kplan = KernelPlan(backend=plan.backend, device=plan.device, kernels=["copy", "triad", "dot"], memories=memories,
                       widths=widths, iterations=10, faults=faults, fault_repeats=3, program=plan.program)
    kplan.max_time = per_point(share, len(memories) * 6, MAX_TIME_DEVICE)
    kplan.check()
    sizing = size_for_rule(kplan, share, rate or FALLBACK_RATE, inv.memory_available())
    kplan.check()
    given = {"program": str(kplan.program)} if kplan.program else {}
    run = measure("lab", kernel_steps(kplan), kernel_rows, "kernels", {"kernels": True, "sizing": sizing, **given}, store,
                  timeout=max(60.0, seconds), budget=share, extra_inventory={"accelerator": plan.info})
    return ({"overview": overview(stream_summary(run.rows)), "sizing": sizing}, run.run_id if run.rows else None,
            [{"step": r.step.label, "reason": r.failure} for r in (run.results or []) if r.failure])


def copy_rate(memory: dict[str, Any], device: dict[str, Any]) -> Optional[float]:
    """The rate device STREAM's set-up is sized with: the host STREAM copy's best (this lab's memory
    run) or the device run's host-to-device copies, whichever is slower; None when neither ran."""
    rates = [r.get("best_bytes_per_second") for r in memory.get("bandwidth", []) if r.get("test") == "copy"]
    rates += [r.get("bandwidth_bytes_per_second") for r in device.get("overview", []) if r.get("direction") == "h2d"]
    rates = [r for r in rates if r]
    return min(rates) if rates else None


def quick_device_plans() -> tuple[list[DevicePlan], list[str]]:
    """Every accelerator found: copies from 1 B to 64 MiB in every host memory kind it supports, the
    seed's granularity study on 64 MiB, 2,000 launches with 0 and 4 arguments; and the backends that
    are not available, with why. GPUs and other accelerators come before CPU devices (an OpenCL CPU
    runtime such as PoCL): on a GPU machine the first lab run, under a 45 s budget, spent it on PoCL's
    CPU device and skipped the GPU."""
    plans, missing = [], []
    for backend in BACKENDS:
        found, why = devices(backend)
        if why:
            missing.append(f"{backend}: not available: {why}")
        for index in range(len(found)):
            if backend == "sycl" and not found[index].get("usm_device_allocations"):
                continue  # a SYCL device without USM (PoCL's, under DPC++) has nothing to copy to
            plan = DevicePlan(backend=backend, device=index, max_size=64 * 2**20, min_time=0.005, max_iterations=50,
                              launch=True, launch_count=2000, launch_args=[0, 4], chunks=list(SEED_CHUNKS),
                              chunk_total=64 * 2**20, precision=PRECISION, max_time=MAX_TIME_DEVICE, order="interleaved")
            plan.check()
            plans.append(plan)
    plans.sort(key=lambda plan: plan.info.get("type") == "cpu")  # stable: each backend's order kept
    return plans, missing

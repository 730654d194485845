"""Seed 004's launch study (Sandia, oneAPI on an FPGA): empty-kernel launch latency with the
submitting thread unpinned and pinned to each CPU in turn, with 0 to k buffer arguments; the best
CPU, the spread across CPUs, and the frequency governor the machine ran under."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ..measure.device import DevicePlan, rows_of, steps
from ..measure.launches import launch_summary
from ..store.rows import flat
from ..system import inventory as inv
from ..system.locality import check_allowed, cpu_text, parse_cpus, remote_cpus, study_cpus
from .base import Plan, Study, StudyStep


# a CPU whose p99 launch latency is more than this many times the best p99 of the pinned CPUs is flagged as jittery
JITTER_RATIO = 2.0


def _rows_with_governor(step, run):
    """The launch rows, each carrying the frequency governor the CPUs ran under when it was measured (so
    that a table rebuilt later, or on another machine, shows the governor of the run, not its own)."""
    rows, failure = rows_of(step, run)
    governor = inv.inventory().get("frequency_governor")
    for r in rows:
        r["params"] = {**(r.get("params") or {}), "governor": governor}
    return rows, failure


def plan(options: dict[str, Any]) -> Plan:
    device = DevicePlan(backend=options["backend"], device=options["device"], transfers=False, launch=True,
                        launch_count=options["count"], launch_args=list(options["args"]))
    device.check()
    sycl_alone = device.opencl_twin is not None
    device.opencl_twin = None  # the study is about where the submitting thread runs: one API's launches
    out = [StudyStep("unpinned", "launches, submitting thread unpinned", "device", steps(device), _rows_with_governor,
                     {"backend": device.backend, "device": device.device}, {"accelerator": device.info})]
    if options.get("cpus") is not None:
        cpus, why = check_allowed(parse_cpus(options["cpus"])), "the CPUs --cpus names"
    else:  # by default the device's socket
        cpus, why = study_cpus(device.info, sorted(os.sched_getaffinity(0)))
    cpus = cpus[:options["max_cpus"]]
    notes = [f"pinned CPUs {cpu_text(cpus)}: {why}"] + (
        ["SYCL's launches alone; `xferlab measure launch --backend sycl` runs OpenCL's beside them"] if sycl_alone else [])
    remote = remote_cpus(cpus, device.info)
    if remote:
        local = device.info["locality"]
        notes.append(f"CPUs {cpu_text(remote)}: a remote socket (the device's local CPUs are "
                     f"{cpu_text(local['local_cpus'])}, node {local.get('numa_node')}); their launches cross the socket link")
    for cpu in cpus:
        pinned = [s for s in steps(replace(device, pin=cpu)) if s.placement.get("cpus") == str(cpu)]
        out.append(StudyStep(f"cpu{cpu}", f"launches pinned to CPU {cpu}, of {why}", "device", pinned, _rows_with_governor,
                             {"backend": device.backend, "device": device.device, "pin": cpu},
                             {"accelerator": device.info}))
    return Plan(out, [], notes)


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per CPU (and unpinned) and argument count: the median launch latency and p99; per argument count
    the best CPU (lowest median), the spread (slowest median over fastest) across the pinned CPUs, and each
    CPU's p99 over the best p99 of the pinned CPUs: ``jitter`` flags a CPU whose p99 is more than JITTER_RATIO
    times that (seed 001 saw OS jitter on the CPUs near GPU 0, seed 004 a best CPU). The tails are held against
    the best tail, not against the tail of the lowest-median CPU: that CPU may be the jittery one (this VM's
    CPU 1, lowest median and a 2 ms p99 against CPU 0's 63 µs, would have flagged nothing)."""
    out = []
    for key, mine in rows.items():
        flats = [flat(r) for r in mine]
        governor = next((f["governor"] for f in flats if f.get("governor")), None)  # as the step's run recorded it
        for s in launch_summary(flats):
            out.append({"where": key, "kernel_args": s["kernel_args"], "median_seconds": s["median_seconds"],
                        "p99_seconds": s["p99_seconds"], "count": s["count"], "governor": governor})
    for nargs in sorted({r["kernel_args"] for r in out}):
        pinned = [r for r in out if r["kernel_args"] == nargs and r["where"].startswith("cpu")]
        if pinned:
            best = min(pinned, key=lambda r: r["median_seconds"])
            worst = max(r["median_seconds"] for r in pinned)
            tail = min((r["p99_seconds"] for r in pinned if r["p99_seconds"]), default=None)
            for r in pinned:
                r["best_cpu"] = best["where"] == r["where"]
                r["spread_across_cpus"] = worst / best["median_seconds"]
                ratio = r["p99_seconds"] / tail if r["p99_seconds"] and tail else None
                r["p99_over_best_cpu"] = ratio
                r["jitter"] = ratio is not None and ratio > JITTER_RATIO
    return out


LAUNCH = Study(
    name="launch", seed="seed 004",
    experiment="empty-kernel launch latency pinned to each CPU and unpinned, 0..k buffer arguments",
    description="Seed 004's launch study: launch latency by the CPU that submits and by argument count; the best "
                "CPU and the spread across CPUs; CPUs whose p99 is more than twice the best p99 flagged as jittery; "
                "the frequency governor recorded.",
    plan=plan, table=table,
    columns=[("where", "submitting thread"), ("kernel_args", "args"), ("median_seconds", "median"),
             ("p99_seconds", "p99"), ("best_cpu", "best CPU"), ("spread_across_cpus", "spread"),
             ("p99_over_best_cpu", "p99 / best p99"), ("jitter", "jitter (p99 > 2x best p99)"), ("count", "n"),
             ("governor", "governor")],
    options={"backend": "opencl", "device": 0, "count": 2000, "args": [0, 1, 4, 8], "max_cpus": 64, "cpus": None})

"""How the lab sizes device STREAM (`xferlab lab`, stage 3): for STREAM's rule first (arrays of 4x
the device's last-level cache, measure/sizeclass.py) and for its share of the budget second, from an
estimate of what a plan of `measure kernels` costs on this machine (:func:`plan_seconds`, from the
host STREAM copy rate the lab measured); where the rule does not fit, cache-resident arrays on
purpose, labelled so (:func:`size_for_rule`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..units import format_size
from . import sizeclass
from .kernels import ARRAYS, KernelPlan

#: The lab's device STREAM arrays where STREAM's rule cannot be afforded: cache-resident on purpose
#: (the three arrays of triad in half the LLC), at most the 16 MiB the lab used before.
CACHE_ARRAY_MOST = 16 * 2**20
#: A STREAM point's set-up and check beyond its launches, in passes over one array at the host's
#: STREAM copy rate: the probe fills its three initial arrays in one thread with an index-dependent
#: loop, copies them to the device, reads the output back and replays the kernel in one thread, each
#: far slower per byte than STREAM's vectorized copy on every CPU. On the 2-vCPU VM a 128 MiB triad
#: point took 8.9 s (0.45 s at 1 MiB) where host STREAM copy ran at 2.85 GB/s: about 180 passes
#: (docs/kernels.md, "Array sizes").
SETUP_PASSES = 200
FAULT_PASSES = 8  # a first-touch repeat: fresh shared memory mapped, touched twice, read back
#: Host memory a STREAM point holds per array byte: the host's three initial arrays, the device's
#: three (host memory too on a CPU device) and the read-back.
HELD_PER_ARRAY_BYTE = 7
WARMUP = 2  # the probe's warm-up launches per point


def plan_seconds(plan: KernelPlan, size: int, rate: float) -> float:
    """About how long ``plan``'s STREAM steps (and its first-touch step) take with arrays of ``size``
    bytes on a machine whose host STREAM copy moves ``rate`` bytes/s: per point, the set-up and check
    (:data:`SETUP_PASSES`), the warm-up launches and the timed ones that the per-point cap allows (at
    least 2, the probe's), each over the kernel's arrays; 2 s per probe start."""
    groups, instances = plan.scaling_lists()
    total = 0.0
    for _ in plan.memories or ["device"]:
        total += 2.0
        for kernel in plan.kernels:
            launch = ARRAYS[kernel] * size * max(instances) / rate
            timed = plan.iterations if not plan.max_time else max(2, min(plan.iterations, int(plan.max_time / launch) + 1))
            total += len(plan.types) * len(plan.widths) * len(groups) * len(instances) * (
                SETUP_PASSES * size / rate + (WARMUP + timed) * launch)
    if plan.faults:
        total += 2.0 + plan.fault_repeats * FAULT_PASSES * size / rate
    return total


def size_for_rule(plan: KernelPlan, share: float, rate: float, memory_bytes: int) -> dict[str, Any]:
    """Size ``plan``'s arrays for STREAM's rule first and for the time ``share`` second (the lab's):
    arrays of 4x the device's LLC (``plan.llc_bytes``, :func:`sizeclass.rule_size`) with every kernel and width of
    the plan; else with triad alone; else triad at width 1; else (neither fits the share, the device's largest allocation, or half of
    ``memory_bytes``) cache-resident arrays (:data:`CACHE_ARRAY_MOST` at most) with every kernel,
    labelled so. ``rate``: the host's STREAM copy rate (:func:`plan_seconds`). Sets ``plan.size``
    (and ``plan.kernels``, ``plan.widths``); returns what was chosen and why."""
    llc = plan.llc_bytes
    out: dict[str, Any] = {"llc_bytes": llc or None, "llc": plan.llc_what, "share_seconds": share,
                           "rate_bytes_per_second": rate}
    if not llc:
        plan.size = CACHE_ARRAY_MOST
        return {**out, "size_bytes": plan.size, "array_size_class": None,
                "reason": f"the device reports no last-level cache: arrays of {format_size(plan.size)}, class unknown"}
    limit = int(plan.info.get("max_allocation_bytes") or 2**62)
    rule = sizeclass.rule_size(llc, 2**62)
    out["rule_bytes"] = rule
    needs = []
    for kernels, widths in ((list(plan.kernels), list(plan.widths)), (["triad"], list(plan.widths)), (["triad"], [1])):
        trial = replace(plan, kernels=kernels, widths=widths)
        need = plan_seconds(trial, rule, rate)
        needs.append(need)
        if rule <= limit and HELD_PER_ARRAY_BYTE * rule <= memory_bytes // 2 and need <= share:
            plan.size, plan.kernels, plan.widths = rule, kernels, widths
            return {**out, "size_bytes": rule, "array_size_class": sizeclass.MEMORY, "needed_seconds": need,
                    "kernels": kernels, "widths": widths,
                    "reason": f"STREAM's rule: {format_size(rule)} per array, 4x {plan.llc_what} ({format_size(llc)})"
                              + ("" if len(needs) == 1 else
                                 f"; triad alone, width{'s' * (len(widths) > 1)} {', '.join(map(str, widths))} (every "
                                 f"kernel needs about {needs[0]:.0f} s, the share is {share:.0f} s)")}
    size = max(64 * 2**10, min(CACHE_ARRAY_MOST, 1 << max(0, (llc // (2 * ARRAYS["triad"])).bit_length() - 1)))
    plan.size = size
    why = [f"about {needs[-1]:.0f} s with triad alone at width 1, the share is {share:.0f} s"] if needs[-1] > share else []
    why += [f"above the device's largest allocation ({format_size(limit)})"] if rule > limit else []
    why += ([f"{HELD_PER_ARRAY_BYTE} x {format_size(rule)} held, over half the memory available "
             f"({format_size(memory_bytes)})"] if HELD_PER_ARRAY_BYTE * rule > memory_bytes // 2 else [])
    return {**out, "size_bytes": size, "array_size_class": sizeclass.size_class(size, llc, ARRAYS["triad"]),
            "needed_seconds": needs[-1], "kernels": plan.kernels, "widths": plan.widths,
            "reason": f"STREAM's rule wants {format_size(rule)} per array (4x {plan.llc_what}, {format_size(llc)}): "
                      f"{'; '.join(why)}; arrays of {format_size(size)} instead, cache-resident figures, kept apart "
                      "from memory figures"}

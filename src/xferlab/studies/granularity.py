"""Seed 004's granularity study (oneAPI on an FPGA): the same total moved host to device and back in
many small transfers or few large ones (the seed: 80 kB x 100,000 against 8 MB x 1,000, 8 GB), from
explicit buffers (pageable, pinned) and from shared memory; the total's time, and the spread of the
single transfers, not only their median (the seed saw explicit USM up to 4x slower)."""

from __future__ import annotations

from typing import Any

from ..errors import BadValue
from ..measure.device import EXPLICIT_KINDS, SEED_CHUNKS, DevicePlan, chunk_summary, rows_of, steps
from ..system.locality import cpu_text, local_placement, parse_cpus
from ..units import format_size
from .base import Plan, Study, StudyStep

MOST = 2**40  # the probe's largest --total


def plan(options: dict[str, Any]) -> Plan:
    total, chunks = int(options["total"]), [int(c) for c in options["chunks"]]
    if not 1 <= total <= MOST:
        raise BadValue(f"--total {format_size(total)}: bytes moved in all, in 1 B..1 TiB (one chunk-sized buffer is reused)")
    if not 1 <= options["repeats"] <= 10000:
        raise BadValue(f"--repeats {options['repeats']}: timed repeats of each chunk size, 1 to 10000 (after a warm-up)")
    for c in chunks:
        if c > total:
            raise BadValue(f"chunk {format_size(c)} is larger than --total {format_size(total)}; allowed: chunks up to the total")
    device = DevicePlan(backend=options["backend"], device=options["device"], transfers=False, chunks=chunks,
                        chunk_total=total, chunk_directions=["h2d", "d2h"], iterations=options["repeats"])
    device.check()
    # the copies' host thread on the device's local socket unless --cpus names others (local_placement)
    device.cpus, notes = local_placement(device.info, parse_cpus(options["cpus"]) if options.get("cpus") else None)
    kinds = device.kind_list()
    skipped = [] if any(k not in EXPLICIT_KINDS for k in kinds) else [
        {"class": "shared memory", "reason": f"{device.info.get('name', 'the device')} has no shared memory "
                                             "(SVM, managed or USM shared)"}]
    return Plan([StudyStep("chunks", f"{format_size(total)} in chunks of {', '.join(format_size(c) for c in chunks)}",
                           "device", steps(device), rows_of, {"backend": device.backend, "device": device.device,
                                                              "cpus": None if device.cpus is None else cpu_text(device.cpus)},
                           {"accelerator": device.info})], skipped, notes)


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per memory kind, direction and chunk: the total's median time and bandwidth, the single transfers'
    median, p99 and max, and the time against the largest chunk's (how much the small transfers cost)."""
    out = chunk_summary(rows.get("chunks", []))
    for r in out:
        largest = max((o for o in out if (o["host_kind"], o["direction"]) == (r["host_kind"], r["direction"])),
                      key=lambda o: o["chunk_bytes"])
        r["relative_to_largest_chunk"] = r["median_seconds"] / largest["median_seconds"]
    return sorted(out, key=lambda r: (r["direction"], r["host_kind"], r["chunk_bytes"]))


GRANULARITY = Study(
    name="granularity", seed="seed 004",
    experiment="one total moved in many small or few large transfers, both directions, buffers and shared memory",
    description="Seed 004's granularity: the same total in small (80 kB) and large (8 MB) transfers, H2D and D2H, "
                "from pageable, pinned and shared memory; the total's time and the single transfers' median, p99 and max.",
    plan=plan, table=table,
    columns=[("direction", "direction"), ("host_kind", "memory"), ("chunk_bytes", "chunk"), ("transfers", "transfers"),
             ("median_seconds", "total (median)"), ("median_bytes_per_second", "bandwidth"),
             ("transfer_median_seconds", "transfer median"), ("transfer_p99_seconds", "p99"),
             ("transfer_max_seconds", "max"), ("relative_to_largest_chunk", "vs largest chunk")],
    options={"backend": "opencl", "device": 0, "total": 256 * 2**20, "chunks": list(SEED_CHUNKS), "repeats": 3,
             "cpus": None})

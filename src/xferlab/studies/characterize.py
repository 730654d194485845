"""Seed 001's method (IBM's AC922 study): a node characterized by its host-device copies in every
direction (H2D, D2H, D2D, both at once) from pageable and pinned memory, CHAI's collaboration
patterns in their D (copies) and U (shared memory) versions, and, where MPI is installed, the
network between two ranks; summarized as the paper's tables: latency of the smallest message or
copy, bandwidth of the largest, and U's time against D's. Copies give medians; the network gives OSU's
means: each statistic has its own column."""

from __future__ import annotations

import os
from typing import Any

from ..errors import XferlabError
from ..measure import collab, device, network
from ..measure.network_results import overview as network_overview, summary as network_summary
from ..store.rows import flat
from .base import Plan, Study, StudyStep


def _flat(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as the converters made them, also when read back from the store (params spread out)."""
    return [flat(r) for r in rows]


def plan(options: dict[str, Any]) -> Plan:
    copies = device.DevicePlan(backend=options["backend"], device=options["device"], max_size=options["max_size"],
                               iterations=3, max_iterations=20, min_time=0.0)
    copies.check()
    kinds = [k for k in copies.kind_list() if k in ("pageable", "pinned")]
    copies.kinds = kinds
    out = [StudyStep("copies", f"copies H2D, D2H, D2D and both at once, {', '.join(kinds)} memory", "device",
                     device.steps(copies), device.rows_of, {"backend": copies.backend, "device": copies.device},
                     {"accelerator": copies.info})]
    skipped = []
    patterns = ["histogram", "taskqueue"] if options["backend"] == "opencl" else ["histogram"]
    chai = collab.CollabPlan(backend=options["backend"], device=options["device"], patterns=patterns,
                             size=options["elements"], warmups=1, repeats=2)
    chai.check()
    if not chai.shared_memory():
        chai.versions = ["D"]
        skipped.append({"class": "collaboration U", "reason": "the device has no shared memory with atomics"})
    out.append(StudyStep("collab", "CHAI-style collaboration, D and U", "device", collab.steps(chai), collab.rows_of,
                         {"collab": True, "backend": chai.backend}, {"accelerator": chai.info}))
    try:
        net = network.NetworkPlan(tests=["latency", "bw"], sizes=[8, 4 * 2**20],
                                  latency_counts=((2000, 100), (200, 10)), bandwidth_counts=((20, 2), (10, 2)),
                                  mpi=options.get("mpi", "auto"))
        net.check(len(os.sched_getaffinity(0)))
        out.append(StudyStep("network", "MPI latency and bandwidth between 2 ranks", "network", [network.step(net)],
                             network.rows_of, {"network": net.params()}))
    except XferlabError as error:
        skipped.append({"class": "network", "reason": str(error)})
    return Plan(out, skipped)


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    copies = _flat(rows.get("copies", []))
    if copies:
        for r in device.transfer_overview(device.transfer_summary(copies)):
            out.append({"part": "copies", "what": f"{r['direction']}, {r['host_kind']}",
                        "latency_median_seconds": r["latency_seconds"],
                        "bandwidth_median_bytes_per_second": r["bandwidth_bytes_per_second"],
                        "at_bytes": r["largest_bytes"]})
    for r in collab.summary(_flat(rows.get("collab", []))):
        out.append({"part": "collaboration", "what": f"{r['pattern']} {r['version']}", "total_seconds": r["total_seconds"],
                    "relative_to_d": r.get("total_normalized")})
    net = network_summary(rows.get("network", []))
    for r in network_overview(net):
        out.append({"part": "network", "what": f"{r['pair']}, {r['path']}", "latency_mean_seconds": r["latency_mean_seconds"],
                    "bandwidth_mean_bytes_per_second": r["bandwidth_mean_bytes_per_second"], "at_bytes": r["bandwidth_size_bytes"]})
    return out


CHARACTERIZE = Study(
    name="characterize", seed="seed 001",
    experiment="copies in every direction, CHAI's D and U versions, and the network between ranks, as the paper's tables",
    description="Seed 001's method: H2D, D2H, D2D and bidirectional copies (latency of the smallest, bandwidth of the "
                "largest), CHAI-style collaboration with U against D, and MPI between two ranks where MPI is installed.",
    plan=plan, table=table,
    columns=[("part", "part"), ("what", "what"), ("latency_median_seconds", "latency (median)"),
             ("latency_mean_seconds", "latency (mean, OSU)"), ("bandwidth_median_bytes_per_second", "bandwidth (median)"),
             ("bandwidth_mean_bytes_per_second", "bandwidth (mean, OSU)"), ("at_bytes", "at"), ("total_seconds", "total"),
             ("relative_to_d", "vs D")],
    options={"backend": "opencl", "device": 0, "max_size": 64 * 2**20, "elements": 2**20, "mpi": "auto"})

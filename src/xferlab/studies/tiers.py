"""Seed 003's five test classes (Technion/Intel, CXL memory as persistent memory): STREAM in local
DRAM, on a remote NUMA node, on a memory-only (CXL) node, in App-Direct persistent memory, and with
threads placed compactly or spread; each kernel's best bandwidth set against local DRAM's (the
paper's "-25-30 % remote, -50 % CXL" view). A class this machine lacks is skipped with its reason."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..measure.memory import DEFAULT_KERNELS, MemoryPlan, rows_of, steps, summaries
from ..system import inventory as inv
from .base import Plan, Study, StudyStep


def _node_of_cpu(cpu: int, nodes: list[dict[str, Any]]) -> int:
    return next((n["node"] for n in nodes if cpu in n["cpus"]), nodes[0]["node"])


def plan(options: dict[str, Any]) -> Plan:
    nodes = inv.numa_nodes()
    cpus = sorted(os.sched_getaffinity(0))
    local = _node_of_cpu(cpus[0], nodes)
    common = {"kernels": list(DEFAULT_KERNELS), "iterations": options["iterations"], "max_time": options["max_time"],
              "size_bytes": options["size"]}
    out, skipped = [], []

    def add(key: str, label: str, **kwargs: Any) -> None:
        memory = MemoryPlan(**{**common, **kwargs})
        memory.check()
        out.append(StudyStep(key, label, "memory", steps(memory), rows_of, {"class": key}))

    add("local", f"local DRAM (node {local}, CPUs of node {local})", nodes=[local],
        cpus=[c for c in cpus if _node_of_cpu(c, nodes) == local])
    remote = [n["node"] for n in nodes if n["node"] != local and n["kind"] == "cpu+memory"]
    if remote:
        add("remote", f"remote NUMA node {remote[0]} from node {local}'s CPUs", nodes=[remote[0]],
            cpus=[c for c in cpus if _node_of_cpu(c, nodes) == local])
    else:
        skipped.append({"class": "remote", "reason": f"one NUMA node with CPUs ({len(nodes)} node(s) in all)"})
    cxl = [n["node"] for n in nodes if n["kind"] == "memory-only"]
    if cxl:
        add("cxl", f"memory-only (CXL) node {cxl[0]}", nodes=[cxl[0]])
    else:
        skipped.append({"class": "cxl", "reason": "no memory-only (CXL) NUMA node"})
    if options.get("pmem"):
        add("app-direct", f"App-Direct persistent memory at {options['pmem']}", pmem=Path(options["pmem"]))
    else:
        daxes = inv.inventory().get("pmem_devices") or []
        skipped.append({"class": "app-direct", "reason": "no --pmem PATH given" + (
            f" (this machine has {', '.join(daxes)}: give one)" if daxes else " and no persistent-memory device")})
    if len(cpus) >= 4:
        half = len(cpus) // 2
        add("compact", f"{half} threads on CPUs {cpus[:half]} (compact)", cpus=cpus[:half], threads=[half])
        add("spread", f"{half} threads on CPUs {cpus[::2][:half]} (spread)", cpus=cpus[::2][:half], threads=[half])
    else:
        skipped.append({"class": "affinity", "reason": f"{len(cpus)} CPUs: compact and spread need at least 4 to differ"})
    return Plan(out, skipped)


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per class and kernel: the best bandwidth (STREAM's figure) and its ratio to local DRAM's."""
    best: dict[tuple[str, str], float] = {}
    for key, mine in rows.items():
        for s in summaries(mine):
            if s["metric"] == "bandwidth_bytes_per_second":
                best[(key, s["test"])] = max(best.get((key, s["test"]), 0.0), s["max"])
    out = []
    for (key, kernel), value in best.items():
        local = best.get(("local", kernel))
        out.append({"class": key, "kernel": kernel, "best_bytes_per_second": value,
                    "relative_to_local": value / local if local else None})
    return out


TIERS = Study(
    name="tiers", seed="seed 003",
    experiment="STREAM in local DRAM, remote NUMA, memory-only CXL, App-Direct PMem, compact vs spread threads",
    description="Seed 003's five test classes: STREAM per kernel in each memory tier this machine has, relative to "
                "local DRAM; classes it lacks are skipped with the reason.",
    plan=plan, table=table,
    columns=[("class", "class"), ("kernel", "kernel"), ("best_bytes_per_second", "best"),
             ("relative_to_local", "vs local")],
    options={"pmem": None, "iterations": 10, "max_time": 0.5, "size": None})

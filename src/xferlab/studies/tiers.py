"""Seed 003's test classes (Technion/Intel, CXL memory as persistent memory): App-Direct from the
PMem's own node (1.a) and from a remote one (1.b), remote CC-NUMA memory from one socket (2.a) and
from all cores (2.b), with a memory-only (CXL) node, local DRAM as the reference, and thread affinity
(compact vs spread, one socket vs all cores); each kernel's best bandwidth set against local DRAM's
(the paper's "-25-30 % remote, -50 % CXL" view). A class this machine lacks is skipped with its reason."""

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
    """The seed's classes this machine has (``local``: local DRAM, its node's CPUs; ``remote`` and
    ``remote-all-cores``: another node's memory from the local CPUs and from all of them, the seed's 2.a and
    2.b; ``all-cores``: local memory from every CPU, against one socket's; ``cxl``: a memory-only node;
    ``app-direct`` and ``app-direct-remote``: --pmem from its node's CPUs and from another node's, the
    seed's 1.a and 1.b; ``compact``/``spread``: half the CPUs placed both ways, 1.c's thread affinity),
    and the others skipped with the reason."""
    nodes = inv.numa_nodes()
    cpus = sorted(os.sched_getaffinity(0))
    local = _node_of_cpu(cpus[0], nodes)
    common = {"kernels": list(DEFAULT_KERNELS), "iterations": options["iterations"], "max_time": options["max_time"],
              "size_bytes": options["size"]}
    out, skipped = [], []

    def cpus_of(node: int) -> list[int]:
        return [c for c in cpus if _node_of_cpu(c, nodes) == node]

    def add(key: str, label: str, **kwargs: Any) -> None:
        memory = MemoryPlan(**{**common, **kwargs})
        memory.check()
        out.append(StudyStep(key, label, "memory", steps(memory), rows_of, {"class": key}))

    with_cpus = [n["node"] for n in nodes if cpus_of(n["node"])]
    one_node = f"one NUMA node with CPUs ({len(nodes)} node(s) in all)"
    add("local", f"local DRAM (node {local}, CPUs of node {local})", nodes=[local], cpus=cpus_of(local))
    remote = [n["node"] for n in nodes if n["node"] != local and n["kind"] == "cpu+memory"]
    if remote:
        add("remote", f"remote NUMA node {remote[0]} from node {local}'s CPUs", nodes=[remote[0]], cpus=cpus_of(local))
        add("remote-all-cores", f"remote NUMA node {remote[0]} from every CPU ({len(cpus)})", nodes=[remote[0]],
            cpus=cpus)
    else:
        skipped += [{"class": "remote", "reason": one_node}, {"class": "remote-all-cores", "reason": one_node}]
    if len(with_cpus) > 1:
        add("all-cores", f"local DRAM (node {local}) from every CPU ({len(cpus)}), against one socket's", nodes=[local],
            cpus=cpus)
    else:
        skipped.append({"class": "all-cores", "reason": f"{one_node}: one socket is all the cores"})
    cxl = [n["node"] for n in nodes if n["kind"] == "memory-only"]
    if cxl:
        add("cxl", f"memory-only (CXL) node {cxl[0]}", nodes=[cxl[0]], cpus=cpus_of(local))
    else:
        skipped.append({"class": "cxl", "reason": "no memory-only (CXL) NUMA node"})
    app_direct(options, nodes, with_cpus, local, cpus_of, add, skipped)
    if len(cpus) >= 4:
        half = len(cpus) // 2
        add("compact", f"{half} threads on CPUs {cpus[:half]} (compact)", cpus=cpus[:half], threads=[half])
        add("spread", f"{half} threads on CPUs {cpus[::2][:half]} (spread)", cpus=cpus[::2][:half], threads=[half])
    else:
        skipped.append({"class": "affinity", "reason": f"{len(cpus)} CPUs: compact and spread need at least 4 to differ"})
    return Plan(out, skipped)


def app_direct(options: dict[str, Any], nodes: list[dict[str, Any]], with_cpus: list[int], local: int, cpus_of,
               add, skipped: list[dict[str, str]]) -> None:
    """App-Direct at --pmem, from the CPUs of its node (--pmem-node, default the local one: the seed's
    1.a) and from another node's (1.b); the memory is where the file is, only the threads move."""
    pmem, home = options.get("pmem"), options.get("pmem_node")
    if not pmem:
        daxes = inv.inventory().get("pmem_devices") or []
        reason = "no --pmem PATH given" + (f" (this machine has {', '.join(daxes)}: give one)" if daxes
                                           else " and no persistent-memory device")
        skipped += [{"class": "app-direct", "reason": reason}, {"class": "app-direct-remote", "reason": reason}]
        return
    if home is None:
        home = local
    elif home not in with_cpus:
        from ..errors import BadValue

        raise BadValue(f"--pmem-node {home}: not a NUMA node with CPUs here; allowed: {', '.join(map(str, with_cpus))}")
    add("app-direct", f"App-Direct persistent memory at {pmem} from node {home}'s CPUs", pmem=Path(pmem),
        cpus=cpus_of(home))
    others = [n for n in with_cpus if n != home]
    if others:
        add("app-direct-remote", f"App-Direct persistent memory at {pmem} from node {others[0]}'s CPUs (its node: "
            f"{home})", pmem=Path(pmem), cpus=cpus_of(others[0]))
    else:
        skipped.append({"class": "app-direct-remote", "reason": f"one NUMA node with CPUs ({len(nodes)} node(s) in all): "
                                                                "no remote CPUs to reach the PMem from"})


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
    experiment="STREAM in local DRAM, remote NUMA (local and all cores), memory-only CXL, App-Direct PMem (local and "
               "remote CPUs), compact vs spread threads, one socket vs all cores",
    description="Seed 003's test classes: STREAM per kernel in each memory tier and placement this machine has, "
                "relative to local DRAM; classes it lacks are skipped with the reason.",
    plan=plan, table=table,
    columns=[("class", "class"), ("kernel", "kernel"), ("best_bytes_per_second", "best"),
             ("relative_to_local", "vs local")],
    options={"pmem": None, "pmem_node": None, "iterations": 10, "max_time": 0.5, "size": None})

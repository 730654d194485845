"""Seed 003's test classes (Technion/Intel, CXL memory as persistent memory): App-Direct running STREAM-PMem
(studies/tiers_pmem.py: local 1.a, remote 1.b, remote with thread affinity 1.c, and a CXL target), remote
CC-NUMA memory from one socket (2.a) and from all cores (2.b), with a CXL node (one a CXL region backs; another memory-only node is a class of its own), local DRAM as the
reference, and thread placement (compact vs spread, one socket vs all cores); each class swept over thread
counts from 1 to all CPUs of its placement (--threads), each kernel's best bandwidth at each count set against
local DRAM's at the same count (the paper's "-25-30 % remote, -50 % CXL" view, its plots of bandwidth against
threads). A class this machine lacks is skipped with its reason.
Each row of the table says what it compares: the statistic (best), the placement (memory node, CPUs,
threads), the arrays and their size class against the host's last-level cache (measure/sizeclass.py;
recorded with each step's rows as ``llc_bytes``); a class is set against local DRAM only when both
are of the same size class."""

from __future__ import annotations

import os
from typing import Any

from ..measure import sizeclass
from ..measure.memory import DEFAULT_KERNELS, MemoryPlan, rows_of, steps, summaries
from ..measure.probe import ProbeRun
from ..measure.samples import value_of
from ..measure.steps import Step
from ..system import backing, inventory as inv
from .base import Plan, Study, StudyStep
from .tiers_pmem import app_direct, node_of_cpu as _node_of_cpu, plot, sweep


def plan(options: dict[str, Any]) -> Plan:
    """The seed's classes this machine has (``local``: local DRAM, its node's CPUs; ``remote`` and
    ``remote-all-cores``: another node's memory from the local CPUs and from all of them, the seed's 2.a and
    2.b; ``all-cores``: local memory from every CPU, against one socket's; ``cxl``: a node a CXL region backs;
    ``memory-only``: a memory-only node that is not CXL (HBM, KMEM-DAX PMem, unknown: system/backing.py);
    ``app-direct``, ``app-direct-remote``, ``app-direct-remote-affinity`` and ``app-direct-cxl``: the seed's
    1.a, 1.b, 1.c and its CXL target (tiers_pmem.py); ``compact``/``spread``: half the CPUs placed both ways),
    and the others skipped with the reason. Every class but compact/spread runs each thread count of the sweep
    (tiers_pmem.sweep) its placement has CPUs for."""
    nodes = inv.numa_nodes()
    cpus = sorted(os.sched_getaffinity(0))
    local = _node_of_cpu(cpus[0], nodes)
    common = {"kernels": list(DEFAULT_KERNELS), "iterations": options["iterations"], "max_time": options["max_time"],
              "size_bytes": options["size"]}
    out, skipped = [], []

    def cpus_of(node: int) -> list[int]:
        return [c for c in cpus if _node_of_cpu(c, nodes) == node]

    def add(key: str, label: str, **kwargs: Any) -> None:
        if "threads" not in kwargs:
            kwargs["threads"] = sweep(options.get("threads"), key, kwargs.get("cpus") or cpus)
        memory = MemoryPlan(**{**common, **kwargs})
        memory.check()
        out.append(StudyStep(key, label, "memory", steps(memory), rows_with_llc, {"class": key}))

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
    labelled = backing.read(nodes)["numa_nodes"]  # CXL only where a CXL region backs the node
    cxl = [n for n in labelled if n["memory_kind"] == "cxl"]
    if cxl:
        add("cxl", f"CXL node {cxl[0]['node']}: {cxl[0]['backing']}", nodes=[cxl[0]["node"]], cpus=cpus_of(local))
    else:
        skipped.append({"class": "cxl", "reason": "no NUMA node backed by a CXL region (/sys/bus/cxl)"})
    other = [n for n in labelled if n["memory_kind"] not in (None, "cxl")]
    if other:
        add("memory-only", f"node {other[0]['node']}, {other[0]['backing']}", nodes=[other[0]["node"]],
            cpus=cpus_of(local))
    notes: list[str] = []
    app_direct(options, nodes, with_cpus, local, cpus_of, add, skipped, notes)
    if len(cpus) >= 4:
        half = len(cpus) // 2
        add("compact", f"{half} threads on CPUs {cpus[:half]} (compact)", cpus=cpus[:half], threads=[half])
        add("spread", f"{half} threads on CPUs {cpus[::2][:half]} (spread)", cpus=cpus[::2][:half], threads=[half])
    else:
        skipped.append({"class": "affinity", "reason": f"{len(cpus)} CPUs: compact and spread need at least 4 to differ"})
    return Plan(out, skipped, notes)


def rows_with_llc(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Any]:
    """The memory suite's rows of one step, each with the host's last-level cache (``llc_bytes``)
    that its arrays' size class is judged against, recorded with the samples."""
    rows, failure = rows_of(step, run)
    llc = sizeclass.host_llc() or None
    return [{**r, "llc_bytes": llc} for r in rows], failure


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per class, kernel and thread count: the best bandwidth (STREAM's figure: the fastest iteration), with
    its placement, arrays and size class, and its ratio to local DRAM's at the same thread count where both
    are of the same size class (None otherwise: a cache figure is not set against a memory one)."""
    best: dict[tuple[str, str, int], dict[str, Any]] = {}
    for key, mine in rows.items():
        llc = next((value_of(r, "llc_bytes") for r in mine if value_of(r, "llc_bytes")), None)
        for s in summaries(mine):
            if s["metric"] == "bandwidth_bytes_per_second" and s["max"] > best.get((key, s["test"], s["threads"]), {}).get("value", 0):
                node = "default" if s["node"] in (None, "", "default") else s["node"]
                best[(key, s["test"], s["threads"])] = {
                    "value": s["max"], "threads": s["threads"], "size_bytes": s["size_bytes"],
                    "placement": f"memory node {node}" + (f", {s['mode']}" if s["mode"] not in (None, "memory") else "")
                                 + f", CPUs {s['cpus']}",
                    "array_size_class": sizeclass.size_class(s["size_bytes"], llc, sizeclass.HOST_ARRAYS.get(s["test"], 3))}
    out = []
    for (key, kernel, threads), b in best.items():
        local = best.get(("local", kernel, threads))
        alike = local is not None and local["array_size_class"] == b["array_size_class"]
        out.append({"class": key, "kernel": kernel, "statistic": "best", "placement": b["placement"],
                    "threads": b["threads"], "size_bytes": b["size_bytes"], "array_size_class": b["array_size_class"],
                    "best_bytes_per_second": b["value"],
                    "relative_to_local": b["value"] / local["value"] if alike else None})
    return out


TIERS = Study(
    name="tiers", seed="seed 003",
    experiment="STREAM in local DRAM, remote NUMA (local and all cores), CXL (a node a CXL region backs), STREAM-PMem on App-Direct "
               "targets (local, remote, remote with thread affinity, CXL), compact vs spread threads, one socket vs all "
               "cores, each swept over thread counts",
    description="Seed 003's test classes: STREAM (STREAM-PMem on PMDK for App-Direct) per kernel in each memory tier "
                "and placement this machine has, at each thread count of the sweep, best bandwidth (the fastest "
                "iteration), relative to local DRAM at the same thread count and array-size class (memory: each array "
                "at least 4x the last-level cache, STREAM's rule); classes it lacks are skipped with the reason.",
    plan=plan, table=table, plot=plot,
    columns=[("class", "class"), ("kernel", "kernel"), ("placement", "placement"), ("threads", "threads"),
             ("size_bytes", "arrays"), ("array_size_class", "size class"), ("statistic", "statistic"),
             ("best_bytes_per_second", "best"), ("relative_to_local", "vs local, same class")],
    options={"pmem": None, "pmem_node": None, "threads": None, "iterations": 10, "max_time": 0.5, "size": None})

"""`xferlab inventory`: what this machine is, as recorded with every measurement run."""

from __future__ import annotations

import json


from ..system.backing import facts
from ..system.locality import cpu_text
from ..system.inventory import inventory as read_inventory
from ..system.state import RunKind, machine_state, state_lines, warning_lines, warnings
from ..units import format_size
from .common import JSON
from .output import Column, emit, stdout


def _where(locality: dict | None) -> str:
    """A device's locality (system/locality.py) in one cell."""
    if not locality:
        return "–"
    if locality["pci_bus_id"] is None:
        return locality["note"]
    node = "no node" if locality["numa_node"] is None else f"node {locality['numa_node']}"
    return f"{locality['pci_bus_id']}, {node}, CPUs {cpu_text(locality['local_cpus']) or '–'}"


def inventory(json_: bool = JSON) -> None:
    """Show the machine's CPUs, caches, memory nodes and state, and its CXL devices and regions and persistent memory.

    A memory-only node (memory, no CPU) is called CXL only when a CXL region backs it (/sys/bus/cxl); else what
    is known of it: KMEM-DAX PMem (daxctl's system-ram mode), HBM in flat mode (HMAT), or unknown.

    The state is what each run records at its start (NUMA balancing, governor, turbo, THP, SMT, VM, load,
    clock source), with the warnings a memory or latency run of unknown placement would get."""
    machine = read_inventory()
    state = machine_state()
    state["warnings"] = warnings(state, RunKind(memory=True, latency=True))
    machine["machine_state"] = state
    if json_:
        from ..measure.device import BACKENDS, devices

        machine["accelerators"] = {b: dict(zip(("devices", "not_available"), devices(b))) for b in BACKENDS}
        print(json.dumps({"command": "inventory", "results": [machine]}, indent=1))
        return
    stdout.print(f"{machine['cpu_model']} ({machine['architecture']}): {machine['cores']} cores, {machine['threads']} "
                 f"threads, CPUs allowed {machine['cpus_allowed']}"
                 f"{', virtual machine' if machine['hypervisor'] else ''}; kernel {machine['kernel']}", highlight=False)
    emit("inventory", [{"level": f"L{c['level']} {c['type'].lower()}", "size_bytes": c["size_bytes"],
                        "shared": c["shared_cpus"]} for c in machine["caches"]],
         [Column("level", "cache", justify="left"), Column("size_bytes", "size", format_size),
          Column("shared", "shared by CPUs")], "table", title="Caches of CPU 0")
    emit("inventory", [{**n, "cpus": ",".join(map(str, n["cpus"])) or "–", "backing": n.get("backing") or "–"}
                       for n in machine["numa_nodes"]],
         [Column("node", "node"), Column("kind", "kind", justify="left"), Column("cpus", "CPUs"),
          Column("memory_total_bytes", "memory", format_size), Column("memory_free_bytes", "free", format_size),
          Column("backing", "what backs it", justify="left")],
         "table", title="Memory nodes (memory-only: no CPU; CXL only where a CXL region backs it)")
    for line in facts(machine["cxl"], machine["pmem"]):
        stdout.print(line, highlight=False)
    from ..measure.device import BACKENDS, devices

    accelerators, missing = [], []
    for backend in BACKENDS:
        found, why = devices(backend)
        accelerators += found
        if why:
            missing.append(f"{backend}: not available: {why}")
    if accelerators:
        emit("inventory", accelerators, [
            Column("backend", "backend", justify="left"), Column("index", "#"), Column("name", "device", justify="left"),
            Column("platform", "platform", justify="left"), Column("type", "type", justify="left"),
            Column("max_allocation_bytes", "max allocation", format_size), Column("global_memory_bytes", "memory", format_size),
            Column("svm_fine_grain", "fine SVM", lambda v: "yes" if v else "no"),
            Column("locality", "PCI address, node, local CPUs", _where, justify="left"),
        ], "table", title="Accelerators")
    for line in missing:
        stdout.print(line, highlight=False)
    hp = machine["hugepages"]
    stdout.print(f"huge pages: {hp['total']} of {format_size(hp['size_bytes'])} reserved, {hp['free']} free; "
                 f"transparent: {hp['transparent']}; governor: {machine['frequency_governor']}; "
                 f"persistence instructions: {', '.join(machine['cpu_flags_persistence']) or 'none'}; "
                 f"pmem devices: {', '.join(machine['pmem_devices']) or 'none'}", highlight=False)
    for line in state_lines(state) + warning_lines(state):
        stdout.print(line, highlight=False)

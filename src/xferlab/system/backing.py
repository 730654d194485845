"""What a memory-only NUMA node (memory and no CPU) is. Linux shows a CXL memory expander, high-bandwidth memory
in flat mode, persistent memory onlined by the kmem driver and a GPU's coherent memory all the same way, so
xferlab calls a node CXL only when a CXL region backs it, and otherwise "memory-only" with what is known:

* ``cxl``: a CXL ram region's DAX device is onlined on the node (/sys/bus/cxl, system/cxl.py);
* ``pmem-kmem``: a DAX device in ``system-ram`` mode is onlined on the node (``daxctl list``: KMEM-DAX), from a
  persistent-memory namespace where ``ndctl list`` names it (system/pmem.py);
* ``hbm``: the node's read bandwidth in the firmware's Heterogeneous Memory Attribute Table is above every CPU
  node's (ACPI 6.3, section 5.2.27, HMAT; Linux Documentation/admin-guide/mm/numaperf.rst: ``nodeN/access0/
  initiators/read_bandwidth``, MB/s): high-bandwidth memory in flat mode (Intel Xeon Max);
* ``unknown``: none of these; a GPU's memory (NVIDIA Grace Hopper, AMD MI300A) or a CXL device the kernel has
  not bound to a region look like this.

A node with CPUs gets ``memory_kind`` null: its memory is the socket's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from . import cxl as cxl_bus, pmem as pmem_tools
from .root import state_root

KINDS = ("cxl", "pmem-kmem", "hbm", "unknown")


def hmat_read_bandwidth(node: int, root: Optional[Path] = None) -> Optional[int]:
    """The HMAT read bandwidth (MB/s) of ``node`` from its nearest initiators, None when the firmware gives none."""
    root = state_root() if root is None else root
    path = root / "sys" / "devices" / "system" / "node" / f"node{node}" / "access0" / "initiators" / "read_bandwidth"
    try:
        value = int(path.read_text().strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if value > 0 else None


def label(nodes: list[dict[str, Any]], cxl: dict[str, Any], pmem: dict[str, Any],
          root: Optional[Path] = None) -> list[dict[str, Any]]:
    """``nodes`` (``numa_nodes()``'s records, copied) each with ``memory_kind`` and ``backing`` (what says so)."""
    regions, kmem = cxl_bus.backing(cxl), pmem_tools.kmem_nodes(pmem)
    cpu_bandwidth = [b for b in (hmat_read_bandwidth(n["node"], root) for n in nodes if n["cpus"]) if b]
    out = []
    for n in nodes:
        n = dict(n)
        if n.get("kind") != "memory-only":
            n["memory_kind"], n["backing"] = None, None
        elif n["node"] in regions:
            n["memory_kind"], n["backing"] = "cxl", cxl_bus.describe(regions[n["node"]])
        elif n["node"] in kmem:
            dev = kmem[n["node"]]
            space = dev["namespace"]
            origin = (f"persistent-memory {space['name']} ({space['mode']}, {space['region']})" if space
                      else "a source ndctl does not name")
            n["memory_kind"] = "pmem-kmem"
            n["backing"] = f"memory-only: KMEM-DAX PMem, daxctl {dev['name']} in system-ram mode from {origin}"
        elif (bandwidth := hmat_read_bandwidth(n["node"], root)) and cpu_bandwidth and bandwidth > max(cpu_bandwidth):
            n["memory_kind"] = "hbm"
            n["backing"] = (f"memory-only: HBM in flat mode, HMAT read bandwidth {bandwidth} MB/s above the CPU nodes' "
                            f"(at most {max(cpu_bandwidth)} MB/s)")
        else:
            n["memory_kind"] = "unknown"
            n["backing"] = ("memory-only: no CXL region, no KMEM-DAX device and no HMAT bandwidth above the CPU nodes' "
                            "back it (a GPU's memory, or a CXL device without a region, looks like this)")
        out.append(n)
    return out


def facts(cxl: dict[str, Any], pmem: dict[str, Any]) -> list[str]:
    """What `xferlab inventory` says of CXL and persistent memory, "none" said where there is none."""
    lines = []
    if not cxl.get("present"):
        lines.append(f"CXL: none ({cxl.get('reason')})")
    else:
        lines.append(f"CXL: {len(cxl['memdevs'])} memory device(s), {len(cxl['decoders'])} decoder(s), "
                     f"{len(cxl['regions'])} region(s)" + "".join(
                         f"; {cxl_bus.describe(r)} backs node(s) {', '.join(map(str, r['numa_nodes'])) or 'none'}"
                         for r in cxl["regions"]))
    spaces = ", ".join(f"{n['name']} ({n['mode']}, {n['device'] or 'no device'})" for n in pmem.get("namespaces") or [])
    devices = ", ".join(f"{d['name']} ({d['mode']}, node {d['target_node']})" for d in pmem.get("dax_devices") or [])
    lines.append(f"persistent memory: namespaces {spaces or 'none'}; DAX devices {devices or 'none'}"
                 + "".join(f" ({note})" for note in pmem.get("notes") or []))
    return lines


def read(nodes: list[dict[str, Any]], root: Optional[Path] = None) -> dict[str, Any]:
    """This machine's CXL and PMem facts and ``nodes`` labelled with them."""
    cxl, pmem = cxl_bus.read(root), pmem_tools.read()
    return {"cxl": cxl, "pmem": pmem, "numa_nodes": label(nodes, cxl, pmem, root)}

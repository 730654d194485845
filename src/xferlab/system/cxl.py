"""CXL devices and regions as the kernel shows them under /sys/bus/cxl/devices (Documentation/ABI/testing/
sysfs-bus-cxl), read under the machine-state root (``$XFERLAB_STATE_ROOT``, a faked tree in the tests):

* ``memX``: a CXL memory device (Type 3): ``serial``, ``numa_node`` (the node of its PCIe device; -1
  none), ``ram/size`` and ``pmem/size`` (its volatile and persistent capacity, hex), ``firmware_version``;
* ``decoderX.Y``: an HDM decoder: ``start`` and ``size`` (hex), ``interleave_ways``,
  ``interleave_granularity``, ``target_type`` (expander, accelerator), an endpoint decoder's ``mode`` (ram,
  pmem) and the ``region`` it is a part of, a switch's or root's ``target_list``;
* ``regionZ``: a region of host physical memory interleaved over endpoint decoders: ``mode`` (ram, pmem),
  ``size`` and ``resource`` (hex), ``interleave_ways``, ``interleave_granularity``, ``target0``…``targetN``
  (the endpoint decoders), and, for a ram region bound to the dax driver, its ``dax_regionZ/daxZ.Y``
  devices, each with the ``target_node`` its memory is onlined on (Documentation/ABI/testing/sysfs-bus-dax;
  drivers/dax/cxl.c places it on the node of the region's address range).

The NUMA node a region backs is that ``target_node``. Nothing here raises on what it reads: an attribute
that is absent or malformed is None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .root import state_root

BUS = Path("sys") / "bus" / "cxl" / "devices"


def _text(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _int(path: Path) -> Optional[int]:
    """A sysfs number, decimal or 0x-hex (sizes and addresses are hex); None when absent or not a number."""
    text = _text(path)
    try:
        return int(text, 0) if text else None
    except ValueError:
        return None


def _order(path: Path) -> tuple:
    """``decoder3.10`` after ``decoder3.2``: the name's numbers in order."""
    digits = "".join(c if c.isdigit() else " " for c in path.name).split()
    return tuple(int(d) for d in digits)


def _dax_devices(region: Path) -> list[dict[str, Any]]:
    """The dax devices of a region's dax region, each with the node its memory goes to."""
    out = []
    found = set(region.glob("dax_region*/dax*.*")) | set(region.glob("*/dax_region*/dax*.*"))  # or under a sysram region
    for dev in sorted(found, key=_order):
        node = _int(dev / "target_node")
        out.append({"name": dev.name, "target_node": node if node is not None and node >= 0 else None})
    return out


def read(root: Optional[Path] = None) -> dict[str, Any]:
    """The CXL memory devices, decoders and regions of this machine (under ``root``), and the nodes the
    regions back; ``present`` false with the reason where the kernel shows no CXL bus."""
    root = state_root() if root is None else root
    base = root / BUS
    if not base.is_dir():
        return {"present": False, "reason": "no /sys/bus/cxl: the kernel shows no CXL bus (no CXL device, or a kernel "
                "without CONFIG_CXL_BUS)", "memdevs": [], "decoders": [], "regions": []}
    memdevs = [{"name": d.name, "serial": _int(d / "serial"), "numa_node": _int(d / "numa_node"),
                "ram_bytes": _int(d / "ram" / "size"), "pmem_bytes": _int(d / "pmem" / "size"),
                "firmware_version": _text(d / "firmware_version")}
               for d in sorted(base.glob("mem[0-9]*"), key=_order)]
    decoders = [{"name": d.name, "start": _int(d / "start"), "size": _int(d / "size"), "mode": _text(d / "mode"),
                 "target_type": _text(d / "target_type"), "interleave_ways": _int(d / "interleave_ways"),
                 "interleave_granularity": _int(d / "interleave_granularity"), "region": _text(d / "region") or None,
                 "target_list": _text(d / "target_list")}
                for d in sorted(base.glob("decoder[0-9]*.[0-9]*"), key=_order)]
    regions = []
    for r in sorted(base.glob("region[0-9]*"), key=_order):
        targets = [t for t in (_text(r / f"target{i}") for i in range(_int(r / "interleave_ways") or 0)) if t]
        dax = _dax_devices(r)
        regions.append({"name": r.name, "mode": _text(r / "mode"), "size": _int(r / "size"),
                        "resource": _int(r / "resource"), "interleave_ways": _int(r / "interleave_ways"),
                        "interleave_granularity": _int(r / "interleave_granularity"), "targets": targets,
                        "memdevs": memdevs_of(targets, base), "dax_devices": dax,
                        "numa_nodes": sorted({d["target_node"] for d in dax if d["target_node"] is not None})})
    return {"present": True, "reason": None, "memdevs": memdevs, "decoders": decoders, "regions": regions}


def memdevs_of(targets: list[str], base: Path) -> list[str]:
    """The memory devices behind a region's endpoint decoders: an endpoint decoder ``decoderX.Y`` sits under its
    port ``endpointX``, whose ``uport`` link is the memdev (sysfs-bus-cxl: endpointX/uport)."""
    out = []
    for name in targets:
        port = (base / name).resolve().parent if (base / name).exists() else None
        uport = port / "uport" if port is not None else None
        if uport is not None and uport.exists():
            out.append(uport.resolve().name)
    return out


def backing(cxl: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Each NUMA node a CXL region backs, with that region."""
    return {node: region for region in cxl.get("regions") or [] for node in region["numa_nodes"]}


def describe(region: dict[str, Any]) -> str:
    """``CXL region0 (ram, 2-way interleave over mem0, mem1, 4 GiB)``."""
    from ..units import format_size

    over = ", ".join(region["memdevs"] or region["targets"]) or "its endpoint decoders"
    size = f", {format_size(region['size'])}" if region.get("size") else ""
    return f"CXL {region['name']} ({region['mode'] or 'mode unknown'}, {region['interleave_ways'] or '?'}-way interleave " \
           f"over {over}{size})"

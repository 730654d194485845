"""Persistent-memory regions and namespaces from ``ndctl list --regions --namespaces``, and device-DAX devices
from ``daxctl list`` (ndctl's and daxctl's JSON, as their man pages show it: ndctl-list(1), daxctl-list(1)):

* an ndctl region: ``dev`` (region0), ``size``, ``type`` (pmem, blk), ``numa_node``, ``target_node``,
  ``persistence_domain``, its ``namespaces``;
* an ndctl namespace: ``dev`` (namespace0.0), ``mode`` (fsdax, devdax, sector, raw), ``size``, ``blockdev``
  (pmem0, fsdax) or ``chardev`` (dax0.0, devdax), ``numa_node``;
* a daxctl device: ``chardev`` (dax0.0), ``size``, ``target_node``, ``mode``: ``devdax`` (a character device
  for App-Direct) or ``system-ram`` (onlined by the kmem driver as a memory-only NUMA node, ``target_node``:
  KMEM-DAX).

Both tools print nothing when there is nothing, and a one-element list as its element; either shape is read.
A tool that is absent, fails or prints what is not JSON gives its reason, never an exception.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any, Optional

#: What each tool is run with.
COMMANDS = {"ndctl": ["list", "--regions", "--namespaces"], "daxctl": ["list"]}


def run(tool: str, timeout: float = 10) -> tuple[Any, Optional[str]]:
    """``tool``'s JSON (None when it printed nothing), or (None, why) when it could not be read."""
    found = shutil.which(tool)
    if not found:
        return None, f"{tool} is not installed (Debian: apt-get install {tool})"
    try:
        done = subprocess.run([found, *COMMANDS[tool]], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"{tool} could not run: {error}"
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no reason given"])[0]
        return None, f"{tool} {' '.join(COMMANDS[tool])} failed (exit {done.returncode}: {first})"
    if not done.stdout.strip():
        return None, None
    try:
        return json.loads(done.stdout), None
    except ValueError as error:
        return None, f"{tool} {' '.join(COMMANDS[tool])} printed what is not JSON ({error})"


def _walk(value: Any, parent: Optional[str] = None):
    """Every object in ndctl's output with the region it sits in (a bare object, a list, {"regions": […]})."""
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, parent)
    elif isinstance(value, dict):
        yield value, parent
        here = value.get("dev") if str(value.get("dev", "")).startswith("region") else parent
        for key in ("regions", "namespaces", "buses", "dimms"):
            if key in value:
                yield from _walk(value[key], here)


def _node(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and value >= 0 else None


def parse_ndctl(data: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """ndctl's regions and namespaces (a namespace with the region it is in)."""
    regions, namespaces = [], []
    for item, parent in _walk(data):
        dev = str(item.get("dev", ""))
        if dev.startswith("region"):
            regions.append({"name": dev, "type": item.get("type"), "size": item.get("size"),
                            "numa_node": _node(item.get("numa_node")), "target_node": _node(item.get("target_node")),
                            "persistence_domain": item.get("persistence_domain")})
        elif dev.startswith("namespace"):
            namespaces.append({"name": dev, "region": parent, "mode": item.get("mode"), "size": item.get("size"),
                               "device": item.get("blockdev") or item.get("chardev"),
                               "numa_node": _node(item.get("numa_node"))})
    return regions, namespaces


def parse_daxctl(data: Any) -> list[dict[str, Any]]:
    """daxctl's device-DAX devices."""
    items = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("chardev"):
            out.append({"name": item["chardev"], "mode": item.get("mode"), "size": item.get("size"),
                        "target_node": _node(item.get("target_node"))})
    return out


def read() -> dict[str, Any]:
    """The persistent-memory regions, namespaces and DAX devices ndctl and daxctl list, with why a tool gave none."""
    ndctl, why_ndctl = run("ndctl")
    daxctl, why_daxctl = run("daxctl")
    regions, namespaces = parse_ndctl(ndctl)
    return {"regions": regions, "namespaces": namespaces, "dax_devices": parse_daxctl(daxctl),
            "notes": [why for why in (why_ndctl, why_daxctl) if why]}


def kmem_nodes(pmem: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Each NUMA node a DAX device in system-ram mode (KMEM-DAX) backs, with that device and, when ndctl names
    it, the persistent-memory namespace it comes from."""
    by_device = {n["device"]: n for n in pmem.get("namespaces") or [] if n.get("device")}
    return {d["target_node"]: {**d, "namespace": by_device.get(d["name"])}
            for d in pmem.get("dax_devices") or [] if d.get("mode") == "system-ram" and d.get("target_node") is not None}

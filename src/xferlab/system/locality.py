"""Where an accelerator sits: its PCI address, NUMA node and the CPUs local to it.

The device's PCI address comes from its API (OpenCL's ``cl_khr_pci_bus_info``, CUDA's PCI bus id
attribute: the probe's ``pci_bus_id``); the node and local CPUs from sysfs, in the format the kernel
documents (Documentation/ABI/testing/sysfs-bus-pci: ``/sys/bus/pci/devices/DDDD:BB:DD.F/numa_node``,
``-1`` when the platform gives no affinity, and ``local_cpulist``, a CPU list such as ``0-7,16-23``).
hwloc's ``lstopo-no-graphics`` is asked too where it is installed, as a second opinion. A CPU device
(PoCL, Intel's CPU runtime) is the host itself: it has no PCI address, and says so. Nothing here is timed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue
from .inventory import parse_cpu_list

SYS = Path("/sys")
HOST_CPU = "host CPU device"
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def normalize_pci(address: str) -> Optional[str]:
    """``0000:65:00.0`` in sysfs's spelling (lower case, a domain), or None when ``address`` is none."""
    address = address.strip().lower()
    if re.fullmatch(r"[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", address):
        address = "0000:" + address
    if re.fullmatch(r"[0-9a-f]{8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", address):  # CUDA's 8-digit domain
        address = address[4:]
    return address if PCI_ADDRESS.fullmatch(address) else None


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _hwloc_node(address: str) -> Optional[int]:
    """The NUMA node hwloc places the PCI device at, where ``lstopo-no-graphics`` is installed."""
    lstopo = shutil.which("lstopo-no-graphics")
    if not lstopo:
        return None
    try:
        out = subprocess.run([lstopo, "--of", "xml", "--whole-io"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # the innermost NUMANode before the PCI device's object in the XML's document order
    at = out.find(f'pci_busid="{address}"')
    if at < 0:
        return None
    nodes = re.findall(r'type="NUMANode" os_index="(\d+)"', out[:at])
    return int(nodes[-1]) if nodes else None


def device_locality(device: dict[str, Any], sys_root: Path = SYS, hwloc: bool = True) -> dict[str, Any]:
    """The ``locality`` of a probe's device record: ``pci_bus_id``, ``numa_node`` (None: the platform
    gives none), ``local_cpus`` (a list), ``source`` (where the figures came from) and ``note``."""
    address = normalize_pci(device.get("pci_bus_id") or "")
    if device.get("type") == "cpu" and address is None:
        return {"pci_bus_id": None, "numa_node": None, "local_cpus": [], "source": "none", "note": HOST_CPU}
    if address is None:
        return {"pci_bus_id": None, "numa_node": None, "local_cpus": [], "source": "none",
                "note": f"no PCI address: the {device.get('backend', 'device')} runtime gives none "
                        "(OpenCL: cl_khr_pci_bus_info not supported)"}
    folder = sys_root / "bus" / "pci" / "devices" / address
    node_text, cpus_text = _read(folder / "numa_node"), _read(folder / "local_cpulist")
    if node_text is None and cpus_text is None:
        return {"pci_bus_id": address, "numa_node": None, "local_cpus": [], "source": "none",
                "note": f"{address} is not in sysfs (a container or a virtual device)"}
    node = int(node_text) if node_text not in (None, "") and int(node_text) >= 0 else None
    found = {"pci_bus_id": address, "numa_node": node, "local_cpus": parse_cpu_list(cpus_text or ""),
             "source": "sysfs", "note": "" if node is not None else "the platform gives no NUMA affinity (numa_node -1)"}
    if hwloc and sys_root == SYS:
        seen = _hwloc_node(address)
        if seen is not None:
            found["source"] = "sysfs+hwloc"
            if found["numa_node"] is None:
                found["numa_node"] = seen
            elif seen != found["numa_node"]:
                found["note"] = f"hwloc places it on node {seen}"
    return found


def with_locality(devices: list[dict[str, Any]], sys_root: Path = SYS) -> list[dict[str, Any]]:
    """The probe's device records, each with its ``locality``."""
    return [{**d, "locality": device_locality(d, sys_root)} for d in devices]


def parse_cpus(text: str) -> list[int]:
    """``--cpus 0-3,8`` → ``[0, 1, 2, 3, 8]``; one line naming the value when it is not a CPU list."""
    try:
        cpus = parse_cpu_list(text)
    except ValueError:
        cpus = []
    if not cpus or any(c < 0 for c in cpus) or not all(p.strip() for p in text.split(",")):
        raise BadValue(f"--cpus {text!r} is not a CPU list; allowed: CPU numbers and ranges such as 0-3,8")
    return sorted(set(cpus))


def check_allowed(cpus: list[int]) -> list[int]:
    """``cpus`` when this process may run on every one of them (os.sched_getaffinity); else one line
    naming the first that it may not, and the allowed set."""
    allowed = os.sched_getaffinity(0)
    outside = [c for c in cpus if c not in allowed]
    if outside:
        raise BadValue(f"--cpus {cpu_text(cpus)}: CPU {outside[0]} does not exist or is not allowed; "
                       f"allowed: {cpu_text(sorted(allowed))}")
    return cpus


def given_cpus(text: Optional[str]) -> Optional[list[int]]:
    """--cpus LIST as given on a command line (None: not given), parsed and checked against the allowed set."""
    return None if text is None else check_allowed(parse_cpus(text))


def cpu_text(cpus: list[int]) -> str:
    """``[0, 1, 2, 3, 8]`` → ``0-3,8`` (the form --cpus takes and the store records)."""
    parts: list[str] = []
    for c in sorted(set(cpus)):
        if parts and c == int(parts[-1].split("-")[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{c}"
        else:
            parts.append(str(c))
    return ",".join(parts)


def placement_notes(cpus: Optional[list[int]], device: dict[str, Any]) -> list[str]:
    """What a run says of where its host thread ran against the device's local CPUs (system/locality.py):
    a thread on CPUs outside them is on a remote socket, and its copies cross the socket link."""
    local = (device.get("locality") or {}).get("local_cpus") or []
    if cpus is None or not local:
        return []
    node = device["locality"].get("numa_node")
    if set(cpus) <= set(local):
        return [f"host thread on CPUs {cpu_text(cpus)}: local to the device (node {node})"]
    return [f"host thread on CPUs {cpu_text(cpus)}: a remote socket; the device's local CPUs are {cpu_text(local)} "
            f"(node {node})"]


def remote_cpus(cpus: list[int], device: dict[str, Any]) -> list[int]:
    """The CPUs of ``cpus`` outside the device's local CPUs (none when the device gives no local CPUs)."""
    local = (device.get("locality") or {}).get("local_cpus") or []
    return [c for c in cpus if local and c not in local]


def local_placement(device: dict[str, Any], cpus: Optional[list[int]]) -> tuple[Optional[list[int]], list[str]]:
    """Where a study places a host thread, and its notes: ``cpus`` when given (checked against the allowed
    set; a remote socket said), else the allowed CPUs local to the device, else nowhere in particular
    (None: the OS places it) when the device gives no local CPUs (a CPU device, no NUMA affinity)."""
    if cpus is not None:
        check_allowed(cpus)
        return cpus, [f"host thread on CPUs {cpu_text(cpus)} (--cpus)"] + [n for n in placement_notes(cpus, device)
                                                                            if "remote" in n]
    local = [c for c in (device.get("locality") or {}).get("local_cpus") or [] if c in os.sched_getaffinity(0)]
    if local:
        return local, [f"host thread on CPUs {cpu_text(local)}: the device's local socket "
                       f"(node {device['locality'].get('numa_node')}), the default"]
    why = (device.get("locality") or {}).get("note") or "no local CPUs"
    return None, [f"host thread where the OS puts it: the device gives no local CPUs ({why})"]


def study_cpus(device: dict[str, Any], allowed: list[int]) -> tuple[list[int], str]:
    """The CPUs a study pins its host thread to by default, and why: the allowed CPUs local to the device
    (its socket), or every allowed CPU when the device gives no local CPUs (a CPU device, no NUMA affinity)."""
    local = [c for c in (device.get("locality") or {}).get("local_cpus") or [] if c in allowed]
    if local:
        return local, f"the device's local socket (node {device['locality'].get('numa_node')})"
    return sorted(allowed), "every allowed CPU (the device gives no local CPUs)"

"""The peaks a measured bandwidth is held against: the PCIe link a device sits on, and the DRAM.

* **PCIe link**: sysfs's ``current_link_speed``, ``current_link_width``, ``max_link_speed`` and
  ``max_link_width`` of the device's PCI function (Documentation/ABI/testing/sysfs-bus-pci; the
  speed is written ``8.0 GT/s PCIe``, older kernels ``8 GT/s``; the width a decimal lane count),
  read under the machine-state root (``$XFERLAB_STATE_ROOT``, a faked tree in the tests), resolved
  to a ``pcie<gen>x<lanes>`` preset whose payload limit for each copy's size comes from xferlab's
  PCIe model (links/pcie.py). A link that runs below its maximum (trained down in speed or width)
  is named with a warning. A CPU device (PoCL) is the host itself: "no link".
* **DRAM**: ``dmidecode -t memory`` (SMBIOS type 17, Memory Device; DMTF DSP0134 section 7.18): the
  populated devices (``Size`` not "No Module Installed"), each one's ``Configured Memory Speed``
  (MT/s; older dmidecode writes ``Configured Clock Speed`` in MHz meaning MT/s) and ``Data Width``
  (bits). Peak = channels x MT/s x data width in bytes (8 B for a 64-bit channel; JEDEC JESD79-4
  DDR4 and JESD79-5 DDR5, a DDR5 DIMM's two 32-bit subchannels together 64 bits). Channels are
  counted as the distinct channels the locators name (``Bank Locator: P0 CHANNEL A``, ``Locator:
  DIMM_A1``: socket and channel letter); where the locators name none, each populated DIMM is
  taken as its own channel, an upper bound (two DIMMs sharing a channel share its bandwidth), and
  the source says so. The slowest configured speed is used (a memory controller clocks its channels
  alike). Unreadable (no dmidecode, not root, a VM without SMBIOS memory records): "peak unknown".

Nothing here raises on what it reads: a malformed value gives ``status: unknown`` with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

from ..links.pcie import GT_PER_S, LANES
from .locality import normalize_pci
from .memory_channels import channel_peak
from .root import state_root

KNOWN, UNKNOWN, NO_LINK = "known", "unknown", "no link"
_GEN_OF_RATE = {rate: gen for gen, rate in GT_PER_S.items()}
_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*GT/s(?:\s+PCIe)?")


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_speed(text: Optional[str]) -> Optional[int]:
    """The PCIe generation of a sysfs link speed (``16.0 GT/s PCIe`` → 4); None when it is not one."""
    m = _SPEED.fullmatch((text or "").strip())
    return _GEN_OF_RATE.get(float(m[1])) if m else None


def parse_width(text: Optional[str]) -> Optional[int]:
    """A sysfs link width (``16``) as lanes; None when it is not a PCIe width."""
    text = (text or "").strip()
    return int(text) if text.isdigit() and int(text) in LANES else None


def _unknown(reason: str, **more: Any) -> dict[str, Any]:
    return {"status": UNKNOWN, "preset": None, "reason": reason, "warnings": [], **more}


def pcie_link(address: str, root: Optional[Path] = None) -> dict[str, Any]:
    """The PCIe link of the PCI function at ``address`` as sysfs gives it: ``preset`` (its current
    speed and width), ``current``/``maximum`` as read, ``warnings`` when it runs below its maximum."""
    root = state_root() if root is None else root
    folder = root / "sys" / "bus" / "pci" / "devices" / address
    values = {name: _read(folder / name) for name in ("current_link_speed", "current_link_width", "max_link_speed",
                                                      "max_link_width")}
    where = f"sysfs {address}"
    if values["current_link_speed"] is None or values["current_link_width"] is None:
        return _unknown(f"peak unknown: {where} has no current_link_speed/current_link_width (not in sysfs, or not a "
                        "PCIe function)", pci_bus_id=address)
    gen, lanes = parse_speed(values["current_link_speed"]), parse_width(values["current_link_width"])
    if gen is None or lanes is None:
        bad = ("current_link_speed", values["current_link_speed"]) if gen is None else \
            ("current_link_width", values["current_link_width"])
        return _unknown(f"peak unknown: {where} {bad[0]} is {bad[1]!r}, not a PCIe "
                        f"{'speed (2.5 … 128.0 GT/s)' if gen is None else 'width (1, 2, 4, 8, 16 or 32 lanes)'}",
                        pci_bus_id=address)
    max_gen, max_lanes = parse_speed(values["max_link_speed"]), parse_width(values["max_link_width"])
    found = {"status": KNOWN, "preset": f"pcie{gen}x{lanes}", "pci_bus_id": address,
             "current": f"Gen{gen} x{lanes} ({values['current_link_speed']}, x{values['current_link_width']})",
             "maximum": f"Gen{max_gen} x{max_lanes}" if max_gen and max_lanes else None,
             "reason": f"pcie{gen}x{lanes}, the current link in {where} ({values['current_link_speed']} "
                       f"x{values['current_link_width']})", "warnings": []}
    if max_gen and max_lanes and (gen < max_gen or lanes < max_lanes):
        found["warnings"].append(f"warning: the link of {address} runs at Gen{gen} x{lanes}, below its maximum Gen{max_gen} "
                                 f"x{max_lanes} (trained down: a slot, riser or power saving); its peak is the "
                                 f"current link's, pcie{gen}x{lanes}")
    return found


def device_link(device: dict[str, Any], root: Optional[Path] = None) -> dict[str, Any]:
    """The link a device's copies cross, from its probe record (``type``, ``pci_bus_id``): a CPU device
    has none; a device without a PCI address is unknown; else its PCIe link from sysfs."""
    address = normalize_pci(device.get("pci_bus_id") or "")
    if device.get("type") == "cpu" and address is None:
        return {"status": NO_LINK, "preset": None, "warnings": [],
                "reason": "no link: a CPU device (such as PoCL) is the host itself; its copies are memory copies in "
                          "host DRAM, over no PCIe link"}
    if address is None:
        return _unknown(f"peak unknown: the {device.get('backend', 'device')} runtime gives no PCI address (OpenCL: "
                        "cl_khr_pci_bus_info not supported)")
    return pcie_link(address, root)


def device_memory(device: dict[str, Any]) -> dict[str, Any]:
    """The peak of a device's own memory from its probe record: ``memory_clock_rate_hz`` x 2 x
    ``memory_bus_width_bits`` / 8 B/s (HBM and GDDR move data on both edges of the memory clock the runtime
    reports: double data rate; NVIDIA's "How to Implement Performance Metrics in CUDA C/C++", M. Harris, 2012,
    computes a GPU's theoretical bandwidth so from cudaDeviceProp's memoryClockRate and memoryBusWidth, the
    attributes CUDA's CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE and GLOBAL_MEMORY_BUS_WIDTH give; an H200:
    3201 MHz x 2 x 6016 bits / 8 = 4.81 TB/s). "peak unknown" where the runtime gives neither (OpenCL has no
    query for them) or the device is a CPU (its memory is the host's DRAM, `measure memory`'s)."""
    where = f"{device.get('backend', 'device')} #{device.get('index', '?')}"
    if device.get("type") == "cpu":
        return _unknown(f"peak unknown: {where} is a CPU device, its memory the host's DRAM (`measure memory` holds "
                        "STREAM against the DRAM's peak)")
    clock, width = device.get("memory_clock_rate_hz"), device.get("memory_bus_width_bits")
    if not (isinstance(clock, (int, float)) and clock > 0 and isinstance(width, (int, float)) and width > 0):
        return _unknown(f"peak unknown: the {device.get('backend', 'device')} runtime gives no memory clock and bus "
                        "width for the device (CUDA's driver does; OpenCL has no query for them)")
    peak = clock * 2 * width / 8
    return {"status": KNOWN, "bytes_per_second": peak, "warnings": [],
            "reason": f"{where}'s memory: {clock / 1e6:g} MHz x 2 (double data rate) x {width:g} bits / 8 = "
                      f"{peak / 1e9:.4g} GB/s (the runtime's memory clock and bus width)"}


# -- DRAM ---------------------------------------------------------------------------------------
_CHANNEL = [re.compile(r"CHANNEL\s*([A-Z0-9]+)", re.I), re.compile(r"DIMM[_ ]?([A-Z])\d", re.I),
            re.compile(r"^(?:CPU|P|NODE)?\d*[_ ]?([A-Z])\d$", re.I)]
_SOCKET = re.compile(r"(?:CPU|P|NODE|SOCKET)\s*(\d+)", re.I)


def _records(text: str) -> list[dict[str, str]]:
    """dmidecode's Memory Device records, each as its ``Key: value`` lines."""
    out: list[dict[str, str]] = []
    for block in re.split(r"\n\s*\n", text):
        if "Memory Device" not in block:
            continue
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep:
                fields.setdefault(key.strip(), value.strip())
        out.append(fields)
    return out


def _number(text: Optional[str], units: tuple[str, ...]) -> Optional[float]:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(\S+)", (text or "").strip())
    return float(m[1]) if m and m[2] in units and float(m[1]) > 0 else None


def _channel(fields: dict[str, str]) -> Optional[tuple[str, str]]:
    """(socket, channel) the locators name, or None."""
    for text in (fields.get("Bank Locator", ""), fields.get("Locator", "")):
        for pattern in _CHANNEL:
            m = pattern.search(text.strip())
            if m:
                socket = _SOCKET.search(fields.get("Bank Locator", "") + " " + fields.get("Locator", ""))
                return (socket[1] if socket else "0", m[1].upper())
    return None


def dram_peak(text: str) -> dict[str, Any]:
    """The DRAM peak from ``dmidecode -t memory``'s output (see the module's text for the counting)."""
    populated = [f for f in _records(text) if re.match(r"\d", f.get("Size", "")) ]
    if not populated:
        return _unknown("peak unknown: dmidecode lists no populated memory device (a VM without SMBIOS memory records?)")
    speeds, widths = [], []
    for f in populated:
        speed = _number(f.get("Configured Memory Speed") or f.get("Configured Clock Speed"), ("MT/s", "MHz")) or \
            _number(f.get("Speed"), ("MT/s", "MHz"))
        width = _number(f.get("Data Width"), ("bits",))
        if speed is None or width is None:
            return _unknown(f"peak unknown: memory device {f.get('Locator', '?')!r} gives no configured speed or data width "
                            f"(Configured Memory Speed {f.get('Configured Memory Speed')!r}, Data Width "
                            f"{f.get('Data Width')!r})")
        speeds.append(speed)
        widths.append(width)
    channels = [_channel(f) for f in populated]
    if all(channels):
        count, how = len(set(channels)), "channels named by the DIMMs' locators"
    else:
        count, how = len(populated), "one channel per populated DIMM assumed (the locators name no channel; an upper bound)"
    mt, width_bytes = min(speeds), min(widths) / 8
    peak = channel_peak(count, mt, width_bytes)
    return {"status": KNOWN, "bytes_per_second": peak, "channels": count, "dimms": len(populated),
            "mt_per_second": mt, "width_bytes": width_bytes, "warnings": [],
            "reason": f"dmidecode -t memory: {count} channel{'s' * (count > 1)} ({how}) x {mt:g} MT/s x "
                      f"{width_bytes:g} B = {peak / 1e9:.4g} GB/s"}


def read_dram(timeout: float = 10) -> dict[str, Any]:
    """The DRAM peak of this machine from ``dmidecode -t memory`` (the first on PATH), or why it is unknown."""
    tool = shutil.which("dmidecode")
    if not tool:
        return _unknown("peak unknown: dmidecode is not installed (SMBIOS gives the DIMMs' channels and speed)")
    try:
        done = subprocess.run([tool, "-t", "memory"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as error:
        return _unknown(f"peak unknown: dmidecode could not run: {error}")
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no reason given"])[0]
        return _unknown(f"peak unknown: dmidecode -t memory failed (exit {done.returncode}: {first}; it needs root)")
    return dram_peak(done.stdout)

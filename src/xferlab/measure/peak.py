"""Each measured bandwidth beside the peak of what it crossed (issue 28, "Against the peak").

A run records, with its inventory, what its figures are held against (``peaks``, from
system/peaks.py): a device run its link (``link``), a memory run the DRAM (``dram``). The CLI's
tables, ``--json`` and the report all call :func:`device_rows` and :func:`memory_rows` on the
recorded ``peaks``, so that they show the same figures. Each row gets

* ``hardware_peak_bytes_per_second``: the link model's payload limit for this copy's size (a
  ``pcie<gen>x<lanes>`` preset of xferlab's PCIe model, links/pcie.py, with the spec's per-lane DLLP reading
  (``UPPER_BOUND``) so that the peak bounds what the link can carry: the device's DMA engine reads
  host memory for h2d, writes it for d2h; a bidir copy reads and writes at once, each direction at
  the model's full-duplex rate, the row's sum against twice that), or the DRAM's channels x MT/s x
  width; null when unknown;
* ``fraction_of_peak``: the row's bandwidth / that peak (1 = 100 %);
* ``peak_source``: where the peak came from, or why there is none ("peak unknown: …", "no link: …").

``hardware_peak_bytes_per_second`` is not ``peak_bytes_per_second`` (a copy overview's highest median
over sizes, a measured figure).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Optional

from ..system import peaks as hw
from .conventions import both_ways

PEAK = "hardware_peak_bytes_per_second"
#: From the device's side (links/base.py's ops): h2d is a DMA read of host memory, d2h a DMA write.
OPS = {"h2d": "read", "d2h": "write", "bidir": "readwrite"}


def record(suite: str, device: Optional[dict[str, Any]] = None,
           devices: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """What a run of ``suite`` is held against, read now: the device's link (and, for a run over several
    ``devices``, a device matrix's, each one's link by its index), or the DRAM (with the number of memory
    nodes: one node's share of the machine's channels is not known from SMBIOS)."""
    if suite == "device":
        found = {"link": hw.device_link(device or {})}
        if devices:
            found["links"] = {str(d.get("index")): hw.device_link(d) for d in devices}
        return found
    if suite == "memory":
        from ..system.inventory import memory_nodes

        return {"dram": {**hw.read_dram(), "memory_nodes": len(memory_nodes())}}
    return {}


def of(source: Any) -> dict[str, Any]:
    """The ``peaks`` a run recorded: from an outcome (its inventory) or a stored run's inventory."""
    inventory = getattr(source, "inventory", None) if not isinstance(source, dict) else source
    return (inventory or {}).get("peaks") or {}


#: The link models' parameters that make a peak an upper bound: the PCIe model with the spec's per-lane reading of
#: the data-link layer's ACK/UpdateFC intervals (links/pcie.py), the least overhead the spec allows. pcie-model's
#: accounting (the presets' default, which reproduces the seeds' figures) charges them per link, and a real x16 link
#: beat it: an H200 on Gen5 x16 copied 32 MiB at 54.5 GB/s h2d and 54.6 GB/s d2h, 103 % and 105 % of it (docs/gpu.md).
UPPER_BOUND = ":dllp=per-lane"


@lru_cache(maxsize=16)
def _link(preset: str):
    from ..links import resolve

    return resolve(preset + UPPER_BOUND if preset.startswith("pcie") else preset)


def link_peak(link: dict[str, Any], direction: str, size: float) -> tuple[Optional[float], str]:
    """The payload limit of ``link`` (a recorded link) for a ``direction`` copy of ``size`` bytes (per
    direction; a bidir row's sum is held against twice it), and its source; (None, why) when none."""
    if direction == "d2d":
        return None, "no link: a device-to-device copy stays in the device's memory"
    if not link or link.get("status") != hw.KNOWN:
        return None, (link or {}).get("reason") or "peak unknown: the run recorded no link"
    model = _link(link["preset"])
    ways = 2 if direction == "bidir" else 1
    rate = float(model.data_rate([float(size)], OPS[direction])[0]) * ways
    what = {"read": "DMA read", "write": "DMA write", "readwrite": "DMA read + write at once, both directions summed"}
    return rate, (f"{link['reason']}; the PCIe model's payload limit for this size (the spec's per-lane DLLP reading, "
                  f"{link['preset']}{UPPER_BOUND}), {what[OPS[direction]]}")


def peak_fields(value: Optional[float], peak: Optional[float], source: str) -> dict[str, Any]:
    """The three peak fields of a row whose bandwidth is ``value``."""
    return {PEAK: peak, "fraction_of_peak": value / peak if value and peak else None, "peak_source": source}


def device_rows(rows: list[dict[str, Any]], peaks: dict[str, Any], value_key: str, size_key: str) -> list[dict[str, Any]]:
    """Copies' rows (a summary's or an overview's; changed in place and returned) with the peak of the link
    they crossed for their size, and a bidir row's bandwidth per direction beside its sum."""
    link = peaks.get("link") or {}
    for row in rows:
        direction = row.get("direction")
        if direction not in ("h2d", "d2h", "d2d", "bidir"):
            continue
        if both_ways("device", direction):
            row["direction_" + value_key] = row[value_key] / 2 if row.get(value_key) else None
        peak, source = link_peak(link, direction, row.get(size_key) or 0)
        row.update(peak_fields(row.get(value_key), peak, source))
    return rows


#: The memory modes whose arrays are in DRAM: a plain run's, and a matrix cell's (`measure memory --matrix`).
DRAM_MODES = (None, "memory", "matrix")


def memory_rows(rows: list[dict[str, Any]], peaks: dict[str, Any]) -> list[dict[str, Any]]:
    """STREAM rows (changed in place and returned) with the DRAM peak: the best iteration against it,
    where the arrays stream from memory, the run covered the machine's memory (no node chosen, or one
    node in all) and the DRAM's channels and speed are known."""
    dram = peaks.get("dram") or {}
    for row in rows:
        if dram.get("status") != hw.KNOWN:
            source = dram.get("reason") or "peak unknown: the run recorded no DRAM peak"
        elif row.get("mode") not in DRAM_MODES:
            source = f"peak unknown: {row.get('mode')} is persistent memory, not the DRAM SMBIOS describes"
        elif row.get("node") not in (None, "default") and (dram.get("memory_nodes") or 1) > 1:
            source = (f"peak unknown: node {row.get('node')} alone; which of the machine's {dram['channels']} channels it "
                      "has is not known from SMBIOS")
        elif row.get("array_size_class") not in (None, "memory"):
            source = f"not held against DRAM: the arrays are {row['array_size_class']} (STREAM's rule: 4x the LLC)"
        else:
            row.update(peak_fields(row.get("best_bytes_per_second"), dram["bytes_per_second"], dram["reason"]))
            continue
        row.update(peak_fields(None, None, source))
    return rows


def lines(peaks: dict[str, Any]) -> list[str]:
    """What a table's footer and the report say about the peaks: the source, and any warning."""
    out = []
    for name, what in (("link", "link"), ("dram", "DRAM")):
        found = peaks.get(name)
        if found:
            out.append(f"{what} peak: {found.get('reason')}")
            out += list(found.get("warnings") or [])
    return out


def percent(value: Optional[float]) -> str:
    """A fraction of peak as people read it: ``73.2 %``; "–" when there is none."""
    return "–" if value is None else f"{100 * value:.1f} %"


def crossings(ranks: list[Any], hosts: Optional[list[dict[str, Any]]]) -> list[Optional[list[tuple[str, str]]]]:
    """For each row's ranks (the samples' ``ranks``: "0,2", mbw_mr's "0,2,1,3"), the (sending host, receiving
    host) of each of its pairs, from the ranks' ``hosts`` (the run summary's rank-to-host map); None unknown."""
    host = {h.get("rank"): h.get("host") for h in hosts or []}
    out: list[Optional[list[tuple[str, str]]]] = []
    for given in ranks:
        words = given.split(",") if isinstance(given, str) else list(given or [])
        numbers = [int(w) for w in words if str(w).strip().lstrip("-").isdigit()]
        pairs = [(host.get(a), host.get(b)) for a, b in zip(numbers[::2], numbers[1::2])]
        out.append([(a, b) for a, b in pairs] if pairs and all(a and b for a, b in pairs) else None)
    return out


def _same_host(a: str, b: str) -> bool:
    """A rank's host name (as it says it) and a --hosts name: the same, or the same short name."""
    return a == b or a.split(".")[0] == b.split(".")[0]


def _link_between(links: list[dict[str, Any]], sender: str, receiver: str) -> Optional[dict[str, Any]]:
    return next((k for k in links if _same_host(sender, k.get("from", "")) and _same_host(receiver, k.get("to", ""))),
                None)


#: Why a row between hosts has no peak when the run recorded no links (a site launcher's run, an older run).
NOT_RECORDED = ("peak unknown: the run recorded no link between its hosts (xferlab reads them where it starts the "
                "ranks with --hosts)")


def network_peak(test: str, pairs: Optional[list[tuple[str, str]]], links: Optional[list[dict[str, Any]]]
                 ) -> tuple[Optional[float], str]:
    """The link peak of a bandwidth row between hosts: bw's and mbw_mr's one direction (every pair of mbw_mr from
    the same host to the same host: their sum crosses that link), bibw's two directions summed (full duplex:
    each direction against its own link); (None, why) otherwise."""
    if links is None:
        return None, NOT_RECORDED
    if not pairs:
        return None, "peak unknown: the ranks' hosts are not recorded"
    if len(set(pairs)) > 1:
        return None, (f"peak unknown: {test}'s pairs cross {len(set(pairs))} host pairs; each its own link, which "
                      "the slowest pair's window does not apportion")
    sender, receiver = pairs[0]
    if _same_host(sender, receiver):
        return None, "no link: ranks on one host exchange messages through shared memory"
    ways = [(sender, receiver), (receiver, sender)] if both_ways("network", test) else [(sender, receiver)]
    found = [_link_between(links, a, b) for a, b in ways]
    for (a, b), link in zip(ways, found):
        if link is None:
            return None, f"peak unknown: the run recorded no link from {a} to {b}"
        if link.get("status") != hw.KNOWN:
            return None, link.get("reason") or f"peak unknown: the link from {a} to {b}"
    rate = sum(k["bytes_per_second"] for k in found)
    if len(found) == 1:
        return rate, found[0]["reason"]
    return rate, ("both directions at once, full duplex: each against its own link, the sum against both ("
                  + "; ".join(k.get("brief") or k["reason"] for k in found) + "; each link's source in the run's peaks)")


def network_rows(rows: list[dict[str, Any]], peaks: Optional[dict[str, Any]] = None,
                 pairs: Optional[list[Optional[list[tuple[str, str]]]]] = None) -> list[dict[str, Any]]:
    """MPI bandwidth rows (changed in place and returned) with their counting rule, a bibw row's bandwidth per
    direction beside OSU's sum, and the peak: none within a host (shared memory); between hosts the links the
    run recorded (``peaks["network"]``, measure/mpi_hosts.py) for the hosts of the row's ranks (``pairs``, one
    entry per row: :func:`crossings`), else "peak unknown" with the reason."""
    from .conventions import counting

    links = (peaks or {}).get("network")
    for i, row in enumerate(rows):
        row["counting"] = counting("network", row.get("test"))
        if row["counting"] is None:
            continue
        if both_ways("network", row.get("test")):
            for stat in ("mean", "median"):
                value = row.get(f"{stat}_bytes_per_second")
                row[f"direction_{stat}_bytes_per_second"] = value / 2 if value else None
        if row.get("pair") == "intra-node":
            rate, source = None, "no link: ranks on one host exchange messages through shared memory"
        else:
            rate, source = network_peak(row["test"], pairs[i] if pairs and i < len(pairs) else None, links)
        row.update(peak_fields(row.get("mean_bytes_per_second"), rate, source))
    return rows

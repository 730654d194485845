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
from ..units import format_rate, format_time
from .conventions import both_ways

PEAK = "hardware_peak_bytes_per_second"
#: From the device's side (links/base.py's ops): h2d is a DMA read of host memory, d2h a DMA write.
OPS = {"h2d": "read", "d2h": "write", "bidir": "readwrite"}


def record(suite: str, device: Optional[dict[str, Any]] = None,
           devices: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """What a run of ``suite`` is held against, read now: the device's link (and, for a run over several
    ``devices``, a device matrix's, each one's link by its index; for `measure kernels` also its own memory's
    peak), or the DRAM (with the number of memory nodes: one node's share of the machine's channels is not
    known from SMBIOS)."""
    if suite == "device":
        found = {"link": hw.device_link(device or {})}
        if devices:
            found["links"] = {str(d.get("index")): hw.device_link(d) for d in devices}
        return found
    if suite == "kernels":  # kernels on host memory cross the device's link; on its own memory, that memory's peak
        return {"link": hw.device_link(device or {}), "device_memory": hw.device_memory(device or {})}
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


#: A copy between two devices: which path joins them is not recorded, so no peak (the device matrix, kernels --peer).
BETWEEN_DEVICES = ("peak unknown: the path between two devices (peer-to-peer over PCIe or NVLink, or staged through "
                   "the host) is not recorded")

#: BabelStream's kernels as (arrays read, arrays written) per element; their sum is its byte count
#: (sizeclass.DEVICE_ARRAYS). dot's and read's few bytes of partial sums per work-group are left out.
MIX = {"copy": (1, 1), "mul": (1, 1), "add": (2, 1), "triad": (2, 1), "dot": (2, 0), "read": (1, 0)}


def kernel_link_peak(link: dict[str, Any], kernel: str, size: float) -> tuple[Optional[float], str]:
    """The most BabelStream bytes a second that ``kernel`` on mapped host memory can move over ``link`` (arrays
    of ``size`` bytes): every byte crosses the link, a read as the device's DMA read of host memory, a write as
    its DMA write. Reads only (dot, read): the model's read limit. As many read as written (copy, mul): both
    directions at once, twice the full-duplex rate, as a bidir copy. Two read for one written (add, triad): each
    direction carries at most its one-way limit R (read) and W (write), so the kernel moves at most
    (r + w) / max(r / R, w / W), an upper bound (the model has no 2:1 mix; the read direction is the one that
    binds). Each at the model's full-size TLPs for ``size``: a kernel's loads may travel in smaller requests."""
    if not link or link.get("status") != hw.KNOWN:
        return None, (link or {}).get("reason") or "peak unknown: the run recorded no link"
    reads, writes = MIX[kernel]
    model = _link(link["preset"])

    def rate(op: str) -> float:
        return float(model.data_rate([float(size)], op)[0])

    if not writes:
        top, how = rate("read"), "reads only: the DMA read limit"
    elif reads == writes:
        top, how = 2 * rate("readwrite"), "as much read as written: both directions at once, twice the full-duplex rate"
    else:
        top = (reads + writes) / max(reads / rate("read"), writes / rate("write"))
        how = (f"{reads} arrays read for {writes} written: (r + w) / max(r / read limit, w / write limit), an upper "
               "bound (each direction at its one-way limit)")
    return top, (f"{link['reason']}; a kernel on mapped pinned host memory, every BabelStream byte over the link: the "
                 f"PCIe model's payload limit ({link['preset']}{UPPER_BOUND}), {how}")


#: Why a kernel on a kind of host memory has no link peak: where its accesses go is the runtime's choice.
HOST_KINDS = {
    "pinned": "an OpenCL CL_MEM_ALLOC_HOST_PTR buffer: the runtime may keep the kernel's copy in device memory or "
              "read host memory over the link, and does not say which",
    "host": "CL_MEM_USE_HOST_PTR over the application's pages: the runtime may cache them in device memory or read "
            "them over the link, and does not say which",
    "svm-coarse": "shared virtual memory: the runtime may migrate its pages or access them over the link",
    "svm-fine": "shared virtual memory: the runtime may migrate its pages or access them over the link",
    "managed": "migrated by the driver page by page on demand: the kernel does not stream it over the link",
    "managed-prefetch": "prefetched to the device, but where its pages are during a launch is the driver's "
                        "migration, not recorded",
}


def kernel_rows(rows: list[dict[str, Any]], peaks: dict[str, Any], backend: str) -> list[dict[str, Any]]:
    """`measure kernels` STREAM rows (changed in place and returned) with the peak of what their bytes crossed,
    the best launch against it: device memory against its own peak (the runtime's clock and bus width); CUDA's
    pinned memory (mapped, cuMemHostAlloc with DEVICEMAP: every load and store goes over the link) against the
    link for the kernel's read/write mix (:func:`kernel_link_peak`); on a CPU device the host memory kinds are
    "no link"; elsewhere "peak unknown" with the reason. Arrays that fit the device's cache are not held against
    either. SpMV rows get none."""
    link, memory = peaks.get("link") or {}, peaks.get("device_memory") or {}
    for row in rows:
        kernel, kind, top = row.get("kernel"), row.get("memory"), None
        if kernel not in MIX:
            continue
        if row.get("array_size_class") not in (None, "memory"):
            source = (f"not held against a peak: the arrays are {row['array_size_class']} (STREAM's rule: 4x the "
                      "last-level cache)")
        elif kind == "device":
            top, source = memory.get("bytes_per_second"), memory.get("reason") or "peak unknown: the run recorded none"
        elif link.get("status") == hw.NO_LINK:
            source = link["reason"]
        elif kind == "pinned" and backend == "cuda":
            top, source = kernel_link_peak(link, kernel, row.get("size_bytes") or 0)
        else:
            source = f"peak unknown: {kind} memory, {HOST_KINDS.get(kind, 'not a kind xferlab places')}"
        row.update(peak_fields(row.get("best_bytes_per_second"), top, source))
    return rows


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
    for name, what in (("link", "link"), ("device_memory", "device memory"), ("dram", "DRAM")):
        found = peaks.get(name)
        if found:
            out.append(f"{what} peak: {found.get('reason')}")
            out += list(found.get("warnings") or [])
    return out


def unknown_notes(rows: list[dict[str, Any]], peaks: dict[str, Any]) -> list[str]:
    """Why rows have no % of peak, each reason once, leaving out what :func:`lines` already says of ``peaks``."""
    said = " ".join(lines(peaks))
    return [f"% of peak: {source}" for source in dict.fromkeys(
        r.get("peak_source") for r in rows if "peak_source" in r and r.get("fraction_of_peak") is None)
        if source and source not in said]


def percent(value: Optional[float]) -> str:
    """A fraction of peak as people read it: ``73.2 %``; "–" when there is none."""
    return "–" if value is None else f"{100 * value:.1f} %"


def cell(value: Any, unit: str, fraction: Optional[float]) -> str:
    """A matrix cell as the terminal and the report show it: the figure (``seconds`` or ``bytes_per_second``)
    with its % of peak beside where one is known, ``54.50 GB/s (94.0 % of peak)``; "–" where nothing was
    measured, a text (N/A) as it is."""
    if not isinstance(value, (int, float)):
        return "–" if value is None else str(value)  # not measured (memory), N/A (device)
    text = format_time(value) if unit == "seconds" else format_rate(value)
    return text if fraction is None else f"{text} ({percent(fraction)} of peak)"


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

"""CXL device types and a Type 2 device's coherence bias: which sub-protocols a device runs, which
coherent accesses that allows, and what host bias and device bias cost.

Sources:

* **Device types** (CXL Specification, revision 2.0, §2.1–2.3 "CXL Type 1/2/3 Device", and seed 000,
  Fig. 1 "CXL device classes and sub-protocols"): every device runs CXL.io (discovery, configuration,
  DMA); a Type 1 device (an accelerator with a cache, no host-managed memory) adds CXL.cache; a Type 2
  device (an accelerator with its own memory) adds CXL.cache and CXL.mem; a Type 3 device (a memory
  expander) adds CXL.mem alone. A device *reads or caches another agent's memory* over CXL.cache; the
  *host reaches a device's memory* over CXL.mem. A peer reading a device's memory needs both: the owner
  exposes it (CXL.mem), the reader caches it (CXL.cache).
* **Bias** (CXL Specification 2.0, §2.2.1 "Bias Based Coherency Model": host bias, device bias and their
  mode management; seed 000's appendix "CXL's Coherence Bias": "a device engine [accesses] its memory
  coherently without visiting the processor"): a Type 2 device's memory is in host bias or device bias,
  per page. In **host bias** every line the device reads or writes in its own memory is first resolved
  by the host: one CXL.cache request over the link, so the device's own accesses run at the link's
  request rate (:meth:`xferlab.links.cxl.CxlLink.peak_rate`: Little's law, capped by the flits). In
  **device bias** they stay on the device, and an access by the host (or a peer) must first flip the
  page to host bias.
* **A flip's cost** is *derived* here, not measured or quoted: the specification describes the flow
  (software-assisted mode management: the driver updates the device's bias table through CXL.io and
  the page's lines are made coherent) but gives no time. xferlab takes one CXL.io round trip for the
  bias-table update and its completion (2 x the link's t_s) plus the page's lines as CXL.cache
  requests (the link's time for a page, with its ``outstanding`` limit): 2 t_s + t(page). It leaves out
  the driver's own software cost (a system call, a TLB shoot-down); give a measured figure as the
  device's ``bias_flip`` where one is known. No published figure of a flip's cost was found to cite
  instead (searched for issue 29: Intel's CXL Type 2 and Agilex FPGA material, the OPAE/OFS CXL
  driver's bias-mode work, and Jeong et al., "Demystifying a CXL Type-2 Device: A Heterogeneous
  Cooperative Computing Perspective", MICRO 2024, which characterizes a Type 2 device's access
  latencies and bandwidths but, by its abstract, no bias-flip time), so the default stays derived.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional

from ..choices import BIASES as BIASES
from ..errors import BadValue
from .base import Link
from .cxl import LINE_BYTES, CxlLink

#: The sub-protocols each CXL device type runs (CXL 2.0 §2.1-2.3; seed 000, Fig. 1).
DEVICE_TYPES: dict[int, tuple[str, ...]] = {1: ("io", "cache"), 2: ("io", "cache", "mem"), 3: ("io", "mem")}
#: The granularity of a bias flip by default: one 4 KiB page (the bias table holds a bit per page).
PAGE_BYTES = 4096


def types_with(protocol: str) -> tuple[int, ...]:
    return tuple(t for t, protocols in DEVICE_TYPES.items() if protocol in protocols)


def described(cxl_type: int) -> str:
    """``Type 2 (CXL.io + CXL.cache + CXL.mem)``."""
    return f"Type {cxl_type} (" + " + ".join(f"CXL.{p}" for p in DEVICE_TYPES[cxl_type]) + ")"


def refusal(reader: str, reader_type: Optional[int], owner: str, owner_type: Optional[int],
            host: str) -> Optional[str]:
    """Why ``reader`` cannot read ``owner``'s memory coherently, or None when it can (a device without a
    CXL type is not checked). The host reads a device's memory over CXL.mem; a device caches the host's
    memory over CXL.cache; a device reading a peer's memory needs both."""
    needs = []
    if reader != host and reader_type is not None and "cache" not in DEVICE_TYPES[reader_type]:
        needs.append((reader, reader_type, "cache", f"'{reader}' caches '{owner}''s memory"))
    if owner != host and owner_type is not None and "mem" not in DEVICE_TYPES[owner_type]:
        needs.append((owner, owner_type, "mem", f"'{owner}' exposes its memory to '{reader}'"))
    if not needs:
        return None
    device, kind, protocol, what = needs[0]
    allowed = " or ".join(str(t) for t in types_with(protocol))
    return (f"{what} over CXL.{protocol}, but '{device}' is a CXL {described(kind)} device; CXL.{protocol} needs "
            f"Type {allowed}")


def request_rate(link: Link) -> float:
    """Bytes per second of a device's own accesses in host bias: each line a request to the host over
    ``link`` (a CXL link: Little's law with its ``outstanding``, capped by the flit model)."""
    return link.peak_rate("read")


def flip_seconds(link: Link, page: int = PAGE_BYTES) -> float:
    """The derived cost of flipping one region of ``page`` bytes: 2 t_s (the bias-table update through
    CXL.io and its completion) + t(page) (its lines as CXL.cache requests)."""
    return 2 * link.latency + float(link.time(float(page), "read"))


def flips(bytes_: float, page: int = PAGE_BYTES) -> int:
    """Regions of ``page`` bytes that ``bytes_`` of data span (each flips once)."""
    return math.ceil(bytes_ / page) if bytes_ > 0 else 0


def break_even(link: Link, flip: Optional[float] = None, page: int = PAGE_BYTES) -> dict:
    """When device bias pays: each device access (a 64-byte line) in host bias costs 64 B / the request
    rate; each flip costs ``flip`` (derived from ``link`` when None). Device bias pays once the device
    makes more than flip / access accesses to a region between two flips."""
    access = LINE_BYTES / request_rate(link)
    cost = flip_seconds(link, page) if flip is None else flip
    return {"flip_seconds": cost, "access_seconds": access, "page_bytes": page,
            "break_even_accesses": math.floor(cost / access) + 1, "flip_derived": flip is None}


def compare(link: Link, accesses: Iterable[int], flip: Optional[float] = None, page: int = PAGE_BYTES) -> list[dict]:
    """Per count of device accesses between two flips: host bias's cost (accesses x the access cost)
    against device bias's (one flip), and whether device bias pays."""
    even = break_even(link, flip, page)
    rows = []
    for n in accesses:
        host = n * even["access_seconds"]
        rows.append({"accesses": int(n), "host_bias_seconds": host, "device_bias_seconds": even["flip_seconds"],
                     "pays": bool(host > even["flip_seconds"])})
    return rows


def is_cxl(link: Optional[Link]) -> bool:
    return isinstance(link, CxlLink)


def cache_link(link: Link, use: str) -> CxlLink:
    """`link` when it carries CXL.cache requests (a CXL link with protocol=cachemem, or one given its own
    penalty); BadValue, one line naming the link and what is allowed, when not. `use` ends the first refusal:
    "bias is a CXL Type 2 device's", "model requests takes CXL links"."""
    if not isinstance(link, CxlLink):
        raise BadValue(f"link '{link.label}' is a {link.kind} link; {use} (cxl2x16, cxl-seed …)")
    if link.protocol == "io" and link.penalty is None:
        raise BadValue(f"link '{link.label}' is CXL.io (protocol=io): it moves PCIe TLPs, not CXL.cache requests; "
                       "give protocol=cachemem")
    return link

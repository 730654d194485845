"""Compute Express Link: flit-level bandwidth, and the seed's penalty model.

Two ways to model a CXL link, chosen by whether ``penalty`` is set:

* **The seed's model** (seed 000, "CXL Performance Model"): t = n / (b_n x penalty) + t_s, where
  b_n is the PCIe model's bandwidth for n bytes on a PCIe link of the same rate and width,
  penalty is 0.6–0.9 ("60–90 % of PCIe"), and t_s = 40 ns (CXL 1.1 technical training material).
  ``cxl-seed`` is the seed's configuration: PCIe 3.0 x16 rates (8 GT/s), penalty 0.6.
* **The flit model** (``penalty`` unset), from the CXL specification, revision 3.x, chapter 6:
  - CXL 1.1/2.0 68-byte flit (8, 16, 32 GT/s, 128b/130b): 2-byte protocol ID + 64 bytes of
    payload in four 16-byte slots + 2-byte CRC, so payload efficiency 64/68.
  - CXL 3.x 256-byte flit (required at 64 GT/s, PAM4, no line encoding): the standard flit has a
    2-byte header, 240 bytes of slots, 8 bytes of CRC and 6 of FEC (240/256); the
    latency-optimized flit splits into two 128-byte halves, each checked by its own CRC so the
    first half is usable before the second arrives, leaving 236 bytes of slots (236/256).
  - CXL.io carries PCIe TLPs: inside 68-byte flits it is the PCIe non-flit TLP stream (with its
    data-link framing and DLLPs, see :mod:`xferlab.links.pcie`) in 64 of every 68 bytes; inside
    256-byte flits it is PCIe flit mode: 236 TLP bytes per standard flit (240 less 4 DLLP
    bytes), 232 per latency-optimized flit (236 less 4).
  - SKP ordered sets take their share as in PCIe (:func:`xferlab.links.pcie.skp_overhead`):
    4 in 1538 bytes with 128b/130b, 40 symbols per lane every 46–748 flits at 64 GT/s.
  - CXL.cache/CXL.mem move 64-byte cache lines: four 16-byte data slots per line, plus the
    message header, which shares a 16-byte slot with other headers. Header sizes (bits) follow
    the CXL 2.0 message tables: M2S Req 87, M2S RwD 87, S2M NDR 30, S2M DRS 40; a slot is taken
    to hold floor(128 / bits) of them, the best packing the slot formats can offer, so the
    rates are upper bounds. A read sends a request one way and a data response (DRS + 4 slots)
    back; a write sends RwD + 4 slots and gets an NDR back.

**CXL.cache as requests** (``outstanding`` set): a device's CXL.cache agent moves one 64-byte line per
request and keeps at most ``outstanding`` requests in flight, so by Little's law (J. D. C. Little, "A
proof for the queuing formula L = lambda W", Operations Research 9(3), 1961) its bandwidth is
outstanding x 64 B / t_line, where t_line is one line's time on this link, t(64 B) of the model
above (seed 000: t_cxl = 64 / (b_64 x penalty) + 40 ns). The first line takes t_line, then
``outstanding`` lines finish every t_line, and never faster than the flit model allows:
t(n) = max(t_flit(n), t_line x (1 + (ceil(n / 64) - 1) / outstanding)), so the bandwidth of a large
transfer is min(Little's, the flit limit), the two meeting at ``request_knee()`` requests. One
request in flight moves one line per t_line, the seed's equation for a single line. Requests move
whole lines, so under the seed's PCIe-based model a transfer of 1 byte then costs a line as well. Unset, the link
has no request limit (the flit model alone, as before).

The latency term defaults to the seed's 40 ns in both models. ``derived()`` also reports the flit
accumulation latency that Linux uses for CXL links (drivers/cxl/core/pci.c: flit size in bits
divided by the per-lane rate: 68-byte flit at 32 GT/s 17 ns, 256-byte flit at 64 GT/s 32 ns).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, Optional

import numpy as np
from pydantic import Field, model_validator

from .base import PEAK_SIZE, Link, Op, Seconds
from .pcie import GT_PER_S, PAYLOAD_SIZES, PcieLink, skp_overhead

RATES_GT = (8.0, 16.0, 32.0, 64.0)
LANES = (1, 2, 4, 8, 16)
SEED_LATENCY = 40e-9
MAX_OUTSTANDING = 65536  # requests in flight: far past any knee (a 64 GT/s x16 link needs a few hundred)

#: 68-byte flit (CXL 1.1/2.0): 2 B protocol ID + 64 B payload + 2 B CRC.
FLIT68 = {"bytes": 68, "payload": 64}
#: 256-byte flits (CXL 3.x): payload bytes of the cache/mem slot area and of CXL.io TLP space.
FLIT256 = {
    "standard": {"bytes": 256, "cachemem": 240, "io": 236},
    "latency-optimized": {"bytes": 256, "cachemem": 236, "io": 232},
}
SLOT_BYTES = 16
LINE_BYTES = 64
DATA_SLOTS_PER_LINE = LINE_BYTES // SLOT_BYTES
#: CXL.mem message header sizes in bits (CXL 2.0 message field tables).
HEADER_BITS = {"m2s_req": 87, "m2s_rwd": 87, "s2m_ndr": 30, "s2m_drs": 40}


def _slots(message: str) -> float:
    """Slots one header of ``message`` occupies when headers pack as tightly as they fit."""
    return 1.0 / max(1, (SLOT_BYTES * 8) // HEADER_BITS[message])


def pcie_generation(gts: float) -> int:
    """The PCIe generation whose physical layer runs at ``gts``."""
    return next(gen for gen, rate in GT_PER_S.items() if rate == gts)


class CxlLink(Link):
    """A CXL link: rate, width, flit format and protocol (CXL.io or CXL.cache/mem), or the seed's
    penalty model when ``penalty`` is set."""

    source: ClassVar[str] = ("CXL spec 3.x ch. 6 (flits); seed 000 (penalty model, t_s = 40 ns); Little's law "
                             "(CXL.cache requests, outstanding=)")

    kind: Literal["cxl"] = "cxl"
    gts: float = Field(32.0, description="transfer rate per lane, GT/s: 8, 16, 32 or 64")
    lanes: int = Field(16, description="link width: 1, 2, 4, 8 or 16")
    flit: Optional[int] = Field(None, description="flit size, 68 or 256 bytes; default 68 below 64 GT/s, 256 at 64 GT/s")
    flit_variant: Literal["standard", "latency-optimized"] = Field(
        "standard", description="256-byte flit variant: standard or latency-optimized")
    protocol: Literal["cachemem", "io"] = Field(
        "cachemem", description="cachemem: CXL.cache/CXL.mem 64-byte lines; io: CXL.io (PCIe TLPs)")
    mps: int = Field(256, description="CXL.io and penalty model: Max_Payload_Size in bytes")
    mrrs: int = Field(512, description="CXL.io and penalty model: Max_Read_Request_Size in bytes")
    penalty: Optional[float] = Field(
        None, description="seed model: CXL bandwidth as a fraction of PCIe's, in (0, 1]; unset: flit model")
    latency: Seconds = Field(SEED_LATENCY, description="start-up time t_s, seconds (seed: 40 ns)")
    outstanding: Optional[int] = Field(
        None, description="CXL.cache requests in flight, one 64-byte line each (Little's law); unset: no limit")

    @model_validator(mode="after")
    def _check(self) -> "CxlLink":
        if self.gts not in RATES_GT:
            raise ValueError(f"CXL rate gts={self.gts:g} is not allowed; allowed: 8, 16, 32, 64 (GT/s)")
        if self.lanes not in LANES:
            raise ValueError(f"CXL link width lanes={self.lanes} is not allowed; allowed: 1, 2, 4, 8, 16")
        if self.flit not in (None, 68, 256):
            raise ValueError(f"CXL flit={self.flit} is not allowed; allowed: 68, 256 (bytes)")
        if self.flit == 68 and self.gts == 64:
            raise ValueError("CXL flit=68 is not allowed at 64 GT/s; 64 GT/s requires flit=256")
        if self.flit_variant != "standard" and self.flit_bytes != 256:
            raise ValueError(f"flit_variant={self.flit_variant} needs flit=256")
        for field in ("mps", "mrrs"):
            if getattr(self, field) not in PAYLOAD_SIZES:
                raise ValueError(f"{field}={getattr(self, field)} is not allowed; allowed: "
                                 + ", ".join(map(str, PAYLOAD_SIZES)))
        if self.outstanding is not None:
            if not 1 <= self.outstanding <= MAX_OUTSTANDING:
                raise ValueError(f"outstanding={self.outstanding} is not allowed; allowed: 1 to {MAX_OUTSTANDING} "
                                 "requests in flight")
            if self.protocol == "io" and self.penalty is None:
                raise ValueError("outstanding= counts CXL.cache requests (64-byte lines); protocol=io moves PCIe "
                                 "TLPs: give protocol=cachemem or leave outstanding unset")
        if self.penalty is not None and not (0 < self.penalty <= 1) or (
                self.penalty is not None and math.isnan(self.penalty)):
            raise ValueError(f"penalty={self.penalty:g} is not allowed; allowed: a fraction in (0, 1], "
                             "the seed uses 0.6–0.9")
        return self

    # -- derived constants ---------------------------------------------------------------------
    @property
    def flit_bytes(self) -> int:
        if self.flit is not None:
            return self.flit
        return 256 if self.gts == 64 else 68

    @property
    def skp_fraction(self) -> float:
        return skp_overhead(self.lanes, self.gts == 64)

    @property
    def flit_efficiency(self) -> float:
        """Payload bytes per flit byte for this protocol: 64/68, 240/256, 236/256 or 232/256."""
        if self.flit_bytes == 68:
            return FLIT68["payload"] / FLIT68["bytes"]
        layout = FLIT256[self.flit_variant]
        return layout[self.protocol] / layout["bytes"]

    @property
    def raw_rate(self) -> float:
        """Bytes per second on the wire after line encoding (128b/130b below 64 GT/s)."""
        encoding = 1.0 if self.gts == 64 else 128 / 130
        return self.gts * 1e9 * encoding * self.lanes / 8

    def pcie_equivalent(self) -> PcieLink:
        """The PCIe link on the same physical layer: the seed's b_n, and CXL.io's TLPs in 68-byte
        flits."""
        return PcieLink(gen=pcie_generation(self.gts), lanes=self.lanes, mps=self.mps, mrrs=self.mrrs,
                        latency=self.latency)

    # -- the model -----------------------------------------------------------------------------
    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        n = np.asarray(n, dtype=np.float64)
        rate = self._flit_rate(n, op)
        if self.outstanding is None:
            return rate
        # t(n) - t_s = max(n / flit rate, t_line (1 + (lines - 1) / outstanding) - t_s)
        lines = np.maximum(np.ceil(n / LINE_BYTES), 1.0)
        requests = self.line_seconds(op) * (1 + (lines - 1) / self.outstanding) - self.latency
        return n / np.maximum(n / rate, requests)

    # -- CXL.cache as requests -------------------------------------------------------------------
    def line_seconds(self, op: Op = "read") -> float:
        """t_line: one 64-byte line's time on this link without a request limit, t(64 B) (seed 000:
        64 / (b_64 x penalty) + t_s)."""
        return self.latency + LINE_BYTES / float(self._flit_rate(np.asarray([float(LINE_BYTES)]), op)[0])

    def request_rate(self, outstanding: Any, op: Op = "read") -> Any:
        """Little's law: ``outstanding`` lines in flight x 64 B / t_line, bytes per second (no flit limit)."""
        return np.asarray(outstanding, dtype=np.float64) * LINE_BYTES / self.line_seconds(op)

    def flit_limit(self, op: Op = "read") -> float:
        """The payload rate a large transfer reaches without a request limit (the flit model's, or the seed's)."""
        return float(self._flit_rate(np.asarray([PEAK_SIZE]), op)[0])

    def request_knee(self, op: Op = "read") -> float:
        """Requests in flight at which Little's bandwidth meets the flit limit: flit limit x t_line / 64 B."""
        return self.flit_limit(op) * self.line_seconds(op) / LINE_BYTES

    def _flit_rate(self, n: np.ndarray, op: Op) -> np.ndarray:
        if self.penalty is not None:
            return self.pcie_equivalent().data_rate(n, op) * self.penalty
        if self.protocol == "io":
            return self._io_rate(n, op)
        return self._cachemem_rate(n, op)

    def _io_rate(self, n: np.ndarray, op: Op) -> np.ndarray:
        if self.flit_bytes == 68:
            # PCIe's non-flit TLP stream (framing, DLLPs, SKP) in 64 of every 68 bytes.
            return self.pcie_equivalent().data_rate(n, op) * self.flit_efficiency
        # PCIe flit-mode TLPs (no per-TLP framing) in the flit's TLP bytes at this link's rate.
        flit_tlps = PcieLink(gen=6, lanes=self.lanes, mps=self.mps, mrrs=self.mrrs)
        return flit_tlps.stream_rate(n, op, self.raw_rate * self.flit_efficiency * (1 - self.skp_fraction))

    def _cachemem_rate(self, n: np.ndarray, op: Op) -> np.ndarray:
        lines = np.ceil(n / LINE_BYTES)
        data = DATA_SLOTS_PER_LINE
        write_out, write_back = data + _slots("m2s_rwd"), _slots("s2m_ndr")
        read_out, read_back = _slots("m2s_req"), data + _slots("s2m_drs")
        out, back = {
            "write": (write_out, write_back),
            "read": (read_out, read_back),
            "readwrite": (write_out + read_out, write_back + read_back),
        }[op]
        slot_rate = self.raw_rate * self.flit_efficiency * (1 - self.skp_fraction)  # slot bytes/s, each way
        return n * slot_rate / (lines * max(out, back) * SLOT_BYTES)

    def derived(self) -> dict[str, Any]:
        figures = {
            "model": f"seed penalty {self.penalty:g}" if self.penalty is not None else f"{self.flit_bytes}-byte flits",
            "raw_bytes_per_second": self.raw_rate,
            "flit_bytes": self.flit_bytes,
            "flit_efficiency": self.flit_efficiency,
            "flit_accumulation_seconds": self.flit_bytes * 8 / (self.gts * 1e9),
        }
        if self.protocol == "cachemem" or self.penalty is not None:
            figures["read_line_seconds"] = self.line_seconds("read")
            figures["read_request_knee"] = self.request_knee("read")
        return figures

    def summary(self) -> str:
        if self.penalty is not None:
            what = f"seed model: {self.penalty:g} x PCIe at {self.gts:g} GT/s x{self.lanes}"
        else:
            what = (f"{self.gts:g} GT/s x{self.lanes}, {self.flit_bytes}-byte "
                    f"{'' if self.flit_variant == 'standard' else 'latency-optimized '}flits, "
                    f"{'CXL.io' if self.protocol == 'io' else 'CXL.cache/mem'}")
        if self.outstanding is not None:
            what += f", {self.outstanding} requests in flight"
        return f"CXL {what}"

"""PCI Express: the Neugebauer et al. bandwidth model, generations 1–7.

Source: R. Neugebauer, G. Antichi, J. F. Zazo, Y. Audzevich, S. López-Buedo, A. W. Moore,
"Understanding PCIe performance for end host networking", SIGCOMM 2018 (the seed's reference [1]),
and its public model (pcie-bench/pcie-model, model/pcie.py and model/mem_bw.py). The constants
below are facts of the PCI Express Base Specification, cited by table; the code is xferlab's own.

The model, for a link of generation g and w lanes:

1. Raw rate = GT/s(g) x encoding(g) x w.
2. TLP-layer rate = raw x (1 - ACK/ACK_limit - FC/FC_limit - SKP/SKP_interval): ACK and flow-control
   update DLLPs, 8 bytes each on the wire, sent at the spec's recommended intervals (symbol times,
   by generation, width and MPS), and one 4-byte SKP ordered set every 1538 bytes.

   The intervals are in *symbol times*, and in one symbol time an xW link carries W bytes, so
   one DLLP per interval costs 8 / (W x interval) of the link. pcie-model (and so the paper and
   the seed) charges 8 / interval, W times more: 7.9 % instead of 1.0 % at Gen3 x8 MPS 256. xferlab
   keeps pcie-model's accounting by default (``dllp="pcie-model"``), which reproduces its published
   figures and the seed's; ``dllp="per-lane"`` charges the per-lane reading (Gen3 x8: 62.2 Gb/s
   at the TLP layer instead of 57.885). The intervals themselves follow the spec's formula
   ((MPS + 28) x AckFactor / W + internal delay), which every table entry below satisfies.
3. A transfer of n bytes is cut into TLPs; each costs its header and data-link framing. A DMA write
   sends ceil(n/MPS) memory-write TLPs; a DMA read sends ceil(n/MRRS) read requests one way and
   receives ceil(n/C) completions the other way (C = MPS, or RCB on chipsets that split completions
   at the read completion boundary); the direction that saturates first sets the rate.

Generations 6 and 7 run in *flit mode* (PCIe 6.0, section 4.2.3 "Flit Mode"; PAM4 signalling at
64 and 128 GT/s): every 256-byte flit carries 236 bytes of TLPs, 6 bytes of data-link payload (the
ACKs and flow-control updates ride there), 8 bytes of CRC and 6 bytes of FEC. There is no
128b/130b encoding, no per-TLP sequence number or LCRC and no framing token, so a TLP costs only
its header; TLPs pack back to back across flit boundaries. (pcie-model's own Gen6/Gen7 figures
reuse Gen5's tables with a 242/256 encoding and are marked there as guesses; xferlab uses the flit
format instead.) SKP ordered sets remain in flit mode at 1b/1b: 40 symbols per lane, scheduled
every 46, 93, 187, 374 or 748 flits on x1, x2, x4, x8 or x16 links (PCIe 6.x section 4.2.3.4.2.5,
Table 4-30; x32 is extrapolated as 1496), about 0.33 % of the link. A flit-mode TLP costs one more
header DW (OHC-A1) when its first or last DW is not fully enabled (an unaligned start or end) or
it carries a PASID; the model assumes aligned transfers.

The latency term defaults to the seed's t_s = 738.77 ns (seed 000, "extracted from [1]").
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from .base import Flag, Link, Op, Seconds

#: Transfer rate per lane, GT/s, by generation (PCIe Base Spec 1.0a–6.0; PCIe 7.0 announcement).
GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}
#: Line encoding efficiency: 8b/10b (Gen1–2), 128b/130b (Gen3–5), none in flit mode (Gen6–7, PAM4;
#: 64 GT/s carries 64 Gb/s per lane).
ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 1.0, 7: 1.0}
FLIT_MODE_GENERATIONS = (6, 7)

LANES = (1, 2, 4, 8, 16, 32)
PAYLOAD_SIZES = (128, 256, 512, 1024, 2048, 4096)  # MPS and MRRS values the spec allows
RCB_SIZES = (64, 128)  # read completion boundary (Root Ports: 64 or 128 bytes)

#: ACK and UpdateFC DLLPs on the wire: 4 bytes of DLLP + 2 bytes CRC + 2 framing bytes.
DLLP_BYTES = 8
#: Clock-compensation SKP ordered set: 4 bytes, scheduled every 1538 bytes (symbol times).
SKP_BYTES = 4
SKP_INTERVAL = 1538
#: Flit mode at 1b/1b: a 40-symbol SKP ordered set per lane every N flits (PCIe 6.x Table 4-30).
FLIT_SKP_SYMBOLS = 40
FLIT_SKP_INTERVAL = {1: 46, 2: 93, 4: 187, 8: 374, 16: 748, 32: 1496}

#: Recommended ACK and UpdateFC transmission intervals in symbol times, by generation group,
#: link width and Max_Payload_Size: PCIe Base Spec rev 5.0 Tables 3-7 to 3-9 (Ack latency limit)
#: and Tables 2-46 to 2-48 (UpdateFC latency guidelines). The two tables agree but for two x32
#: entries where pcie-model's transcription breaks the tables' +64/+128 progression (Gen1 x32
#: MPS 2048: 248 in the FC table, 148 in the ACK table; Gen2 x32 MPS 4096: 237 in the ACK table,
#: 327 in the FC table); xferlab uses the progression-consistent values 148 and 327 for both.
_INTERVALS_BY_WIDTH = {
    # generation 1 (2.5 GT/s)
    1: {1: (237, 416, 559, 1071, 2095, 4143), 2: (128, 217, 289, 545, 1057, 2081),
        4: (73, 118, 154, 282, 538, 1050), 8: (67, 107, 86, 150, 278, 534),
        16: (48, 72, 86, 150, 278, 534), 32: (33, 45, 52, 84, 148, 276)},
    # generation 2 (5 GT/s)
    2: {1: (288, 467, 610, 1122, 2146, 4194), 2: (179, 268, 340, 596, 1108, 2132),
        4: (124, 169, 205, 333, 589, 1101), 8: (118, 158, 137, 201, 329, 585),
        16: (99, 123, 137, 201, 329, 585), 32: (84, 96, 103, 135, 199, 327)},
    # generation 3 and later (8 GT/s and up, non-flit mode)
    3: {1: (333, 512, 655, 1167, 2191, 4239), 2: (224, 313, 385, 641, 1153, 2177),
        4: (169, 214, 250, 378, 634, 1146), 8: (163, 203, 182, 246, 374, 630),
        16: (144, 168, 182, 246, 374, 630), 32: (129, 141, 148, 180, 244, 372)},
}

#: TLP bytes beyond the payload (PCIe Base Spec section 2.2): a 4-byte common header DW, then
#: 8 more bytes for a memory request with a 32-bit address or 12 with a 64-bit one, 8 for a
#: completion; 4 bytes of ECRC digest when enabled.
TLP_HEADER = 4
MEM_REQ_32 = 8
MEM_REQ_64 = 12
COMPLETION = 8
ECRC = 4
#: Data-link framing per TLP outside flit mode: 2-byte sequence number, 4-byte LCRC and 2 bytes
#: of start/end framing (STP token at Gen3+).
DL_FRAMING = 8

#: Flit mode (PCIe 6.0): 256-byte flit = 236 TLP bytes + 6 DLP + 8 CRC + 6 FEC.
FLIT_BYTES = 256
FLIT_TLP_BYTES = 236

#: The seed's PCIe start-up latency t_s (seed 000, taken from Neugebauer et al.).
SEED_LATENCY = 738.77e-9


def raw_rate(gen: int, lanes: int) -> float:
    """Raw bit rate after line encoding, in bytes per second."""
    return GT_PER_S[gen] * 1e9 * ENCODING[gen] * lanes / 8


def dllp_overhead(gen: int, lanes: int, mps: int, accounting: str = "pcie-model") -> float:
    """Fraction of raw bandwidth spent on ACK and UpdateFC DLLPs (non-flit mode).

    ``pcie-model`` charges one 8-byte DLLP per interval of the link; ``per-lane`` reads the
    interval as symbol times, in each of which the link carries ``lanes`` bytes."""
    interval = _INTERVALS_BY_WIDTH[min(gen, 3)][lanes][PAYLOAD_SIZES.index(mps)]
    return 2 * DLLP_BYTES / (interval * (lanes if accounting == "per-lane" else 1))


def skp_overhead(lanes: int, flit_mode_1b1b: bool) -> float:
    """Fraction of the link spent on SKP ordered sets: 4 in 1538 bytes with 8b/10b or 128b/130b;
    in flit mode at 1b/1b, 40 symbols per lane every FLIT_SKP_INTERVAL[lanes] flits."""
    if not flit_mode_1b1b:
        return SKP_BYTES / SKP_INTERVAL
    per_lane_between = FLIT_SKP_INTERVAL[lanes] * FLIT_BYTES / lanes
    return FLIT_SKP_SYMBOLS / (FLIT_SKP_SYMBOLS + per_lane_between)


class PcieLink(Link):
    """A PCIe link: generation 1–7, x1–x32, with its MPS, MRRS, RCB, addressing and ECRC."""

    source: ClassVar[str] = "Neugebauer et al. SIGCOMM'18 (pcie-model); PCIe Base Spec 5.0/6.0"

    kind: Literal["pcie"] = "pcie"
    gen: int = Field(3, description="PCIe generation 1–7 (6 and 7 run in flit mode)")
    lanes: int = Field(16, description="link width: 1, 2, 4, 8, 16 or 32")
    mps: int = Field(256, description="Max_Payload_Size in bytes: 128 … 4096")
    mrrs: int = Field(512, description="Max_Read_Request_Size in bytes: 128 … 4096")
    rcb: int = Field(64, description="read completion boundary in bytes: 64 or 128")
    rcb_chunks: Flag = Field(False, description="completions split at RCB instead of MPS (some chipsets)")
    addr: int = Field(64, description="address width of memory requests: 32 or 64")
    ecrc: Flag = Field(False, description="end-to-end CRC digest on every TLP")
    dllp: Literal["pcie-model", "per-lane"] = Field(
        "pcie-model", description="ACK/FC DLLP accounting: pcie-model (the paper's) or per-lane symbol times")
    latency: Seconds = Field(SEED_LATENCY, description="start-up time t_s, seconds (seed: 738.77 ns)")

    @model_validator(mode="after")
    def _check(self) -> "PcieLink":
        _allowed("gen", self.gen, tuple(GT_PER_S), "PCIe generation")
        _allowed("lanes", self.lanes, LANES, "PCIe link width")
        _allowed("mps", self.mps, PAYLOAD_SIZES, "Max_Payload_Size")
        _allowed("mrrs", self.mrrs, PAYLOAD_SIZES, "Max_Read_Request_Size")
        _allowed("rcb", self.rcb, RCB_SIZES, "read completion boundary")
        _allowed("addr", self.addr, (32, 64), "address width")
        return self

    # -- derived constants ---------------------------------------------------------------------
    @property
    def flit_mode(self) -> bool:
        return self.gen in FLIT_MODE_GENERATIONS

    @property
    def raw_rate(self) -> float:
        """Bytes per second on the wire after encoding."""
        return raw_rate(self.gen, self.lanes)

    @property
    def tlp_rate(self) -> float:
        """Bytes per second available to TLPs (headers and payload) after link-level overheads."""
        skp = skp_overhead(self.lanes, self.flit_mode)
        if self.flit_mode:
            return self.raw_rate * FLIT_TLP_BYTES / FLIT_BYTES * (1 - skp)
        return self.raw_rate * (1 - dllp_overhead(self.gen, self.lanes, self.mps, self.dllp) - skp)

    def _framing(self) -> int:
        return (0 if self.flit_mode else DL_FRAMING) + (ECRC if self.ecrc else 0)

    @property
    def write_overhead(self) -> int:
        """Bytes on the wire per memory-write TLP beyond its payload."""
        return TLP_HEADER + (MEM_REQ_64 if self.addr == 64 else MEM_REQ_32) + self._framing()

    @property
    def read_request_bytes(self) -> int:
        """Bytes on the wire per memory-read request TLP (it has no payload)."""
        return self.write_overhead

    @property
    def completion_overhead(self) -> int:
        """Bytes on the wire per completion-with-data TLP beyond its payload."""
        return TLP_HEADER + COMPLETION + self._framing()

    @property
    def completion_size(self) -> int:
        """Payload of one completion: RCB if completions are split there, else MPS (within MRRS)."""
        return self.rcb if self.rcb_chunks else min(self.mps, self.mrrs)

    # -- the model -----------------------------------------------------------------------------
    def wire_bytes(self, n: np.ndarray, op: Op) -> tuple[np.ndarray, np.ndarray]:
        """Bytes on the wire (outbound, inbound) from the initiator's side for an n-byte ``op``."""
        n = np.asarray(n, dtype=np.float64)
        writes = n + np.ceil(n / self.mps) * self.write_overhead
        requests = np.ceil(n / self.mrrs) * self.read_request_bytes
        completions = n + np.ceil(n / self.completion_size) * self.completion_overhead
        if op == "write":
            return writes, np.zeros_like(n)
        if op == "read":
            return requests, completions
        if op == "readwrite":
            return writes + requests, completions
        raise ValueError(f"unknown op {op!r}")

    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        return self.stream_rate(n, op, self.tlp_rate)

    def stream_rate(self, n: np.ndarray, op: Op, tlp_rate: float) -> np.ndarray:
        """Payload rate of this link's TLP stream when each direction carries ``tlp_rate`` bytes/s
        of TLPs (CXL.io reuses it inside CXL flits)."""
        n = np.asarray(n, dtype=np.float64)
        out, back = self.wire_bytes(n, op)
        # Both directions run at tlp_rate; the busier one sets the pace.
        return n * tlp_rate / np.maximum(out, back)

    def derived(self) -> dict[str, Any]:
        return {
            "mode": "flit (256-byte flits)" if self.flit_mode else "non-flit (TLP + DLLP)",
            "gt_per_second_per_lane": GT_PER_S[self.gen],
            "encoding_efficiency": ENCODING[self.gen],
            "raw_bytes_per_second": self.raw_rate,
            "tlp_bytes_per_second": self.tlp_rate,
            "write_tlp_overhead_bytes": self.write_overhead,
            "completion_overhead_bytes": self.completion_overhead,
        }

    def summary(self) -> str:
        mode = ", flit mode" if self.flit_mode else ""
        return f"PCIe Gen{self.gen} x{self.lanes}{mode}, MPS {self.mps}, MRRS {self.mrrs}"


def _allowed(field: str, value: int, allowed: tuple, what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what} {field}={value} is not allowed; allowed: {', '.join(map(str, allowed))}")

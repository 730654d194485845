"""NVLink generations 1–5 and NVLink-C2C, at the level of detail public figures allow.

Per-link, per-direction rates are the vendors' figures (GB/s = 10^9 B/s):

=========  =====  ============  ======================  =====================================
generation GB/s   links per GPU GPU                      source
=========  =====  ============  ======================  =====================================
1          20     4             P100                     NVIDIA Tesla P100 whitepaper (2016)
2          25     6             V100                     NVIDIA Tesla V100 whitepaper (2017)
3          25     12            A100                     NVIDIA A100 Tensor Core GPU architecture (2020)
4          25     18            H100 (900 GB/s total)    NVIDIA H100 Tensor Core GPU architecture (2022)
5          50     18            B200 (1.8 TB/s total)    NVIDIA Blackwell architecture technical brief (2024)
c2c        450    1             Grace Hopper             NVIDIA Grace Hopper Superchip architecture (2023):
                                                         NVLink-C2C 900 GB/s total, 450 GB/s each way
=========  =====  ============  ======================  =====================================

Packets: NVLink moves data in packets of one 16-byte header flit and up to 256 bytes of payload
in 16-byte data flits (Foley and Danskin, "Ultra-Performance Pascal GPU and NVLink Interconnect",
IEEE Micro 37(2), 2017); optional address-extension and byte-enable flits are not charged.
Later generations, and NVLink-C2C, have not published a format, so the same packet overhead is
assumed for all; set ``header_bytes=0`` to model the quoted rate as payload.

The seed's AC922 (seed 001) connects POWER9 and V100 over NVLink 2.0 at "50 GB/s and 75 GB/s
bi-directional" per GPU in the 6- or 4-GPU configuration: 2 or 3 links of 25 GB/s each way, so
the figures are the per-direction totals: ``nvlink2:links=2`` and ``nvlink2:links=3``.

Latency: no vendor publishes a per-hop NVLink latency. The default is the seed's PCIe t_s
(738.77 ns) so that comparisons with PCIe isolate bandwidth; override it (``latency=…``) or fit it
from measurements.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional, Union

import numpy as np
from pydantic import Field, model_validator

from ..units import format_rate
from .base import Link, Op, Rate, Seconds
from .pcie import SEED_LATENCY

#: generation → (GB/s per link per direction, links per GPU)
GENERATIONS: dict[str, tuple[float, int]] = {
    "1": (20e9, 4), "2": (25e9, 6), "3": (25e9, 12), "4": (25e9, 18), "5": (50e9, 18), "c2c": (450e9, 1),
}
HEADER_BYTES = 16
MAX_PAYLOAD = 256


class NvlinkLink(Link):
    """NVLink between a GPU and a peer (GPU or CPU): ``links`` bonded links of one generation."""

    source: ClassVar[str] = "NVIDIA architecture whitepapers; Foley & Danskin, IEEE Micro 2017"

    kind: Literal["nvlink"] = "nvlink"
    generation: Union[int, str] = Field(2, description="NVLink generation 1–5, or c2c (NVLink-C2C)")
    links: Optional[int] = Field(None, description="links bonded between the two ends; default: all of the GPU's")
    link_rate: Optional[Rate] = Field(None, description="payload-plus-header rate per link per direction; default: the generation's")
    header_bytes: int = Field(HEADER_BYTES, description="bytes of header per packet (one 16-byte flit)")
    max_payload: int = Field(MAX_PAYLOAD, description="largest payload of one packet, bytes")
    latency: Seconds = Field(SEED_LATENCY, description="start-up time t_s, seconds (no vendor figure; default: the seed's PCIe t_s)")

    @model_validator(mode="after")
    def _check(self) -> "NvlinkLink":
        gen = str(self.generation)
        if gen not in GENERATIONS:
            raise ValueError(f"NVLink generation={self.generation} is not allowed; allowed: 1, 2, 3, 4, 5, c2c")
        object.__setattr__(self, "generation", gen)
        if self.links is not None and not 1 <= self.links <= 72:
            raise ValueError(f"links={self.links} is not allowed; allowed: 1 … 72")
        if self.header_bytes < 0 or self.max_payload < 1:
            raise ValueError(f"header_bytes={self.header_bytes}, max_payload={self.max_payload}: "
                             "allowed: header_bytes >= 0, max_payload >= 1")
        return self

    @property
    def link_count(self) -> int:
        return self.links if self.links is not None else GENERATIONS[str(self.generation)][1]

    @property
    def raw_rate(self) -> float:
        """Bytes per second each way over all bonded links, headers included."""
        per_link = self.link_rate if self.link_rate is not None else GENERATIONS[str(self.generation)][0]
        return per_link * self.link_count

    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        n = np.asarray(n, dtype=np.float64)
        packets = np.ceil(n / self.max_payload)
        # Reads carry a header-only request one way and data back; writes the reverse. Each
        # direction has its own wires, so the data direction sets the rate for all three ops.
        return n * self.raw_rate / (n + packets * self.header_bytes)

    def derived(self) -> dict[str, Any]:
        return {"links": self.link_count, "raw_bytes_per_second": self.raw_rate,
                "packet_efficiency": self.max_payload / (self.max_payload + self.header_bytes)}

    def summary(self) -> str:
        name = "NVLink-C2C" if self.generation == "c2c" else f"NVLink {self.generation}.0 x{self.link_count}"
        return f"{name}, {format_rate(self.raw_rate)} each way"

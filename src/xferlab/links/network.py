"""Network links: InfiniBand (EDR, HDR, NDR, XDR) and Ethernet (10–800 GbE), packet by packet.

InfiniBand (IBTA InfiniBand Architecture Specification Vol. 1, chapters 5 and 9; IBTA roadmap):
per-lane data rates after encoding EDR 25, HDR 50, NDR 100, XDR 200 Gb/s; ports of 1, 2, 4, 8 or
12 lanes (4x is the usual HCA port: 100/200/400/800 Gb/s). A message is cut into packets of at
most the path MTU (256 … 4096 bytes); each carries a Local Route Header (8 bytes), a Base
Transport Header (12), the invariant CRC (4) and the variant CRC (2); an RDMA write adds its RDMA
Extended Transport Header (16) to the first packet, and a routed packet a Global Route Header (40).

Ethernet (IEEE 802.3): every frame costs 8 bytes of preamble and start delimiter, a 14-byte MAC
header, a 4-byte FCS and a 12-byte inter-frame gap on the wire, and occupies at least 64 bytes
(header to FCS). Inside the MTU the protocol takes its headers: UDP/IPv4 28 bytes, TCP/IPv4 with
timestamps 52, RoCE v2 (IPv4 + UDP + BTH + ICRC) 44, whose payload per packet is the largest
InfiniBand MTU that fits (1024 bytes in a 1500-byte Ethernet MTU, 4096 in a 9000-byte one); a
RoCE v2 message is taken to be an RDMA write, whose first packet adds a 16-byte RETH.

Latency: the default is 2 µs, the host-to-host RDMA latency for small messages over EDR that seed
001 measured on the AC922 with the OSU benchmarks (Figure 3). Kernel TCP stacks add tens of
microseconds: set ``latency=…`` for yours, or fit it from a measurement.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from .base import Flag, Link, Op, Seconds

#: Data rate per lane after encoding, bits per second (IBTA roadmap).
IB_LANE_RATE = {"edr": 25e9, "hdr": 50e9, "ndr": 100e9, "xdr": 200e9}
IB_MTUS = (256, 512, 1024, 2048, 4096)
IB_LRH, IB_BTH, IB_ICRC, IB_VCRC, IB_RETH, IB_GRH = 8, 12, 4, 2, 16, 40

ETH_SPEEDS_GBPS = (1, 10, 25, 40, 50, 100, 200, 400, 800)
ETH_PREAMBLE, ETH_HEADER, ETH_FCS, ETH_GAP, ETH_MIN_FRAME = 8, 14, 4, 12, 64
ETH_PROTOCOL_HEADERS = {"raw": 0, "udp": 20 + 8, "tcp": 20 + 20 + 12, "rocev2": 20 + 8 + IB_BTH + IB_ICRC}

#: Seed 001: host-to-host RDMA latency over EDR on the AC922 (OSU latency, small messages).
SEED_NETWORK_LATENCY = 2e-6


class InfinibandLink(Link):
    """An InfiniBand port: speed grade, lane count, path MTU, RDMA write or send."""

    source: ClassVar[str] = "IBTA InfiniBand Architecture Spec Vol. 1; IBTA roadmap; seed 001 latency"

    kind: Literal["infiniband"] = "infiniband"
    speed: Literal["edr", "hdr", "ndr", "xdr"] = Field("edr", description="speed grade: edr, hdr, ndr or xdr")
    lanes: int = Field(4, description="lanes in the port: 1, 2, 4, 8 or 12")
    mtu: int = Field(4096, description="path MTU, payload bytes per packet: 256 … 4096")
    rdma: Flag = Field(True, description="RDMA write (adds a RETH to the first packet) rather than send")
    routed: Flag = Field(False, description="packets carry a Global Route Header (crossing subnets)")
    latency: Seconds = Field(SEED_NETWORK_LATENCY, description="start-up time, seconds (seed 001: 2 µs)")

    @model_validator(mode="after")
    def _check(self) -> "InfinibandLink":
        if self.lanes not in (1, 2, 4, 8, 12):
            raise ValueError(f"InfiniBand lanes={self.lanes} is not allowed; allowed: 1, 2, 4, 8, 12")
        if self.mtu not in IB_MTUS:
            raise ValueError(f"InfiniBand mtu={self.mtu} is not allowed; allowed: {', '.join(map(str, IB_MTUS))}")
        return self

    @property
    def raw_rate(self) -> float:
        return IB_LANE_RATE[self.speed] * self.lanes / 8

    @property
    def packet_overhead(self) -> int:
        return IB_LRH + IB_BTH + IB_ICRC + IB_VCRC + (IB_GRH if self.routed else 0)

    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        n = np.asarray(n, dtype=np.float64)
        packets = np.ceil(n / self.mtu)
        wire = n + packets * self.packet_overhead + (IB_RETH if self.rdma else 0)
        return n * self.raw_rate / wire

    def derived(self) -> dict[str, Any]:
        return {"raw_bytes_per_second": self.raw_rate, "packet_overhead_bytes": self.packet_overhead}

    def summary(self) -> str:
        return f"InfiniBand {self.speed.upper()} {self.lanes}x, MTU {self.mtu}{', RDMA write' if self.rdma else ', send'}"


class EthernetLink(Link):
    """An Ethernet port: speed, MTU and the protocol whose headers ride inside each frame."""

    source: ClassVar[str] = "IEEE 802.3 framing; IETF RFC 791/768/793/7323; RoCE v2 (IBTA Annex A17)"

    kind: Literal["ethernet"] = "ethernet"
    speed_gbps: int = Field(100, description="line rate in Gb/s: 1, 10, 25, 40, 50, 100, 200, 400, 800")
    mtu: int = Field(1500, description="Ethernet MTU (IP packet size), bytes: 576 … 9216")
    protocol: Literal["raw", "udp", "tcp", "rocev2"] = Field("tcp", description="raw, udp, tcp or rocev2")
    latency: Seconds = Field(SEED_NETWORK_LATENCY, description="start-up time, seconds (default 2 µs: RDMA-class)")

    @model_validator(mode="after")
    def _check(self) -> "EthernetLink":
        if self.speed_gbps not in ETH_SPEEDS_GBPS:
            raise ValueError(f"Ethernet speed_gbps={self.speed_gbps} is not allowed; allowed: "
                             + ", ".join(map(str, ETH_SPEEDS_GBPS)))
        if not 576 <= self.mtu <= 9216:
            raise ValueError(f"Ethernet mtu={self.mtu} is not allowed; allowed: 576 … 9216")
        return self

    @property
    def raw_rate(self) -> float:
        return self.speed_gbps * 1e9 / 8

    @property
    def payload_per_frame(self) -> int:
        room = self.mtu - ETH_PROTOCOL_HEADERS[self.protocol]
        if self.protocol == "rocev2":
            return max(m for m in IB_MTUS if m <= room)
        return room

    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        n = np.asarray(n, dtype=np.float64)
        per_frame = self.payload_per_frame
        frames = np.ceil(n / per_frame)
        headers = ETH_PROTOCOL_HEADERS[self.protocol]
        last = n - (frames - 1) * per_frame  # payload of the last frame, padded to the minimum
        frame_bytes = lambda payload: np.maximum(ETH_HEADER + headers + payload + ETH_FCS, ETH_MIN_FRAME)
        reth = IB_RETH if self.protocol == "rocev2" else 0  # in the first packet (room left by the IB MTU)
        wire = (frames - 1) * (frame_bytes(per_frame) + ETH_PREAMBLE + ETH_GAP) + frame_bytes(last) + ETH_PREAMBLE + ETH_GAP
        return n * self.raw_rate / (wire + reth)

    def derived(self) -> dict[str, Any]:
        return {"raw_bytes_per_second": self.raw_rate, "payload_per_frame_bytes": self.payload_per_frame}

    def summary(self) -> str:
        return f"{self.speed_gbps} GbE, {self.protocol}, MTU {self.mtu}"

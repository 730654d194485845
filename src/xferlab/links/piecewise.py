"""A piecewise-linear transfer-time model, optionally with a per-packet overhead:

    t(n) = t_s + sum_k bytes_k(n) / b_k + ceil(n / P) * o

where bytes_k(n) is the part of the n bytes that falls between breakpoint k-1 and breakpoint k (the
first segment starts at 0 bytes, the last has no end), so t(n) is continuous and piecewise linear in
n with one rate per segment. With no breakpoints and no packet term it is seed 000's t = n / b + t_s
(ORNL, ExHET'22). The size-dependent rate follows PLogP (Kielmann, Bal and Verstoep, "Fast
measurement of LogP parameters for message passing platforms", IPDPS workshops 2000), where the gap
per byte depends on the message size; here a measured copy's rate changes where the data stop
fitting in a cache. The packet term ``ceil(n / packet) * packet_overhead`` is a fixed cost per
packet or DMA descriptor: LogGP's per-message overhead o (Alexandrov et al., SPAA 1995) paid once
per packet, as pcie-model (Neugebauer et al., SIGCOMM'18) pays a TLP header per ceil(n / MPS).
:mod:`xferlab.fit.linkfit` fits this model to measured copies.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from ..units import format_rate, format_size, format_time
from .base import Bytes, Link, Op, Rate, Seconds


def _items(value: Any) -> Any:
    """A list also comes as text from a LINK override: ``bandwidths=40GB/s;6GB/s``."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(";") if item.strip()]
    return value


class PiecewiseLink(Link):
    """A link whose rate changes at given transfer sizes, optionally paying a cost per packet."""

    source: ClassVar[str] = ("seed 000 (t = n/b + t_s); PLogP (Kielmann et al., 2000); LogGP (Alexandrov et al., "
                             "SPAA 1995); pcie-model's per-TLP overhead (Neugebauer et al., SIGCOMM'18)")

    kind: Literal["piecewise"] = "piecewise"
    latency: Seconds = Field(0.0, description="fixed start-up time t_s of one transfer, seconds")
    breakpoints: Annotated[list[Bytes], BeforeValidator(_items)] = Field(
        default_factory=list, description="sizes in bytes where the rate changes, strictly increasing ('4MiB;16MiB')")
    bandwidths: Annotated[list[Rate], BeforeValidator(_items)] = Field(
        description="rate of each segment, bytes per second: one more than breakpoints ('40GB/s;10GB/s')")
    packet: Bytes | None = Field(None, description="packet (or DMA descriptor) size P in bytes; none: no packet term")
    packet_overhead: Seconds = Field(0.0, description="fixed cost o of each packet, seconds")

    @model_validator(mode="after")
    def _check(self) -> "PiecewiseLink":
        if len(self.bandwidths) != len(self.breakpoints) + 1:
            raise ValueError(f"piecewise link: got {len(self.bandwidths)} bandwidths for {len(self.breakpoints)} "
                             f"breakpoints; allowed: one bandwidth per segment, {len(self.breakpoints) + 1}")
        if any(b <= 0 for b in self.breakpoints) or any(b >= c for b, c in zip(self.breakpoints, self.breakpoints[1:])):
            raise ValueError(f"piecewise link: breakpoints {self.breakpoints} are not allowed; they must be positive "
                             "and strictly increasing")
        if any(not (b > 0 and np.isfinite(b)) for b in self.bandwidths):
            raise ValueError(f"piecewise link: bandwidths {self.bandwidths} are not allowed; each must be positive")
        if self.packet is not None and self.packet <= 0:
            raise ValueError(f"piecewise link: packet={self.packet} is not allowed; it must be a positive size")
        if self.packet_overhead < 0 or (self.packet_overhead > 0 and self.packet is None):
            raise ValueError(f"piecewise link: packet_overhead={self.packet_overhead} is not allowed; it must be "
                             ">= 0 and needs a packet size")
        return self

    def transfer_seconds(self, n: Any) -> np.ndarray:
        """The size-dependent part of t(n): the segments' bytes over their rates plus the packets' cost."""
        n = np.asarray(n, dtype=np.float64)
        edges = [0.0, *map(float, self.breakpoints), np.inf]
        total = np.zeros_like(n)
        for low, high, rate in zip(edges[:-1], edges[1:], self.bandwidths):
            total = total + np.clip(n - low, 0.0, high - low) / rate
        if self.packet is not None:
            total = total + np.ceil(n / self.packet) * self.packet_overhead
        return total

    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        """n over the size-dependent time, so that t(n) = latency + n / data_rate(n); the first
        segment's rate for an empty transfer. The same for every op (fitted on one direction)."""
        n = np.asarray(n, dtype=np.float64)
        seconds = self.transfer_seconds(n)
        return np.where(seconds > 0, n / np.where(seconds > 0, seconds, 1.0), self.bandwidths[0])

    def derived(self) -> dict[str, Any]:
        return {"breakpoints_bytes": list(self.breakpoints), "bandwidths_bytes_per_second": list(self.bandwidths),
                "packet_bytes": self.packet, "packet_overhead_seconds": self.packet_overhead}

    def summary(self) -> str:
        text = format_rate(self.bandwidths[0]) + "".join(
            f", {format_rate(rate)} from {format_size(size)}" for size, rate in zip(self.breakpoints, self.bandwidths[1:]))
        if self.packet is not None and self.packet_overhead:
            text += f", + {format_time(self.packet_overhead)} per {format_size(self.packet)} packet"
        return text

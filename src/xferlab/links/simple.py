"""The simple latency + bandwidth model: t(n) = t_s + o + n / b.

This is the seed's form (seed 000: t = n / b_n + t_s) with a constant b, and LogGP's view of one
message (Alexandrov et al., "LogGP: incorporating long messages into the LogP model", SPAA 1995):
L = ``latency`` (wire and switch latency), o = ``overhead`` (the processor time to send and to
receive a message, counted once for both ends), G = 1 / ``bandwidth`` (gap per byte). It is also
the shape that :mod:`xferlab.fit` fits to measurements.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..units import format_rate, format_time
from .base import Link, Op, Rate, Seconds


class SimpleLink(Link):
    """A link of constant bandwidth and fixed start-up time (optionally a per-message overhead)."""

    source: ClassVar[str] = "seed 000 (t = n/b + t_s); LogGP (Alexandrov et al., SPAA 1995)"

    kind: Literal["simple"] = "simple"
    bandwidth: Rate = Field(description="payload bandwidth b, bytes per second (e.g. 12.4GB/s)")
    read_bandwidth: Rate | None = Field(None, description="bandwidth of reads, if it differs; default: bandwidth")
    latency: Seconds = Field(0.0, description="wire latency L, seconds")
    overhead: Seconds = Field(0.0, description="per-message processor overhead o (send + receive), seconds")

    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        n = np.asarray(n, dtype=np.float64)
        rate = self.read_bandwidth if (op != "write" and self.read_bandwidth) else self.bandwidth
        return np.full_like(n, rate)

    @property
    def startup(self) -> float:
        return self.latency + self.overhead

    def derived(self) -> dict[str, Any]:
        return {"bandwidth_bytes_per_second": self.bandwidth, "overhead_seconds": self.overhead}

    def summary(self) -> str:
        extra = f", overhead o = {format_time(self.overhead)}" if self.overhead else ""
        return f"latency + bandwidth: {format_rate(self.bandwidth)}{extra}"

"""The `Link`: a transfer-time model of one interconnect, vectorized over transfer sizes.

Every model answers one question, *how long does moving n bytes take*, as

    t(n) = latency + n / data_rate(n, op)

where ``data_rate`` is the payload rate the link sustains for a transfer of ``n`` bytes once the
protocol's per-packet and per-flit overheads are paid (the seed's ``b_n``: the bandwidth "calculated
from the PCIe model" for size n), and ``latency`` is the fixed start-up cost ``t_s``. Subclasses only
define ``data_rate``; they declare their parameters as pydantic fields so that a link can come from
a preset, from ``name:key=value`` overrides, or from YAML, all validated the same way.

``op`` names the direction of the work, from the initiator's (the DMA engine's) side:

* ``write``: the initiator pushes n bytes (posted writes; no traffic comes back);
* ``read``: the initiator pulls n bytes (requests go out, data comes back);
* ``readwrite``: it reads n bytes and writes n bytes at the same time (full duplex); the time is
  that of each stream.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from ..choices import OPS as _OPS
from ..units import parse_rate, parse_size, parse_time

Op = Literal["write", "read", "readwrite"]
OPS = _OPS  # the names, in xferlab.choices (the CLI reads them without loading this module)

#: A large transfer, used to quote a link's asymptotic ("peak") payload rate.
PEAK_SIZE = float(2**40)


def _time(value: Any) -> float:
    return parse_time(value, "latency")


def _rate(value: Any) -> float:
    return parse_rate(value, "rate")


def _size(value: Any) -> int:
    return parse_size(value, "size")


def _bool(value: Any) -> Any:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
    return value


#: Seconds, written by people as ``738.77ns``; stored and serialized as a float.
Seconds = Annotated[float, BeforeValidator(_time)]
#: Bytes per second, written as ``12.4GB/s`` or ``100Gb/s``.
Rate = Annotated[float, BeforeValidator(_rate)]
#: Bytes, written as ``256``, ``4KiB``.
Bytes = Annotated[int, BeforeValidator(_size)]
#: Booleans also accept true/false/yes/no/on/off/1/0 from the command line.
Flag = Annotated[bool, BeforeValidator(_bool), PlainSerializer(bool)]


class Link(BaseModel):
    """Base of every link model. Subclasses set ``kind`` and implement :meth:`data_rate`."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    kind: str
    name: str = Field("", description="preset or user name of this link; empty if anonymous")
    latency: Seconds = Field(description="fixed start-up time t_s of one transfer, seconds")

    #: One line saying where the model and its defaults come from.
    source: ClassVar[str] = ""

    # -- the model -----------------------------------------------------------------------------
    def data_rate(self, n: np.ndarray, op: Op = "write") -> np.ndarray:
        """Payload bytes per second sustained while moving a transfer of ``n`` bytes."""
        raise NotImplementedError

    def time(self, n: Any, op: Op = "write") -> Any:
        """Seconds to move ``n`` bytes (scalar or array; the result has the same shape)."""
        sizes = np.asarray(n, dtype=np.float64)
        result = self.startup + sizes / self.data_rate(sizes, op)
        return result if result.ndim else float(result)

    @property
    def startup(self) -> float:
        """The size-independent part of t(n): ``latency`` (plus any per-message overhead)."""
        return self.latency

    def effective_bandwidth(self, n: Any, op: Op = "write") -> Any:
        """Effective bandwidth n / t(n), latency included, in bytes per second."""
        sizes = np.asarray(n, dtype=np.float64)
        result = sizes / (self.startup + sizes / self.data_rate(sizes, op))
        return result if result.ndim else float(result)

    def streaming_rate(self, n: Any, op: Op = "write") -> Any:
        """Throughput of back-to-back transfers of ``n`` bytes each, in bytes per second: n / (t(n) -
        latency). The latency overlaps from one transfer to the next and drops out; what each transfer
        still pays is kept: the protocol's overheads (``data_rate``, b_n, pcie-model's effective-bandwidth
        curve) and any per-message overhead that :attr:`startup` adds (the simple link's ``overhead`` o)."""
        sizes = np.asarray(n, dtype=np.float64)
        result = sizes / ((self.startup - self.latency) + sizes / self.data_rate(sizes, op))
        return result if result.ndim else float(result)

    def peak_rate(self, op: Op = "write") -> float:
        """The payload rate of a very large transfer (the asymptote of :meth:`effective_bandwidth`)."""
        return float(self.data_rate(np.asarray([PEAK_SIZE]), op)[0])

    # -- description ---------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return self.name or self.kind

    def parameters(self) -> dict[str, Any]:
        """The fields that define this link (as a YAML file or overrides would give them)."""
        return self.model_dump(exclude={"name"})

    def derived(self) -> dict[str, Any]:
        """Figures derived from the parameters (raw rate, efficiencies …), SI units in the keys."""
        return {}

    def summary(self) -> str:
        """A short description of the configuration (figures are in :meth:`derived`)."""
        return self.kind

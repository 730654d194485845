"""Seed 003's figures (Fridman, Mutalik Desai, Singh, Willhalm, Oren, "CXL Memory as Persistent Memory for
Disaggregated HPC: A Practical Approach", SC'23 workshops / IXPUG): STREAM triad over memory tiers, held
against what memory-channel presets give (scenario ``stream-tiers``).

The model is a STREAM ceiling: the memory's channels (:mod:`xferlab.system.memory_channels`, JEDEC peaks)
and, for memory behind a link (a CXL Type 3 card), the link's payload rates in each direction
(:mod:`xferlab.links`), with bytes counted as STREAM counts them. A kernel that writes an array also reads
it first (write-allocate: the cache line is fetched before it is written), so triad moves 4 arrays' bytes
for the 3 STREAM counts (McCalpin, STREAM, "Counting Bytes and FLOPS"; the probe records that traffic apart
as ``write_allocate_bytes``). The ceiling is a peak: it knows nothing of thread counts, of a socket-to-socket
hop, or of PMDK's software path, and the scenario's rows say where that leaves a figure unexplained.
"""

from __future__ import annotations

from typing import Any, Optional

from ..errors import BadValue
from ..links import resolve
from ..measure.sizeclass import HOST_ARRAYS
from ..system.memory_channels import channel
from .figures import figure


def traffic(kernel: str, write_allocate: bool = True) -> tuple[int, int, int]:
    """(arrays STREAM counts, arrays read from memory, arrays written) per element of ``kernel``."""
    if kernel not in HOST_ARRAYS:
        raise BadValue(f"STREAM kernel '{kernel}' is not one of {', '.join(HOST_ARRAYS)}")
    counted = HOST_ARRAYS[kernel]
    written = 0 if kernel == "read" else 1
    read = counted - written + (written if write_allocate else 0)
    return counted, read, written


def ceiling(memory: str, channels: float = 1, kernel: str = "triad", link: Optional[str] = None,
            write_allocate: bool = True) -> float:
    """STREAM's counted bytes per second at most, in B/s: ``channels`` channels of preset ``memory`` (one
    bus, reads and writes share it), behind ``link`` where given (reads and writes each their own direction)."""
    counted, read, written = traffic(kernel, write_allocate)
    seconds = (read + written) / channel(memory).peak(channels)  # per 1-byte element of every array
    if link:
        carrier = resolve(link)
        seconds = max(seconds, read / carrier.peak_rate("read"), written / carrier.peak_rate("write"))
    return counted / seconds


@figure("stream_ceiling")
def stream_ceiling(**tier: Any) -> float:
    """A tier's STREAM ceiling in GB/s (:func:`ceiling`'s arguments)."""
    return ceiling(**tier) / 1e9


@figure("ceiling_ratio")
def ceiling_ratio(tier: dict[str, Any], baseline: dict[str, Any]) -> float:
    """How many times ``baseline``'s ceiling ``tier``'s is (x)."""
    return ceiling(**tier) / ceiling(**baseline)


@figure("ceiling_decrease")
def ceiling_decrease(tier: dict[str, Any], baseline: dict[str, Any]) -> float:
    """How much lower ``tier``'s ceiling is than ``baseline``'s, in % of the baseline's."""
    return 100 * (1 - ceiling(**tier) / ceiling(**baseline))


@figure("decrease_of")
def decrease_of(baseline: float, drop: float) -> float:
    """``drop`` as a % of ``baseline``: two figures of the seed set against a third it gives."""
    return 100 * drop / baseline

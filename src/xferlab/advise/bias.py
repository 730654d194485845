"""When a CXL Type 2 device's memory pays in device bias: the break-even number of the device's accesses
to a region between two flips (the models and their sources: :mod:`xferlab.links.coherence`)."""

from __future__ import annotations

from typing import Iterable, Optional

from ..links.base import Link
from ..links.coherence import PAGE_BYTES, break_even, cache_link, compare


def bias_advice(link: Link, accesses: Iterable[int], flip: Optional[float] = None,
                page: int = PAGE_BYTES) -> tuple[dict, list[dict]]:
    """The break-even (flip cost, one access's cost in host bias, accesses per flip) and, per count of
    accesses between two flips, host bias's cost against device bias's."""
    cache_link(link, "bias is a CXL Type 2 device's: give its CXL link")
    return break_even(link, flip, page), compare(link, accesses, flip, page)

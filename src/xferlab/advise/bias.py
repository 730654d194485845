"""When a CXL Type 2 device's memory pays in device bias: the break-even number of the device's accesses
to a region between two flips (the models and their sources: :mod:`xferlab.links.coherence`)."""

from __future__ import annotations

from typing import Iterable, Optional

from ..errors import BadValue
from ..links.base import Link
from ..links.coherence import PAGE_BYTES, break_even, compare
from ..links.cxl import CxlLink


def bias_advice(link: Link, accesses: Iterable[int], flip: Optional[float] = None,
                page: int = PAGE_BYTES) -> tuple[dict, list[dict]]:
    """The break-even (flip cost, one access's cost in host bias, accesses per flip) and, per count of
    accesses between two flips, host bias's cost against device bias's."""
    if not isinstance(link, CxlLink):
        raise BadValue(f"link '{link.label}' is a {link.kind} link; bias is a CXL Type 2 device's: give its CXL link "
                       "(cxl2x16, cxl-seed …)")
    if link.protocol == "io" and link.penalty is None:
        raise BadValue(f"link '{link.label}' is CXL.io (protocol=io); host bias sends CXL.cache requests: give "
                       "protocol=cachemem")
    return break_even(link, flip, page), compare(link, accesses, flip, page)

"""The tables' interval columns of `--precision` runs (`measure device | launch | memory`; the options
are in the table of cli/common.py, the method in measure/precision.py)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..measure.precision import interval_text
from ..units import format_time
from .output import Column

def with_interval(rows: list[dict[str, Any]], name: str, low: str, high: str) -> list[dict[str, Any]]:
    """Copies of ``rows`` (for a table only) with ``name`` = (row[low], row[high])."""
    return [{**r, name: (r.get(low), r.get(high))} for r in rows]


def interval_column(name: str, header: str = "95 % CI", fmt: Callable[[float], str] = format_time) -> Column:
    """A table column showing the interval ``with_interval`` put under ``name``."""
    def show(pair: Optional[tuple]) -> str:
        return interval_text(*(pair or (None, None)), fmt=fmt)
    return Column(name, header, show, no_wrap=True)

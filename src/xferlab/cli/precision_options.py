"""`--precision` and `--max-time` for `measure device | launch | memory`, and the tables' interval
columns (the method is in measure/precision.py)."""

from __future__ import annotations

from typing import Any, Callable, Optional

import typer

from ..measure.precision import interval_text
from ..units import format_time
from .output import Column

PRECISION = typer.Option(
    None, "--precision", metavar="P",
    help="Repeat each point until the 95 % confidence interval of its median is within ±P of it (2% or 0.02; "
         "up to 50%), instead of a fixed count.")
MAX_TIME = typer.Option(
    None, "--max-time", metavar="TIME",
    help="With --precision: stop a point after this much timed work even if the target is not met, e.g. 2s.")


def with_interval(rows: list[dict[str, Any]], name: str, low: str, high: str) -> list[dict[str, Any]]:
    """Copies of ``rows`` (for a table only) with ``name`` = (row[low], row[high])."""
    return [{**r, name: (r.get(low), r.get(high))} for r in rows]


def interval_column(name: str, header: str = "95 % CI", fmt: Callable[[float], str] = format_time) -> Column:
    """A table column showing the interval ``with_interval`` put under ``name``."""
    def show(pair: Optional[tuple]) -> str:
        return interval_text(*(pair or (None, None)), fmt=fmt)
    return Column(name, header, show, no_wrap=True)

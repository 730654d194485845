"""Adaptive repetition: ``--precision P`` and ``--max-time TIME`` for the measuring commands.

With a precision target the probe repeats each point (a copy size x direction x host memory kind,
a launch argument count, a chunk size, a STREAM kernel, a chase working set) until the 95 %
distribution-free confidence interval of its median is narrow enough: its relative half-width,
(high - low) / 2 / median, at most P. It stops anyway at the point's iteration cap or once
``--max-time`` seconds of timed work are spent on the point. After each point the probe prints a
``"record": "point"`` line saying how it stopped ("precision", "max-iterations", "max-time" or
"fixed" without a target) with the interval; ``annotate`` copies ``stopped`` onto the point's
sample rows, so that summaries (and the store) say it. The interval itself is recomputed from the
samples by the stats module (``median_interval``), the same order statistics the probe uses
(native/probe/precision.hpp; exact binomial ranks there up to 100,000 samples, the normal
approximation above, which agrees within one rank).
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Optional

from ..errors import BadValue
from ..units import format_time, parse_time
from ..stats import median_interval

LIMIT = 0.5  # a target above 50 % says nothing about a median
MAX_TIME_LIMIT = 86400.0  # the probe's own bound on --max-time
ADAPTIVE_ITERATIONS = 100_000  # the copy loop's cap with a target: --max-time bounds a point first
_NUMBER = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(%?)\s*$")


def parse_precision(text: Optional[str | float], where: str = "--precision") -> Optional[float]:
    """The fraction in ``text`` (``2%`` or ``0.02``), or None when not given. Raises
    :class:`BadValue` for anything that is not a number in (0, 50 %]."""
    return None if text is None else parse_fraction(text, where)


def parse_fraction(text: str | float, where: str, what: str = "relative precision", upper: float = LIMIT,
                   zero: bool = False) -> float:
    """A fraction written ``0.02`` or ``2%``, in (0, upper] (or [0, upper] with ``zero``); a one-line
    :class:`BadValue` naming ``where`` and the range otherwise."""
    m = _NUMBER.match(str(text))
    value = float(m[1]) / (100.0 if m[2] else 1.0) if m else math.nan
    if not (math.isfinite(value) and (0.0 <= value if zero else 0.0 < value) and value <= upper):
        raise BadValue(f"{where} '{text}' is not a {what} in {'[' if zero else '('}0, {upper * 100:g} %]; allowed: a fraction "
                       "such as 0.02 or a percentage such as 2%")
    return value


def parse_max_time(text: Optional[str], where: str = "--max-time") -> Optional[float]:
    """Seconds per point in ``text`` (a time such as 2s or 500ms), or None when not given."""
    if text is None:
        return None
    seconds = parse_time(text, where, allow_zero=False)
    if seconds > MAX_TIME_LIMIT:
        raise BadValue(f"{where} '{text}' is more than a day per point; allowed: a time in (0 s, 24 h]")
    return seconds


def probe_args(precision: Optional[float], max_time: Optional[float]) -> list[str]:
    """The probe's options for a target and a time limit (none when neither is set)."""
    out: list[str] = []
    if precision is not None:
        out += ["--precision", repr(precision)]
    if max_time is not None:
        out += ["--max-time", repr(max_time)]
    return out


def estimate(fixed: float, points: int, precision: Optional[float], max_time: Optional[float]) -> float:
    """A step's expected seconds: ``fixed`` (its estimate without a target) grown by a target, which
    typically takes a few times the fixed count and at most ``max_time`` per point."""
    if precision is None:
        return fixed if max_time is None else min(fixed, points * max_time + 1.0)
    grown = 4.0 * fixed
    return grown if max_time is None else max(fixed, min(grown, points * max_time)) + 0.05 * points


# How the probe's point records are told apart, per subcommand: the fields of a point, and the
# row fields that carry the same values.
_KEYS = {
    "transfer": (("kind", "direction", "size_bytes"), ("host_kind", "test", "size_bytes")),
    "launch": (("args",), ("kernel_args",)),
    "chunks": (("kind", "direction", "chunk_bytes"), ("host_kind", "direction", "size_bytes")),
    "stream": (("kernel",), ("test",)),
    "latency": (("size_bytes",), ("size_bytes",)),
}


def points(test: str, records: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """The probe's ``point`` records of one run, by the point's key."""
    point_keys = _KEYS.get(test, ((), ()))[0]
    return {tuple(r.get(k) for k in point_keys): r for r in records if r.get("record") == "point"}


def annotate(test: str, records: Iterable[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds ``stopped`` (and ``precision``, the target) to each sample row whose point the probe
    closed with a point record; rows of a point without one (an old probe, a killed run) are left."""
    found = points(test, records)
    if not found:
        return rows
    row_keys = _KEYS[test][1]
    for row in rows:
        point = found.get(tuple(row.get(k) for k in row_keys))
        if point is not None:
            row["stopped"] = point.get("stopped")
            if point.get("precision") is not None:
                row["precision"] = point["precision"]
    return rows


def stopped_of(members: list[dict[str, Any]]) -> Optional[str]:
    """How a point's repetition ended, from its rows (None when the probe did not say)."""
    return next((m["stopped"] for m in members if m.get("stopped")), None)


def interval_text(low: Optional[float], high: Optional[float], fmt=format_time) -> str:
    """A table cell for an interval: ``low–high`` in the column's units, '–' when undefined."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "–"
    lo, hi = fmt(low), fmt(high)
    lo_num, _, lo_unit = lo.rpartition(" ")
    hi_num, _, hi_unit = hi.rpartition(" ")
    if lo_num and hi_num and lo_unit == hi_unit:  # one unit for both ends: 30.32–31.49 µs
        return f"{lo_num}–{hi}"
    return f"{lo}–{hi}"


def ci_fields(values: Iterable[float], unit: str = "seconds", scale: Optional[float] = None) -> dict[str, Any]:
    """``median_ci_low_<unit>`` and ``median_ci_high_<unit>`` of ``values`` (times); with ``scale``
    (bytes moved) the interval of the rate scale / time instead, its ends swapped."""
    low, high = median_interval(values)
    if scale is not None:
        low, high = (scale / high if high else math.nan), (scale / low if low else math.nan)
    clean = [None if not math.isfinite(v) else v for v in (low, high)]
    return {f"median_ci_low_{unit}": clean[0], f"median_ci_high_{unit}": clean[1]}


def stopped_counts(points: Iterable[dict[str, Any]]) -> Optional[dict[str, int]]:
    """How many of ``points`` (summaries) stopped each way, e.g. {"precision": 9, "max-time": 2}; None
    when the probe said for none."""
    counts: dict[str, int] = {}
    for p in points:
        if p.get("stopped"):
            counts[p["stopped"]] = counts.get(p["stopped"], 0) + 1
    return counts or None


def stopped_text(counts: Optional[dict[str, int]]) -> str:
    """A table cell for ``stopped_counts``: 'precision 9, max-time 2'."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) if counts else "–"

"""Sizes, times and rates: parsing what people type and formatting what xferlab prints.

Internally everything is an SI float: bytes, seconds, bytes per second. People write:

* sizes: ``64`` or ``64B``, ``4KiB`` (2**10), ``4KB`` or ``4kB`` (10**3), ``1.6GB``, ``1MiB``;
* times: ``738.77ns``, ``1.5us`` (or ``µs``), ``20ms``, ``2s``, ``5m`` (minutes), ``1h``;
* rates: ``12.4GB/s`` (10**9 B/s), ``11.5GiB/s``, ``100Gb/s`` or ``100Gbps`` (bits, divided by 8);
* lists: ``64B,4KiB,1MiB`` or a doubling range ``64B..1GiB`` (both ends included), or a mix.
"""

from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np

from .errors import BadValue

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_PREFIX = {**_DECIMAL, **_BINARY, "KI": 2.0**10, "ki": 2.0**10}

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_SIZE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMGTPE]i?)?(?P<unit>B|b|bytes?)?$", re.ASCII)
_TIME_RE = re.compile(_NUMBER + r"\s*(?P<unit>ps|ns|us|µs|μs|ms|s|sec|m|min|h)?$", re.ASCII)
_RATE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMGTPE]i?)?(?P<unit>B/s|b/s|bps|Bps)?$", re.ASCII)

_TIME_SCALE = {
    None: 1.0, "s": 1.0, "sec": 1.0, "ps": 1e-12, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6,
    "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0,
}

MAX_SIZE = 2**60  # bytes (1 EiB): the largest size accepted; models stay finite far beyond it
MAX_TIME = 1e9  # seconds (~31.7 years): the longest time accepted (a latency, a task, a budget)
MIN_RATE = 1.0  # bytes per second: the slowest rate accepted; 1 EiB at 1 B/s is ~1.2e18 s, finite
SIZE_HELP = "a byte count such as 64, 64B, 4KiB (1024-based), 4KB (1000-based), 1.6GB"
TIME_HELP = "a time such as 738.77ns, 1.5us, 20ms, 2s, 5m"
RATE_HELP = "a rate such as 12.4GB/s (10^9 B/s), 11.5GiB/s or 100Gb/s (bits)"
LIST_HELP = "a comma-separated list (64B,4KiB) or a doubling range (64B..1GiB)"


def shown(text, limit: int = 60) -> str:
    """``text`` quoted for an error message, control characters escaped, cut to ``limit`` characters
    (a 100 kB value stays one short line)."""
    text = str(text)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text)} characters)"


def _float(number: int | float) -> float:
    """``number`` as a float; an int too large for one (10^400 from YAML) is infinite, then refused."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def _where(where: str) -> str:
    return f" in {where}" if where else ""


def _ascii(text: str, kind: str, where: str, allowed: str) -> str:
    """``text`` stripped; a non-ASCII character (a full-width or Arabic-Indic digit) is refused by name."""
    if not isinstance(text, str):  # a YAML list or mapping where one value belongs: not str() of it all
        what = {list: "a list", dict: "a mapping"}.get(type(text), repr(text)[:20])
        raise BadValue(f"{kind}{_where(where)} is {what}, not a number or text: {allowed}")
    text = text.strip()
    odd = next((c for c in text if (not c.isascii() and c not in "µμ") or not c.isprintable()), None)
    if odd is not None:
        raise BadValue(f"{kind} {shown(text)}{_where(where)} has the character {odd!r} (U+{ord(odd):04X}); write ASCII "
                       f"digits: {allowed}")
    return text


def parse_size(text: str | int | float, where: str = "size", *, allow_zero: bool = False, whole: bool = True) -> int:
    """Bytes in ``text`` as an int (a float if ``whole`` is false: a quoted figure such as 12.7KiB).

    Raises :class:`BadValue` naming the text and what is allowed."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = _float(text)
    else:
        m = _SIZE_RE.match(_ascii(text, "size", where, SIZE_HELP))
        if not m:
            raise BadValue(f"size {shown(text)}{_where(where)} is not {SIZE_HELP}")
        if m["unit"] and m["unit"].startswith("b") and m["unit"] != "bytes" and m["unit"] != "byte":
            raise BadValue(f"size {shown(text)}{_where(where)} is in bits; sizes are bytes: write B ({SIZE_HELP})")
        value = float(m["num"]) * _PREFIX[m["prefix"] or ""]
    if not math.isfinite(value):
        raise BadValue(f"size {shown(text)}{_where(where)} is not finite; allowed: {SIZE_HELP}")
    if value < 0 or (value == 0 and not allow_zero):
        what = "negative" if value < 0 else "zero"
        raise BadValue(f"size {shown(text)}{_where(where)} is {what}; allowed: a positive number of bytes, {SIZE_HELP}")
    if value > MAX_SIZE:
        raise BadValue(f"size {shown(text)}{_where(where)} is over {MAX_SIZE} bytes (1 EiB), the largest size xferlab "
                       "takes")
    if not whole:
        return value  # type: ignore[return-value]
    rounded = round(value)
    if abs(value - rounded) > 1e-9 * max(1.0, value):
        raise BadValue(f"size {shown(text)}{_where(where)} is {value:g} bytes, not a whole number of bytes")
    return int(rounded)


def parse_time(text: str | int | float, where: str = "time", *, allow_zero: bool = True) -> float:
    """Seconds in ``text``. Plain numbers are seconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = _float(text)
    else:
        m = _TIME_RE.match(_ascii(text, "time", where, TIME_HELP))
        if not m:
            raise BadValue(f"time {shown(text)}{_where(where)} is not {TIME_HELP}")
        value = float(m["num"]) * _TIME_SCALE[m["unit"]]
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise BadValue(f"time {shown(text)}{_where(where)} must be a finite {'non-negative' if allow_zero else 'positive'} time, {TIME_HELP}")
    if value > MAX_TIME:
        raise BadValue(f"time {shown(text)}{_where(where)} is over {MAX_TIME:.0e} s (~31 years), the longest time xferlab "
                       "takes")
    return value


def parse_rate(text: str | int | float, where: str = "rate") -> float:
    """Bytes per second in ``text``. Plain numbers are bytes per second; ``b/s``/``bps`` are bits."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = _float(text)
    else:
        m = _RATE_RE.match(_ascii(text, "rate", where, RATE_HELP))
        if not m:
            raise BadValue(f"rate {shown(text)}{_where(where)} is not {RATE_HELP}")
        bits = m["unit"] in ("b/s", "bps")
        value = float(m["num"]) * _PREFIX[m["prefix"] or ""] / (8.0 if bits else 1.0)
    if not math.isfinite(value) or value <= 0:
        raise BadValue(f"rate {shown(text)}{_where(where)} must be positive and finite, {RATE_HELP}")
    if value < MIN_RATE:
        raise BadValue(f"rate {shown(text)}{_where(where)} is under {MIN_RATE:g} B/s, the slowest rate xferlab takes")
    return value


def parse_list(text: str, item: Callable[[str, str], float] = parse_size, where: str = "list",
               max_items: int = 100_000) -> list:
    """Values of a comma-separated list whose items are values or doubling ranges ``A..B``."""
    values: list = []
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise BadValue(f"{where} {shown(text)} is empty; allowed: {LIST_HELP}")
    for part in parts:
        if not part:
            raise BadValue(f"{where} {shown(text)} has an empty item; allowed: {LIST_HELP}")
        if ".." in part:
            lo_text, hi_text = part.split("..", 1)
            lo, hi = item(lo_text, where), item(hi_text, where)
            if hi < lo:
                raise BadValue(f"range {shown(part)} in {where} ends below its start; allowed: A..B with A <= B")
            if lo <= 0:
                raise BadValue(f"range {shown(part)} in {where} must start above zero to double")
            value = lo
            while value <= hi * (1 + 1e-12):
                values.append(value)
                value = value * 2
                if len(values) > max_items:
                    raise BadValue(f"{where} {shown(text)} has more than {max_items} items")
        else:
            values.append(item(part, where))
    return values


def parse_sizes(text: str, where: str = "--sizes") -> np.ndarray:
    """Sizes of a LIST as a float64 array of bytes (exact up to 2**53)."""
    return np.asarray(parse_list(text, parse_size, where), dtype=np.float64)


def _pick(value: float, units: list[tuple[str, float]]) -> tuple[float, str]:
    for name, scale in units:
        if abs(value) >= scale:
            return value / scale, name
    return value / units[-1][1], units[-1][0]


def _num(value: float, digits: int = 4) -> str:
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        return text
    return text


_BINARY_UNITS = [("PiB", 2.0**50), ("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10), ("B", 1.0)]
_DECIMAL_UNITS = [("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)]


def _exact(value: float, decimals: int) -> bool:
    scaled = value * 10**decimals
    return abs(scaled - round(scaled)) < 1e-9 * max(1.0, scaled)


def format_size(n: float, base: int | None = None) -> str:
    """``4096`` → ``4 KiB``, ``1.6e9`` → ``1.6 GB``, ``13049`` → ``12.74 KiB``.

    ``base`` 2 or 10 forces 1024- or 1000-based prefixes. By default the size is written in
    binary prefixes unless it is a short decimal figure (1.6 GB) and not a short binary one.
    """
    binary = _pick(float(n), _BINARY_UNITS)
    if base == 2 or (base is None and _exact(binary[0], 3)):
        value, unit = binary
    else:
        decimal = _pick(float(n), _DECIMAL_UNITS)
        value, unit = decimal if base == 10 or _exact(decimal[0], 2) else binary
    return f"{_num(value)} {unit}"


def format_time(seconds: float) -> str:
    """``7.3877e-07`` → ``738.8 ns``."""
    if seconds == 0:
        return "0 s"
    units = [("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("ps", 1e-12)]
    value, unit = _pick(float(seconds), units)
    return f"{_num(value)} {unit}"


def format_rate(bytes_per_second: float) -> str:
    """``1.24e10`` → ``12.4 GB/s`` (decimal prefixes, as the seeds and vendors quote rates)."""
    units = [("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)]
    value, unit = _pick(float(bytes_per_second), units)
    return f"{_num(value)} {unit}"


_COUNT = re.compile(r"^([0-9]+)(Ki|Mi|Gi|K|M|G)?$")
_COUNT_SCALE = {None: 1, "K": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
COUNT_HELP = "a whole number, with K/M/G (x 1000) or Ki/Mi/Gi (x 1024) as sizes are written, e.g. 16Mi"


def parse_count(text: str | int, where: str) -> int:
    """A whole count of things (not bytes): 16777216, 16Mi (x 2^20) or 16M (x 10^6), at least 1."""
    match = _COUNT.match(str(text).strip())
    if not match:
        raise BadValue(f"{where} {shown(str(text))} is not a count; allowed: {COUNT_HELP}")
    value = int(match.group(1)) * _COUNT_SCALE[match.group(2)]
    if value < 1:
        raise BadValue(f"{where} {shown(str(text))} is not a count; allowed: 1 or more")
    return value

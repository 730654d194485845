"""The vocabulary of ``--json``: every field name any command prints, declared once, with its JSON
type, its unit and what it means. A name is ``<quantity>_<statistic>_<unit>``: the unit is the
name's last words (``median_seconds``, ``latency_median_seconds``, ``best_bytes_per_second``,
``median_ci_low_seconds``), the statistic comes right before the unit (or before ``ci_low``/``ci_high``
and the unit), the quantity first and left out where the unit says it (bytes per second: a bandwidth).
A field without a unit is one of a few declared kinds (a count, a label, a flag, a ratio, a value in
the unit its row names, a nested object or list). The schemas of the commands' outputs
(:mod:`.commands`) and the table in docs/cli.md are made from this one table.

Types: ``integer``, ``number`` (an integer is a number too), ``string``, ``boolean``, ``object``,
``array`` or ``any``; a ``?`` after it: the value may be null. A ``number`` may always be null: a
figure that is not finite (or was not measured) is printed as null, never as NaN."""

from __future__ import annotations

from dataclasses import dataclass

from .vocabulary import TABLE

#: Units, as the last words of a name: what they mean.
UNITS = {
    "bytes_per_second": "bytes per second (B/s; a bandwidth or a rate of data)",
    "flops_per_second": "floating-point operations per second",
    "per_second": "events per second (1/s)",
    "seconds": "seconds (s)",
    "bytes": "bytes (B)",
    "relative_error": "a relative error: (measured or modelled - reference) / reference; 0.05 is 5 %",
    "utc": "a UTC time, ISO 8601 (2026-11-25T10:00:00.000000Z)",
}

#: Kinds of field without a unit.
UNITLESS = {
    "count": "a whole number of things (samples, transfers, requests, elements, ranks)",
    "label": "a name, an id, a path or text",
    "flag": "true or false",
    "ratio": "a ratio of two like quantities (a speedup, a share, a CoV, a normalized time); 1 is 100 %",
    "value": "a figure in the unit its row names (its `unit` or `metric` field)",
    "object": "a nested object: fields of its own, or entries by name",
    "list": "a list",
}

#: Statistics, by the word a name uses for each: the same statistic has the same word everywhere.
STATISTICS = {
    "median": "the median of the timed samples",
    "mean": "the arithmetic mean (OSU's figure, where OSU's definition is followed)",
    "min": "the smallest sample",
    "max": "the largest sample",
    "best": "the best sample: the highest rate, or the shortest time",
    "p99": "the 99th percentile",
    "p90": "the 90th percentile",
    "worst": "the largest in magnitude",
    "cov": "the coefficient of variation: sample standard deviation / mean",
    "ci_low": "the low end of the median's 95 % confidence interval (after the statistic it belongs to)",
    "ci_high": "the high end of the median's 95 % confidence interval",
}

TYPES = ("integer", "number", "string", "boolean", "object", "array", "any")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    nullable: bool
    unit: str  # a key of UNITS, or of UNITLESS
    meaning: str

    def schema(self) -> dict:
        """This field's JSON Schema (its type, null where allowed, its unit and meaning as the description)."""
        kinds = {"any": None, "number": "number"}.get(self.type, self.type)
        out: dict = {} if kinds is None else {"type": [kinds, "null"] if self.nullable else kinds}
        return {**out, "description": f"{self.meaning} [{self.unit}]"}


def _parse(table: str) -> dict[str, Field]:
    """The vocabulary's lines, ``name  type[?]  unit-or-kind  meaning``, as Fields (a name given twice is an error)."""
    out: dict[str, Field] = {}
    for line in table.strip().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, kind, unit, meaning = line.split(None, 3)
        if name in out:
            raise ValueError(f"output field '{name}' is declared twice")
        nullable = kind.endswith("?") or kind == "number"
        out[name] = Field(name, kind.rstrip("?"), nullable, unit, meaning.strip())
    return out


FIELDS = _parse(TABLE)


def unit_of_name(name: str) -> str | None:
    """The unit a name ends in (the longest that fits), or None."""
    for unit in sorted(UNITS, key=len, reverse=True):
        if name == unit or name.endswith("_" + unit):
            return unit
    return None


def breaks_rule(field: Field) -> str | None:
    """Why ``field`` breaks the naming rule, or None."""
    import re

    if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", field.name):
        return "is not snake_case"
    if field.type not in TYPES:
        return f"has type '{field.type}'; types: {', '.join(TYPES)}"
    if field.unit not in UNITS and field.unit not in UNITLESS:
        return f"has unit '{field.unit}'; units: {', '.join(UNITS)}; unitless kinds: {', '.join(UNITLESS)}"
    ends = unit_of_name(field.name)
    if field.unit in UNITS and ends != field.unit:
        return f"is in {field.unit} but its name does not end in _{field.unit}"
    if field.unit in UNITLESS and ends is not None:
        return f"ends in _{ends} but is declared {field.unit}"
    if ends is not None:
        words = field.name[: len(field.name) - len(ends)].rstrip("_").split("_")
        for i, word in enumerate(words):
            rest = words[i + 1:]
            after = [w for w in "_".join(rest).replace("ci_low", "").replace("ci_high", "").split("_") if w]
            if word in STATISTICS and any(w not in STATISTICS for w in after):
                return f"has the statistic '{word}' before {'_'.join(rest)}: the statistic comes right before the unit"
    return None


def markdown() -> str:
    """docs/cli.md's vocabulary table, made from :data:`FIELDS` (tests/test_schemas.py checks it is current)."""
    lines = ["| field | type | unit or kind | meaning |", "| --- | --- | --- | --- |"]
    for f in sorted(FIELDS.values(), key=lambda f: f.name):
        kind = f.type + (" or null" if f.nullable else "")
        lines.append(f"| `{f.name}` | {kind} | {f.unit} | {f.meaning} |")
    return "\n".join(lines) + "\n"

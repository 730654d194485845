"""The JSON Schema (draft 2020-12) of each command's ``--json`` output, built from the vocabulary.

Each command declares its top-level fields, its rows' fields and the fields of the objects nested in
them as words: a field name, with ``?`` after it where the field may be absent. Every name is one of
:data:`.fields.FIELDS`; the rows and the nested objects declared here allow no other field, so a
renamed field fails validation, unless the declaration ends in ``...`` (the fields it names are
checked, others allowed: a device record, whose fields are its API's). An object or list field
without a declaration of its own is open (an inventory, a run's parameters, a map of links by name)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .fields import FIELDS
from .shapes import SHAPES

DRAFT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Output:
    """One command's output: ``rows`` (each result row), ``top`` (the object's other fields; ``command``,
    ``results`` and ``notes`` are every command's) and ``nested`` (field name: its objects' fields)."""

    rows: str
    top: str = ""
    nested: dict[str, str] = field(default_factory=dict)


def _outputs() -> dict[str, Output]:
    return {name: Output(**shape) for name, shape in SHAPES.items()}


OUTPUTS = _outputs()


OPEN = "..."  # the last word of a declaration whose object may hold other fields too


def _words(spec: str) -> list[tuple[str, bool]]:
    return [(w.rstrip("?"), not w.endswith("?")) for w in spec.split() if w != OPEN]


def _object(spec: str, nested: dict[str, str], depth: int = 0) -> dict:
    properties, required = {}, []
    for name, always in _words(spec):
        declared = FIELDS[name]
        one = declared.schema()
        inner = nested.get(name)
        if inner is not None and depth < 4:
            shape = _object(inner, nested, depth + 1)
            if declared.type == "array":
                one["items"] = shape
            else:
                one = {**one, **{k: v for k, v in shape.items() if k != "type"}}
        properties[name] = one
        if always:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": spec.split()[-1:] == [OPEN]}


def names_used(output: Output) -> set[str]:
    """Every field name ``output`` declares, at any level."""
    specs = [output.rows, output.top, *output.nested.values()]
    return {name for spec in specs for name, _ in _words(spec)}


@lru_cache(maxsize=None)
def output_schema(command: str) -> dict:
    """The JSON Schema of ``command``'s ``--json`` output (a key of :data:`OUTPUTS`)."""
    output = OUTPUTS[command]
    top = _object(output.top, output.nested)
    rows = _object(output.rows, output.nested)
    top["properties"] = {
        "command": {"type": "string", "pattern": "^" + re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", command) + "( |$)",  # ECMA-262-safe
                    "description": "the command that printed this object [label]"},
        "results": {"type": "array", "items": rows, "description": "the rows, one object each [list]"},
        **top["properties"],
        "notes": {"type": "array", "items": {"type": "string"},
                  "description": "what the table's notes say, one line each [list]"},
    }
    top["required"] = ["command", "results", *top["required"]]
    return {"$schema": DRAFT, "title": f"xferlab {command} --json",
            "description": f"What `xferlab {command} --json` prints on stdout: one JSON object.", **top}


def schema_name(command: str) -> str | None:
    """The key of :data:`OUTPUTS` for the ``command`` field of a printed object (``scenario run deceval``:
    ``scenario run``): itself, or the longest key it starts with, followed by a space."""
    if command in OUTPUTS:
        return command
    found = [k for k in OUTPUTS if command.startswith(k + " ")]
    return max(found, key=len) if found else None

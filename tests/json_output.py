"""What every `--json` output must be: strict JSON (no NaN or Infinity) holding one object that its
command's schema (``xferlab schema output COMMAND``, src/xferlab/schemas) accepts. conftest's ``Cli``
checks every `--json` run of the suite with it; tests/test_schemas.py runs every command once."""

from __future__ import annotations

import json


def _refuse(constant: str):
    raise ValueError(f"{constant} is not JSON (a missing value is null)")


def strict_loads(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_refuse)


def check_output(text: str) -> dict:
    """Parse ``text`` strictly and validate it against its command's schema; returns the object."""
    from jsonschema import Draft202012Validator

    from xferlab.schemas import output_schema, schema_name

    doc = strict_loads(text)
    assert isinstance(doc, dict) and isinstance(doc.get("command"), str), "a --json output is one object with its command"
    name = schema_name(doc["command"])
    assert name is not None, f"no schema for the output of '{doc['command']}' (src/xferlab/schemas/shapes.py)"
    errors = sorted(Draft202012Validator(output_schema(name)).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, f"'{doc['command']}' --json does not match its schema:\n" + "\n".join(
        f"  at {'/'.join(map(str, e.absolute_path)) or 'top'}: {e.message}" for e in errors[:10])
    return doc

"""What ``--json`` prints: one vocabulary of field names (:mod:`.fields`, each name declared once with
its type, unit and meaning) and, built from it, the JSON Schema of every command's output
(:mod:`.commands`; ``xferlab schema output COMMAND`` prints one)."""

from .commands import OUTPUTS, output_schema, schema_name
from .fields import FIELDS, UNITLESS, UNITS, Field

__all__ = ["FIELDS", "Field", "OUTPUTS", "UNITLESS", "UNITS", "output_schema", "schema_name"]

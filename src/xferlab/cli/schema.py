"""`xferlab schema`: the JSON Schema of xferlab's YAML files."""

from __future__ import annotations

import json

import typer

from ..errors import BadValue
from ..links.presets import link_file_schema

SCHEMAS = {"links": link_file_schema}


def schema(which: str = typer.Argument("links", help=f"Which file: {', '.join(SCHEMAS)}.")) -> None:
    """Print the JSON Schema of a YAML file xferlab reads (links: the --links file)."""
    if which not in SCHEMAS:
        raise BadValue(f"schema '{which}' is not known; allowed: {', '.join(SCHEMAS)}")
    print(json.dumps(SCHEMAS[which](), indent=1))

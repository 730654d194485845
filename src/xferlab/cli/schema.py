"""`xferlab schema`: the JSON Schema of xferlab's YAML files."""

from __future__ import annotations

import json

import typer

from ..errors import BadValue
from ..links.presets import link_file_schema

def _system() -> dict:
    from ..system.models import System

    return System.model_json_schema(by_alias=True)


def _workflow() -> dict:
    from ..system.models import Workflow

    return Workflow.model_json_schema(by_alias=True)


def _sweep() -> dict:
    from ..sweep.spec import Sweep

    return Sweep.model_json_schema(by_alias=True)


SCHEMAS = {"links": link_file_schema, "system": _system, "workflow": _workflow, "sweep": _sweep}


def schema(which: str = typer.Argument("links", help=f"Which file: {', '.join(SCHEMAS)}.")) -> None:
    """Print the JSON Schema of a YAML file xferlab reads: links (the --links file), system, workflow, sweep."""
    if which not in SCHEMAS:
        raise BadValue(f"schema '{which}' is not known; allowed: {', '.join(SCHEMAS)}")
    print(json.dumps(SCHEMAS[which](), indent=1))

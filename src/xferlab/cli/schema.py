"""`xferlab schema`: the JSON Schema of xferlab's YAML files, and of each command's `--json` output."""

from __future__ import annotations

import json
from typing import Optional

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


def schema(which: str = typer.Argument("links", help=f"Which file: {', '.join(SCHEMAS)}; or output COMMAND.",
                                       metavar="FILE|output"),
           command: Optional[list[str]] = typer.Argument(None, help="With output: the command's words, e.g. "
                                                         "`measure device` (draft 2020-12).", metavar="COMMAND")
           ) -> None:
    """Print the JSON Schema of a YAML file xferlab reads: links (the --links file), system, workflow, sweep; or, as
    `schema output COMMAND`, of what COMMAND --json prints (docs/cli.md, 'JSON output')."""
    if which == "output":
        from ..schemas import OUTPUTS, output_schema

        words = " ".join(command or [])
        if words not in OUTPUTS:
            shown = f"'{words}' is not a command with --json" if words else "output needs a command"
            raise BadValue(f"schema output: {shown}; known: {', '.join(sorted(OUTPUTS))}")
        print(json.dumps(output_schema(words), indent=1))
        return
    if which not in SCHEMAS:
        raise BadValue(f"schema '{which}' is not known; allowed: {', '.join(SCHEMAS)}, output COMMAND")
    if command:
        raise BadValue(f"schema {which} takes no more words (got '{' '.join(command)}'); only `schema output COMMAND` does")
    print(json.dumps(SCHEMAS[which](), indent=1))

"""Reading YAML files into pydantic models, with errors that name the file, the line and the field.

PyYAML's composer keeps each node's position; a validation error's location (a path of keys and
indices) is walked down the node tree to the line it came from, so a user reads
``error: workflow.yaml:12: edges[0].bytes: -5 is not …`` rather than a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import BadFile
from ..files import load_yaml, read_text

M = TypeVar("M", bound=BaseModel)


def _line(node: yaml.Node | None, loc: tuple) -> int | None:
    """1-based line of the node at ``loc`` (as deep as the path goes), or None."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


def where(loc: tuple) -> str:
    """``("edges", 0, "bytes")`` → ``edges[0].bytes``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def load(path: str | Path, model: type[M], what: str) -> M:
    """The model in the YAML file at ``path``; :class:`BadFile` naming file, line and field if not."""
    path = Path(path)
    text = read_text(path, f"{what} file")
    try:  # parsed once: the node tree gives the lines, the data is constructed from it
        node, data = load_yaml(text, f"{what} file '{path}'")
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f":{mark.line + 1}" if mark else ""
        raise BadFile(f"{path}{at}: not valid YAML: {getattr(error, 'problem', None) or str(error).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise BadFile(f"{path}: a {what} file holds a mapping of fields, not {type(data).__name__}")
    try:
        return model.model_validate(data, context={"file": str(path)})
    except ValidationError as error:
        first = error.errors()[0]
        loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        message = str(first["msg"]).removeprefix("Value error, ")
        # Checks across fields name their place at the start of the message: "edges[1].to: …".
        named = re.match(r"(\w+(?:\[\d+\])?(?:\.\w+)*(?:\[\d+\])?): ", message)
        if named and len(loc) <= 1:
            loc = tuple(int(p) if p.isdigit() else p for p in re.findall(r"\w+", named[1]))
            message = message[named.end():]
        line = _line(node, loc)
        if first["type"] == "extra_forbidden":
            message = "unknown field"
        elif first["type"] == "missing":
            message = "is required"
        field = where(loc)
        raise BadFile(f"{path}{f':{line}' if line else ''}: {field + ': ' if field else ''}{message}") from None

"""Fitted link profiles: saved as link files (YAML) in a profiles folder and resolved by name like
presets. The folder is ``$XFERLAB_PROFILES``, else ``./xferlab-results/profiles``."""

from __future__ import annotations

import os
from pathlib import Path
import yaml

from ..errors import BadFile, BadValue

ENV = "XFERLAB_PROFILES"
DEFAULT = Path("xferlab-results") / "profiles"


def folder() -> Path:
    return Path(os.environ[ENV]) if os.environ.get(ENV) else DEFAULT


def path_of(name: str) -> Path:
    return folder() / f"{name}.yaml"


def save(name: str, fields: dict, note: str) -> Path:
    """Write profile ``name`` (fields of a link model); a preset's name is refused."""
    from ..links.presets import preset_fields

    if not name or any(c in name for c in "/:,= "):
        raise BadValue(f"profile name '{name}' is not allowed: use letters, digits, '-', '_' and '.'")
    if preset_fields(name) is not None:
        raise BadValue(f"profile name '{name}' clashes with a preset; choose another name")
    target = path_of(name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {note}\n" + yaml.safe_dump({"links": {name: fields}}, sort_keys=False))
    except OSError as error:
        raise BadFile(f"profile '{target}' cannot be written: {error.strerror or error}") from None
    return target


def find(name: str):
    """The Link saved as profile ``name``, or None."""
    target = path_of(name)
    if not target.is_file():
        return None
    from ..links.presets import load_links

    return load_links(target).get(name)


def names() -> list[str]:
    return sorted(p.stem for p in folder().glob("*.yaml")) if folder().is_dir() else []



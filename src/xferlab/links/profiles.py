"""Fitted profiles: where they are kept. A profile is a link file (YAML) in the profiles folder,
``$XFERLAB_PROFILES`` or else ``./xferlab-results/profiles``, that :func:`xferlab.links.presets.resolve`
finds by name like a preset; ``fit`` writes them through :func:`xferlab.links.presets.save_profile`.

A profile file holds a ``links:`` mapping with the profile's link; a memory-tier profile
(:mod:`xferlab.fit.tiers`) also holds a ``tier:`` section, its full profile, and its ``links:``
entry is the tier's link view (empty when the tier has none).

This module only stores: it reads and writes files and knows which names can be file names.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..errors import BadFile, BadValue
from ..files import read_text

ENV = "XFERLAB_PROFILES"
DEFAULT = Path("xferlab-results") / "profiles"
TIER = "tier"  # the top-level key of a memory tier's full profile
MAX_NAME = 120  # characters: a profile name is a file name


def folder() -> Path:
    return Path(os.environ[ENV]) if os.environ.get(ENV) else DEFAULT


def storable(name: str) -> bool:
    """Whether ``name`` can be a profile's file name: 1..120 printable characters, no separators."""
    return (0 < len(name) <= MAX_NAME and name.isprintable() and not name.startswith(".")
            and not any(c in name for c in "/\\:,= "))


def check_storable(name: str) -> None:
    if not storable(name):
        shown = name if len(name) <= 40 else f"{name[:40]}… ({len(name)} characters)"
        raise BadValue(f"profile name {shown!r} is not allowed: use 1 to {MAX_NAME} letters, digits, '-', '_' "
                       "and '.' (not first)")


def path_of(name: str) -> Path:
    check_storable(name)
    return folder() / f"{name}.yaml"


def read(target: Path):
    """The parsed YAML of a profile file."""
    try:
        return yaml.safe_load(read_text(target, "profile"))
    except yaml.YAMLError as error:
        raise BadFile(f"profile '{target}' is not valid YAML: {str(error).splitlines()[0]}") from None


def write(name: str, data: dict, note: str) -> Path:
    """Write profile ``name``'s file (``data``: its ``links:`` and maybe ``tier:``); returns the path."""
    target = path_of(name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {note}\n" + yaml.safe_dump(data, sort_keys=False))
    except OSError as error:
        raise BadFile(f"profile '{target}' cannot be written: {error.strerror or error}") from None
    return target


def names() -> list[str]:
    return sorted(p.stem for p in folder().glob("*.yaml")) if folder().is_dir() else []

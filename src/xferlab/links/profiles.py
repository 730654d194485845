"""Fitted profiles: where they are kept. A profile is a link file (YAML) in the profiles folder
that :func:`xferlab.links.presets.resolve` finds by name like a preset; ``fit`` writes them through
:func:`xferlab.links.presets.save_profile`. The folder is ``$XFERLAB_PROFILES``, or else
``profiles`` beside the results store as the store resolves its path without ``--store``
(:func:`xferlab.store.resolve_path`): beside ``$XFERLAB_STORE``, else ``./xferlab-results/profiles``.
So a fit saved from one folder is found from any other when either variable is absolute.

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
DEFAULT = Path("xferlab-results") / "profiles"  # beside the store's default ./xferlab-results/xferlab.duckdb
TIER = "tier"  # the top-level key of a memory tier's full profile
MAX_NAME = 120  # characters: a profile name is a file name
MAX_NAME_BYTES = 250  # in UTF-8: with ".yaml", within the 255 bytes a file name has on Linux
FORBIDDEN = "/\\:,= "  # separators of paths and of LINK overrides


def folder() -> Path:
    """``$XFERLAB_PROFILES``, else ``profiles`` beside the store that a command without ``--store``
    uses (``$XFERLAB_STORE``'s folder, else ``./xferlab-results``)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    from ..store import resolve_path  # deferred: the store loads DuckDB, which a model alone never needs

    return resolve_path(None)[0].parent / DEFAULT.name


def storable(name: str) -> bool:
    """Whether ``name`` can be a profile's file name: 1..120 printable characters (at most 250
    bytes in UTF-8), none of ``/ \\ : , =`` or a space, not starting with ``.``."""
    return (0 < len(name) <= MAX_NAME and name.isprintable() and not name.startswith(".")
            and not any(c in name for c in FORBIDDEN) and len(name.encode("utf-8")) <= MAX_NAME_BYTES)


def check_storable(name: str) -> None:
    """Refuse a name that cannot be a profile's file name (before anything touches the file system)."""
    if not storable(name):
        shown = name if len(name) <= 40 else f"{name[:40]}… ({len(name)} characters)"
        raise BadValue(f"profile name {shown!r} is not allowed: use 1 to {MAX_NAME} printable characters "
                       f"(at most {MAX_NAME_BYTES} bytes in UTF-8) without '/', '\\', ':', ',', '=' or spaces, "
                       "not starting with '.'")


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

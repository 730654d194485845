"""Fitted profiles: where they are kept. A profile is a link file (YAML) in the profiles folder
that :func:`xferlab.links.presets.resolve` finds by name like a preset; ``fit`` writes them through
:func:`xferlab.links.presets.save_profile`. The folder never depends on the working directory: it is
``$XFERLAB_PROFILES``, else the user's data folder, ``$XDG_DATA_HOME/xferlab/profiles`` (by default
``~/.local/share/xferlab/profiles``), so a fit saved from one folder is found from any other, as a
preset is. A caller that keeps its profiles elsewhere (the lab, under its ``--out``) says so with
:func:`using`, for the length of a ``with`` block.

A profile file holds a ``links:`` mapping with the profile's link; a memory-tier profile
(:mod:`xferlab.fit.tiers`) also holds a ``tier:`` section, its full profile, and its ``links:``
entry is the tier's link view (empty when the tier has none).

This module only stores: it reads and writes files and knows which names can be file names.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator, Optional

import yaml

from ..errors import BadFile, BadValue
from ..files import load_yaml, read_text

ENV = "XFERLAB_PROFILES"
_USING: ContextVar[Optional[Path]] = ContextVar("xferlab_profiles", default=None)
TIER = "tier"  # the top-level key of a memory tier's full profile
MAX_NAME = 120  # characters: a profile name is a file name
MAX_NAME_BYTES = 250  # in UTF-8: with ".yaml", within the 255 bytes a file name has on Linux
FORBIDDEN = "/\\:,= "  # separators of paths and of LINK overrides


def folder() -> Path:
    """The profiles folder: the one :func:`using` set, else ``$XFERLAB_PROFILES``, else
    ``$XDG_DATA_HOME/xferlab/profiles`` (``~/.local/share/xferlab/profiles``)."""
    chosen = _USING.get()
    if chosen is not None:
        return chosen
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or ""
    base = Path(data).expanduser() if Path(data).expanduser().is_absolute() else Path.home() / ".local" / "share"
    return base / "xferlab" / "profiles"


@contextmanager
def using(path: Path) -> Iterator[Path]:
    """Within the block, profiles are saved to and found in ``path``."""
    token = _USING.set(Path(path))
    try:
        yield Path(path)
    finally:
        _USING.reset(token)


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
    try:  # the bounded loader every user file goes through (aliases that expand it past 10x are refused)
        return load_yaml(read_text(target, "profile"), f"profile '{target}'")[1]
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

"""Fitted profiles: saved as link files (YAML) in a profiles folder and resolved by name like
presets. The folder is ``$XFERLAB_PROFILES``, else ``./xferlab-results/profiles``.

A profile file holds a ``links:`` mapping with the profile's link; a memory-tier profile
(:mod:`xferlab.fit.tiers`) also holds a ``tier:`` section, its full profile, and its ``links:``
entry is the tier's link view (empty when the tier has none). :func:`find` reads only the
``links:`` part of such a file.
"""

from __future__ import annotations

import os
from pathlib import Path
import yaml

from ..errors import BadFile, BadValue

ENV = "XFERLAB_PROFILES"
DEFAULT = Path("xferlab-results") / "profiles"
TIER = "tier"  # the top-level key of a memory tier's full profile


def folder() -> Path:
    return Path(os.environ[ENV]) if os.environ.get(ENV) else DEFAULT


def path_of(name: str) -> Path:
    return folder() / f"{name}.yaml"


def check_name(name: str) -> None:
    """Refuse a profile name with separators in it or of a preset's shape (it would never be found)."""
    from ..links.presets import preset_fields

    if not name or any(c in name for c in "/:,= "):
        raise BadValue(f"profile name '{name}' is not allowed: use letters, digits, '-', '_' and '.'")
    if preset_fields(name) is not None:
        raise BadValue(f"profile name '{name}' clashes with a preset; choose another name")


def check_prefix(prefix: str) -> None:
    """Refuse a prefix for fitted profiles (``PREFIX-h2d-pageable``, ``PREFIX-node0``) that is itself a
    preset's name or could not make a valid name; checked before anything is fitted or written."""
    check_name(prefix)


def save(name: str, fields: dict | None, note: str, tier: dict | None = None) -> Path:
    """Write profile ``name`` (fields of a link model, or None for a tier without a link view, with
    the tier's profile in ``tier``); a preset's name is refused."""
    check_name(name)
    target = path_of(name)
    data: dict = {"links": {name: fields} if fields is not None else {}}
    if tier is not None:
        data[TIER] = tier
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {note}\n" + yaml.safe_dump(data, sort_keys=False))
    except OSError as error:
        raise BadFile(f"profile '{target}' cannot be written: {error.strerror or error}") from None
    return target


def read(target: Path):
    """The parsed YAML of a profile file."""
    try:
        return yaml.safe_load(target.read_text())
    except OSError as error:
        raise BadFile(f"profile '{target}' cannot be read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise BadFile(f"profile '{target}' is not valid YAML: {str(error).splitlines()[0]}") from None


def find(name: str):
    """The Link saved as profile ``name``, or None."""
    target = path_of(name)
    if not target.is_file():
        return None
    from ..links.presets import build, load_links

    data = read(target)
    if not (isinstance(data, dict) and TIER in data):
        return load_links(target).get(name)
    links = data.get("links")
    if not isinstance(links, dict):
        raise BadFile(f"profile '{target}' must hold a mapping 'links:' beside its 'tier:'")
    if not isinstance(links.get(name), dict):
        raise BadValue(f"profile '{name}' ({target}) is a memory tier without a link view (it needs both a STREAM "
                       "copy bandwidth and an idle latency); it cannot be used as a link")
    try:
        return build({**links[name], "name": name}, f"link '{name}' in {target}")
    except BadValue as error:
        raise BadFile(str(error)) from None


def names() -> list[str]:
    return sorted(p.stem for p in folder().glob("*.yaml")) if folder().is_dir() else []

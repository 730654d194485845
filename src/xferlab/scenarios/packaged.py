"""The packaged systems and workflows (YAML files in ``systems/`` and ``workflows/`` beside this
module): the seeds' testbeds and applications, found by name wherever a SYSTEM or WORKFLOW is asked for."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import BadValue
from ..files import exists
from ..units import shown
from ..system.yamlfile import load

PACKAGED = resources.files(__package__)


def packaged(kind: str) -> list[str]:
    """The packaged files of ``kind`` (``systems`` or ``workflows``), by name."""
    return sorted(p.name.removesuffix(".yaml") for p in PACKAGED.joinpath(kind).iterdir() if p.name.endswith(".yaml"))


def load_named(text: str, model, kind: str):
    """A YAML file by path, or a packaged one by name (`seed-testbed`, `deceval` …)."""
    path = Path(text)
    if not exists(path) and text in packaged(kind + "s"):
        with resources.as_file(PACKAGED.joinpath(kind + "s", text + ".yaml")) as found:
            return load(found, model, kind)
    if not exists(path):
        raise BadValue(f"{kind} {shown(text)} is neither a file nor a packaged {kind}; packaged: {', '.join(packaged(kind + 's'))}")
    return load(path, model, kind)

"""Links by name: presets, ``name:key=value`` overrides, and user-defined links in YAML.

A LINK is written ``NAME[:KEY=VALUE,KEY=VALUE…]``. NAME is

* a preset family with its parameters in the name: ``pcie<gen>x<lanes>`` (``pcie3x16``),
  ``cxl<1|2|3>x<lanes>`` (``cxl2x16``; add ``-lopt`` for CXL 3 latency-optimized flits),
  ``cxl-seed`` (the seed's penalty model), ``nvlink<1–5>``, ``c2c``, ``ib-<edr|hdr|ndr|xdr>``,
  ``eth<Gb/s>`` (``eth100``), ``roce<Gb/s>``, ``simple:bandwidth=12GB/s,latency=1us``;
* a link defined in a YAML file passed with ``--links FILE`` (see :func:`load_links`);
* or a path to a YAML file defining one link.

KEY=VALUE overrides any field of the link's model (``pcie3x16:mps=128,ecrc=true``,
``cxl2x16:penalty=0.6``, ``nvlink2:links=3,latency=1us``); the model validates them like YAML.

To add an interconnect: write its model (a :class:`~xferlab.links.base.Link` subclass with a
``kind``), add it to :data:`LINK_TYPES`, and add a :class:`Family` for its preset names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Union

import yaml
from pydantic import Field, TypeAdapter, ValidationError

from ..errors import BadFile, BadValue, UnknownName, suggest
from ..files import load_yaml, read_text
from . import profiles
from .base import Link
from .cxl import CxlLink
from .network import EthernetLink, InfinibandLink
from .nvlink import NvlinkLink
from .pcie import PcieLink
from .piecewise import PiecewiseLink
from .simple import SimpleLink

LINK_TYPES: dict[str, type[Link]] = {
    cls.model_fields["kind"].default: cls
    for cls in (PcieLink, CxlLink, NvlinkLink, InfinibandLink, EthernetLink, SimpleLink, PiecewiseLink)
}

AnyLink = Annotated[
    Union[PcieLink, CxlLink, NvlinkLink, InfinibandLink, EthernetLink, SimpleLink, PiecewiseLink],
    Field(discriminator="kind"),
]


@dataclass(frozen=True)
class Family:
    """Preset names of one shape, e.g. ``pcie<gen>x<lanes>``, and the link fields they stand for."""

    pattern: str
    make: Callable[[re.Match], dict[str, Any]]

    def match(self, name: str) -> dict[str, Any] | None:
        m = re.fullmatch(self.pattern, name, re.ASCII)  # ASCII digits only: not pcie３x16 or pcie3x١٦
        return self.make(m) if m else None


def _cxl(m: re.Match) -> dict[str, Any]:
    version, lanes, lopt = int(m["version"]), int(m["lanes"]), bool(m["lopt"])
    if version not in (1, 2, 3):
        raise BadValue(f"CXL version {version} in link '{m.string}' is not allowed; allowed: cxl1, cxl2, cxl3")
    fields: dict[str, Any] = {"kind": "cxl", "lanes": lanes, "gts": 64.0 if version == 3 else 32.0}
    if lopt:
        fields["flit_variant"] = "latency-optimized"
    return fields


FAMILIES: tuple[Family, ...] = (
    Family(r"pcie(?P<gen>\d+)x(?P<lanes>\d+)", lambda m: {"kind": "pcie", "gen": int(m["gen"]), "lanes": int(m["lanes"])}),
    Family(r"cxl(?P<version>\d+)x(?P<lanes>\d+)(?P<lopt>-lopt)?", _cxl),
    Family(r"cxl-seed", lambda m: {"kind": "cxl", "gts": 8.0, "lanes": 16, "penalty": 0.6}),
    Family(r"nvlink(?P<gen>\d+)", lambda m: {"kind": "nvlink", "generation": m["gen"]}),
    Family(r"c2c", lambda m: {"kind": "nvlink", "generation": "c2c"}),
    Family(r"ib-(?P<speed>[a-z]+)", lambda m: {"kind": "infiniband", "speed": m["speed"]}),
    Family(r"eth(?P<speed>\d+)", lambda m: {"kind": "ethernet", "speed_gbps": int(m["speed"])}),
    Family(r"roce(?P<speed>\d+)", lambda m: {"kind": "ethernet", "speed_gbps": int(m["speed"]), "protocol": "rocev2", "mtu": 9000}),
    Family(r"simple", lambda m: {"kind": "simple"}),  # simple:bandwidth=12GB/s,latency=1us
    Family(r"piecewise", lambda m: {"kind": "piecewise"}),  # piecewise:bandwidths=40GB/s;10GB/s,breakpoints=4MiB
)

#: The presets that ``xferlab model presets`` lists (every family accepts other parameters too).
PRESETS: tuple[str, ...] = (
    "pcie3x8", "pcie3x16", "pcie4x16", "pcie5x16", "pcie6x16", "pcie7x16",
    "cxl-seed", "cxl1x16", "cxl2x8", "cxl2x16", "cxl3x16", "cxl3x16-lopt",
    "nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "c2c",
    "ib-edr", "ib-hdr", "ib-ndr", "ib-xdr", "eth10", "eth100", "eth400", "roce100", "roce400",
)

MAX_SPEC = 1000  # characters in a LINK string
MAX_LINK_NAME = 120  # characters in the name of a link a --links file defines


def shown(value: Any, limit: int = 40) -> str:
    """``value`` quoted (control characters escaped) and cut to ``limit`` characters, for a message."""
    text = str(value)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text)} characters)"
NAME_SHAPES = ("pcie<gen>x<lanes>, cxl<1-3>x<lanes>[-lopt], cxl-seed, nvlink<1-5>, c2c, ib-<edr|hdr|ndr|xdr>, eth<Gb/s>, "
               "roce<Gb/s>, simple:bandwidth=<rate>[,latency=<time>], "
               "piecewise:bandwidths=<rate>;<rate>…,breakpoints=<size>;…[,packet=<size>,packet_overhead=<time>]")


def _validation_message(error: ValidationError, fields_of: type[Link] | None) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if not isinstance(p, int))
    if first["type"] == "extra_forbidden":
        allowed = [f for f in (fields_of.model_fields if fields_of else {}) if f not in ("kind", "name")]
        return f"unknown parameter '{where}'; allowed: {', '.join(allowed)}"
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "literal_error" or first["type"].endswith("_parsing") or first["type"] == "missing":
        return f"{where}: {message} (got {shown(first.get('input'))})" if first["type"] != "missing" else f"{where} is required"
    return message


def build(fields: dict[str, Any], where: str) -> Link:
    """Validate ``fields`` (with a ``kind``) into a Link; errors name ``where`` and the bad value."""
    kind = fields.get("kind")
    cls = LINK_TYPES.get(str(kind))
    if cls is None:
        raise BadValue(f"{where}: kind {shown(kind)} is not a link kind; allowed: {', '.join(LINK_TYPES)}")
    try:
        return cls.model_validate(fields)
    except ValidationError as error:
        raise BadValue(f"{where}: {_validation_message(error, cls)}") from None


def parse_overrides(text: str, spec: str) -> dict[str, str]:
    """``mps=256,ecrc=false`` → ``{"mps": "256", "ecrc": "false"}``."""
    overrides: dict[str, str] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise BadValue(f"link '{spec}': override '{item}' is not KEY=VALUE (e.g. pcie3x16:mps=128,ecrc=true)")
        if key in ("kind", "name"):
            raise BadValue(f"link '{spec}': '{key}' cannot be overridden; choose another preset instead")
        if key in overrides:
            raise BadValue(f"link '{spec}': '{key}' is given twice ({key}={overrides[key]}, {key}={value}); give it once")
        overrides[key] = value
    return overrides


def preset_fields(name: str) -> dict[str, Any] | None:
    """The fields a preset name stands for, or None if no family has that shape."""
    for family in FAMILIES:
        fields = family.match(name)
        if fields is not None:
            return fields
    return None


def resolve(spec: str, user_links: dict[str, Link] | None = None) -> Link:
    """The Link a LINK string names. Raises :class:`XferlabError` naming the bad part."""
    spec = spec.strip()
    if not spec:
        raise BadValue("link '' is empty; give a preset such as pcie3x16 (see `xferlab model presets`)")
    if not spec.isprintable():
        odd = next(c for c in spec if not c.isprintable())
        raise BadValue(f"link {spec[:60]!r} has the control character {odd!r}; a LINK is printable text such as "
                       "pcie3x16:mps=256")
    if len(spec) > MAX_SPEC:
        raise BadValue(f"link '{spec[:40]}…' is {len(spec)} characters long; a LINK has at most {MAX_SPEC}")
    if re.search(r"\.ya?ml$", spec):
        links = load_links(spec)
        if len(links) != 1:
            raise BadValue(f"link file '{spec}' defines {len(links)} links; name one of them with --links {spec} NAME")
        return next(iter(links.values()))
    name, colon, override_text = spec.partition(":")
    user_links = user_links or {}
    if name in user_links:
        base = user_links[name].model_dump()
    else:
        base = preset_fields(name)
        if base is None and profiles.storable(name):
            profile = find_profile(name)
            base = profile.model_dump() if profile is not None else None
        if base is None:
            allowed = sorted(user_links) + list(PRESETS)
            odd = next((c for c in name if not c.isascii()), None)
            note = f" (it has the character {odd!r}, U+{ord(odd):04X}: preset names are ASCII)" if odd else ""
            raise UnknownName(f"link '{name}' is not a preset or a defined link{note}; {suggest(name, allowed)} "
                              f"(shapes: {NAME_SHAPES})")
    overrides = parse_overrides(override_text, spec) if colon else {}
    return build({**base, **overrides, "name": spec}, f"link '{spec}'")


def load_links_files(paths) -> dict[str, Link]:
    """The links of several ``--links`` files; a name defined in two of them is refused."""
    links: dict[str, Link] = {}
    first: dict[str, Path] = {}
    for path in paths or []:
        for name, link in load_links(path).items():
            if name in links:
                raise BadFile(f"link '{name}' is defined in both '{first[name]}' and '{path}'; rename one")
            links[name], first[name] = link, Path(path)
    return links


def load_links(path: str | Path) -> dict[str, Link]:
    """Links defined in a YAML file::

        links:
          my-gen4:             # a link from scratch: kind and its fields
            kind: pcie
            gen: 4
            lanes: 8
            latency: 900ns
          slow-cxl:            # or start from a preset and override fields
            preset: cxl2x16
            penalty: 0.7
    """
    path = Path(path)
    try:
        data = load_yaml(read_text(path, "link file"), f"link file '{path}'")[1]
    except yaml.YAMLError as error:
        raise BadFile(f"link file '{path}' is not valid YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("links"), dict) or set(data) != {"links"}:
        raise BadFile(f"link file '{path}' must hold one mapping 'links:' of names to link definitions")
    links: dict[str, Link] = {}
    for name, fields in data["links"].items():
        name = str(name)
        if not (0 < len(name) <= MAX_LINK_NAME and name.isprintable() and ":" not in name and name == name.strip()):
            raise BadFile(f"link file '{path}': link name {shown(name)} is not allowed; a name is 1 to {MAX_LINK_NAME} "
                          "printable characters without ':' (it separates a LINK's name from its overrides) or "
                          "spaces at either end")
        where = f"link '{name}' in {path}"
        if preset_fields(str(name)) is not None:
            raise BadFile(f"{where}: '{name}' is a preset's name; a link file may not redefine it (call it "
                          f"'my-{name}', for example)")
        if not isinstance(fields, dict):
            raise BadFile(f"{where}: expected a mapping of fields, got {type(fields).__name__}")
        fields = dict(fields)
        preset = fields.pop("preset", None)
        if preset is not None:
            try:
                base = resolve(str(preset), links)
            except (BadValue, UnknownName) as error:
                raise BadFile(f"{where}: preset: {error}") from None
            fields = {**base.model_dump(), **fields}
        try:
            links[str(name)] = build({**fields, "name": str(name)}, where)
        except BadValue as error:
            raise BadFile(str(error)) from None
    return links


def check_profile_name(name: str) -> None:
    """Refuse a profile name (or a prefix of fitted profiles' names) that cannot be a file name or has a
    preset's shape (it would never be found); checked before anything is fitted or written."""
    profiles.check_storable(name)
    if preset_fields(name) is not None:
        raise BadValue(f"profile name '{name}' clashes with a preset; choose another name")


def find_profile(name: str) -> Link | None:
    """The Link saved as profile ``name``, or None."""
    target = profiles.path_of(name)
    if not target.is_file():
        return None
    data = profiles.read(target)
    if not (isinstance(data, dict) and profiles.TIER in data):
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


def save_profile(name: str, fields: dict | None, note: str, tier: dict | None = None) -> Path:
    """Write profile ``name`` (fields of a link model, or None for a tier without a link view, with
    the tier's profile in ``tier``); a preset's name is refused."""
    check_profile_name(name)
    data: dict = {"links": {name: fields} if fields is not None else {}}
    if tier is not None:
        data[profiles.TIER] = tier
    return profiles.write(name, data, note)


def link_file_schema() -> dict[str, Any]:
    """JSON Schema of a link file (``xferlab schema``)."""
    schema = TypeAdapter(dict[str, AnyLink]).json_schema()
    return {"title": "xferlab link file", "type": "object", "additionalProperties": False,
            "properties": {"links": schema}, "required": ["links"]}

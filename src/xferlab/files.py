"""Reading a file a user names (a links, system or workflow YAML): bounded, UTF-8, one-line errors.

A user file is read only if it is a regular file of at most :data:`MAX_BYTES`; at most that many
bytes plus one are read, so ``--links /dev/zero`` or a FIFO cannot grow memory without end, and a
file that is not UTF-8 is refused naming the byte offset, not with a ``UnicodeDecodeError``.

:func:`load_yaml` parses such text once and refuses a document whose aliases expand it far beyond
its own size (a "billion laughs" file: 80 lines whose anchors, nested eight deep, stand for 10^8
values, which validation would walk) or refer to themselves, and one that gives a key twice in a
mapping (PyYAML would keep the last silently).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

from .errors import BadFile

#: PyYAML's safe loader, in C (libyaml) where this PyYAML has it: ~10x faster on large files.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_BYTES = 4 * 2**20  # 4 MiB: ~60,000 links, or a chained workflow of ~46,000 tasks in flow style


def exists(path: str | Path) -> bool:
    """Whether the user's ``path`` names an existing file or folder. A name no file can have (longer
    than the system allows, a NUL byte) names none: it is then an unknown name, not an error of the OS."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def read_text(path: str | Path, what: str, limit: int = MAX_BYTES) -> str:
    """The text of the user's file ``path`` (``what`` names it in errors: "link file", "workflow file")."""
    path = Path(path)
    where = f"{what} '{path}'"
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (then fstat refuses it) instead of
        # waiting for ever; on a regular file it changes nothing.
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise BadFile(f"{where} is not a regular file (a device, a pipe or a folder); give a YAML file")
            data = handle.read(limit + 1)
    except IsADirectoryError:
        raise BadFile(f"{where} is a folder; give a YAML file") from None
    except OSError as error:
        raise BadFile(f"{where} cannot be read: {error.strerror or error}") from None
    if len(data) > limit:
        raise BadFile(f"{where} is larger than {limit // 2**20} MiB, the most xferlab reads from a user file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadFile(f"{where} is not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start}") from None


def _expanded(root: yaml.Node, limit: int) -> int | None:
    """Nodes in the tree ``root`` stands for once every alias is replaced by what it names (counted
    per distinct node, in linear time), or None if a node contains itself; stops counting past ``limit``."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        if done:
            on_path.discard(key)
            size[key] = min(limit + 1, 1 + sum(size[id(child)] for child in children))
            continue
        if key in size:
            continue
        if key in on_path:
            return None
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                return None
            if id(child) not in size:
                stack.append((child, False))
    return size[id(root)]


def load_yaml(text: str, where: str) -> tuple[yaml.Node | None, object]:
    """The node tree (for line numbers) and the data of the YAML document ``text``; :class:`BadFile`
    naming ``where`` if its aliases make it more than ten times its own size (plus 100,000 nodes) or
    make it contain itself. Raises ``yaml.YAMLError`` for text that is not YAML."""
    loader = SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _check_keys(node, where)
        if "*" not in text:  # no alias (*name) anywhere: nothing can expand, skip the walks
            return node, _construct(loader, node, where)
        limit = 10 * _count(node) + 100_000
        expanded = _expanded(node, limit)
        if expanded is None:
            raise BadFile(f"{where} has an alias inside what it names (a structure that contains itself)")
        if expanded > limit:
            raise BadFile(f"{where} has aliases (*name) that expand it to more than {limit:,} values, ten times "
                          "its own size; write the repeated parts out or use fewer nested aliases")
        return node, _construct(loader, node, where)
    finally:
        loader.dispose()


def _construct(loader, node: yaml.Node, where: str) -> object:
    """The data of ``node``; a scalar Python cannot hold (an integer of over 4300 digits) is a BadFile."""
    try:
        return loader.construct_document(node)
    except (ValueError, OverflowError) as error:
        raise BadFile(f"{where} has a value that cannot be read: {str(error).split(';')[0][:120]}") from None


def _nodes(root: yaml.Node):
    """Each distinct node of the tree once (an alias's target once)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _count(root: yaml.Node) -> int:
    """Distinct nodes of the tree (an alias's target counted once)."""
    return sum(1 for _ in _nodes(root))


def _check_keys(root: yaml.Node, where: str) -> None:
    """A key given twice in one mapping: PyYAML keeps the last silently, and the user's first is lost."""
    for node in _nodes(root):
        if isinstance(node, yaml.MappingNode):
            keys: set = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if (key.tag, key.value) in keys:
                        raise BadFile(f"{where}, line {key.start_mark.line + 1}: key {key.value[:60]!r} comes twice in one "
                                      "mapping; give each key once")
                    keys.add((key.tag, key.value))

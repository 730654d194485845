"""Reading a file a user names (a links, system or workflow YAML): bounded, UTF-8, one-line errors.

A user file is read only if it is a regular file of at most :data:`MAX_BYTES`; at most that many
bytes plus one are read, so ``--links /dev/zero`` or a FIFO cannot grow memory without end, and a
file that is not UTF-8 is refused naming the byte offset, not with a ``UnicodeDecodeError``.
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

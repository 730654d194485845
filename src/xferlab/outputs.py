"""Output paths: checked before any work, written whole or not at all.

``check_folder`` and ``check_file`` refuse, before a command measures or computes anything, an output
that could not be written: an existing file where a folder is wanted (or the reverse), a parent that
is a file, a place where nothing can be created (``/proc``, a read-only file system, no permission).
Permission bits are not trusted (root passes every ``os.access`` test, and /proc says it is
writable): the nearest existing folder is asked to hold a new, empty temporary folder, removed at
once; nothing else is created.

``write_atomic`` writes a file through a temporary file beside it, renamed into place only when
complete; on any OSError (a full disk, a quota, a file size limit) the temporary is removed and the
error is one line naming the path and the system's reason, so no empty or partial file is left.

``write_json`` writes strict JSON (RFC 8259) that way: a value JSON has no number for (NaN, an
infinity) is written as ``null``, never as the bare ``NaN`` Python's json module writes by default,
which jq, JavaScript and most parsers refuse; numpy scalars, paths, dates and sets are made JSON-safe
by :func:`jsonable`, which the store uses for what it keeps as JSON too.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .errors import BadFile


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _nearest(path: Path) -> Path:
    """The nearest existing path among ``path`` and its parents."""
    path = path.absolute()
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(path.anchor)


def _probe(folder: Path, what: str) -> None:
    """Can a new entry be created in the existing folder ``folder``? Create and remove one."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".xferlab-check-", dir=folder))
    except OSError as error:
        raise BadFile(f"{what} cannot be written: '{folder}': {_reason(error)}") from None


def _writable_folder(folder: Path, what: str) -> None:
    """``folder`` can be written in, or the nearest existing folder above it can (to create it)."""
    nearest = folder if folder.exists() else _nearest(folder)
    if not nearest.is_dir():
        raise BadFile(f"{what} cannot be written: '{nearest}' is a file, not a folder")
    _probe(nearest, what)


def check_folder(path: Path, option: str) -> Path:
    """``path`` is an existing folder xferlab can write in, or one that can be created."""
    path = Path(path)
    what = f"{option} '{path}'"
    try:
        if path.exists() and not path.is_dir():
            raise BadFile(f"{what} is an existing file; give a folder")
        _writable_folder(path, what)
    except OSError as error:  # a path the system will not look at: a name too long, a loop of links
        raise BadFile(f"{what} cannot be written: {_reason(error)}") from None
    return path


def check_file(path: Path, option: str, example: str = "report.html") -> Path:
    """``path`` is a file that can be written (replaced if it exists) and whose folder exists or can be
    created; ``example`` is the file name a folder given instead is told to hold."""
    path = Path(path)
    what = f"{option} '{path}'"
    try:
        if path.is_dir():
            raise BadFile(f"{what} is a folder; give a file name such as {path / example}")
        if path.exists() and not path.is_file():
            raise BadFile(f"{what} is not a regular file (a device or a pipe); give a file name")
        _writable_folder(path.parent, what)
    except OSError as error:  # a path the system will not look at: a name too long, a loop of links
        raise BadFile(f"{what} cannot be written: {_reason(error)}") from None
    return path


def write_atomic(path: Path, write: Callable[[Path], None], what: str = "file") -> Path:
    """Call ``write(temporary)`` on a temporary file beside ``path``, then rename it to ``path``.
    On an OSError (or an interruption) the temporary is removed; an OSError becomes a one-line
    BadFile naming ``path`` and the reason (``No space left on device``)."""
    path = Path(path)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=f"{path.suffix}.partial", dir=path.parent)
        os.close(fd)
        temporary = Path(name)
        write(temporary)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
        temporary = None
    except OSError as error:
        raise BadFile(f"{what} '{path}' cannot be written: {_reason(error)}") from None
    finally:
        if temporary is not None:
            try:
                temporary.unlink()
            except OSError:
                pass
    return path


def write_text(path: Path, text: str, what: str = "file") -> Path:
    """``text`` (UTF-8) written whole to ``path`` or not at all (see :func:`write_atomic`)."""
    return write_atomic(path, lambda t: t.write_text(text, encoding="utf-8"), what)


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars, paths, dates and sets made JSON-safe; non-finite floats become None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def write_json(path: Path, data: Any, what: str = "file") -> Path:
    """``data`` as strict JSON (indented; missing values and non-finite numbers as null), written
    whole to ``path`` or not at all."""
    return write_text(path, json.dumps(jsonable(data), indent=1, allow_nan=False) + "\n", what)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["check_file", "check_folder", "jsonable", "write_atomic", "write_json", "write_text"]

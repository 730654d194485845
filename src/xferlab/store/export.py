"""Exporting one run's samples to a file: CSV or Parquet (written by DuckDB's COPY, no pyarrow needed;
Parquet carries the run and its failures in its key-value metadata) or JSON (one object ``{"run": {...},
"samples": [...], "failures": [...]}``). JSON and Parquet exports are shards ``results import`` reads.

The file is written beside its destination under a temporary name, ``.{name}.{pid}.{hex}.tmp``, and
renamed into place, so an export that fails or is interrupted (SIGINT, SIGTERM) leaves any earlier
file as it was and removes its temporary file; an existing file is replaced only when asked. The
temporary files of earlier exports to the same destination whose process is gone (killed with
SIGKILL, say) are removed when the next export starts.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

from .. import signals
from ..errors import BadFile, BadValue
from .connect import no_space
from .db import OutputError, Store
from .rows import jsonable

FORMATS = ("csv", "parquet", "json")


def check_format(fmt: str, where: str = "--format") -> str:
    """``fmt`` if it is an export format; otherwise :class:`BadValue` naming it."""
    if fmt not in FORMATS:
        raise BadValue(f"export format '{fmt}' in {where} is not allowed; allowed: {', '.join(FORMATS)}")
    return fmt


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale(path: Path) -> list[Path]:
    """Remove the temporary files of exports to ``path`` whose writer process is gone; returns them."""
    pattern = re.compile(r"\." + re.escape(path.name) + r"\.(\d+)\.[0-9a-f]{8}\.tmp")
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match and not _alive(int(match.group(1))) and entry.is_file() and not entry.is_symlink():
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass
    return removed


def _unwritable(path: Path, error: BaseException) -> BadFile:
    if no_space(error):
        reason = "no space left on device"
    else:
        reason = getattr(error, "strerror", None) or str(error).strip().splitlines()[0]
    return BadFile(f"output file '{path}' cannot be written: {reason}; nothing was written there")


def export_run(store: Store, ref: str, fmt: str, path: Path, *, overwrite: bool = False) -> Path:
    """Write the samples of run ``ref`` to ``path`` (a folder gets ``<run_id>.<fmt>``); returns the file."""
    check_format(fmt)
    run_id = store.resolve_run(ref)
    path = path.expanduser()
    if path.is_dir():
        path = path / f"{run_id}.{fmt}"
    target = path.resolve()
    if target in (store.path.resolve(), Path(str(store.path.resolve()) + ".wal")):
        raise BadFile(f"output file '{path}' is the results store itself; give another -o FILE")
    if path.exists() and not overwrite:
        raise BadFile(f"output file '{path}' exists; give --force to overwrite it, or -o another file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"output file '{path}' cannot be written: folder '{path.parent}': "
                      f"{error.strerror or error}") from None
    remove_stale(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        if fmt == "json":
            doc = {"run": store.run(run_id), "samples": store.samples(run_id), "failures": store.failures(run_id)}
            temporary.write_text(json.dumps(jsonable(doc), indent=1) + "\n")
        else:
            try:
                from .shards import META_KEY

                shard = {META_KEY: jsonable({"run": store.run(run_id), "failures": store.failures(run_id)})}
                store.copy_samples(run_id, temporary, fmt, shard if fmt == "parquet" else None)
            except OutputError as error:
                raise _unwritable(path, error.__cause__ or error) from None
        os.replace(temporary, path)
    except OSError as error:
        raise _unwritable(path, error) from None
    except BaseException as error:  # SIGINT/SIGTERM (or an error it caused): the temporary file goes, the CLI says this
        interrupt = signals.behind(error)
        if interrupt is not None:
            interrupt.xferlab_note = f"export of run {run_id} to '{path}' stopped; nothing was written there"  # type: ignore[attr-defined]
        raise
    finally:
        temporary.unlink(missing_ok=True)
    return path

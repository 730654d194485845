"""Exporting one run's samples to a file: CSV or Parquet (written by DuckDB's COPY, no pyarrow needed)
or JSON (one object ``{"run": {...}, "samples": [...], "failures": [...]}``).

The file is written beside its destination under a temporary name and renamed into place, so an
export that fails leaves any earlier file as it was; an existing file is replaced only when asked.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from ..errors import BadFile, BadValue
from .db import jsonable

if TYPE_CHECKING:
    from .db import Store

FORMATS = ("csv", "parquet", "json")


def check_format(fmt: str, where: str = "--format") -> str:
    """``fmt`` if it is an export format; otherwise :class:`BadValue` naming it."""
    if fmt not in FORMATS:
        raise BadValue(f"export format '{fmt}' in {where} is not allowed; allowed: {', '.join(FORMATS)}")
    return fmt


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def export_run(store: "Store", ref: str, fmt: str, path: Path, *, overwrite: bool = False) -> Path:
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
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        if fmt == "json":
            doc = {"run": store.run(run_id), "samples": store.samples(run_id), "failures": store.failures(run_id)}
            temporary.write_text(json.dumps(jsonable(doc), indent=1) + "\n")
        else:
            options = "FORMAT csv, HEADER" if fmt == "csv" else "FORMAT parquet"
            with store._lock:
                store.conn.execute(f"COPY (SELECT * FROM samples WHERE run_id = {_sql_text(run_id)} ORDER BY seq) "
                                   f"TO {_sql_text(str(temporary))} ({options})")
        os.replace(temporary, path)
    except OSError as error:
        raise BadFile(f"output file '{path}' cannot be written: {error.strerror or error}") from None
    except duckdb.IOException as error:
        raise BadFile(f"output file '{path}' cannot be written: {str(error).splitlines()[0]}") from None
    finally:
        temporary.unlink(missing_ok=True)
    return path

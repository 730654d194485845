"""The results store: every run xferlab records, in one embedded DuckDB file.

It holds, per run, the command and its arguments, the machine's inventory and the software
versions, a tidy table of samples (one row per timed iteration, with its placement: suite, test,
metric, value, size, threads, CPUs, memory node, mode, iteration, warm-up flag, seconds, bytes,
and anything else as JSON ``params``), and the measurements that failed with their reason. The
tables are described in :mod:`xferlab.store.schema`.

The file is ``./xferlab-results/xferlab.duckdb`` unless ``--store PATH`` or ``XFERLAB_STORE`` says
otherwise. Every write is one transaction (DuckDB keeps a write-ahead log), so a run killed midway
keeps every sample committed before. DuckDB lets one process open the file at a time.

Use::

    with open_store(path) as store:                      # path None: XFERLAB_STORE or the default
        run = store.start_run("measure memory", argv, inventory, versions, params)
        store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                                 "value": 1.2e10, "size_bytes": 1 << 28, "threads": 4, "iteration": 0}])
        store.finish_run(run, "ok", summary)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from ..errors import BadFile, Unavailable, XferlabError
from .db import RUNNING, STATUSES, Store
from .export import FORMATS, check_format
from .schema import SAMPLE_COLUMNS, SCHEMA_VERSION, prepare

__all__ = ["DEFAULT_PATH", "ENV", "FORMATS", "RUNNING", "SAMPLE_COLUMNS", "SCHEMA_VERSION", "STATUSES",
           "STORE_HELP", "Store", "check_format", "open_store", "resolve_path"]

DEFAULT_PATH = Path("xferlab-results") / "xferlab.duckdb"
ENV = "XFERLAB_STORE"
STORE_HELP = f"Results store, a DuckDB file (default: $XFERLAB_STORE, else ./{DEFAULT_PATH})."

_LOCK_PID = re.compile(r"PID (\d+)")


def resolve_path(path: Path | str | None) -> tuple[Path, str]:
    """The store file to use and where that choice came from: the given path, ``XFERLAB_STORE``, or
    the default ``./xferlab-results/xferlab.duckdb``."""
    if path is not None and str(path) != "":
        return Path(path).expanduser(), ""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser(), f"from {ENV}"
    return DEFAULT_PATH, "the default"


def open_store(path: Path | str | None = None, *, read_only: bool = False) -> Store:
    """Open (and, unless ``read_only``, create) the results store at ``path``.

    ``read_only`` is for commands that only look: the file must exist, nothing is created. Raises
    :class:`BadFile` naming the path when it is a folder, cannot be created, is not a DuckDB database
    or not an xferlab store of this schema version, and :class:`Unavailable` when another process
    has it open."""
    target, source = resolve_path(path)
    where = f"store '{target}'" + (f" ({source})" if source else "")
    if target.is_dir():
        raise BadFile(f"{where} is a folder; give the path of a file, such as {target / DEFAULT_PATH.name}")
    if read_only:
        if not target.exists():
            origin = f"{source}; " if source else ""
            raise BadFile(f"no results store at '{target}' ({origin}nothing has been recorded there; "
                          f"give --store PATH or set {ENV})")
    else:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BadFile(f"{where} cannot be created: folder '{target.parent}': {error.strerror or error}") from None
    try:
        conn = duckdb.connect(str(target), read_only=read_only)
    except duckdb.Error as error:
        raise _open_error(error, where) from None
    try:
        prepare(conn, where, read_only)
    except XferlabError:
        conn.close()
        raise
    except duckdb.Error as error:
        conn.close()
        raise BadFile(f"{where} cannot be used: {str(error).splitlines()[0]}") from None
    return Store(target, conn, read_only=read_only, where=where)


def _open_error(error: duckdb.Error, where: str) -> Exception:
    """DuckDB's complaint on opening, as one line for people."""
    text = str(error)
    if "lock" in text.lower():
        pid = _LOCK_PID.search(text)
        holder = f" (PID {pid.group(1)})" if pid else ""
        return Unavailable(f"{where} is in use by another xferlab process{holder}; DuckDB lets one process open "
                           "it at a time: wait for that one to finish, or give another --store")
    if "not a valid DuckDB database" in text:
        return BadFile(f"{where} is not a DuckDB database file (left as it is); give another --store")
    if "different configuration" in text:
        return Unavailable(f"{where} is already open in this process in another mode (read-only or writable)")
    return BadFile(f"{where} cannot be opened: {text.splitlines()[0]}")

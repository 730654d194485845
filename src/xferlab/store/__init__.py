"""The results store: every run xferlab records, in one embedded DuckDB file.

It holds, per run, the command and its arguments, the machine's inventory and the software
versions, the process recording it, a tidy table of samples (one row per timed iteration, with its
placement: suite, test, metric, value, size, threads, CPUs, memory node, mode, host memory kind,
kernel arguments, iteration, warm-up and validated flags, seconds, bytes, and anything else as JSON ``params``), and the measurements that
failed with their reason. The tables are described in :mod:`xferlab.store.schema`.

The file is ``./xferlab-results/xferlab.duckdb`` unless ``--store PATH`` or ``XFERLAB_STORE`` says
otherwise.

Concurrency. DuckDB lets one process write a file at a time, and others read it only while nobody
writes. The store therefore holds the file only for the length of one operation: each write
(start a run, add one step's samples, add a failure, finish a run) is one transaction on a connection
opened for it and closed right after, and each query opens the file read-only. A process that finds
the file held waits its turn, polling every 20 ms to 200 ms, up to ``XFERLAB_STORE_WAIT`` seconds
(default 120 s to write, 30 s to read; 0: do not wait), then fails with one line naming the holder's
PID. So ``results list``, ``report`` or ``fit`` answer while a measurement runs, and two measurements
recording into one store both finish. Every write is one transaction (DuckDB keeps a write-ahead
log), so a run killed midway keeps every sample committed before; SIGINT/SIGTERM arriving during a
commit act right after it.

Incomplete runs. A running run records its owner (host name, PID and the process's start time from
/proc/PID/stat); it is *incomplete* when its status is still ``running`` and that process no longer
exists on this host (or its owner let go of it without finishing it).

Damage, full disks. Every DuckDB error becomes one line naming the store (:class:`BadFile`); a
damaged store says how to recover (export what is readable with ``xferlab results export RUN``, then
move the file aside). A store is read whole before it is opened to record (every column of every table,
and the newest key of each single-column primary key through its index, on a read-only connection; then a
sample inserted and rolled back reads the samples' key index; DuckDB verifies each block's checksum as it
reads it): a damaged one is refused with one line naming the table, before any run starts and without a
byte of it written; ``results list`` reads it whole too. Blocks that nothing reads (free ones, index
blocks off those paths) are not verified. A write
that finds the disk full fails with "no space left on device", keeping everything committed before;
a store file this process was creating is removed again (with its ``.wal``) when the creation fails.

Use::

    with open_store(path) as store:                      # path None: XFERLAB_STORE or the default
        run = store.start_run("measure memory", argv, inventory, versions, params)
        store.add_samples(run, [{"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second",
                                 "value": 1.2e10, "size_bytes": 1 << 28, "threads": 4, "iteration": 0}])
        store.finish_run(run, "ok", summary)
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from ..errors import BadFile, XferlabError
from .connect import WAIT_ENV, connect, interrupted_query, translate
from .db import RUNNING, STATUSES, Store
from .export import FORMATS, check_format, export_run
from .schema import SAMPLE_COLUMNS, SCHEMA_VERSION, check, check_insert, prepare

__all__ = ["DEFAULT_PATH", "ENV", "FORMATS", "RUNNING", "SAMPLE_COLUMNS", "SCHEMA_VERSION", "STATUSES",
           "STORE_HELP", "Store", "WAIT_ENV", "check_format", "check_store", "export_run", "open_store", "resolve_path"]

DEFAULT_PATH = Path("xferlab-results") / "xferlab.duckdb"
ENV = "XFERLAB_STORE"
STORE_HELP = f"Results store, a DuckDB file (default: $XFERLAB_STORE, else ./{DEFAULT_PATH})."

def resolve_path(path: Path | str | None) -> tuple[Path, str]:
    """The store file to use and where that choice came from: the given path, ``XFERLAB_STORE``, or
    the default ``./xferlab-results/xferlab.duckdb``."""
    if path is not None and str(path) != "":
        return Path(path).expanduser(), ""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser(), f"from {ENV}"
    return DEFAULT_PATH, "the default"


def _looked_at(target: Path, where: str) -> None:
    """A path the system refuses to look at (a name too long, a loop of links) is one line, not a traceback."""
    try:
        target.exists()
    except OSError as error:
        raise BadFile(f"{where} cannot be used: {error.strerror or error}") from None


def check_store(path: Path | str | None) -> Path:
    """Refuse, before any work, a store that could not be created or written: a folder, something that
    is not a regular file, or a new file where nothing can be created (/proc, a parent that is a file, a
    read-only place: tried as outputs.py does, creating nothing). An existing file's content is
    read whole as :func:`open_store` does before recording (a damaged store is refused, nothing written).
    For commands that open the store only after their work (a campaign's nodes, the lab's first stages,
    a sweep's loading)."""
    from ..outputs import check_file

    target, source = resolve_path(path)
    if os.path.isfile(target):  # (False for a name the system will not look at: check_file says why)
        open_store(target).close()
    else:
        check_file(target, "store" + (f" ({source})" if source else ""), example=DEFAULT_PATH.name)
    return target


def open_store(path: Path | str | None = None, *, read_only: bool = False) -> Store:
    """Open (and, unless ``read_only``, create) the results store at ``path``.

    ``read_only`` is for commands that only look: the file must exist, nothing is created. Raises
    :class:`BadFile` naming the path when it is a folder, cannot be created, is not a DuckDB database
    or not an xferlab store of a version this xferlab reads, and :class:`Unavailable` when another
    process held it for longer than ``XFERLAB_STORE_WAIT`` seconds. Opened writable, a version-1 store
    is migrated to version 2. The returned :class:`Store` holds no connection."""
    target, source = resolve_path(path)
    where = f"store '{target}'" + (f" ({source})" if source else "")
    _looked_at(target, where)
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
    created = not read_only and not target.exists()
    if not read_only and not created:
        verify(target, where)
    try:
        conn = connect(target, where, read_only)
    except XferlabError:
        if created:
            _remove_half_created(target)
        raise
    try:
        version = prepare(conn, where, read_only)
        if not read_only and not created:
            check_insert(conn, where)
    except (XferlabError, duckdb.Error, OSError) as error:
        _close(conn)
        if created:
            _remove_half_created(target)
        if isinstance(error, XferlabError):
            raise
        raise translate(error, where, "creating it" if created else "opening it") from None
    except BaseException as error:
        _close(conn)
        if created:
            _remove_half_created(target)
        if isinstance(error, RuntimeError):
            raise interrupted_query(error) from None
        raise
    _close(conn)
    return Store(target, read_only=read_only, where=where, version=version)


def verify(target: Path, where: str) -> None:
    """Before a store is opened to record: read it whole on a read-only connection (schema.check), so that
    a damaged store is refused with one line and not one byte of it written (a writable connection could
    replay its log or migrate it). An empty DuckDB file is left for :func:`prepare` to set up."""
    conn = connect(target, where, read_only=True)
    try:
        if prepare(conn, where, read_only=True, empty_ok=True):
            check(conn, where)
    except (duckdb.Error, OSError) as error:
        raise translate(error, where, "reading it") from None
    except RuntimeError as error:  # DuckDB's "Query interrupted": SIGINT/SIGTERM while the store was read
        raise interrupted_query(error) from None
    finally:
        _close(conn)


def _close(conn: duckdb.DuckDBPyConnection) -> None:
    try:
        conn.close()
    except duckdb.Error:
        pass


def _remove_half_created(target: Path) -> None:
    """Remove the store file this process began to create (and its log), so that it does not block the
    path: only while it is still empty, or holds no xferlab store (the creation itself failed)."""
    try:
        if target.stat().st_size > 0:
            with duckdb.connect(str(target), read_only=True) as conn:
                if conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'meta'").fetchone()[0]:
                    return
    except FileNotFoundError:
        pass
    except (duckdb.Error, OSError):
        pass  # unreadable: the creation failed midway
    for leftover in (target, Path(str(target) + ".wal")):
        try:
            leftover.unlink()
        except OSError:
            pass

"""The tables of the results store, their version, and how a DuckDB file is checked, set up or migrated.

Schema version 3:

* ``meta(key, value)``: ``schema_version``, ``created_utc``, ``created_by`` (and ``migrated_utc``
  once a version-1 store was brought to version 2).
* ``runs``: one row per recorded command: ``run_id`` (primary key, ``YYYYMMDD-HHMMSS-xxxx``, UTC time
  and 4 hex digits, so ids sort by start time), ``started_utc``, ``finished_utc`` (TIMESTAMP, UTC),
  ``command`` (``measure memory``), ``argv`` (JSON list), ``status`` (``running``, ``ok``, ``failed``,
  ``interrupted``), ``xferlab_version``, ``params`` and ``summary`` (JSON objects), and (new in 2) the
  process recording a running run: ``owner_host``, ``owner_pid``, ``owner_started`` (its start time
  in clock ticks since boot, from /proc/PID/stat). A ``running`` run whose owner is gone from this
  host (or that has no owner) is *incomplete*.
* ``inventory(run_id, inventory, versions)``: the machine's inventory and the software versions, JSON.
* ``samples``: tidy, one row per timed iteration (see :data:`SAMPLE_COLUMNS`); ``params`` (JSON) holds
  whatever else describes the iteration (persistence mechanism, DAX flag, load intensity …);
  ``validated`` (new in 2): NULL or true, the probe vouched for the sample; false, the probe ended
  before validating it: kept, but left out of the statistics.
* ``failures(run_id, suite, what, reason, at_utc)``: measurements that failed, with their reason.

New in 3, one column per concept: ``host_kind`` (the host memory kind of a host-device copy or chunk
study: pageable, pinned, svm-fine …) and ``kernel_args`` (a launch's buffer arguments). Version 2
kept both in ``mode`` ("pageable", "0 args"), and kept the runtime backend's description in ``node``.
Now ``mode`` is only a memory mode (memory suite), a runtime mode (runtime suite) or a collaboration
version (collab), ``node`` only a memory node, and the runtime's backend goes to ``params``.

An older store is migrated in place when opened writable (1 to 2: columns added; 2 to 3: the two
columns added and filled from ``mode``, the runtime's ``node`` moved to ``params``). Opened read-only
it is read as it is, and the store maps its columns to version 3's as it reads them.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from .. import __version__
from ..errors import BadFile
from .connect import RECOVER

SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)

#: The ``samples`` columns a caller may give, with their DuckDB types (``run_id`` and ``seq`` are
#: set by the store; ``params`` takes a dict and any keys not named here).
SAMPLE_COLUMNS: dict[str, str] = {
    "suite": "VARCHAR",         # measurement suite: 'memory', 'device' …
    "test": "VARCHAR",          # what was timed: kernel 'triad', 'latency', 'loaded-latency' …
    "metric": "VARCHAR",        # the value's quantity and unit: 'bandwidth_bytes_per_second' …
    "value": "DOUBLE",          # the figure, in the unit its metric names
    "size_bytes": "BIGINT",     # working-set or transfer size
    "threads": "INTEGER",
    "cpus": "VARCHAR",          # CPU list the threads were bound to, e.g. '0-3' or '0,2'
    "node": "VARCHAR",          # memory node the data lived on
    "mode": "VARCHAR",          # memory mode ('memory', 'app-direct' …), runtime mode ('sync' …), collab version ('D', 'U')
    "iteration": "INTEGER",
    "warmup": "BOOLEAN",        # warm-up iterations are kept but left out of statistics
    "seconds": "DOUBLE",        # time of the iteration
    "bytes": "DOUBLE",          # bytes moved in the iteration
    "validated": "BOOLEAN",     # (v2) false: the probe ended before validating it; out of statistics
    "host_kind": "VARCHAR",     # (v3) host memory kind of a host-device copy: 'pageable', 'pinned' …
    "kernel_args": "INTEGER",   # (v3) buffer arguments of a kernel launch
}
REQUIRED_SAMPLE_KEYS = ("suite", "test", "metric", "value")
STATUSES = ("ok", "failed", "interrupted")  # how a run may finish
_V1_SAMPLE_COLUMNS = [name for name in SAMPLE_COLUMNS if name not in ("validated", "host_kind", "kernel_args")]
OWNER_COLUMNS = {"owner_host": "VARCHAR", "owner_pid": "INTEGER", "owner_started": "BIGINT"}

_DDL = [
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY,
        started_utc TIMESTAMP NOT NULL,
        finished_utc TIMESTAMP,
        command VARCHAR NOT NULL,
        argv JSON,
        status VARCHAR NOT NULL,
        xferlab_version VARCHAR,
        params JSON,
        summary JSON,
        owner_host VARCHAR,
        owner_pid INTEGER,
        owner_started BIGINT)""",
    "CREATE TABLE inventory (run_id VARCHAR PRIMARY KEY, inventory JSON, versions JSON)",
    # the column order of a migrated version-1 store: its columns, then the new ones
    "CREATE TABLE samples (run_id VARCHAR NOT NULL, seq BIGINT NOT NULL, "
    + ", ".join(f"{name} {SAMPLE_COLUMNS[name]}" for name in _V1_SAMPLE_COLUMNS)
    + ", params JSON, validated BOOLEAN, host_kind VARCHAR, kernel_args INTEGER, PRIMARY KEY (run_id, seq))",
    "CREATE TABLE failures (run_id VARCHAR NOT NULL, suite VARCHAR, what VARCHAR, reason VARCHAR, "
    "at_utc TIMESTAMP NOT NULL)",
]
_MIGRATE_1_TO_2 = [
    *(f"ALTER TABLE runs ADD COLUMN {name} {kind}" for name, kind in OWNER_COLUMNS.items()),
    "ALTER TABLE samples ADD COLUMN validated BOOLEAN",
]
#: Which version-2 rows held a host memory kind or a launch's arguments in ``mode`` (SQL conditions).
COPY_ROWS = "suite = 'device' AND test IN ('h2d', 'd2h', 'bidir', 'd2d', 'chunks')"
LAUNCH_ROWS = "suite = 'device' AND test = 'launch'"
ARGS_OF_MODE = "TRY_CAST(regexp_extract(mode, '^([0-9]+) args$', 1) AS INTEGER)"
_MIGRATE_2_TO_3 = [
    "ALTER TABLE samples ADD COLUMN host_kind VARCHAR",
    "ALTER TABLE samples ADD COLUMN kernel_args INTEGER",
    f"UPDATE samples SET host_kind = mode, mode = NULL WHERE {COPY_ROWS}",
    f"UPDATE samples SET kernel_args = {ARGS_OF_MODE}, mode = NULL WHERE {LAUNCH_ROWS}",
    "UPDATE samples SET params = json_merge_patch(coalesce(params, '{}'), json_object('backend', node)), node = NULL "
    "WHERE suite = 'runtime' AND node IS NOT NULL",
]
TABLES = ("meta", "runs", "inventory", "samples", "failures")

#: The primary keys looked up (an index scan of the newest key) after a table's full read: DuckDB reads an
#: index's blocks only when it uses the index. The samples' two-column key serves no look-up: a sample
#: inserted and rolled back reads it (:func:`check_insert`).
_KEYS = {"meta": "key", "runs": "run_id", "inventory": "run_id"}


def utc_now() -> datetime:
    """The current UTC time as a naive datetime (the store's TIMESTAMP columns are UTC)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _tables(conn: duckdb.DuckDBPyConnection) -> set[str]:
    rows = conn.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                        "AND schema_name = 'main'").fetchall()
    return {name for (name,) in rows}


def _transaction(conn: duckdb.DuckDBPyConnection, statements: list[str], meta: list[tuple[str, str]],
                 upsert: bool = False) -> None:
    conn.begin()
    try:
        for statement in statements:
            conn.execute(statement)
        insert = "INSERT OR REPLACE INTO meta VALUES (?, ?)" if upsert else "INSERT INTO meta VALUES (?, ?)"
        conn.executemany(insert, meta)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def prepare(conn: duckdb.DuckDBPyConnection, where: str, read_only: bool, empty_ok: bool = False) -> int:
    """Check that ``conn`` holds an xferlab store; create one in an empty database, and migrate a
    version-1 store to version 2, when writable. Returns the schema version the store now has (0: an
    empty database, read-only with ``empty_ok``). ``where`` names the store in error messages."""
    tables = _tables(conn)
    if not tables:
        if read_only and empty_ok:
            return 0
        if read_only:
            raise BadFile(f"{where} is an empty DuckDB database, not an xferlab results store")
        _transaction(conn, _DDL, [("schema_version", str(SCHEMA_VERSION)), ("created_utc", utc_now().isoformat() + "Z"),
                                  ("created_by", f"xferlab {__version__}")])
        return SCHEMA_VERSION
    if "meta" not in tables:
        raise BadFile(f"{where} is a DuckDB database but not an xferlab results store "
                      f"(it has tables {', '.join(sorted(tables))} and no 'meta' table); give another --store")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = row[0] if row else None
    if version not in [str(v) for v in READABLE_VERSIONS]:
        newer = version is not None and version.isdigit() and int(version) > SCHEMA_VERSION
        hint = "a newer xferlab wrote it; upgrade xferlab" if newer else "it was not written by this xferlab"
        raise BadFile(f"{where} has results-store schema version {version}; this xferlab reads versions "
                      f"{', '.join(map(str, READABLE_VERSIONS))} ({hint})")
    missing = [t for t in TABLES if t not in tables]
    if missing:
        raise BadFile(f"{where} lacks the table(s) {', '.join(missing)} of an xferlab results store")
    if version in ("1", "2") and not read_only:
        steps = (_MIGRATE_1_TO_2 if version == "1" else []) + _MIGRATE_2_TO_3
        _transaction(conn, steps, [("schema_version", str(SCHEMA_VERSION)),
                                   ("migrated_utc", utc_now().isoformat() + "Z")], upsert=True)
        return SCHEMA_VERSION
    return int(version)


def full_read(table: str, columns: list[str]) -> str:
    """The query that reads every block of every column of ``table``: a hash of each value, folded (no
    statistic or row count can stand in for it), beside the row count."""
    return f"SELECT count(*), {', '.join(f'bit_xor(hash({name}))' for name in columns)} FROM {table}"


def check(conn: duckdb.DuckDBPyConnection, where: str) -> None:
    """Read every table whole, and the newest key of each single-column primary key through its index.
    DuckDB verifies the checksum of each block it reads from the file (a mismatch is "Corrupt database
    file"), so a damaged block of table data, or one of the index blocks on those look-ups, raises
    :class:`BadFile` naming the store and the table, with how to recover. Blocks that nothing reads (free
    ones, index blocks off the looked-up path) are not verified. Its cost: docs/measure.md and benchmarks/bench_store_check.py."""
    table = "the catalog"
    try:
        columns: dict[str, list[str]] = {}
        for name, column in conn.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE "
                                         "database_name = current_database() AND schema_name = 'main' "
                                         "ORDER BY table_name, column_index").fetchall():
            columns.setdefault(name, []).append(column)
        for table in TABLES:
            conn.execute(full_read(table, columns[table])).fetchall()
            key = _KEYS.get(table)
            if key:
                newest = conn.execute(f"SELECT max({key}) FROM {table}").fetchone()[0]
                if newest is not None:
                    conn.execute(f"SELECT count(*) FROM {table} WHERE {key} = ?", [newest]).fetchall()
    except duckdb.InterruptException:
        raise
    except (duckdb.Error, KeyError) as error:
        raise _damaged(where, f"reading {table if table == 'the catalog' else 'table ' + table}", error) from None


def check_insert(conn: duckdb.DuckDBPyConnection, where: str) -> None:
    """On a writable connection: insert a sample under a run id no run has and roll it back, so that the
    samples' primary-key index is read along the path a new run's samples take (nothing reaches the file)."""
    conn.begin()
    try:
        conn.execute("INSERT INTO samples (run_id, seq, suite, test, metric, value) SELECT coalesce(max(run_id), '') "
                     "|| '~', 1, '', '', '', 0 FROM runs")
    except duckdb.InterruptException:
        raise
    except duckdb.Error as error:
        raise _damaged(where, "the samples table's key index", error) from None
    finally:
        conn.rollback()


def _damaged(where: str, what: str, error: BaseException) -> BadFile:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return BadFile(f"{where} is damaged: {what} failed: {first}; {RECOVER}")

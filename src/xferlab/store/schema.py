"""The tables of the results store, their version, and how a DuckDB file is checked or set up.

Schema version 1:

* ``meta(key, value)``: ``schema_version``, ``created_utc``, ``created_by``.
* ``runs``: one row per recorded command: ``run_id`` (primary key, ``YYYYMMDD-HHMMSS-xxxx``, UTC time
  and 4 hex digits, so ids sort by start time), ``started_utc``, ``finished_utc`` (TIMESTAMP, UTC),
  ``command`` (``measure memory``), ``argv`` (JSON list), ``status`` (``running``, ``ok``, ``failed``,
  ``interrupted``), ``xferlab_version``, ``params`` and ``summary`` (JSON objects).
* ``inventory(run_id, inventory, versions)``: the machine's inventory and the software versions, JSON.
* ``samples``: tidy, one row per timed iteration (see :data:`SAMPLE_COLUMNS`); ``params`` (JSON) holds
  whatever else describes the iteration (persistence mechanism, DAX flag, load intensity …).
* ``failures(run_id, suite, what, reason, at_utc)``: measurements that failed, with their reason.
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from .. import __version__
from ..errors import BadFile

SCHEMA_VERSION = 1

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
    "node": "VARCHAR",          # memory node or device the data lived on
    "mode": "VARCHAR",          # 'dram', 'app-direct', 'app-direct+persist' …
    "iteration": "INTEGER",
    "warmup": "BOOLEAN",        # warm-up iterations are kept but left out of statistics
    "seconds": "DOUBLE",        # time of the iteration
    "bytes": "DOUBLE",          # bytes moved in the iteration
}
REQUIRED_SAMPLE_KEYS = ("suite", "test", "metric", "value")

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
        summary JSON)""",
    "CREATE TABLE inventory (run_id VARCHAR PRIMARY KEY, inventory JSON, versions JSON)",
    "CREATE TABLE samples (run_id VARCHAR NOT NULL, seq BIGINT NOT NULL, "
    + ", ".join(f"{name} {kind}" for name, kind in SAMPLE_COLUMNS.items())
    + ", params JSON, PRIMARY KEY (run_id, seq))",
    "CREATE TABLE failures (run_id VARCHAR NOT NULL, suite VARCHAR, what VARCHAR, reason VARCHAR, "
    "at_utc TIMESTAMP NOT NULL)",
]
TABLES = ("meta", "runs", "inventory", "samples", "failures")


def utc_now() -> datetime:
    """The current UTC time as a naive datetime (the store's TIMESTAMP columns are UTC)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _tables(conn: duckdb.DuckDBPyConnection) -> set[str]:
    rows = conn.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                        "AND schema_name = 'main'").fetchall()
    return {name for (name,) in rows}


def prepare(conn: duckdb.DuckDBPyConnection, where: str, read_only: bool) -> None:
    """Check that ``conn`` holds an xferlab store of this schema version; create it in an empty
    database when writable. ``where`` names the store in error messages."""
    tables = _tables(conn)
    if not tables:
        if read_only:
            raise BadFile(f"{where} is an empty DuckDB database, not an xferlab results store")
        conn.begin()
        try:
            for statement in _DDL:
                conn.execute(statement)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("schema_version", str(SCHEMA_VERSION)), ("created_utc", utc_now().isoformat() + "Z"),
                ("created_by", f"xferlab {__version__}")])
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        return
    if "meta" not in tables:
        raise BadFile(f"{where} is a DuckDB database but not an xferlab results store "
                      f"(it has tables {', '.join(sorted(tables))} and no 'meta' table); give another --store")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = row[0] if row else None
    if version != str(SCHEMA_VERSION):
        newer = version is not None and version.isdigit() and int(version) > SCHEMA_VERSION
        hint = "a newer xferlab wrote it; upgrade xferlab" if newer else "it was not written by this xferlab"
        raise BadFile(f"{where} has results-store schema version {version}; this xferlab reads version "
                      f"{SCHEMA_VERSION} ({hint})")
    missing = [t for t in TABLES if t not in tables]
    if missing:
        raise BadFile(f"{where} lacks the table(s) {', '.join(missing)} of an xferlab results store")

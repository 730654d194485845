"""The :class:`Store`: an open results store, its writes (one transaction each) and its queries.

DuckDB admits one process per database file (readers included), so while a store is open here no
other process can be recording into it. That is how a run left ``running`` by a process that was
killed is told apart from one being recorded now: the latter is in this process's live set.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
from contextlib import contextmanager
from datetime import date, datetime
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Iterator, Mapping

import duckdb
import numpy as np

from .. import __version__
from ..errors import BadValue, Unavailable, UnknownName
from .schema import REQUIRED_SAMPLE_KEYS, SAMPLE_COLUMNS, utc_now

RUNNING = "running"
STATUSES = ("ok", "failed", "interrupted")  # how a run may finish
JSON_COLUMNS = ("argv", "params", "summary", "inventory", "versions")

# (store file, run id) of the runs this process is recording; any other 'running' run is incomplete.
_LIVE: set[tuple[str, str]] = set()

_INSERT_SAMPLES = (
    "INSERT INTO samples (run_id, seq, " + ", ".join(SAMPLE_COLUMNS) + ", params) SELECT "
    + ", ".join(f"unnest(${i}::{kind}[])" for i, kind in
                enumerate(["VARCHAR", "BIGINT", *SAMPLE_COLUMNS.values()], start=1))
    + f", unnest(${len(SAMPLE_COLUMNS) + 3}::VARCHAR[])::JSON"
)

# A curve's points (loaded latency: one point per traffic delay) are told apart by params.delay;
# repeats of the same measurement (iterations) are pooled.
_STATS = """
SELECT suite, test, metric, size_bytes, threads, node, mode,
       TRY_CAST(json_extract_string(params, '$.delay') AS BIGINT) AS delay,
       count(*) FILTER (WHERE warmup IS NOT TRUE) AS "count",
       count(*) FILTER (WHERE warmup) AS warmups,
       min(value) FILTER (WHERE warmup IS NOT TRUE) AS "min",
       quantile_cont(value, 0.5) FILTER (WHERE warmup IS NOT TRUE) AS median,
       avg(value) FILTER (WHERE warmup IS NOT TRUE) AS mean,
       max(value) FILTER (WHERE warmup IS NOT TRUE) AS "max",
       stddev_samp(value) FILTER (WHERE warmup IS NOT TRUE)
         / nullif(abs(avg(value) FILTER (WHERE warmup IS NOT TRUE)), 0) AS cov
FROM samples WHERE run_id = ?
GROUP BY suite, test, metric, size_bytes, threads, node, mode, delay
ORDER BY min(seq)
"""


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


def _dumps(value: Any) -> str:
    return json.dumps(jsonable(value), allow_nan=False)


def iso(moment: datetime | None) -> str | None:
    """A stored UTC timestamp as ISO 8601 with a Z."""
    return None if moment is None else moment.isoformat(timespec="microseconds") + "Z"


class Store:
    """An open results store (a DuckDB file). Get one with :func:`xferlab.store.open_store`.

    Writes (:meth:`start_run`, :meth:`add_samples`, :meth:`add_failure`, :meth:`finish_run`) are one
    transaction each: a process killed between two calls keeps everything committed before. Reads
    take a run id, a unique prefix of one, or ``latest``. Usable as a context manager; leaving it on
    an exception finishes the runs it was recording as ``interrupted`` (Ctrl-C) or ``failed``.
    """

    path: Path

    def __init__(self, path: Path, conn: duckdb.DuckDBPyConnection, *, read_only: bool, where: str) -> None:
        self.path = path
        self.read_only = read_only
        self.where = where  # "store 'PATH'", with where PATH came from: for messages
        self._conn: duckdb.DuckDBPyConnection | None = conn
        self._key = str(path.resolve())
        self._lock = threading.RLock()
        self._next_seq: dict[str, int] = {}

    # -- plumbing ---------------------------------------------------------------------------------

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if error is not None and self._conn is not None:
                status = "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
                for key, run_id in sorted(_LIVE):
                    if key == self._key:
                        try:
                            self.finish_run(run_id, status, {"error": f"{kind.__name__}: {error}"})
                        except Exception:
                            pass  # the run stays 'running' and shows as incomplete
        finally:
            self.close()

    def close(self) -> None:
        """Close the database (committed data is already safe). Runs left running show as incomplete."""
        with self._lock:
            if self._conn is not None:
                for live in [live for live in _LIVE if live[0] == self._key]:
                    _LIVE.discard(live)
                self._conn.close()
                self._conn = None

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, for queries this class does not offer (do not write through it)."""
        if self._conn is None:
            raise RuntimeError(f"{self.where} is closed")
        return self._conn

    def _writable(self) -> None:
        if self.read_only:
            raise Unavailable(f"{self.where} was opened read-only; it cannot record runs")

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            conn = self.conn
            conn.begin()
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def _query(self, sql: str, params: list | None = None) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self.conn.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def _running(self, conn: duckdb.DuckDBPyConnection, run_id: str) -> None:
        row = conn.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            raise UnknownName(f"run '{run_id}' is not in {self.where}")
        if row[0] != RUNNING:
            raise BadValue(f"run '{run_id}' has finished (status {row[0]}); only a running run takes "
                           "samples and failures")

    # -- writes -----------------------------------------------------------------------------------

    def start_run(self, command: str, argv: list[str], inventory: dict, versions: dict,
                  params: dict | None = None) -> str:
        """Record the start of a run and return its id, ``YYYYMMDD-HHMMSS-xxxx`` (UTC, 4 hex digits)."""
        self._writable()
        if not isinstance(command, str) or not command.strip():
            raise BadValue(f"run command {command!r} must be a non-empty string such as 'measure memory'")
        now = utc_now()
        with self._transaction() as conn:
            while True:
                run_id = f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
                if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is None:
                    break
            conn.execute("INSERT INTO runs VALUES (?, ?, NULL, ?, ?, ?, ?, ?, NULL)",
                         [run_id, now, command, _dumps([str(a) for a in argv]), RUNNING, __version__,
                          _dumps(params or {})])
            conn.execute("INSERT INTO inventory VALUES (?, ?, ?)", [run_id, _dumps(inventory or {}),
                                                                    _dumps(versions or {})])
        _LIVE.add((self._key, run_id))
        self._next_seq[run_id] = 1
        return run_id

    def add_samples(self, run_id: str, rows: list[dict]) -> int:
        """Append samples to a running run in one transaction; returns how many were written.

        Each row needs ``suite``, ``test``, ``metric`` and ``value``; the other columns of
        :data:`~xferlab.store.schema.SAMPLE_COLUMNS` are optional (``warmup`` defaults to False).
        A ``params`` dict and any other keys go to the row's ``params`` JSON."""
        self._writable()
        cleaned = [_sample(row, i) for i, row in enumerate(rows)]
        if not cleaned:
            return 0
        columns = [[row[name] for row in cleaned] for name in SAMPLE_COLUMNS]
        params = [row["params"] for row in cleaned]
        with self._transaction() as conn:
            self._running(conn, run_id)
            first = self._next_seq.get(run_id)
            if first is None:
                first = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM samples WHERE run_id = ?",
                                     [run_id]).fetchone()[0]
            n = len(cleaned)
            conn.execute(_INSERT_SAMPLES, [[run_id] * n, list(range(first, first + n)), *columns, params])
        self._next_seq[run_id] = first + n
        return n

    def add_failure(self, run_id: str, suite: str, what: str, reason: str) -> None:
        """Record that a measurement of a running run failed (timed out, crashed …) and why."""
        self._writable()
        with self._transaction() as conn:
            self._running(conn, run_id)
            conn.execute("INSERT INTO failures VALUES (?, ?, ?, ?, ?)",
                         [run_id, str(suite), str(what), str(reason), utc_now()])

    def finish_run(self, run_id: str, status: str = "ok", summary: dict | None = None) -> None:
        """Mark a running run finished: ``ok``, ``failed`` or ``interrupted``, with an optional summary."""
        self._writable()
        if status not in STATUSES:
            raise BadValue(f"run status '{status}' is not allowed; allowed: {', '.join(STATUSES)}")
        with self._transaction() as conn:
            self._running(conn, run_id)
            conn.execute("UPDATE runs SET status = ?, finished_utc = ?, summary = ? WHERE run_id = ?",
                         [status, utc_now(), None if summary is None else _dumps(summary), run_id])
        _LIVE.discard((self._key, run_id))
        self._next_seq.pop(run_id, None)

    # -- reads ------------------------------------------------------------------------------------

    def resolve_run(self, ref: str) -> str:
        """The id of the run ``ref`` names: an id, a unique prefix of one, or ``latest``."""
        ref = str(ref).strip()
        ids = [row["run_id"] for row in self._query("SELECT run_id FROM runs ORDER BY started_utc DESC, run_id DESC")]
        if not ids:
            raise UnknownName(f"run '{ref}': {self.where} has no runs yet")
        if ref == "latest":
            return ids[0]
        if ref in ids:
            return ref
        matches = [i for i in ids if ref and i.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            more = ", …" if len(matches) > 5 else ""
            raise BadValue(f"run '{ref}' matches {len(matches)} runs in {self.where} "
                           f"({', '.join(matches[:5])}{more}); give more of its id")
        raise UnknownName(f"run '{ref}' is not in {self.where}; the newest: {', '.join(ids[:5])} (or 'latest')")

    def _incomplete(self, row: dict) -> bool:
        return row["status"] == RUNNING and (self._key, row["run_id"]) not in _LIVE

    def runs(self) -> list[dict]:
        """All runs, newest first: id, start, finish, command, status, incomplete, sample and failure counts.

        ``incomplete`` is true for a run still marked running that no process is recording (killed)."""
        rows = self._query("""
            SELECT r.run_id, r.started_utc, r.finished_utc, r.command, r.status,
                   coalesce(s.n, 0) AS samples, coalesce(f.n, 0) AS failures
            FROM runs r
            LEFT JOIN (SELECT run_id, count(*) AS n FROM samples GROUP BY run_id) s ON s.run_id = r.run_id
            LEFT JOIN (SELECT run_id, count(*) AS n FROM failures GROUP BY run_id) f ON f.run_id = r.run_id
            ORDER BY r.started_utc DESC, r.run_id DESC""")
        for row in rows:
            row["started_utc"], row["finished_utc"] = iso(row["started_utc"]), iso(row["finished_utc"])
            row["incomplete"] = self._incomplete(row)
        return rows

    def run(self, run_id: str) -> dict:
        """One run: its row, ``incomplete``, counts, and its inventory, versions, params and summary as dicts."""
        rid = self.resolve_run(run_id)
        (row,) = self._query("""
            SELECT r.run_id, r.started_utc, r.finished_utc, r.command, r.argv, r.status, r.xferlab_version,
                   (SELECT count(*) FROM samples s WHERE s.run_id = r.run_id) AS samples,
                   (SELECT count(*) FROM failures f WHERE f.run_id = r.run_id) AS failures,
                   r.params, r.summary, i.inventory, i.versions
            FROM runs r LEFT JOIN inventory i ON i.run_id = r.run_id WHERE r.run_id = ?""", [rid])
        row["started_utc"], row["finished_utc"] = iso(row["started_utc"]), iso(row["finished_utc"])
        for key in JSON_COLUMNS:
            row[key] = None if row[key] is None else json.loads(row[key])
        row["incomplete"] = self._incomplete(row)
        return row

    def samples(self, run_id: str) -> list[dict]:
        """The run's samples in the order they were recorded (by ``seq``); ``params`` as a dict."""
        rows = self._query("SELECT * FROM samples WHERE run_id = ? ORDER BY seq", [self.resolve_run(run_id)])
        for row in rows:
            row["params"] = json.loads(row["params"]) if row["params"] is not None else {}
        return rows

    def failures(self, run_id: str) -> list[dict]:
        """The run's failures in the order they were recorded."""
        rows = self._query("SELECT run_id, suite, what, reason, at_utc FROM failures WHERE run_id = ? "
                           "ORDER BY at_utc, rowid", [self.resolve_run(run_id)])
        for row in rows:
            row["at_utc"] = iso(row["at_utc"])
        return rows

    def stats(self, run_id: str) -> list[dict]:
        """Statistics of the run's samples per (suite, test, metric, size_bytes, threads, node, mode, and
        the point of a curve: params.delay for loaded latency), over
        non-warm-up samples: count, min, median, mean, max, CoV (sample stddev / |mean|); ``warmups``
        counts the warm-ups left out. Groups come in the order they were first measured."""
        return self._query(_STATS, [self.resolve_run(run_id)])

    def export(self, run_id: str, fmt: str, path: Path, *, overwrite: bool = False) -> Path:
        """Write the run's samples to ``path`` as csv, parquet or json (see :mod:`xferlab.store.export`)."""
        from .export import export_run

        return export_run(self, run_id, fmt, Path(path), overwrite=overwrite)


def _sample(row: Any, index: int) -> dict[str, Any]:
    """One sample dict checked and converted to the store's columns, its extra keys in ``params``."""
    where = f"sample {index}"
    if not isinstance(row, Mapping):
        raise BadValue(f"{where} is a {type(row).__name__}; samples are dicts of column values")
    for key in REQUIRED_SAMPLE_KEYS:
        if row.get(key) is None:
            raise BadValue(f"{where} has no '{key}'; every sample needs {', '.join(REQUIRED_SAMPLE_KEYS)}")
    for key in ("run_id", "seq"):
        if key in row:
            raise BadValue(f"{where} sets '{key}', which the store assigns")
    out = {name: _convert(row.get(name), kind, f"{where} field '{name}'") for name, kind in SAMPLE_COLUMNS.items()}
    if out["warmup"] is None:
        out["warmup"] = False
    given = row.get("params")
    if given is not None and not isinstance(given, Mapping):
        raise BadValue(f"{where} field 'params' is a {type(given).__name__}; it must be a dict")
    params = {**(given or {}), **{k: v for k, v in row.items() if k not in SAMPLE_COLUMNS and k != "params"}}
    out["params"] = _dumps(params) if params else None
    return out


def _convert(value: Any, kind: str, where: str) -> Any:
    if value is None:
        return None
    if kind == "VARCHAR":
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)
    if kind == "BOOLEAN":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise BadValue(f"{where} is {value!r}; it must be true or false")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise BadValue(f"{where} is {value!r}; it must be a number")
    if kind == "DOUBLE":
        return float(value)
    if isinstance(value, Integral):
        return int(value)
    if math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise BadValue(f"{where} is {value!r}; it must be a whole number")


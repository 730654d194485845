"""The :class:`Store`: the results store's writes (one transaction each) and queries, each on a
connection of its own that is closed right after, so that other processes can read and record
between two of them (see :mod:`xferlab.store.connect` for the waiting).

A run being recorded carries its owner (host, PID, process start time); a ``running`` run whose owner
is gone is *incomplete* (killed or crashed).
"""

from __future__ import annotations

import json
import secrets
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import duckdb

from .. import __version__, signals
from ..errors import BadValue, Unavailable, UnknownName
from ..stats import interval_rank
from .connect import connect as _open, no_space, owner, owner_alive, translate
from .rows import Imported, dumps, imported, iso, sample
from .schema import ARGS_OF_MODE, COPY_ROWS, LAUNCH_ROWS, SAMPLE_COLUMNS, STATUSES, check, utc_now

RUNNING = "running"
JSON_COLUMNS = ("argv", "params", "summary", "inventory", "versions")

_INSERT_SAMPLES = (
    "INSERT INTO samples (run_id, seq, " + ", ".join(SAMPLE_COLUMNS) + ", params) SELECT "
    + ", ".join(f"unnest(${i}::{kind}[])" for i, kind in
                enumerate(["VARCHAR", "BIGINT", *SAMPLE_COLUMNS.values()], start=1))
    + f", unnest(${len(SAMPLE_COLUMNS) + 3}::VARCHAR[])::JSON"
)

# A curve's points (loaded latency: one point per traffic delay) are told apart by params.delay;
# repeats of the same measurement (iterations) are pooled. Statistics leave out warm-ups and the
# samples the probe did not validate; the sorted values give the median's interval (ranks in Python).
#: The columns a version-3 store has and how an older one's map to them (see schema.py).
_V3_COLUMNS = {"node": "node", "mode": "mode", "host_kind": "host_kind", "kernel_args": "kernel_args"}
_OLD_AS_V3 = {
    "node": "CASE WHEN suite = 'runtime' THEN NULL ELSE node END",
    "mode": f"CASE WHEN ({COPY_ROWS}) OR ({LAUNCH_ROWS}) THEN NULL ELSE mode END",
    "host_kind": f"CASE WHEN {COPY_ROWS} THEN mode END",
    "kernel_args": f"CASE WHEN {LAUNCH_ROWS} THEN {ARGS_OF_MODE} END",
}

#: The columns Store.stats groups a run's samples by, in the order its rows give them (the point of a
#: curve or a placement included); every other field of a row is a statistic of the group.
GROUPED_BY = ("suite", "test", "metric", "size_bytes", "threads", "node", "mode", "host_kind", "kernel_args", "delay",
              "pair", "path", "variant")
_STATS = """
SELECT suite, test, metric, size_bytes, threads, {node} AS node, {mode} AS mode, {host_kind} AS host_kind,
       {kernel_args} AS kernel_args,
       TRY_CAST(json_extract_string(params, '$.delay') AS BIGINT) AS delay,
       json_extract_string(params, '$.pair') AS pair, json_extract_string(params, '$.path') AS path,
       json_extract_string(params, '$.variant') AS variant,
       count(*) FILTER (WHERE {use}) AS "count",
       count(*) FILTER (WHERE warmup) AS warmups,
       count(*) FILTER (WHERE {validated} IS FALSE AND warmup IS NOT TRUE) AS unvalidated,
       min(value) FILTER (WHERE {use}) AS "min",
       quantile_cont(value, 0.5) FILTER (WHERE {use}) AS median,
       avg(value) FILTER (WHERE {use}) AS mean,
       max(value) FILTER (WHERE {use}) AS "max",
       stddev_samp(value) FILTER (WHERE {use}) / nullif(abs(avg(value) FILTER (WHERE {use})), 0) AS cov,
       list(value ORDER BY value) FILTER (WHERE {use}) AS sorted_values
FROM samples WHERE run_id = ?
GROUP BY suite, test, metric, size_bytes, threads, 6, 7, 8, 9, delay, pair, path, variant
ORDER BY min(seq)
"""
_OWNER = "owner_host, owner_pid, owner_started"


class OutputError(Exception):
    """A file the store was asked to write (not the store itself) could not be written."""


def _sql_text(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


class Store:
    """The results store (a DuckDB file). Get one with :func:`xferlab.store.open_store`.

    It holds no connection between calls: each write (:meth:`start_run`, :meth:`add_samples`,
    :meth:`add_failure`, :meth:`finish_run`) is one transaction on a connection of its own, and each
    query opens the file read-only. A process killed between two calls keeps everything committed
    before. Reads take a run id, a unique prefix of one, or ``latest``. Usable as a context manager;
    leaving it on an exception finishes the runs it started and left running as ``interrupted``
    (Ctrl-C, SIGTERM) or ``failed``; :meth:`close` lets go of the runs it left running (they then show as
    incomplete).
    """

    path: Path

    def __init__(self, path: Path, *, read_only: bool, where: str, version: int) -> None:
        self.path = path
        self.read_only = read_only
        self.where = where  # "store 'PATH'", with where PATH came from: for messages
        self.version = version
        self._lock = threading.RLock()
        self._active: duckdb.DuckDBPyConnection | None = None
        self._active_writable = False
        self._mine: list[str] = []  # runs started here and not finished
        self._closed = False
        # the probe's verdict: the column (schema 2), else a flag rows of older stores kept in params
        in_params = "TRY_CAST(json_extract_string(params, '$.validated') AS BOOLEAN)"
        self._validated = f"coalesce(validated, {in_params})" if version >= 2 else in_params
        # version 3's columns, as an older store (read-only, not migrated) is read (schema.py)
        self._columns = _V3_COLUMNS if version >= 3 else _OLD_AS_V3

    # -- plumbing ---------------------------------------------------------------------------------

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if error is not None:
            status = "interrupted" if signals.behind(error) is not None else "failed"
            for run_id in list(self._mine):
                try:
                    self.finish_run(run_id, status, {"error": f"{kind.__name__}: {error}"})
                except Exception:
                    pass  # the run stays 'running' and shows as incomplete
        self.close()

    def close(self) -> None:
        """Let go of the runs this object started and left running: they show as incomplete from now
        on. (No connection is held between calls, so there is nothing else to close.)"""
        if self._closed:
            return
        self._closed = True
        if self._mine and not self.read_only:
            try:
                with self._session(write=True) as conn:
                    conn.execute(f"UPDATE runs SET owner_pid = NULL WHERE status = '{RUNNING}' AND run_id IN "
                                 f"(SELECT unnest(?::VARCHAR[]))", [self._mine])
            except Exception:
                pass  # the owner check still finds them once this process ends
        self._mine.clear()

    @contextmanager
    def _session(self, write: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one operation (re-entrant: nested calls share it), closed when it ends.
        DuckDB's errors come out as one-line :class:`~xferlab.errors.XferlabError` s."""
        with self._lock:
            if self._active is not None and (self._active_writable or not write):
                yield self._active
                return
            if write and self.read_only:
                raise Unavailable(f"{self.where} was opened read-only; it cannot record runs")
            action = "writing it" if write else "reading it"
            conn = _open(self.path, self.where, read_only=not write)
            self._active, self._active_writable = conn, write
            try:
                yield conn
            except (duckdb.Error, OSError) as error:
                raise translate(error, self.where, action) from None
            except RuntimeError as error:  # DuckDB's "Query interrupted" after SIGINT/SIGTERM
                if "interrupted" not in str(error).lower():
                    raise
                raise signals.interruption() from None
            finally:
                self._active = None
                try:
                    conn.close()
                except duckdb.Error:
                    pass  # a checkpoint that failed (no space): the commits are in the write-ahead log

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction; SIGINT/SIGTERM wait until it has committed or rolled back."""
        with signals.deferred(), self._session(write=True) as conn:
            conn.begin()
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def query(self, sql: str, params: list | None = None) -> list[dict[str, Any]]:
        """Rows of a read-only query as dicts (for queries this class does not offer)."""
        with self._session() as conn:
            cursor = conn.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def check(self) -> None:
        """Read every table once; a damaged store raises :class:`~xferlab.errors.BadFile` saying how to recover."""
        with self._session() as conn:
            check(conn)

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
        """Record the start of a run, owned by this process, and return its id, ``YYYYMMDD-HHMMSS-xxxx``
        (UTC, 4 hex digits). The store is checked first: a damaged one is refused."""
        if not isinstance(command, str) or not command.strip():
            raise BadValue(f"run command {command!r} must be a non-empty string such as 'measure memory'")
        now = utc_now()
        with self._transaction() as conn:
            check(conn)
            while True:
                run_id = f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
                if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is None:
                    break
            conn.execute(f"INSERT INTO runs (run_id, started_utc, finished_utc, command, argv, status, xferlab_version, "
                         f"params, summary, {_OWNER}) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                         [run_id, now, command, dumps([str(a) for a in argv]), RUNNING, __version__,
                          dumps(params or {}), *owner()])
            conn.execute("INSERT INTO inventory VALUES (?, ?, ?)", [run_id, dumps(inventory or {}),
                                                                    dumps(versions or {})])
        self._mine.append(run_id)
        return run_id

    def add_samples(self, run_id: str, rows: list[dict]) -> int:
        """Append samples to a running run in one transaction; returns how many were written.

        Each row needs ``suite``, ``test``, ``metric`` and a finite ``value``; the other columns of
        :data:`~xferlab.store.schema.SAMPLE_COLUMNS` are optional (``warmup`` defaults to False,
        ``seconds`` must be above 0). A ``params`` dict and any other keys go to the row's ``params`` JSON.
        The sequence numbers continue the run's, whichever process recorded the earlier ones."""
        cleaned = [sample(row, i) for i, row in enumerate(rows)]
        if not cleaned:
            return 0
        columns = [[row[name] for row in cleaned] for name in SAMPLE_COLUMNS]
        params = [row["params"] for row in cleaned]
        with self._transaction() as conn:
            self._running(conn, run_id)
            first = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM samples WHERE run_id = ?",
                                 [run_id]).fetchone()[0]
            n = len(cleaned)
            conn.execute(_INSERT_SAMPLES, [[run_id] * n, list(range(first, first + n)), *columns, params])
        return n

    def add_failure(self, run_id: str, suite: str, what: str, reason: str) -> None:
        """Record that a measurement of a running run failed (timed out, crashed …) and why."""
        with self._transaction() as conn:
            self._running(conn, run_id)
            conn.execute("INSERT INTO failures VALUES (?, ?, ?, ?, ?)",
                         [run_id, str(suite), str(what), str(reason), utc_now()])

    def finish_run(self, run_id: str, status: str = "ok", summary: dict | None = None) -> None:
        """Mark a running run finished: ``ok``, ``failed`` or ``interrupted``, with an optional summary."""
        if status not in STATUSES:
            raise BadValue(f"run status '{status}' is not allowed; allowed: {', '.join(STATUSES)}")
        with self._transaction() as conn:
            self._running(conn, run_id)
            conn.execute("UPDATE runs SET status = ?, finished_utc = ?, summary = ? WHERE run_id = ?",
                         [status, utc_now(), None if summary is None else dumps(summary), run_id])
        if run_id in self._mine:
            self._mine.remove(run_id)

    def import_run(self, run: dict, samples: list[dict], failures: list[dict]) -> bool:
        """Add a run recorded elsewhere (a shard: ``results export`` JSON or Parquet) with its own id, its
        samples (their ``seq`` kept) and failures, in one transaction; False, adding nothing, when a run
        of that id is here already (importing twice is harmless). A run still running there is imported
        as ``interrupted``: nothing will finish it here."""
        return self.insert_imported(imported(run, samples, failures))

    def insert_imported(self, shard: Imported) -> bool:
        """:meth:`import_run` for a run already checked and converted (rows.imported)."""
        with self._transaction() as conn:
            check(conn)
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [shard.run_id]).fetchone() is not None:
                return False
            conn.execute("INSERT INTO runs (run_id, started_utc, finished_utc, command, argv, status, xferlab_version, "
                         "params, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", shard.run)
            conn.execute("INSERT INTO inventory VALUES (?, ?, ?)", [shard.run_id, *shard.inventory])
            if shard.samples:
                columns = [[r[name] for r in shard.samples] for name in SAMPLE_COLUMNS]
                conn.execute(_INSERT_SAMPLES, [[shard.run_id] * len(shard.samples), shard.seqs, *columns,
                                               [r["params"] for r in shard.samples]])
            for f in shard.failures:
                conn.execute("INSERT INTO failures VALUES (?, ?, ?, ?, ?)", [shard.run_id, *f])
        return True

    # -- reads ------------------------------------------------------------------------------------

    def resolve_run(self, ref: str) -> str:
        """The id of the run ``ref`` names: an id, a unique prefix of one, or ``latest``."""
        ref = str(ref).strip()
        ids = [row["run_id"] for row in self.query("SELECT run_id FROM runs ORDER BY started_utc DESC, run_id DESC")]
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

    def _owner_select(self) -> str:
        return _OWNER if self.version >= 2 else "NULL AS owner_host, NULL AS owner_pid, NULL AS owner_started"

    @staticmethod
    def _mark_incomplete(row: dict) -> None:
        owner = (row.pop("owner_host"), row.pop("owner_pid"), row.pop("owner_started"))
        row["incomplete"] = row["status"] == RUNNING and not owner_alive(*owner)

    def runs(self) -> list[dict]:
        """All runs, newest first: id, start, finish, command, status, incomplete, sample and failure counts.

        ``incomplete`` is true for a run still marked running whose recording process is gone (killed)."""
        rows = self.query(f"""
            SELECT r.run_id, r.started_utc, r.finished_utc, r.command, r.status,
                   coalesce(s.n, 0) AS samples, coalesce(f.n, 0) AS failures, {self._owner_select()}
            FROM runs r
            LEFT JOIN (SELECT run_id, count(*) AS n FROM samples GROUP BY run_id) s ON s.run_id = r.run_id
            LEFT JOIN (SELECT run_id, count(*) AS n FROM failures GROUP BY run_id) f ON f.run_id = r.run_id
            ORDER BY r.started_utc DESC, r.run_id DESC""")
        for row in rows:
            row["started_utc"], row["finished_utc"] = iso(row["started_utc"]), iso(row["finished_utc"])
            self._mark_incomplete(row)
        return rows

    def run(self, run_id: str) -> dict:
        """One run: its row, ``incomplete``, counts, and its inventory, versions, params and summary as dicts."""
        with self._session():
            rid = self.resolve_run(run_id)
            (row,) = self.query(f"""
                SELECT r.run_id, r.started_utc, r.finished_utc, r.command, r.argv, r.status, r.xferlab_version,
                       (SELECT count(*) FROM samples s WHERE s.run_id = r.run_id) AS samples,
                       (SELECT count(*) FROM failures f WHERE f.run_id = r.run_id) AS failures,
                       r.params, r.summary, i.inventory, i.versions, {self._owner_select()}
                FROM runs r LEFT JOIN inventory i ON i.run_id = r.run_id WHERE r.run_id = ?""", [rid])
        row["started_utc"], row["finished_utc"] = iso(row["started_utc"]), iso(row["finished_utc"])
        for key in JSON_COLUMNS:
            row[key] = None if row[key] is None else json.loads(row[key])
        self._mark_incomplete(row)
        return row

    def samples(self, run_id: str) -> list[dict]:
        """The run's samples in the order they were recorded (by ``seq``); ``params`` as a dict."""
        with self._session():
            mapped = ", ".join(f"{expr} AS {name}" for name, expr in self._columns.items())
            rows = self.query(f"SELECT * EXCLUDE (node, mode), {mapped} FROM samples WHERE run_id = ? ORDER BY seq"
                              if self.version < 3 else "SELECT * FROM samples WHERE run_id = ? ORDER BY seq",
                              [self.resolve_run(run_id)])
        for row in rows:
            row["params"] = json.loads(row["params"]) if row["params"] is not None else {}
        return rows

    def failures(self, run_id: str) -> list[dict]:
        """The run's failures in the order they were recorded."""
        with self._session():
            rows = self.query("SELECT run_id, suite, what, reason, at_utc FROM failures WHERE run_id = ? "
                              "ORDER BY at_utc, rowid", [self.resolve_run(run_id)])
        for row in rows:
            row["at_utc"] = iso(row["at_utc"])
        return rows

    def stats(self, run_id: str) -> list[dict]:
        """Statistics of the run's samples per (suite, test, metric, size_bytes, threads, node, mode, and
        the point of a curve: params.delay for loaded latency; params.pair and params.path for the
        network's pair kind and buffer path; params.variant for a kernel's type, width, groups and
        instances), over non-warm-up samples the probe
        validated: count, min, median, mean, max, CoV (sample stddev / |mean|), and the median's 95 %
        distribution-free interval ``median_ci_low``, ``median_ci_high`` (None below 6 samples);
        ``warmups`` and ``unvalidated`` count the samples left out. Groups come in the order they were
        first measured."""
        use = f"warmup IS NOT TRUE AND {self._validated} IS NOT FALSE"
        with self._session():
            rows = self.query(_STATS.format(use=use, validated=self._validated, **self._columns),
                              [self.resolve_run(run_id)])
        for row in rows:
            values = row.pop("sorted_values") or []
            k = interval_rank(len(values))
            row["median_ci_low"], row["median_ci_high"] = (values[k - 1], values[len(values) - k]) if k else (None, None)
        return rows

    def copy_samples(self, run_id: str, target: Path, fmt: str, metadata: dict | None = None) -> None:
        """Write the run's samples, in store order, to the file ``target`` with DuckDB's COPY (``csv``
        with a header, or ``parquet``, with ``metadata`` as its key-value metadata, each value JSON). An
        error writing ``target`` (rather than reading the store) comes out as :class:`OutputError` with
        DuckDB's error as its cause."""
        options = "FORMAT csv, HEADER" if fmt == "csv" else "FORMAT parquet"
        if fmt == "parquet" and metadata:
            pairs = ", ".join(f"{key}: {_sql_text(json.dumps(value, default=str))}" for key, value in metadata.items())
            options += f", KV_METADATA {{{pairs}}}"
        with self._session() as conn:
            try:
                conn.execute(f"COPY (SELECT * FROM samples WHERE run_id = {_sql_text(self.resolve_run(run_id))} "
                             f"ORDER BY seq) TO {_sql_text(str(target))} ({options})")
            except duckdb.IOException as error:  # the output file's: the store's go to the store's message
                if str(target) not in str(error) and not no_space(error):
                    raise
                raise OutputError(str(target)) from error

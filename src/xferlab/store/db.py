"""The :class:`Store`: the results store's writes (one transaction each) and queries, each on a
connection of its own that is closed right after, so that other processes can read and record
between two of them (see :mod:`xferlab.store.connect` for the waiting).

A run being recorded carries its owner (host, PID, process start time); a ``running`` run whose owner
is gone is *incomplete* (killed or crashed) and reads as ``interrupted`` everywhere (:func:`effective_status`:
every read of a run's status goes through it).

Signals and the finish. Every write is one transaction with SIGINT/SIGTERM held back until it has
committed (:func:`xferlab.signals.deferred`). A signal that arrives while a run starts or finishes makes
that run ``interrupted`` in the same transaction (or, when it came while the commit itself ran, in a
second one before the signal takes effect): a run stored ``ok`` or ``failed`` was finished before any
signal reached this process, and a command that exits 130/143 leaves the run it was recording
``interrupted``. ``finish_run`` returns the samples the store holds for the run, for the last line.
"""

from __future__ import annotations

import secrets
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import duckdb

from .. import __version__, signals
from ..errors import BadValue, Unavailable, UnknownName
from .connect import connect as _open, interrupted_query, owner, translate
from .reads import (GROUPED_BY, JSON_COLUMNS, RUNNING, OutputError, Reads, _OLD_AS_V3, _OWNER, _V3_COLUMNS,  # noqa: F401
                    effective_status)
from .rows import Imported, dumps, imported, sample
from .schema import SAMPLE_COLUMNS, STATUSES, check, utc_now

_INSERT_SAMPLES = (
    "INSERT INTO samples (run_id, seq, " + ", ".join(SAMPLE_COLUMNS) + ", params) SELECT "
    + ", ".join(f"unnest(${i}::{kind}[])" for i, kind in
                enumerate(["VARCHAR", "BIGINT", *SAMPLE_COLUMNS.values()], start=1))
    + f", unnest(${len(SAMPLE_COLUMNS) + 3}::VARCHAR[])::JSON"
)

class Store(Reads):
    """The results store (a DuckDB file). Get one with :func:`xferlab.store.open_store`.

    It holds no connection between calls: each write (:meth:`start_run`, :meth:`add_samples`,
    :meth:`add_failure`, :meth:`finish_run`) is one transaction on a connection of its own, and each
    query opens the file read-only. A process killed between two calls keeps everything committed
    before. Reads take a run id, a unique prefix of one, or ``latest``. Usable as a context manager;
    leaving it on an exception finishes the runs it started and left running as ``interrupted``
    (Ctrl-C, SIGTERM) or ``failed``; :meth:`close` lets go of the runs it left running (they then read as
    interrupted).
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
            for run_id in list(self._mine):
                self.stop_run(run_id, error)
        self.close()

    def close(self) -> None:
        """Let go of the runs this object started and left running: they read as interrupted (incomplete)
        from now on. (No connection is held between calls, so there is nothing else to close.)"""
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
                raise interrupted_query(error) from None
            finally:
                self._active = None
                try:
                    conn.close()
                except duckdb.Error:
                    pass  # a checkpoint that failed (no space): the commits are in the write-ahead log

    @contextmanager
    def _transaction(self, point: str, on_signal: Callable[[duckdb.DuckDBPyConnection], None] | None = None
                     ) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction; SIGINT/SIGTERM wait until it has committed or rolled back. ``on_signal``
        runs in the transaction when a signal arrived before the commit, or in a transaction of its own when
        one arrived while it committed, before the signal takes effect. ``point``: the write, for the
        test hook :func:`xferlab.signals.fault`."""
        with signals.deferred() as held, self._session(write=True) as conn:
            conn.begin()
            try:
                yield conn
                signals.fault(point)
                if held and on_signal is not None:
                    on_signal(conn)
                    on_signal = None
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
            if held and on_signal is not None:
                conn.begin()
                on_signal(conn)
                conn.commit()

    def query(self, sql: str, params: list | None = None) -> list[dict[str, Any]]:
        """Rows of a read-only query as dicts (for queries this class does not offer)."""
        with self._session() as conn:
            cursor = conn.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def check(self) -> None:
        """Read every table whole (schema.check); a damaged store raises :class:`~xferlab.errors.BadFile`
        naming what is damaged and how to recover."""
        with self._session() as conn:
            check(conn, self.where)

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
        run_id = ""
        try:
            with self._transaction("start", lambda conn: self._interrupt(conn, run_id, "a signal arrived as it started")) as conn:
                while True:
                    run_id = f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
                    if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is None:
                        break
                conn.execute(f"INSERT INTO runs (run_id, started_utc, finished_utc, command, argv, status, "
                             f"xferlab_version, params, summary, {_OWNER}) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                             [run_id, now, command, dumps([str(a) for a in argv]), RUNNING, __version__,
                              dumps(params or {}), *owner()])
                conn.execute("INSERT INTO inventory VALUES (?, ?, ?)", [run_id, dumps(inventory or {}),
                                                                        dumps(versions or {})])
        except KeyboardInterrupt as error:  # held while it committed: the run is stored interrupted
            if run_id and not hasattr(error, "xferlab_note"):
                error.xferlab_note = f"run {run_id} kept 0 samples, status interrupted"  # type: ignore[attr-defined]
            raise
        self._mine.append(run_id)
        return run_id

    def _interrupt(self, conn: duckdb.DuckDBPyConnection, run_id: str, why: str) -> None:
        """Inside a write transaction: a signal arrived, so the run is finished as interrupted (whatever
        status the transaction gave it), keeping its samples."""
        conn.execute("UPDATE runs SET status = 'interrupted', finished_utc = ?, summary = json_merge_patch("
                     "coalesce(summary, '{}'), json_object('interrupted', ?)) WHERE run_id = ?", [utc_now(), why, run_id])

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
        with self._transaction("samples") as conn:
            self._running(conn, run_id)
            first = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM samples WHERE run_id = ?",
                                 [run_id]).fetchone()[0]
            n = len(cleaned)
            conn.execute(_INSERT_SAMPLES, [[run_id] * n, list(range(first, first + n)), *columns, params])
        signals.fault("after-samples")
        return n

    def add_failure(self, run_id: str, suite: str, what: str, reason: str) -> None:
        """Record that a measurement of a running run failed (timed out, crashed …) and why."""
        with self._transaction("failure") as conn:
            self._running(conn, run_id)
            conn.execute("INSERT INTO failures VALUES (?, ?, ?, ?, ?)",
                         [run_id, str(suite), str(what), str(reason), utc_now()])

    def finish_run(self, run_id: str, status: str = "ok", summary: dict | None = None) -> int:
        """Mark a running run finished: ``ok``, ``failed`` or ``interrupted``, with an optional summary;
        returns how many samples the store holds for it. A signal that arrives before the finish has
        committed makes it ``interrupted`` (see the module). Finishing as ``interrupted`` a run already
        stored so (a signal during an earlier finish) changes nothing."""
        if status not in STATUSES:
            raise BadValue(f"run status '{status}' is not allowed; allowed: {', '.join(STATUSES)}")
        kept = 0
        try:
            with self._transaction("finish", lambda conn: self._interrupt(conn, run_id, "a signal arrived as it finished")
                                   ) as conn:
                row = conn.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()
                if not (status == "interrupted" and row is not None and row[0] == "interrupted"):
                    self._running(conn, run_id)
                    conn.execute("UPDATE runs SET status = ?, finished_utc = ?, summary = ? WHERE run_id = ?",
                                 [status, utc_now(), None if summary is None else dumps(summary), run_id])
                kept = conn.execute("SELECT count(*) FROM samples WHERE run_id = ?", [run_id]).fetchone()[0]
        except KeyboardInterrupt as error:  # held while it committed: the run is stored interrupted
            self._let_go(run_id)
            if not hasattr(error, "xferlab_note"):
                error.xferlab_note = f"run {run_id} kept {kept} samples, status interrupted"  # type: ignore[attr-defined]
            raise
        self._let_go(run_id)
        return kept

    def stop_run(self, run_id: str, error: BaseException, summary: dict | None = None) -> None:
        """Finish a run that ``error`` stopped: ``interrupted`` when a SIGINT/SIGTERM is behind it (the
        signal itself, or an error it caused: :func:`signals.behind`), whose exception then carries the
        note the CLI's last line shows (the samples the store holds); else ``failed`` with the error in
        its summary. A run that cannot be finished stays running in the file and reads as interrupted
        once this process has ended. Every recorder calls this, so the rule is in one place."""
        interrupt = signals.behind(error)
        summary = dict(summary or {})
        if interrupt is None:
            summary["error"] = f"{type(error).__name__}: {error}"
        try:
            kept = self.finish_run(run_id, "failed" if interrupt is None else "interrupted", summary)
            note = f"run {run_id} kept {kept} samples, status interrupted"
        except Exception:
            note = (f"run {run_id} kept its committed samples; it could not be finished and reads as "
                    "interrupted once this process has ended")
        if interrupt is not None and not hasattr(interrupt, "xferlab_note"):
            interrupt.xferlab_note = note  # type: ignore[attr-defined]

    def _let_go(self, run_id: str) -> None:
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
        with self._transaction("import") as conn:
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

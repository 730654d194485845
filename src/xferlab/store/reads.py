"""The results store's queries (:class:`Reads`, the read half of :class:`~xferlab.store.db.Store`): runs,
one run, its samples, failures and statistics, and a copy of its samples to a file. Every status read goes
through :func:`effective_status`.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ..errors import BadValue, UnknownName
from ..stats import interval_rank
from .connect import no_space, owner_alive
from .rows import iso
from .schema import ARGS_OF_MODE, COPY_ROWS, LAUNCH_ROWS


RUNNING = "running"
JSON_COLUMNS = ("argv", "params", "summary", "inventory", "versions")

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


def effective_status(stored: str, host: str | None, pid: int | None, started: int | None) -> str:
    """A run's status as every reader is to see it: the stored one, except that a run still stored
    ``running`` whose owner process is gone (killed, crashed, or let go of it) is ``interrupted``."""
    if stored == RUNNING and not owner_alive(host, pid, started):
        return "interrupted"
    return stored


class OutputError(Exception):
    """A file the store was asked to write (not the store itself) could not be written."""


def _sql_text(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


class Reads:
    """The queries of a :class:`~xferlab.store.db.Store` (which provides ``query``, ``_session``, ``where``,
    ``version``, ``_columns`` and ``_validated``)."""

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
        """The run's ``status`` as it is to be read (:func:`effective_status`), and ``incomplete``: true when
        the stored row still says running and its process is gone (it never finished the run)."""
        owner = (row.pop("owner_host"), row.pop("owner_pid"), row.pop("owner_started"))
        stored = row["status"]
        row["status"] = effective_status(stored, *owner)
        row["incomplete"] = stored == RUNNING and row["status"] != RUNNING

    def runs(self, check: bool = False) -> list[dict]:
        """All runs, newest first: id, start, finish, command, status, incomplete, sample and failure counts;
        with ``check``, after reading the store whole (:meth:`check`) on the same connection.

        ``status`` is :func:`effective_status`'s (``interrupted`` for a run whose process is gone);
        ``incomplete`` is true for such a run: the file still says running, its process never finished it."""
        with self._session():
            if check:
                self.check()
            rows = self._runs()
        for row in rows:
            row["started_utc"], row["finished_utc"] = iso(row["started_utc"]), iso(row["finished_utc"])
            self._mark_incomplete(row)
        return rows

    def _runs(self) -> list[dict]:
        return self.query(f"""
            SELECT r.run_id, r.started_utc, r.finished_utc, r.command, r.status,
                   coalesce(s.n, 0) AS samples, coalesce(f.n, 0) AS failures, {self._owner_select()}
            FROM runs r
            LEFT JOIN (SELECT run_id, count(*) AS n FROM samples GROUP BY run_id) s ON s.run_id = r.run_id
            LEFT JOIN (SELECT run_id, count(*) AS n FROM failures GROUP BY run_id) f ON f.run_id = r.run_id
            ORDER BY r.started_utc DESC, r.run_id DESC""")

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

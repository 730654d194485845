"""Running a sweep: its points in batches through one ``concurrent.futures`` seam (this process, a local
Dask cluster, or an existing Dask scheduler), each finished batch written to the store at once, so an
interrupted sweep keeps what finished and ``resume`` runs only the rest; then the table
(:mod:`.summary`).

Dask (https://docs.dask.org, distributed's ``Client.get_executor``) does the distribution: a
``LocalCluster`` of single-threaded worker processes (the simulator is Python: threads would share one
core), or a ``Client`` of a scheduler started elsewhere (on a batch system: dask-jobqueue's
``SLURMCluster``, see docs/scaleout.md). Nothing here schedules, retries or moves data itself."""

from __future__ import annotations

import concurrent.futures
import math
import sys
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from ..errors import BadValue, XferlabError
from ..scenarios.packaged import load_named
from ..store import open_store
from ..system.models import System, Workflow
from .evaluate import evaluate_batch
from .spec import Sweep
from .summary import summarize

SUITE = "sweep"
CONNECT_TIMEOUT = 10.0  # seconds a scheduler has to answer
SAMPLE_POINTS = 32  # points timed for the estimate, spread over the grid ...
SAMPLE_SECONDS = 1.0  # ... stopping once this long has gone by (at least 4 timed)


class InProcess(concurrent.futures.Executor):
    """The executor for small grids: each batch runs when submitted, in this process (so a sweep keeps
    one batch in flight with it: each is stored before the next one runs)."""

    def submit(self, fn, /, *args, **kwargs):
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # noqa: BLE001 - the future carries it to the caller
            future.set_exception(error)
        return future


def _warm(module: str) -> int:
    """A pool worker's first task: the simulator imported before any batch is timed."""
    import importlib
    import os

    importlib.import_module(module)
    return os.getpid()


@contextmanager
def executor(workers: Optional[int], scheduler: Optional[str], timeout: float = CONNECT_TIMEOUT,
             local: str = "dask") -> Iterator[tuple[concurrent.futures.Executor, str, int]]:
    """(executor, what it is, how many batches to keep in flight: two per worker thread, one in this
    process): a scheduler's, a local Dask cluster of ``workers`` processes (``local="processes"``: a
    plain ``concurrent.futures.ProcessPoolExecutor`` of as many spawned processes instead, the baseline
    ``benchmarks/bench_sweep.py`` holds Dask to), or this process."""
    if local not in ("dask", "processes"):
        raise BadValue(f"local executor {local!r} is not known; allowed: dask, processes")
    if scheduler is not None:
        from distributed import Client

        try:
            client = Client(scheduler, timeout=f"{timeout}s")
        except (OSError, TimeoutError, ValueError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise BadValue(f"--scheduler {scheduler}: no Dask scheduler answered within {timeout:g} s ({reason}); "
                           "allowed: the address of a running scheduler, such as tcp://host:8786") from None
        try:
            found = client.scheduler_info()["workers"].values()
            threads = sum(w.get("nthreads", 1) for w in found)
            yield client.get_executor(), f"on the Dask scheduler at {scheduler} ({len(found)} workers)", 2 * max(1, threads)
        finally:
            client.close()
        return
    if workers is not None and workers > 1 and local == "processes":
        import multiprocessing

        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            # every worker started and the simulator imported now, as the Dask cluster's are before its batches
            started = [pool.submit(_warm, __package__ + ".evaluate") for _ in range(workers)]
            concurrent.futures.wait(started)
            yield pool, f"on a local process pool of {workers} worker processes", 2 * workers
        return
    if workers is not None and workers > 1:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        import importlib

        client.run(importlib.import_module, __package__ + ".evaluate")  # each worker imports the simulator once, now
        try:
            yield client.get_executor(), f"on a local Dask cluster of {workers} worker processes", 2 * workers
        finally:
            client.close()
            cluster.close()
        return
    yield InProcess(), "in this process", 1


def as_finished(pool: concurrent.futures.Executor, in_flight: int, fn: Callable, batches: Iterator) -> Iterator:
    """``fn(batch)`` for each batch, results as they finish, at most ``in_flight`` submitted at a time:
    what finished is handed back (and stored) while the rest still runs, whatever the executor."""
    pending: set = set()
    while True:
        for batch in batches:
            pending.add(pool.submit(fn, batch))
            if len(pending) >= in_flight:
                break
        if not pending:
            return
        finished, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
        for future in finished:
            yield future.result()


def models(spec: Sweep) -> dict[str, dict[str, Any]]:
    """Every system and workflow the sweep names, loaded and checked here (bad files fail before any
    work), as plain dicts for the workers."""
    return {"systems": {s: load_named(s, System, "system").model_dump(by_alias=True) for s in spec.systems},
            "workflows": {w: load_named(w, Workflow, "workflow").model_dump(by_alias=True) for w in spec.workflows}}


def group_of(spec: Sweep) -> str:
    return f"{spec.name}-{spec.digest()}"


def content_keys(spec: Sweep, loaded: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Point key -> a digest of what decides its makespan: the system as it is with the point's link in
    place (every link's parameters resolved, so an edited file or profile counts), the workflow, the
    strategy and the chunk size. A resumed sweep reuses a stored point only if this is the same, so
    an earlier run of a grown grid is reused and a changed system is not. Every link is resolved here:
    a LINK or a ``replace`` that does not exist fails before anything is stored."""
    import hashlib
    import json

    from ..advise.whatif import replace_link
    from ..links import resolve

    def digest(value: Any) -> str:
        return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()

    context: dict[tuple, str] = {}
    for name, dumped in loaded["systems"].items():
        system = System.model_validate(dumped)
        for link in spec.links or [None]:
            placed = replace_link(system, spec.replace, link) if link else system
            links = {ref.link: resolve(ref.link).parameters() for ref in placed.links}
            context[(name, link)] = digest([placed.model_dump(exclude={"name"}, by_alias=True), links])
    flows = {name: digest(dumped) for name, dumped in loaded["workflows"].items()}
    return {p["key"]: digest([context[(p["system"], p["link"])], flows[p["workflow"]], p["strategy"], p["chunk_bytes"]])
            for p in spec.points()}


def point_seconds(spec: Sweep, loaded: dict[str, dict[str, Any]]) -> tuple[float, int]:
    """(seconds one point takes to evaluate in this process, points timed): up to SAMPLE_POINTS points
    spread evenly over the grid, evaluated by the workers' own function in batches of 4 after one
    untimed point (the simulator's first call), until SAMPLE_SECONDS have gone by. Nothing is stored."""
    n = spec.size()
    sample = [spec.point(i) for i in sorted({round(k * (n - 1) / (SAMPLE_POINTS - 1)) for k in range(SAMPLE_POINTS)})
              if i < n]
    evaluate_batch(loaded, spec.replace, sample[:1])
    timed, started = 0, time.perf_counter()
    while timed < len(sample) and (timed == 0 or time.perf_counter() - started < SAMPLE_SECONDS):
        evaluate_batch(loaded, spec.replace, sample[timed:timed + 4])
        timed = min(len(sample), timed + 4)
    return (time.perf_counter() - started) / timed, timed


def estimate_text(seconds: float, timed: int, points: int, parallel: int, where: str) -> str:
    """``points`` points at ``seconds`` each, shared by ``parallel`` workers, said with ``where`` they run."""
    from ..units import format_time

    return (f"about {format_time(seconds * points / max(1, parallel))} {where} ({format_time(seconds)} a point, "
            f"timed on {timed} points here)")


def stored(store_path: Optional[Path], name: str) -> dict[str, float]:
    """Content key -> makespan, from every earlier run of a sweep of this name (finished or interrupted)."""
    try:
        with open_store(store_path, read_only=True) as db:
            found = db.query("SELECT s.value, json_extract_string(s.params, '$.content') AS content FROM samples s "
                             "JOIN runs r ON r.run_id = s.run_id WHERE s.suite = ? AND "
                             "json_extract_string(r.params, '$.sweep.name') = ?", [SUITE, name])
    except XferlabError:
        return {}  # no store yet: nothing to resume from
    return {r["content"]: r["value"] for r in found if r["content"]}


def sample_of(row: dict[str, Any]) -> dict[str, Any]:
    return {"suite": SUITE, "test": row["workflow"], "metric": "makespan_seconds", "value": row["makespan_seconds"],
            "mode": row["strategy"], "size_bytes": row["chunk_bytes"], "validated": True,
            "params": {"system": row["system"], "link": row["link"], "key": row["key"], "content": row["content"],
                       "evaluation_seconds": row["seconds"]}}


def run_sweep(spec: Sweep, store_path: Optional[Path], workers: Optional[int] = None, scheduler: Optional[str] = None,
              resume: bool = False, batch: int = 0, connect: float = CONNECT_TIMEOUT, argv: Optional[list[str]] = None,
              progress: Callable[[int, int], None] = lambda done, total: None, local: str = "dask",
              max_points: Optional[int] = None, say: Optional[Callable[[str], None]] = None) -> dict[str, Any]:
    """Evaluate the sweep's points (with ``resume``, only those no earlier run of a sweep of this name
    stored with the same content) and return {"run_id", "group", "where", "evaluated", "reused",
    "failed", "evaluation_seconds" (first batch sent to last one stored, the cluster's start left out),
    "rows"}; rows cover every point, a point that could not run with its ``error`` and no makespan.
    ``local``: what runs ``workers`` processes on this machine (:func:`executor`). With ``max_points``,
    a larger grid is refused (BadValue naming the count, the limit and --max-points) before anything
    runs or is stored; ``say`` is given the count and the time estimated (:func:`point_seconds`) first."""
    from ..measure.run import versions
    from ..store import check_store
    from ..system.inventory import inventory

    if batch < 0:
        raise BadValue(f"--batch {batch}: points per task, at least 1 (0: chosen from the grid)")
    if workers is not None and not 1 <= workers <= 1024:
        raise BadValue(f"--workers {workers}: 1 to 1024 worker processes")
    if max_points is not None and max_points < 1:
        raise BadValue(f"--max-points {max_points}: at least 1 (the largest grid to run)")
    check_store(store_path)
    loaded = models(spec)
    if max_points is not None or say is not None:
        seconds, timed = point_seconds(spec, loaded)
        if max_points is not None and spec.size() > max_points:
            where = ("for one worker of the scheduler's" if scheduler else f"on {workers} workers"
                     if workers and workers > 1 else "in this process")
            raise BadValue(f"the grid has {spec.size():,} points, above the limit of {max_points:,} (--max-points): "
                           f"{estimate_text(seconds, timed, spec.size(), 1 if scheduler else workers or 1, where)}; "
                           f"give --max-points {spec.size()} or more to run it")
    keys = content_keys(spec, loaded)
    group = group_of(spec)
    points = [{**p, "content": keys[p["key"]]} for p in spec.points()]
    done = stored(store_path, spec.name) if resume else {}
    todo = [p for p in points if p["content"] not in done]
    reused = len(points) - len(todo)
    # Four batches a worker: few enough that the scheduler's and the store's share stays small (this
    # process writes every batch), enough to even out the workers' loads and to keep a resume close.
    size = batch or max(1, min(2000 if workers or scheduler else 500, math.ceil(len(todo) / (4 * max(1, workers or 1)))))
    # The store (checked whole as it opens) before the workers start; the run finishes once they are shut
    # down, so that a signal while they shut down still finds it running (and makes it interrupted).
    with open_store(store_path) as db:
        run_id, status, fresh, bad, elapsed = "", "failed", [], [], 0.0
        try:
            with executor(workers, scheduler, connect, local) as (pool, where, in_flight):
                if say is not None:  # once the workers are known (a scheduler's too): each takes two batches in flight
                    say(f"sweep {spec.name}: {len(todo):,} points to evaluate" + (f" ({reused:,} reused)" if reused else "")
                        + f", {estimate_text(seconds, timed, len(todo), max(1, in_flight // 2), where)}")
                run_id = db.start_run("sweep run", sys.argv[1:] if argv is None else argv, inventory(), versions(),
                                      {"sweep": {"name": spec.name, "group": group, "points": len(points),
                                                 "resumed": reused, "where": where}})
                started = time.perf_counter()
                batches = (todo[i:i + size] for i in range(0, len(todo), size))
                for rows in as_finished(pool, in_flight, partial(evaluate_batch, loaded, spec.replace), batches):
                    good = [r for r in rows if r["error"] is None]
                    db.add_samples(run_id, [sample_of(r) for r in good])
                    for r in rows:
                        if r["error"] is not None:
                            bad.append(r)
                            db.add_failure(run_id, SUITE, r["key"], r["error"])
                    fresh += good
                    progress(len(fresh) + len(bad), len(todo))
                elapsed = time.perf_counter() - started
            status = "ok" if fresh or reused or not bad else "failed"
        except BaseException as error:
            if run_id:  # interrupted (a signal behind it) or failed
                db.stop_run(run_id, error, {"evaluated": len(fresh), "failed": len(bad), "reused": reused})
            raise
        db.finish_run(run_id, status, {"evaluated": len(fresh), "failed": len(bad), "reused": reused})
    every = {p["key"]: {**p, "makespan_seconds": done[p["content"]], "error": None} for p in points if p["content"] in done}
    every |= {r["key"]: r for r in fresh}
    every |= {r["key"]: {**r, "makespan_seconds": None} for r in bad}
    rows = [every[p["key"]] for p in points if p["key"] in every]
    return {"run_id": run_id, "group": group, "where": where, "evaluated": len(fresh), "reused": reused,
            "failed": len(bad), "evaluation_seconds": elapsed, "rows": summarize(rows, spec.baseline, spec.costs)}

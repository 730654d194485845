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


class InProcess(concurrent.futures.Executor):
    """The executor for small grids: each batch runs when submitted, in this process."""

    def submit(self, fn, /, *args, **kwargs):
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # noqa: BLE001 - the future carries it to the caller
            future.set_exception(error)
        return future


@contextmanager
def executor(workers: Optional[int], scheduler: Optional[str],
             timeout: float = CONNECT_TIMEOUT) -> Iterator[tuple[concurrent.futures.Executor, str]]:
    """(executor, what it is): a scheduler's, a local Dask cluster of ``workers`` processes, or this process."""
    if scheduler is not None:
        from distributed import Client

        try:
            client = Client(scheduler, timeout=f"{timeout}s")
        except (OSError, TimeoutError, ValueError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise BadValue(f"--scheduler {scheduler}: no Dask scheduler answered within {timeout:g} s ({reason}); "
                           "allowed: the address of a running scheduler, such as tcp://host:8786") from None
        try:
            yield client.get_executor(), f"on the Dask scheduler at {scheduler} ({len(client.scheduler_info()['workers'])} workers)"
        finally:
            client.close()
        return
    if workers is not None and workers > 1:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        import importlib

        client.run(importlib.import_module, __package__ + ".evaluate")  # each worker imports the simulator once, now
        try:
            yield client.get_executor(), f"on a local Dask cluster of {workers} worker processes"
        finally:
            client.close()
            cluster.close()
        return
    yield InProcess(), "in this process"


def models(spec: Sweep) -> dict[str, dict[str, Any]]:
    """Every system and workflow the sweep names, loaded and checked here (bad files fail before any
    work), as plain dicts for the workers."""
    return {"systems": {s: load_named(s, System, "system").model_dump(by_alias=True) for s in spec.systems},
            "workflows": {w: load_named(w, Workflow, "workflow").model_dump(by_alias=True) for w in spec.workflows}}


def group_of(spec: Sweep) -> str:
    return f"{spec.name}-{spec.digest()}"


def stored(store_path: Optional[Path], group: str) -> dict[str, dict[str, Any]]:
    """Point key -> its row, from every earlier run of the sweep's group (finished or interrupted)."""
    try:
        with open_store(store_path, read_only=True) as db:
            found = db.query("SELECT s.value, s.mode, s.size_bytes, s.test, s.params FROM samples s JOIN runs r "
                             "ON r.run_id = s.run_id WHERE s.suite = ? AND "
                             "json_extract_string(r.params, '$.sweep.group') = ?", [SUITE, group])
    except XferlabError:
        return {}  # no store yet: nothing to resume from
    import json

    out = {}
    for r in found:
        params = json.loads(r["params"]) if isinstance(r["params"], str) else r["params"]
        out[params["key"]] = {"system": params["system"], "link": params["link"], "workflow": r["test"],
                              "strategy": r["mode"], "chunk_bytes": r["size_bytes"], "key": params["key"],
                              "makespan_seconds": r["value"]}
    return out


def sample_of(row: dict[str, Any]) -> dict[str, Any]:
    return {"suite": SUITE, "test": row["workflow"], "metric": "makespan_seconds", "value": row["makespan_seconds"],
            "mode": row["strategy"], "size_bytes": row["chunk_bytes"], "validated": True,
            "params": {"system": row["system"], "link": row["link"], "key": row["key"],
                       "evaluation_seconds": row["seconds"]}}


def run_sweep(spec: Sweep, store_path: Optional[Path], workers: Optional[int] = None, scheduler: Optional[str] = None,
              resume: bool = False, batch: int = 0, connect: float = CONNECT_TIMEOUT, argv: Optional[list[str]] = None,
              progress: Callable[[int, int], None] = lambda done, total: None) -> dict[str, Any]:
    """Evaluate the sweep's points (only those not stored yet, with ``resume``) and return
    {"run_id", "group", "where", "evaluated", "reused", "failed", "evaluation_seconds" (first batch sent to
    last one stored, the cluster's start left out), "rows"}; rows cover every point."""
    from ..measure.run import versions
    from ..system.inventory import inventory

    if batch < 0:
        raise BadValue(f"--batch {batch}: points per task, at least 1 (0: chosen from the grid)")
    if workers is not None and not 1 <= workers <= 1024:
        raise BadValue(f"--workers {workers}: 1 to 1024 worker processes")
    loaded = models(spec)
    group = group_of(spec)
    points = spec.points()
    done = stored(store_path, group) if resume else {}
    todo = [p for p in points if p["key"] not in done]
    with executor(workers, scheduler, connect) as (pool, where):
        # Four batches a worker: few enough that the scheduler's and the store's share stays small (this
        # process writes every batch), enough to even out the workers' loads and to keep a resume close.
        size = batch or max(1, min(2000 if workers or scheduler else 500, math.ceil(len(todo) / (4 * max(1, workers or 1)))))
        with open_store(store_path) as db:
            run_id = db.start_run("sweep run", sys.argv[1:] if argv is None else argv, inventory(), versions(),
                                  {"sweep": {"name": spec.name, "group": group, "points": len(points),
                                             "resumed": len(done), "where": where}})
            status, failed, fresh = "interrupted", 0, []
            try:
                started = time.perf_counter()
                futures = [pool.submit(evaluate_batch, loaded, spec.replace, todo[i:i + size])
                           for i in range(0, len(todo), size)]
                for future in concurrent.futures.as_completed(futures):
                    rows = future.result()
                    good = [r for r in rows if r["error"] is None]
                    db.add_samples(run_id, [sample_of(r) for r in good])
                    for r in rows:
                        if r["error"] is not None:
                            failed += 1
                            db.add_failure(run_id, SUITE, r["key"], r["error"])
                    fresh += good
                    progress(len(fresh) + failed, len(todo))
                status = "ok"
            finally:
                elapsed = time.perf_counter() - started if "started" in locals() else 0.0
                db.finish_run(run_id, status, {"evaluated": len(fresh), "failed": failed, "reused": len(done)})
    every = {**done, **{r["key"]: r for r in fresh}}
    rows = [every[p["key"]] for p in points if p["key"] in every]
    return {"run_id": run_id, "group": group, "where": where, "evaluated": len(fresh), "reused": len(done),
            "failed": failed, "evaluation_seconds": elapsed, "rows": summarize(rows, spec.baseline, spec.costs)}

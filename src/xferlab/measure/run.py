"""A measurement run from start to end: record it in the store with the machine's inventory and
the software versions, run its steps with a progress bar, write each step's samples as soon as
the step ends (one transaction each), record failures with their reason, and close the run.

The store is held only while each of those writes commits, never across a step, so other commands
can read it (and other runs record into it) while this one measures. A step whose samples cannot be
written (a full disk) is recorded as failed when the store still takes that; when it takes nothing,
the run stops with exit code 1 and one line. SIGINT or SIGTERM finish the run as ``interrupted``
(the probe child is killed, the finished steps' samples kept); the exception carries ``xferlab_note``,
"run ID kept N samples, status interrupted", N counted in the store, for the CLI's last line. A signal
that arrives while the run finishes makes it ``interrupted`` too (:mod:`xferlab.store.db`)."""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import __version__
from ..errors import XferlabError
from ..store import open_store
from ..system.inventory import inventory
from ..system.state import with_state
from .steps import Converter, Step, StepResult, run_steps
from .probe import run_probe


def versions() -> dict[str, Any]:
    """xferlab's, the probe's (with its compiler), Python's and the libraries'."""
    import numpy

    out: dict[str, Any] = {"xferlab": __version__, "python": platform.python_version(), "numpy": numpy.__version__}
    try:
        import duckdb

        out["duckdb"] = duckdb.__version__
    except ImportError:  # pragma: no cover - duckdb is a dependency
        pass
    probe = run_probe(["version"], timeout=30)
    if probe.ok and probe.records:
        out["probe"] = probe.records[0].get("version")
        out["compiler"] = probe.records[0].get("compiler")
    return out


@dataclass
class RunOutcome:
    run_id: str
    store_path: Path
    results: list[StepResult]
    inventory: dict[str, Any]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [row for r in self.results for row in r.rows]

    @property
    def machine_state(self) -> dict[str, Any]:
        """The machine's state at the start with its warnings (system/state.py), as recorded."""
        return self.inventory.get("machine_state") or {}

    @property
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.failure]

    @property
    def exit_code(self) -> int:
        """0 when no step failed, 1 when every step failed, 3 when some did (their results are kept).
        Steps skipped because the time budget was used up are not failures."""
        ran = [r for r in self.results if not _skipped(r)]
        failed = [r for r in ran if r.failure]
        if not failed:
            return 0
        return 1 if len(failed) == len(ran) else 3


def _skipped(result: StepResult) -> bool:
    return bool(result.failure) and result.failure.startswith("skipped:")


class StoreFailed(XferlabError):
    """The store took neither a step's samples nor the step's failure: the run stops (exit code 1)."""

    exit_code = 1


def measure(command: str, steps: list[Step], convert: Converter, suite: str, params: dict[str, Any],
            store_path: Optional[Path], timeout: float, budget: Optional[float] = None,
            extra_inventory: Optional[dict[str, Any]] = None,
            extra_summary: Optional[Callable[[list[StepResult]], dict[str, Any]]] = None) -> RunOutcome:
    """Run ``steps`` as one recorded run. Progress, and a line per finished step, go to stderr. A memory,
    device or kernels run records the peaks its bandwidths are held against with its inventory (measure/peak.py).
    ``extra_summary`` adds to the run's summary what only the steps' output tells (the MPI ranks' hosts)."""
    machine = with_state({**inventory(), **(extra_inventory or {})}, command, params)
    if suite == "memory" or (suite in ("device", "kernels") and machine.get("accelerator")):  # what its bandwidths are held against
        from .peak import record

        machine["peaks"] = record(suite, machine.get("accelerator"), machine.get("accelerators"))
    store = open_store(store_path)
    total = sum(s.estimate_seconds for s in steps) or 1.0
    progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                        TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                        transient=True, console=Console(stderr=True, markup=False))
    kept = 0
    run_id = ""
    try:
        run_id = store.start_run(command, sys.argv[1:], machine, versions(), params)
        deadline = time.monotonic() + budget if budget else None
        with progress:
            task = progress.add_task("starting", total=total)

            def started(step: Step) -> None:
                progress.update(task, description=step.label)

            def finished(result: StepResult) -> None:
                nonlocal kept
                try:
                    if result.rows:
                        kept += store.add_samples(run_id, result.rows)
                except XferlabError as error:  # a full disk, a store damaged meanwhile
                    reason = f"its {len(result.rows)} samples could not be stored: {error}"
                    result.failure = f"{result.failure}; {reason}" if result.failure else reason
                if result.failure:
                    try:
                        store.add_failure(run_id, suite, result.step.label, result.failure)
                    except XferlabError as error:
                        raise StoreFailed(f"{error} (run {run_id} stopped at step '{result.step.label}'; the "
                                          f"{kept} samples of the steps before are kept)") from None
                progress.advance(task, result.step.estimate_seconds)
                outcome = f"failed: {result.failure}" if result.failure else f"{len(result.rows)} samples stored"
                progress.console.print(f"{result.step.label}: {outcome} ({result.seconds:.1f} s)", highlight=False,
                                       markup=False)

            def line(text: str) -> None:
                progress.console.print(text, highlight=False, markup=False)

            results = run_steps(steps, convert, timeout, finished, started, deadline, line)
        outcome = RunOutcome(run_id, store.path, results, machine)
        failed = sum(1 for r in results if r.failure and not _skipped(r))
        status = {0: "ok", 1: "failed", 3: "ok"}[outcome.exit_code]
        try:
            store.finish_run(run_id, status, {"steps": len(results), "failed_steps": failed,
                                              "skipped_steps": sum(1 for r in results if _skipped(r)),
                                              **(extra_summary(results) if extra_summary else {})})
        except XferlabError as error:
            raise StoreFailed(f"{error} (run {run_id} could not be closed; its {kept} samples are kept)") from None
        return outcome
    except BaseException as error:
        if run_id:  # (none before the run was recorded, or when it was stopped as it started: start_run says so)
            store.stop_run(run_id, error)  # interrupted (a signal behind it) or failed
        raise
    finally:
        store.close()


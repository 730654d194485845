"""A measurement run from start to end: record it in the store with the machine's inventory and
the software versions, run its steps with a progress bar, write each step's samples as soon as
the step ends (one transaction each), record failures with their reason, and close the run."""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import __version__
from ..store import open_store
from ..system.inventory import inventory
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
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.failure]


def measure(command: str, steps: list[Step], convert: Converter, suite: str, params: dict[str, Any],
            store_path: Optional[Path], timeout: float, budget: Optional[float] = None,
            extra_inventory: Optional[dict[str, Any]] = None) -> RunOutcome:
    """Run ``steps`` as one recorded run. Progress, and a line per finished step, go to stderr."""
    machine = {**inventory(), **(extra_inventory or {})}
    with open_store(store_path) as store:
        run_id = store.start_run(command, sys.argv[1:], machine, versions(), params)
        deadline = time.monotonic() + budget if budget else None
        total = sum(s.estimate_seconds for s in steps) or 1.0
        progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                            transient=True, console=Console(stderr=True, markup=False))
        status = "interrupted"
        try:
            with progress:
                task = progress.add_task("starting", total=total)

                def started(step: Step) -> None:
                    progress.update(task, description=step.label)

                def finished(result: StepResult) -> None:
                    if result.rows:
                        store.add_samples(run_id, result.rows)
                    if result.failure:
                        store.add_failure(run_id, suite, result.step.label, result.failure)
                    progress.advance(task, result.step.estimate_seconds)
                    outcome = f"failed: {result.failure}" if result.failure else f"{len(result.rows)} samples stored"
                    progress.console.print(f"{result.step.label}: {outcome} ({result.seconds:.1f} s)", highlight=False,
                                           markup=False)

                results = run_steps(steps, convert, timeout, finished, started, deadline)
            failed = sum(1 for r in results if r.failure)
            status = "ok" if not failed else "failed" if failed == len(results) else "ok"
            store.finish_run(run_id, status, {"steps": len(results), "failed_steps": failed})
        except KeyboardInterrupt:
            store.finish_run(run_id, status)
            raise
        return RunOutcome(run_id, store.path, results, machine)

"""A measurement suite is a list of *steps*, each one run of the native probe. This module runs
them: each step with its timeout (or skipped once the time budget is spent), its JSON lines turned
into tidy sample rows by the suite's converter, and a callback as soon as it ends, so that the
caller can commit its samples before the next step starts."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .probe import ProbeRun, run_probe
from .programs import refused
from .samples import unvalidated_count


@dataclass
class Step:
    """One probe run: its arguments, what it measures, and the placement it stands for."""

    label: str
    test: str  # the probe subcommand: stream, latency, loaded, transfer, launch, chunks …
    args: list[str]
    placement: dict[str, Any]
    estimate_seconds: float
    launcher: Optional[list[str]] = None  # e.g. mpiexec -n 2: the probe runs as several processes
    env: Optional[dict[str, str]] = None
    pass_fds: tuple[int, ...] = ()
    learned: dict[str, Any] = field(default_factory=dict)  # what the run said of itself (the MPI setup)
    #: a step done in Python instead of by the probe (the offload runtime's, which lives in this process):
    #: called with the step's time limit, it returns what a probe run would, its records and failure
    call: Optional[Callable[[float], ProbeRun]] = None
    #: the longest the step may run, from its plan (it ends itself before: the latency sweep's --budget);
    #: None: the run's timeout, and at most 30 s past the time budget
    limit: Optional[float] = None
    #: a line to show (stderr) for a record the probe prints as it runs (a latency point as it ends)
    progress: Optional[Callable[[dict[str, Any]], Optional[str]]] = None
    #: the probe's option for the seconds of the run's budget left when the step starts (the latency
    #: sweep's ``--budget``: it starts no point it estimates would end past it); given only under a budget
    budget_flag: Optional[str] = None



def planned_limit(estimate: float) -> float:
    """A planned step's timeout (:attr:`Step.limit`): three times its estimate and 30 s more (a busy
    machine); the latency sweep ends itself at its --budget well before."""
    return 3 * estimate + 30.0


Converter = Callable[[Step, ProbeRun], "tuple[list[dict[str, Any]], Optional[str]]"]


def good_time(value: Any) -> bool:
    """Whether a probe's time is one a sample may carry: a finite number of seconds above zero
    (the probe prints a non-finite number as null)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def dropped_reason(dropped: list[str]) -> Optional[str]:
    """The failure reason of a step whose probe printed samples with impossible times (dropped, not stored)."""
    if not dropped:
        return None
    return (f"dropped {len(dropped)} sample{'s' * (len(dropped) > 1)} with a non-positive or non-finite time "
            f"(first: {dropped[0]})")


def step_failure(rows: list[dict[str, Any]], failure: Optional[str], dropped: list[str], what: str = "samples"
                 ) -> Optional[str]:
    """Why a step failed, the converters' one rule: the probe's (or a check's) reason; else samples
    dropped for an impossible time; else rows the probe ended before validating (``what`` names
    them: copies, repeats …); else no samples at all. None when the step succeeded."""
    failure = failure or dropped_reason(dropped)
    unchecked = unvalidated(rows)
    if unchecked and failure is None:
        failure = f"the probe ended before validating {unchecked} {what}"
    if not rows and failure is None:
        failure = "the probe reported no samples"
    return failure


def unvalidated(rows: list[dict[str, Any]]) -> int:
    """How many of ``rows`` the probe did not validate (kept in the store, left out of statistics)."""
    return unvalidated_count(rows)


@dataclass
class StepResult:
    step: Step
    rows: list[dict[str, Any]]
    failure: Optional[str]
    seconds: float


def run_steps(plan_steps: list[Step], convert: Converter, timeout: float, on_result: Callable[[StepResult], None],
              on_start: Callable[[Step], None] = lambda s: None, deadline: Optional[float] = None,
              on_line: Callable[[str], None] = lambda line: None) -> list[StepResult]:
    """Runs each step; ``on_result`` (e.g. a store write) is called as soon as a step finishes, and
    ``on_line`` with each progress line of a step that has them (:attr:`Step.progress`). A step with
    a planned :attr:`Step.limit` runs to that limit (its plan fits the budget; cutting it at the
    budget's end would kill a planned point); any other to the timeout, at most 30 s past the budget."""
    results = []
    for step in plan_steps:
        on_start(step)
        t0 = time.monotonic()
        if deadline is not None and t0 >= deadline:
            result = StepResult(step, [], "skipped: the time budget was used up", 0.0)
        else:
            limit = (step.limit if step.limit is not None else timeout if deadline is None
                     else max(1.0, min(timeout, deadline - t0 + 30)))
            args = step.args
            if step.budget_flag and deadline is not None and step.budget_flag not in args:
                args = [*args, step.budget_flag, repr(max(0.001, deadline - t0))]
            shown = (lambda record, show=step.progress: _show(show(record), on_line)) if step.progress else None
            run = step.call(limit) if step.call else run_probe(args, timeout=limit, launcher=step.launcher,
                                                                env=step.env, pass_fds=step.pass_fds, on_record=shown)
            refused(run)  # --program's binaries refused by the device: the user's input, one line, exit 2
            rows, failure = convert(step, run)
            result = StepResult(step, rows, failure, time.monotonic() - t0)
        on_result(result)
        results.append(result)
    return results


def _show(line: Optional[str], on_line: Callable[[str], None]) -> None:
    if line:
        on_line(line)

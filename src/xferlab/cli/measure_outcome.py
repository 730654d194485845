"""How a measure command ends: after its results are printed, the machine state's warnings (a footer
under the tables; stderr with --json or --csv, so stdout stays parseable), then a final one-line error and its exit
code: 0 when every step that ran succeeded, 1 when every step failed, 3 when some failed (the
others' results are kept). A step skipped because the time budget was used up is reported, not
counted as a failure. The failed steps themselves are listed by :mod:`xferlab.measure.results`."""

from __future__ import annotations

import typer

from ..measure.results import failed_steps, step_count
from ..system.state import warning_lines
from .output import stderr, stdout


def conclude(outcome, fmt: str = "table") -> None:
    """Say the warnings of the machine's state at the run's start (system/state.py), then exit with the
    run's own code (measure/run.py's RunOutcome) and say why when it is not 0."""
    for line in warning_lines(outcome.machine_state):
        (stdout if fmt == "table" else stderr).print(line, highlight=False, markup=False, soft_wrap=True)
    code = outcome.exit_code
    if not code:
        return
    failed = failed_steps(outcome)
    first = failed[0] if failed else None
    where = f" (first: {first.step.label}: {first.failure})" if first else ""
    stderr.print(f"error: {len(failed)} of {step_count(outcome)} steps failed{where}; results kept in run {outcome.run_id}",
                 highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(code)

"""How a measure command ends: after its results are printed, a final one-line error and its exit
code: 0 when every step that ran succeeded, 1 when every step failed, 3 when some failed (the
others' results are kept). A step skipped because the time budget was used up is reported, not
counted as a failure. The failed steps themselves are listed by :mod:`xferlab.measure.results`."""

from __future__ import annotations

import typer

from ..measure.results import failed_steps, step_count
from .output import stderr


def conclude(outcome) -> None:
    """Exit with the run's own code (measure/run.py's RunOutcome) and say why when it is not 0."""
    code = outcome.exit_code
    if not code:
        return
    failed = failed_steps(outcome)
    first = failed[0] if failed else None
    where = f" (first: {first.step.label}: {first.failure})" if first else ""
    stderr.print(f"error: {len(failed)} of {step_count(outcome)} steps failed{where}; results kept in run {outcome.run_id}",
                 highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(code)

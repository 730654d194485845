"""How a measure command ends: its failed and skipped steps listed (with the unvalidated samples each
left in the store), and its exit code: 0 when every step that ran succeeded, 1 when every step
failed, 3 when some failed (the others' results are kept). A step skipped because the time budget
was used up is reported, not counted as a failure."""

from __future__ import annotations

from typing import Any

import typer

from ..measure.steps import unvalidated
from .output import stderr

SKIPPED = "skipped:"


def _results(outcome) -> list:
    # A run read back from the store (report/collect.py) has only rows and failures.
    return list(getattr(outcome, "results", None) or getattr(outcome, "failures", []) or [])


def failures(outcome) -> list[dict[str, Any]]:
    """Each failed or skipped step: its label, reason, and the unvalidated samples it stored."""
    return [{"step": r.step.label, "reason": r.failure, "unvalidated_samples": unvalidated(getattr(r, "rows", []))}
            for r in _results(outcome) if r.failure]


def unvalidated_total(outcome) -> int:
    return sum(unvalidated(getattr(r, "rows", [])) for r in _results(outcome))


def notes(entries: list[dict[str, Any]]) -> list[str]:
    """One line per failed ('failed: …') or skipped ('skipped: …') step."""
    out = []
    for f in entries:
        if f["reason"].startswith(SKIPPED):
            out.append(f"skipped: {f['step']}: {f['reason'][len(SKIPPED):].strip()}")
        else:
            kept = f.get("unvalidated_samples") or 0
            extra = (f" ({kept} unvalidated sample{'s' * (kept > 1)} kept in the store, left out of the statistics)"
                     if kept else "")
            out.append(f"failed: {f['step']}: {f['reason']}{extra}")
    return out


def exit_code(outcome) -> int:
    """0, 1 (every step that ran failed) or 3 (some did): the run's own (measure/run.py's RunOutcome)."""
    return outcome.exit_code


def conclude(outcome) -> None:
    """After the results are printed: a final one-line error and a non-zero exit when steps failed."""
    code = exit_code(outcome)
    if not code:
        return
    results = _results(outcome)
    failed = [r for r in results if r.failure and not r.failure.startswith(SKIPPED)]
    first = failed[0] if failed else None
    where = f" (first: {first.step.label}: {first.failure})" if first else ""
    stderr.print(f"error: {len(failed)} of {len(results)} steps failed{where}; results kept in run {outcome.run_id}",
                 highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(code)

"""Running a study: its steps in order, each an existing measurement recorded as a run whose params
name the study, its group (the study and its options) and the step. A re-run with the same options
finds the steps already in the store (run status ok) and reuses their samples, so an interrupted
study picks up where it stopped; the budget bounds the steps that still have to run. The
comparison table is built from every step's rows, reused or new."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue, XferlabError
from ..measure.run import measure
from ..store import open_store
from .base import Study


@dataclass
class StudyResult:
    study: Study
    group: str
    table: list[dict[str, Any]]
    skipped: list[dict[str, str]]
    steps: list[dict[str, Any]] = field(default_factory=list)  # key, label, run_id, status, failure
    notes: list[str] = field(default_factory=list)  # the plan's (base.Plan.notes)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [s for s in self.steps if s["status"] == "failed"]


def group_of(study: Study, options: dict[str, Any]) -> str:
    """The study's name and a digest of its options: runs with the same group are the same study.
    Options that mean the same hash the same: numbers to 12 significant digits (300ns and 0.3us), lists
    as sets (the chunks or workloads in another order, or one given twice)."""
    def same(value: Any) -> Any:
        if isinstance(value, float):
            return float(f"{value:.12g}")
        if isinstance(value, (list, tuple)):
            return sorted({json.dumps(same(v), sort_keys=True, default=str) for v in value})
        return value

    digest = hashlib.sha1(json.dumps({k: same(v) for k, v in options.items()}, sort_keys=True,
                                     default=str).encode()).hexdigest()[:10]
    return f"{study.name}-{digest}"


def _done(store_path: Optional[Path], group: str) -> dict[str, str]:
    """Step key -> run id of the group's steps already recorded whole: finished ok with no part failed
    or left out for the budget (such a step runs again)."""
    whole = ("coalesce(TRY_CAST(json_extract_string(summary, '$.{}') AS INTEGER), 0) = 0")
    try:
        with open_store(store_path, read_only=True) as db:
            found = db.query("SELECT run_id, json_extract_string(params, '$.study.step') AS step FROM runs "
                             "WHERE status = 'ok' AND json_extract_string(params, '$.study.group') = ? AND "
                             f"{whole.format('failed_steps')} AND {whole.format('skipped_steps')} "
                             "ORDER BY run_id", [group])
    except XferlabError:
        return {}  # no store yet, or one that cannot be read: every step runs
    return {r["step"]: r["run_id"] for r in found}


def _samples(store_path: Optional[Path], run_id: str) -> list[dict[str, Any]]:
    with open_store(store_path, read_only=True) as db:
        return db.samples(run_id)


def run_study(study: Study, options: dict[str, Any], store_path: Optional[Path], budget: float,
              timeout: float) -> StudyResult:
    """Plan the study on this machine, run (or reuse) each step within ``budget`` seconds, and build its table."""
    if budget <= 0:
        raise BadValue(f"--budget {budget:g} s: a study needs some time to run")
    plan = study.plan(options)
    group = group_of(study, options)
    done = _done(store_path, group)
    pending = [s for s in plan.steps if s.key not in done]
    if pending:  # the budget must hold the next step's first part; the parts after it may wait for a re-run
        needed = max(1.0, pending[0].steps[0].estimate_seconds)
        if budget < needed:
            raise BadValue(f"--budget {budget:g} s is too small to run one step of the {study.name} study (its next step, "
                           f"{pending[0].label}, needs about {needed:.0f} s); allowed: at least {needed:.0f} s")
    deadline = time.monotonic() + budget
    result = StudyResult(study, group, [], plan.skipped, notes=plan.notes)
    rows: dict[str, list[dict[str, Any]]] = {}
    for step in plan.steps:
        entry: dict[str, Any] = {"key": step.key, "label": step.label, "run_id": None, "status": "", "failure": None}
        result.steps.append(entry)
        if step.key in done:
            entry.update(run_id=done[step.key], status="reused")
            rows[step.key] = _samples(store_path, done[step.key])
            continue
        left = deadline - time.monotonic()
        need = step.steps[0].estimate_seconds
        if left <= 1.0 or need > left:  # a step's run cannot always be cut short: none starts that the budget cannot hold
            entry.update(status="skipped", failure=("the time budget was used up" if left <= 1.0 else
                                                    f"its first part needs about {need:.0f} s and {left:.0f} s of "
                                                    "the budget are left") + " (run the study again to go on)")
            continue
        params = {**step.params, "study": {"name": study.name, "group": group, "step": step.key, "options": options,
                                           "skipped": plan.skipped, "notes": plan.notes}}
        outcome = measure(f"study {study.name}", step.steps, step.convert, step.suite, params, store_path,
                          timeout=timeout, budget=left, extra_inventory=step.inventory)
        failures = [r.failure for r in outcome.results if r.failure]
        partial = outcome.exit_code == 0 and failures  # parts left out for the budget: not reused, run again
        entry.update(run_id=outcome.run_id, status="partial" if partial else "measured" if outcome.exit_code == 0
                     else "failed", failure="; ".join(failures) or None)
        rows[step.key] = outcome.rows
    result.table = study.table(rows)
    return result

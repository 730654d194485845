"""The report's study sections: for each study group among the runs the report shows, the study's
table rebuilt from every run of the group (src/xferlab/studies/), the classes it skipped and why,
and the command that runs it again."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .collect import Section, Table

#: The study options `xferlab study run` takes on its command line (cli/study.py).
CLI_OPTIONS = ("pmem", "pmem_node", "iterations", "backend", "device", "count", "total", "chunks", "held_out", "evaluations",
               "depth", "repeats", "workloads", "latencies")


def study_groups(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Group id -> the study's params (name, options, skipped) of the shown runs that belong to a study."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        study = (run.get("params") or {}).get("study")
        if isinstance(study, dict) and study.get("group") and study.get("name"):
            out.setdefault(study["group"], study)
    return out


def study_section(db, group: str, study_params: dict[str, Any]) -> Section:
    from ..studies import find
    from ..studies.base import option

    study = find(study_params["name"])
    found = db.query("SELECT run_id, json_extract_string(params, '$.study.step') AS step FROM runs "
                     "WHERE status = 'ok' AND json_extract_string(params, '$.study.group') = ? ORDER BY run_id", [group])
    steps = {r["step"]: r["run_id"] for r in found}
    rows = {step: db.samples(run_id) for step, run_id in steps.items()}
    table = study.table(rows)
    options = study_params.get("options") or {}
    given = [f"{option(k)} {shlex.quote(','.join(map(str, v)) if isinstance(v, list) else str(v))}" for k, v in options.items()
             if k in CLI_OPTIONS and v is not None and study.options.get(k) != v]
    intro = [f"{study.seed}: {study.experiment}", f"group {group}: runs " + ", ".join(f"{k} {v}" for k, v in steps.items())]
    intro += [f"skipped: {s['class']}: {s['reason']}" for s in study_params.get("skipped") or []]
    intro += study.notes(table) if study.notes else []
    section = Section(f"Study {study.name} ({study.seed})", f"study-{group}", intro,
                      [Table(study.description, list(study.columns), table)])
    from ..store import DEFAULT_PATH

    if Path(db.path).resolve() != DEFAULT_PATH.resolve():  # reuses the steps only when run against the same store
        given.append(f"--store {shlex.quote(str(db.path))}")
    section.commands.append(" ".join(["xferlab study run", study.name, *given]))
    return section

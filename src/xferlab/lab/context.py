"""What the lab's stages share (:class:`Lab`, one per run of the lab) and what a lab run returns
(:class:`LabResult`)."""

from __future__ import annotations

import platform
import time as _time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

from .. import __version__
from ..links import profiles
from ..measure.device import DevicePlan
from ..measure.probe import ProbeRun


@dataclass
class LabResult:
    """What a lab run produced: the folder, the summary written as lab.json, the scenario rows, the
    memory and device results, the failed stages and the exit code."""

    folder: Path
    store: Path
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    memory: dict[str, Any]
    memory_run: Optional[str]
    device_runs: list[dict[str, Any]]
    clock: Any
    failed: list[tuple[str, str]] = field(default_factory=list)
    report: Optional[Path] = None
    profiles: list[str] = field(default_factory=list)
    kept_profiles: Optional[Path] = None
    code: int = 0


@dataclass
class Lab:
    """What the stages share: the budget and the time it started, the results folder and the store, what
    each stage found (the summary written as lab.json, the runs the report shows, the failures) and
    what later stages use (the device plans, the memory results for device STREAM's sizing)."""

    seconds: float
    folder: Path
    store: Optional[Path]  # as given to measure (None: $XFERLAB_STORE or the default)
    store_path: Path  # the file it names
    started: datetime
    say: Callable[[str], None]
    t0: float = field(default_factory=_time.monotonic)
    prefix: str = ""  # the running stage's "[k/n]"
    summary: dict[str, Any] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (stage, why), one per failed step of a stage
    recorded: list[str] = field(default_factory=list)  # the runs the report shows
    measured: bool = False  # memory or an accelerator gave rows
    clock: ProbeRun = field(default_factory=lambda: ProbeRun(["clock"], failure="not run"))
    memory: dict[str, Any] = field(default_factory=lambda: {k: [] for k in ("bandwidth", "latency", "loaded",
                                                                            "failures", "skipped")})
    memory_run: Optional[str] = None
    plans: list[DevicePlan] = field(default_factory=list)
    device_runs: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    report: Optional[Path] = None
    program: Optional[Path] = None  # --program DIR: the binaries of one OpenCL device (program_for)
    mpi: str = "auto"  # --mpi: the network stage's MPI

    def __post_init__(self) -> None:
        self.summary = {"xferlab_version": __version__, "started_utc": self.started.isoformat(),
                        "budget_seconds": self.seconds, "python": platform.python_version(),
                        "machine": platform.machine(), "kernel": platform.release(),
                        "stages_started_seconds": {},  # when each stage began, from the lab's start: where the time went
                        "probe": {"ok": False, "failure": self.clock.failure, "records": []},
                        "accelerators_not_available": []}  # (what a stage that stops early leaves)

    def close_summary(self) -> None:
        """The summary's closing fields, as they stand: the time taken, the failures, where things went."""
        self.summary.update({"report": str(self.report) if self.report else None,
                             "elapsed_seconds": _time.monotonic() - self.t0, "failed_stages": failures_json(self.failed),
                             "store": str(self.store_path), "profiles_folder": str(profiles.folder())})

    def program_for(self, backend: str, info: dict[str, Any]) -> Optional[Path]:
        """--program DIR where it serves this device (its manifest names it), else None: from source."""
        from ..measure.programs import serves

        return self.program if backend == "opencl" and serves(self.program, info) else None

    def left(self) -> float:
        """Seconds of the budget left."""
        return self.seconds - (_time.monotonic() - self.t0)

    def note(self, line: str) -> None:
        """A progress line of the running stage."""
        self.say(f"{self.prefix} {line}")

    def add_run(self, run_id: Optional[str]) -> None:
        """A run the report shows (None: nothing was recorded)."""
        if run_id:
            self.recorded.append(run_id)

    def stage_failures(self, stage: str, failures: list[dict], any_rows: bool) -> None:
        """(stage, 'step: reason') for each failed step of a measuring stage (skipped ones, for want of
        time, are not failures); a stage with no rows at all and no failure listed failed too."""
        out = [(stage, f"{f['step']}: {f['reason']}") for f in failures if not str(f["reason"]).startswith("skipped:")]
        self.failed += out or ([(stage, "nothing was measured")] if not any_rows else [])


def failures_json(failed: list[tuple[str, str]]) -> list[dict[str, str]]:
    """lab.json's ``failed_stages``: [{stage, reason}]."""
    return [{"stage": stage, "reason": reason} for stage, reason in failed]

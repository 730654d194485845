"""The report's machine state: for each run, the state of the machine at its start as the run recorded
it (src/xferlab/system/state.py: NUMA balancing, governor, turbo, THP, SMT, VM, load, clock source), and
the warnings its rules gave for that run. Runs recorded before the state was recorded say so."""

from __future__ import annotations

from typing import Any

from ..system.state import warning_lines
from .collect import Section, Table


def _row(run: dict[str, Any]) -> dict[str, Any]:
    state = (run.get("inventory") or {}).get("machine_state")
    row: dict[str, Any] = {"run_id": run["run_id"], "command": run["command"]}
    if not state:
        return {**row, "numa_balancing": "not recorded"}
    thp, virt, load = state.get("transparent_hugepages") or {}, state.get("virtualization") or {}, state.get("load_average")
    other = state.get("other_cpu_load")
    return {**row, "numa_balancing": state.get("numa_balancing"), "governor": state.get("governor"),
            "turbo": state.get("turbo"), "thp": f"{thp.get('enabled')} (defrag {thp.get('defrag')})",
            "smt": (state.get("smt") or {}).get("control"), "virtual": virt.get("virtual"),
            "load": f"{load[0]:.2f}" if load else "unknown",
            "other": "unknown" if other is None else f"{other:.2f}", "clock_source": state.get("clock_source"),
            "warnings": len(state.get("warnings") or [])}


def state_section(runs: list[dict[str, Any]]) -> Section:
    """One row per run, and under the table each warning with its run."""
    notes = [f"run {run['run_id']}: {line}" for run in runs
             for line in warning_lines((run.get("inventory") or {}).get("machine_state"))]
    table = Table("State at each run's start", [
        ("run_id", "run"), ("command", "command"), ("numa_balancing", "NUMA balancing"), ("governor", "governor"),
        ("turbo", "turbo"), ("thp", "transparent huge pages"), ("smt", "SMT"), ("virtual", "virtual machine"),
        ("load", "load average (1 min)"), ("other", "other processes' load (CPUs)"), ("clock_source", "clock source"),
        ("warnings", "warnings")], [_row(r) for r in runs], notes or ["no warnings: no setting known to move these "
                                                                       "results was seen at their start"])
    return Section("Machine state", "machine-state",
                   ["what was running and how the machine was set when each run started; a warning names a setting "
                    "known to move results, why, and a source"], tables=[table])

"""A measure run's results as the CLI, the lab and the report show them: summaries with the unit in
each field name, the failed and skipped steps (with the unvalidated samples each left in the
store), and the plots. The commands in ``xferlab.cli`` only print what these return."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..system import inventory as inv
from . import conventions, loaded as loaded_mixes, peak, pmdk, sizeclass
from .device import chunk_summary, transfer_overview, transfer_summary
from .launches import launch_summary
from .memory import MemoryPlan, summaries
from .steps import unvalidated

#: A step whose failure starts so was skipped (time budget used up), not failed.
SKIPPED = "skipped:"


def _results(outcome) -> list:
    # A run read back from the store (report/collect.py) has only rows and failures.
    return list(getattr(outcome, "results", None) or getattr(outcome, "failures", []) or [])


def failures(outcome) -> list[dict[str, Any]]:
    """Each failed or skipped step: its label, reason, and the unvalidated samples it stored."""
    return [{"step": r.step.label, "reason": r.failure, "unvalidated_samples": unvalidated(getattr(r, "rows", []))}
            for r in _results(outcome) if r.failure]


def failed_steps(outcome) -> list:
    """The steps that failed (not those skipped for the budget)."""
    return [r for r in _results(outcome) if r.failure and not r.failure.startswith(SKIPPED)]


def step_count(outcome) -> int:
    return len(_results(outcome))


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


# -- memory -----------------------------------------------------------------------------------
def memory_params(plan: MemoryPlan) -> dict:
    """The run's parameters as recorded in the store."""
    return {"kernels": plan.kernels, "array_bytes": plan.array_bytes, "threads": plan.thread_counts(), "cpus": plan.cpus,
            "nodes": plan.nodes, "first_touch": plan.first_touch, "hugepages": plan.hugepages,
            "iterations": plan.iterations, "pmem": str(plan.pmem) if plan.pmem else None, "persist": plan.persist,
            "pmdk": plan.pmdk,
            "latency": plan.latency, "loaded": plan.loaded, "mixes": plan.mixes if plan.loaded else None, "precision": plan.precision, "max_time_seconds": plan.max_time}


def _row(summary: dict, llc: int = 0) -> dict:
    """A summary with its unit in each field name (docs/cli.md: bytes_per_second, seconds), and its
    arrays' size class against the host's last-level cache ``llc`` (measure/sizeclass.py)."""
    unit = "bytes_per_second" if summary["metric"] == "bandwidth_bytes_per_second" else "seconds"
    row = {k: summary[k] for k in ("test", "node", "mode", "threads", "size_bytes", "cpus", "headline", "count", "cov")}
    for stat in ("min", "median", "mean", "max"):
        row[f"{stat}_{unit}"] = summary[stat]
    row[f"{summary['headline']}_{unit}"] = summary["headline_value"]
    row[f"median_ci_low_{unit}"], row[f"median_ci_high_{unit}"] = summary.get("median_ci_low"), summary.get("median_ci_high")
    row["stopped"] = summary.get("stopped")
    arrays = sizeclass.arrays_of("memory", summary["test"])
    row["array_size_class"] = sizeclass.size_class(summary["size_bytes"], llc, arrays) if arrays else None
    return row


def memory_results(outcome, plot: Optional[Path], caches: Optional[list] = None,
                   peaks: Optional[dict] = None) -> dict:
    """A memory run's results as rows with units in their field names, its failures, and its plots;
    the latency plot marks ``caches`` (a recorded inventory's) or this machine's. Bandwidth rows carry
    their counting rule and the DRAM peak (``peaks``: the run's recorded ones, else the outcome's)."""
    sums = summaries(outcome.rows)
    llc = sizeclass.host_llc(None if caches is None else {"caches": caches})
    peaks = peak.of(outcome) if peaks is None else peaks
    bandwidth = conventions.with_counting("memory", [_row(s, llc) for s in sums if s["metric"] == "bandwidth_bytes_per_second"])
    loaded = loaded_mixes.points(outcome.rows)
    result = {
        "bandwidth": peak.memory_rows(bandwidth, peaks),
        "conventions": conventions.metadata("memory", [r["test"] for r in bandwidth]
                                            + ([loaded_mixes.TEST] if loaded else [])), "peaks": peaks,
        "latency": [_row(s, llc) for s in sums if s["metric"] == "latency_seconds"],
        "loaded": loaded,
        "failures": failures(outcome),
        "unvalidated_samples": unvalidated_total(outcome),
        "app_direct": _mappings(outcome.rows),
        "plots": [],
    }
    result["pmdk_overhead"] = pmdk.annotate(result["bandwidth"], outcome.rows)
    if plot:
        from ..plots.measured import plot_bandwidth, plot_latency, plot_loaded  # matplotlib only when plotting

        if result["bandwidth"]:
            result["plots"].append(plot_bandwidth(sums, plot / "bandwidth.png"))
        if result["latency"]:
            result["plots"].append(plot_latency(sums, inv.data_cache_sizes(found=caches), plot / "latency.png"))
        if result["loaded"]:
            result["plots"] += plot_loaded(loaded_mixes.curves(result["loaded"]), loaded_mixes.title, plot)
    return result


def _mappings(rows: list[dict]) -> list[dict]:
    """For each App-Direct mode run: whether the mapping was DAX and how stores were persisted."""
    seen: dict[str, dict] = {}
    for r in rows:
        if str(r.get("mode", "")).startswith(("app-direct", "pmdk")) and r["mode"] not in seen:
            seen[r["mode"]] = {"mode": r["mode"], "dax": r.get("dax"), "map_sync": r.get("map_sync"),
                               "persist_mechanism": r.get("persist_mechanism"), "emulated": bool(r.get("emulated"))}
    return list(seen.values())


# -- device -----------------------------------------------------------------------------------
def device_results(outcome, plot: Optional[Path], peaks: Optional[dict] = None) -> dict:
    """A device run's copies, overview, chunk study and launch latency, its failures, and its plots; the
    copies with their counting rule and the peak of the link they crossed (``peaks``: the run's recorded
    ones, else the outcome's)."""
    rows = outcome.rows
    peaks = peak.of(outcome) if peaks is None else peaks
    result = {"transfers": transfer_summary(rows), "launch": launch_summary(rows), "chunks": chunk_summary(rows),
              "failures": failures(outcome), "unvalidated_samples": unvalidated_total(outcome), "plots": []}
    result["overview"] = transfer_overview(result["transfers"]) if result["transfers"] else []
    for key, value, size in (("transfers", "median_bytes_per_second", "size_bytes"),
                             ("overview", "bandwidth_bytes_per_second", "largest_bytes")):
        peak.device_rows(conventions.with_counting("device", result[key], "direction"), peaks, value, size)
    for chunk in result["chunks"]:
        chunk["counting"] = conventions.counting("device", "chunks")
    tests = [r["direction"] for r in result["transfers"]] + (["chunks"] if result["chunks"] else [])
    result["conventions"], result["peaks"] = conventions.metadata("device", tests), peaks
    if plot:
        from ..plots.measured import plot_chunk_study, plot_device_transfers, plot_launch  # matplotlib only when plotting

        if result["transfers"]:
            result["plots"] += plot_device_transfers(result["transfers"], plot)
        if rows and result["launch"]:
            result["plots"].append(plot_launch(rows, plot / "launch-latency.png"))
        if result["chunks"]:
            result["plots"].append(plot_chunk_study(result["chunks"], plot / "chunks.png"))
    return result

"""The report's accelerator-side sections: a `measure kernels` run (device STREAM by memory kind,
scaling, faults, alignment, device to device, SpMV) and the at-a-glance table that sets host STREAM,
the host-to-device copy and device STREAM side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..units import format_rate, format_size
from .collect import Figure, Headline, Section, Table, ci_rows, command_of, headline_of, plot_command


def kernels_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> tuple[Section, list[Headline]]:
    """The accelerator's side: device STREAM per memory kind (BabelStream's kernels), scaling,
    first-touch faults, copies by alignment, SpMV (measure/kernels.py's summaries)."""
    from ..measure.kernel_results import align_summary, d2d_summary, fault_summary, overview, scaling, stream_summary
    from .plots import plot_kernels

    rid = run["run_id"]
    summary = stream_summary(rows)
    stream = [s for s in summary if s["kernel"] != "spmv"]
    accel = (run.get("inventory") or {}).get("accelerator") or {}
    name = accel.get("name") or next((r.get("device_name") for r in rows if r.get("device_name")), "?")
    section = Section(f"Kernels on {name} (run {rid})", f"run-{rid}-kernels",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC",
                       "BabelStream's kernels and byte counts (copy, mul, dot: 2 arrays; add, triad: 3; read: 1); best = "
                       "the fastest launch, BabelStream's figure; memory = where the arrays live (pinned, host and svm: "
                       "kernels on host memory)"])
    section.commands.append(command_of(run))
    view = overview(stream)
    if view:
        cols = [("memory", "memory")] + [(f"{k}_best_bytes_per_second", k) for k in ("copy", "mul", "add", "triad", "dot", "read")
                                         if any(f"{k}_best_bytes_per_second" in v for v in view)]
        section.tables.append(Table("Device STREAM, best point per kernel and memory kind (one instance)", cols, view))
    if stream:
        section.tables.append(Table("Every point", [("memory", "memory"), ("kernel", "kernel"), ("type", "type"),
                                    ("width", "width"), ("groups", "groups"), ("instances", "instances"),
                                    ("best_bytes_per_second", "best"), ("median_bytes_per_second", "median"),
                                    ("median_ci", "median 95% CI"), ("count", "n")],
                                    ci_rows(stream, ("median_ci", "median_bytes_per_second", "median_ci_low_bytes_per_second",
                                                     "median_ci_high_bytes_per_second"))))
    table = scaling(summary)
    if table:
        section.tables.append(Table("Scaling over work-groups and concurrent instances (seed 004: 2.24x with 4 memory "
                                    "ports, 4.7x with 8 kernel copies)",
                                    [("kernel", "kernel"), ("memory", "memory"), ("width", "width"), ("groups", "groups"),
                                     ("instances", "instances"), ("best_bytes_per_second", "best"),
                                     ("speedup_vs_fewest_groups", "x fewest groups"),
                                     ("speedup_vs_one_instance", "x one instance")], table))
    faults = fault_summary(rows)
    if faults:
        section.tables.append(Table("First touch of fresh shared memory (seed 001: 20-50 µs per GPU fault, 17 µs per 4 KB page)",
                                    [("memory", "memory"), ("stride_bytes", "stride"), ("touches", "touches"),
                                     ("first_touch_median_seconds", "first touch"),
                                     ("second_touch_median_seconds", "second touch"),
                                     ("fault_median_seconds_per_touch", "fault per touch"),
                                     ("host_back_median_seconds_per_touch", "host read-back per touch")], faults))
    align = align_summary(rows)
    if align:
        section.tables.append(Table("Copies by host offset and allocator (seed 004's DMA hazard)",
                                    [("direction", "direction"), ("allocator", "allocator"), ("offset_bytes", "offset"),
                                     ("median_bytes_per_second", "median"), ("best_bytes_per_second", "best"),
                                     ("relative_to_runtime_aligned", "vs runtime, offset 0")], align))
    d2d = d2d_summary(rows)
    if d2d:
        section.tables.append(Table("Device to device between two devices (runtime: one context; staged: through pinned "
                                    "host memory)", [("path", "path"), ("device_index", "from"), ("peer_index", "to"),
                                                     ("size_bytes", "size"), ("median_bytes_per_second", "median"),
                                                     ("best_bytes_per_second", "best"), ("count", "n")], d2d))
    spmv = [s for s in summary if s["kernel"] == "spmv"]
    if spmv:
        section.tables.append(Table("SpMV (CSR, checked against SciPy)", [("type", "type"), ("rows", "rows"), ("nnz", "entries"),
                                    ("groups", "groups"), ("instances", "instances"), ("best_bytes_per_second", "best"),
                                    ("best_flops_per_second", "best flop/s")], spmv))
    for path in plot_kernels(summary, table, folder / rid):
        section.figures.append(Figure(path.stem.replace("-", " "), path, plot_command(run, "kernels")))
    heads = []
    h = headline_of(stream, rid, f"{name}: device STREAM triad, device memory (best)", f"device-triad-{rid}",
                    "best_bytes_per_second", "max", format_rate,
                    {"suite": "kernels", "test": "triad", "metric": "bandwidth_bytes_per_second", "host_kind": "device"},
                    kernel="triad", memory="device", instances=1, width=1)
    if h:
        heads.append(h)
    return section, heads


def glance(memory_rows: list[dict[str, Any]], device_rows: list[dict[str, Any]],
           kernel_rows: list[dict[str, Any]]) -> Optional[Table]:
    """Where the bottleneck is, at a glance: host STREAM, the host-to-device copy, device STREAM and a
    kernel on host memory, each at its best, from the runs this report shows."""
    from ..measure.device import transfer_overview, transfer_summary
    from ..measure.kernel_results import stream_summary

    out = []
    triads = [r["value"] for r in memory_rows if r.get("suite") == "memory" and r["test"] == "triad"
              and r.get("metric") == "bandwidth_bytes_per_second" and not r.get("warmup")]
    if triads:
        out.append({"path": "host memory, CPU (STREAM triad, best)", "bandwidth_bytes_per_second": max(triads)})
    if device_rows:
        for row in transfer_overview(transfer_summary(device_rows)):
            if row["direction"] == "h2d" and row["host_kind"] in ("pinned", "pageable"):
                out.append({"path": f"host to device copy, {row['host_kind']} (median, {format_size(row['largest_bytes'])})",
                            "bandwidth_bytes_per_second": row["bandwidth_bytes_per_second"]})
    summary = [s for s in stream_summary(kernel_rows) if s["kernel"] == "triad" and s["instances"] == 1]
    for memory in dict.fromkeys(s["memory"] for s in summary):
        best = max(s["best_bytes_per_second"] for s in summary if s["memory"] == memory)
        where = "device memory" if memory == "device" else f"{memory} host memory"
        out.append({"path": f"device kernel on {where} (triad, best)", "bandwidth_bytes_per_second": best})
    if len(out) < 2:
        return None
    slowest = min(r["bandwidth_bytes_per_second"] for r in out)
    for r in out:
        r["times_the_slowest"] = r["bandwidth_bytes_per_second"] / slowest
    return Table("Where data moves fastest and slowest on this machine (from the runs below)",
                 [("path", "path"), ("bandwidth_bytes_per_second", "bandwidth"), ("times_the_slowest", "x the slowest")], out)

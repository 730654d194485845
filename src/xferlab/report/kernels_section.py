"""The report's accelerator-side sections: a `measure kernels` run (device STREAM by memory kind,
scaling, faults, alignment, device to device, SpMV) and the at-a-glance tables that set host STREAM,
the host-to-device copy and device STREAM side by side, like with like: one statistic (best) and one
array-size class per table (measure/sizeclass.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..units import format_rate
from .collect import Figure, Headline, Section, Table, ci_rows, command_of, headline_of, peak_of, plot_command


def kernels_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> tuple[Section, list[Headline]]:
    """The accelerator's side: device STREAM per memory kind (BabelStream's kernels), scaling,
    first-touch faults, copies by alignment, SpMV (measure/kernels.py's summaries)."""
    from ..measure.conventions import CONVENTIONS, UNITS_LINE
    from ..measure.kernel_results import (align_summary, d2d_summary, fault_summary, overview, scaling, stream_summary,
                                          with_peaks)
    from ..measure.peak import lines, unknown_notes
    from ..plots.measured import plot_kernels

    rid = run["run_id"]
    summary = stream_summary(rows)
    stream = [s for s in summary if s["kernel"] != "spmv"]
    align, d2d = align_summary(rows), d2d_summary(rows)
    # the peaks as the command showed them: device memory's, or the link's (measure/peak.py)
    with_peaks({"stream": stream, "align": align, "d2d": d2d}, peak_of(run), (run.get("params") or {}).get("backend", "opencl"))
    accel = (run.get("inventory") or {}).get("accelerator") or {}
    name = accel.get("name") or next((r.get("device_name") for r in rows if r.get("device_name")), "?")
    section = Section(f"Kernels on {name} (run {rid})", f"run-{rid}-kernels",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC",
                       f"counting (babelstream): {CONVENTIONS['babelstream'].counting}; best = "
                       "the fastest launch, BabelStream's figure; memory = where the arrays live (pinned, host and svm: "
                       "kernels on host memory)", UNITS_LINE])
    section.commands.append(command_of(run))
    from ..measure.sizeclass import describe

    for size, llc in dict.fromkeys((s["size_bytes"], s.get("llc_bytes")) for s in stream):
        section.intro.append(f"arrays: {describe(size, llc)} (size classes: memory when each array is at least 4x the "
                             "last-level cache, STREAM's rule; cache-resident when the arrays fit it; mixed between)")
    sizing = (run.get("params") or {}).get("sizing") or {}
    if sizing.get("reason"):  # the lab's choice of array size (measure/kernel_sizing.py)
        section.intro.append(f"array size chosen by the lab: {sizing['reason']}")
    view = overview(stream)
    if view:
        cols = [("memory", "memory"), ("size_bytes", "arrays"), ("array_size_class", "size class")]
        cols += [(f"{k}_best_bytes_per_second", k) for k in ("copy", "mul", "add", "triad", "dot", "read")
                 if any(f"{k}_best_bytes_per_second" in v for v in view)]
        section.tables.append(Table("Device STREAM, best point per kernel, memory kind and array size (one instance; "
                                    "statistic: best)", cols, view))
    if stream:
        section.tables.append(Table("Every point", [("memory", "memory"), ("kernel", "kernel"), ("type", "type"),
                                    ("width", "width"), ("groups", "groups"), ("instances", "instances"),
                                    ("size_bytes", "arrays"), ("array_size_class", "size class"),
                                    ("best_bytes_per_second", "best"), ("median_bytes_per_second", "median"),
                                    ("median_ci", "median 95% CI"), ("hardware_peak_bytes_per_second", "peak"),
                                    ("fraction_of_peak", "best, % of peak"), ("count", "n")],
                                    ci_rows(stream, ("median_ci", "median_bytes_per_second", "median_ci_low_bytes_per_second",
                                                     "median_ci_high_bytes_per_second")),
                                    lines(peak_of(run)) + unknown_notes(stream, peak_of(run))))
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
                                     ("fault_per_touch_median_seconds", "fault per touch"),
                                     ("host_back_per_touch_median_seconds", "host read-back per touch")], faults))
    if align:
        section.tables.append(Table("Copies by host offset and allocator (seed 004's DMA hazard)",
                                    [("direction", "direction"), ("allocator", "allocator"), ("offset_bytes", "offset"),
                                     ("median_bytes_per_second", "median"), ("best_bytes_per_second", "best"),
                                     ("relative_to_runtime_aligned", "vs runtime, offset 0"),
                                     ("hardware_peak_bytes_per_second", "link peak"),
                                     ("fraction_of_peak", "median, % of peak")], align))
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


Runs = list[tuple[dict[str, Any], list[dict[str, Any]]]]  # (run as the store gives it, its rows)
CLASS_TITLES = {
    "memory": "memory figures (each array at least 4x the last-level cache, STREAM's rule)",
    "mixed": "mixed figures (arrays over the last-level cache but under 4x it: partly cache, partly memory)",
    "cache-resident": "cache-resident figures (the arrays fit the last-level cache: cache bandwidth, not memory's)",
    None: "unknown figures (the run recorded no last-level cache: size class unknown)"}


def glance_figures(memory_runs: Runs, device_runs: Runs, kernel_runs: Runs) -> list[dict[str, Any]]:
    """Each figure the at-a-glance tables may compare, all of one statistic, the best (the fastest
    iteration: STREAM's and BabelStream's figure): host STREAM triad per memory node and array size
    (its best thread count; not App-Direct), the host-to-device copy of the largest size per host
    memory kind, and device STREAM triad per memory kind and array size (one instance); each with its
    placement, array size and size class (measure/sizeclass.py, from the run's inventory)."""
    from ..measure.device import transfer_summary
    from ..measure.kernel_results import stream_summary
    from ..measure.sizeclass import class_of, llc_of

    out = []
    for run, rows in memory_runs:
        best: dict[tuple, dict[str, Any]] = {}
        for r in rows:
            if (r.get("suite") == "memory" and r["test"] == "triad" and r.get("metric") == "bandwidth_bytes_per_second"
                    and not r.get("warmup") and r.get("mode") in (None, "memory")):
                key = (r.get("node"), r["size_bytes"])
                if key not in best or r["value"] > best[key]["value"]:
                    best[key] = r
        for (node, size), r in best.items():
            where = "default" if node in (None, "", "default") else node
            out.append({"path": "host memory, CPU (STREAM triad)", "placement": f"memory node {where}, "
                        f"{r.get('threads')} thread{'s' * (r.get('threads') != 1)}", "size_bytes": size,
                        "best_bytes_per_second": r["value"], "llc_bytes": llc_of(run.get("inventory"), "memory") or None,
                        "array_size_class": class_of(run.get("inventory"), "memory", "triad", size)})
    for run, rows in device_runs:
        copies = [s for s in transfer_summary(rows) if s["direction"] == "h2d" and s["host_kind"] in ("pinned", "pageable")]
        for kind in dict.fromkeys(s["host_kind"] for s in copies):
            largest = max((s for s in copies if s["host_kind"] == kind), key=lambda s: s["size_bytes"])
            out.append({"path": "host to device copy", "placement": f"{kind} host memory to the device",
                        "size_bytes": largest["size_bytes"], "best_bytes_per_second": largest["best_bytes_per_second"],
                        "llc_bytes": llc_of(run.get("inventory"), "device") or None,
                        "array_size_class": class_of(run.get("inventory"), "device", "h2d", largest["size_bytes"])})
    for run, rows in kernel_runs:
        triads = [s for s in stream_summary(rows) if s["kernel"] == "triad" and s["instances"] == 1]
        for memory, size in dict.fromkeys((s["memory"], s["size_bytes"]) for s in triads):
            mine = [s for s in triads if (s["memory"], s["size_bytes"]) == (memory, size)]
            top = max(mine, key=lambda s: s["best_bytes_per_second"])
            out.append({"path": "device kernel (STREAM triad)",
                        "placement": "device memory" if memory == "device" else f"{memory} host memory",
                        "size_bytes": size, "best_bytes_per_second": top["best_bytes_per_second"],
                        "llc_bytes": top.get("llc_bytes") or llc_of(run.get("inventory"), "kernels") or None,
                        "array_size_class": top.get("array_size_class") or class_of(run.get("inventory"), "kernels",
                                                                                     "triad", size)})
    return out


def glance(memory_runs: Runs, device_runs: Runs, kernel_runs: Runs) -> list[Table]:
    """Where the bottleneck is, at a glance: the figures of :func:`glance_figures`, one table per
    array-size class, each figure set against the slowest of its own class only (a cache-resident
    figure is never compared with a memory figure). Every table says its statistic (best) and class,
    every row its placement and array size. Empty when there is nothing to show."""
    figures = glance_figures(memory_runs, device_runs, kernel_runs)
    if len(figures) < 2:
        return []
    tables = []
    for cls, title in CLASS_TITLES.items():
        mine = [dict(f, statistic="best") for f in figures if f["array_size_class"] == cls]
        if not mine:
            continue
        slowest = min(r["best_bytes_per_second"] for r in mine)
        for r in mine:
            r["times_the_slowest"] = r["best_bytes_per_second"] / slowest if len(mine) > 1 else None
        others = [c or "unknown" for c in CLASS_TITLES if c != cls and any(f["array_size_class"] == c for f in figures)]
        notes = [f"compared only within its class: the {', '.join(others)} figures are in their own table"] if others else []
        tables.append(Table(f"Best bandwidth (the fastest iteration), {title}",
                            [("path", "path"), ("placement", "placement"), ("size_bytes", "array size"),
                             ("array_size_class", "size class"), ("best_bytes_per_second", "best"),
                             ("times_the_slowest", "x the slowest of this class")], mine, notes))
    return tables

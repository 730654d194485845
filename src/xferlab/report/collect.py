"""What the report shows, gathered from the store: every run's statistics, placement, failures and
plots, the fits and the advice computed from them, the packaged scenarios.

Nothing here measures: each figure is computed from stored samples by the same functions the
`measure`, `fit` and `advise` commands use, and each comes with the command that reproduces it.
Headline numbers are the store's own statistics (:meth:`Store.stats`), marked so a test can find the
group each one came from.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Optional

from ..units import format_rate, format_size, format_time


@dataclass
class Figure:
    title: str
    path: Path
    command: str


@dataclass
class Table:
    title: str
    columns: list[tuple[str, str]]  # (key, header)
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Headline:
    """One figure at the top of the report: a statistic of one group of the store's samples."""

    label: str
    key: str
    run_id: str
    group: dict[str, Any]  # test, metric, size_bytes, threads, node, mode: the Store.stats group
    stat: str  # which statistic of the group: 'max' (STREAM's best) or 'median'
    value: float
    text: str


@dataclass
class Section:
    title: str
    anchor: str
    intro: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


def command_of(run: dict[str, Any]) -> str:
    """The command line that recorded ``run``."""
    argv = run.get("argv") or []
    return "xferlab " + shlex.join(argv) if argv else f"xferlab {run['command']}"


#: What the lab's own runs stand for: the `measure` command that records and draws the same thing.
LAB_EQUIVALENT = {"memory": "xferlab measure memory --latency --loaded", "device": "xferlab measure device",
                  "collab": "xferlab measure collab", "network": "xferlab measure network",
                  "kernels": "xferlab measure kernels"}


def plot_command(run: dict[str, Any], suite: str, option: str = "--plots DIR") -> str:
    """The command that draws a run's figures again: the recording command with ``option``; for a run
    the lab recorded (`lab` has no such option), the `measure` command that does the same."""
    base = LAB_EQUIVALENT[suite] if run["command"] == "lab" else command_of(run)
    return f"{base} {option}"


def kinds_of(rows: list[dict[str, Any]]) -> set[str]:
    """What a run holds: memory, transfers, chunks, launch, collab, runtime, network, kernels, deceval."""
    out = set()
    for r in rows:
        test = str(r["test"])
        if r["suite"] in ("memory", "network", "kernels", "deceval"):
            out.add(r["suite"])
        elif r["suite"] == "runtime":
            out.add("runtime")
        elif test.startswith("collab-"):
            out.add("collab")
        elif test in ("h2d", "d2h", "d2d", "bidir"):
            out.add("transfers")
        elif test in ("chunks", "launch"):
            out.add(test)
    return out


def pick_runs(db, refs: Optional[list[str]]) -> list[str]:
    """The runs named (ids, prefixes, 'latest'; an unknown one is an error, one without samples is
    kept and shown with a note), or (``refs`` None) the newest finished run of each kind: the memory
    run and the device run of each accelerator, and apart from them the newest matrix run of each
    (possibly none: the report says so)."""
    if refs is not None:
        return list(dict.fromkeys(db.resolve_run(r) for r in refs))  # a run without samples gets a note
    chosen: dict[tuple, str] = {}
    for run in db.runs():  # newest first
        if run["status"] != "ok" or not run["samples"]:
            continue
        groups = db.stats(run["run_id"])  # one row per group: classifies the run without reading its samples
        recorded = db.run(run["run_id"])
        accelerator = ((recorded.get("inventory") or {}).get("accelerator") or {}).get("name")
        for kind in kinds_of(groups):
            where = (recorded.get("params") or {}).get("backend") if kind == "runtime" else accelerator  # runtime: per backend
            matrix = bool((recorded.get("params") or {}).get("matrix"))  # a matrix run never hides a plain one
            key = (kind, where if kind != "memory" else None, matrix)
            chosen.setdefault(key, run["run_id"])
    return sorted(set(chosen.values()))  # none: the report says so and still shows the scenarios and the advice


def headline_of(rows: list[dict[str, Any]], run_id: str, label: str, key: str, field: str, stat: str,
                fmt: Callable[[float], str], group: dict[str, Any], **where: Any) -> Optional[Headline]:
    """A headline read from the rows a table of the report shows (one computation for both): the row
    matching ``where`` (the largest size, then threads, if several), its ``field``. ``group`` names
    the store's sample group the figure summarizes (``stat`` of it), so that it can be traced."""
    found = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    if not found:
        return None
    r = max(found, key=lambda r: (r.get("size_bytes") or r.get("largest_bytes") or 0, r.get("threads") or 0))
    ident = {**group, **{k: r[k] for k in ("size_bytes", "threads", "node") if k in r}}
    if "largest_bytes" in r:
        ident["size_bytes"] = r["largest_bytes"]
    return Headline(label, key, run_id, ident, stat, float(r[field]), fmt(r[field]))


def ci_rows(rows: list[dict[str, Any]], *specs: tuple[str, str, str, str]) -> list[dict[str, Any]]:
    """``rows`` with, for each (out key, median key, low key, high key), the median's 95 % interval as
    text, "± 1.2 %" (half its width over the median; "–" when the point has too few samples for one).
    The interval's ends stay in the row."""
    from ..stats import relative_half_width

    out = []
    for r in rows:
        r = dict(r)
        for key, centre, low, high in specs:
            half = relative_half_width(r.get(centre), r.get(low), r.get(high))
            r[key] = "–" if half != half else f"± {100 * half:.1f} %"
        out.append(r)
    return out


def pct(value: Optional[float]) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def fmt_value(key: str, value: Any) -> str:
    """A table cell, formatted by the unit its key names."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in ("relative_error", "stage_sum_relative_error", "stage_max_relative_error") and isinstance(value, float):  # predicted / measured - 1: signed
        return f"{value:+.1%}"
    if isinstance(value, float) and (key in ("cov", "overlap") or key.endswith(("_error", "fraction", "_share", "_saved")) or key.startswith("fraction")):
        return pct(value)
    if key.endswith("bytes_per_second"):
        return format_rate(value)
    if key.endswith("seconds"):
        return format_time(value)
    if key.endswith("bytes") and isinstance(value, (int, float)):
        return format_size(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def peak_of(run: dict[str, Any]) -> dict[str, Any]:
    """The peaks a stored run recorded with its inventory (measure/peak.py; none: older runs)."""
    return ((run.get("inventory") or {}).get("peaks")) or {}


def counting_notes(suite: str, rows: list[dict[str, Any]], peaks: Optional[dict[str, Any]] = None) -> list[str]:
    """The notes under a bandwidth table: its rows' counting rules and units (measure/conventions.py, as the
    CLI's footers), and the peaks they are held against."""
    from ..measure.conventions import footer
    from ..measure.peak import lines

    return footer(suite, [r.get("test") for r in rows]) + lines(peaks or {})


def memory_section(db, run: dict[str, Any], rows: list[dict[str, Any]], folder: Path,
                   profile_prefix: Optional[str] = None, loaded_tables=None) -> tuple[Section, list[Headline]]:
    """A memory run's section; ``loaded_tables`` (report/memory_section.py's) turns its loaded-latency
    points into tables."""
    from ..measure.results import memory_results
    from ..fit.tiers import data_caches, fit_tiers, save_tiers, tier_rows

    rid = run["run_id"]
    result = memory_results(SimpleNamespace(rows=rows, failures=[]), folder / rid,
                            caches=(run.get("inventory") or {}).get("caches"), peaks=peak_of(run))
    section = Section(f"Memory tiers (run {rid})", f"run-{rid}", [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC"])
    section.commands.append(command_of(run))
    bw_cols = [("test", "kernel"), ("node", "node"), ("mode", "mode"), ("threads", "threads"), ("cpus", "CPUs"),
               ("best_bytes_per_second", "best"), ("median_bytes_per_second", "median"), ("median_ci", "median 95% CI"),
               ("hardware_peak_bytes_per_second", "DRAM peak"), ("fraction_of_peak", "best, % of peak"),
               ("cov", "CoV"), ("count", "n")]
    if result["bandwidth"]:
        section.tables.append(Table("STREAM bandwidth (headline: best iteration, as STREAM reports; placement: node, CPUs)",
                                    bw_cols, ci_rows(result["bandwidth"], ("median_ci", "median_bytes_per_second",
                                                                           "median_ci_low_bytes_per_second",
                                                                           "median_ci_high_bytes_per_second")),
                                    counting_notes("memory", result["bandwidth"], result["peaks"])))
    if result["latency"]:
        section.tables.append(Table("Pointer-chase latency by working set (headline: median)",
                                    [("size_bytes", "working set"), ("node", "node"), ("cpus", "CPU"),
                                     ("median_seconds", "median"), ("median_ci", "median 95% CI"), ("min_seconds", "min"),
                                     ("cov", "CoV"), ("count", "n")],
                                    ci_rows(result["latency"], ("median_ci", "median_seconds", "median_ci_low_seconds",
                                                                "median_ci_high_seconds"))))
    if result["loaded"] and loaded_tables is not None:
        section.tables += loaded_tables(result["loaded"])
    for path in result["plots"]:
        section.figures.append(Figure(path.stem.replace("-", " "), path, plot_command(run, "memory")))
    tiers = fit_tiers(db.samples(rid), rid, data_caches(run.get("inventory")))
    saved = dict(save_tiers(profile_prefix, tiers, rid)) if profile_prefix else {}
    section.tables.append(Table("Tier profiles (idle latency past the LLC; link view: t = idle latency + n / (STREAM copy / 2))",
                                [("tier", "tier"), ("node", "node"), ("mode", "mode"), ("idle_latency_seconds", "idle latency"),
                                 ("copy_rate_bytes_per_second", "copy rate"), ("kernel", "kernel"), ("threads", "threads"),
                                 ("best_bytes_per_second", "best"), ("loaded_points", "loaded points")],
                                tier_rows(tiers),
                                [n for t in tiers for n in t.notes]
                                + [f"saved as profile {name}: {path}" for name, path in saved.items()]))
    section.commands.append(f"xferlab fit {rid}" + (f" --name {profile_prefix}" if profile_prefix else ""))
    heads = []
    for node in sorted({r["node"] for r in result["bandwidth"] + result["latency"]}, key=str):
        h = headline_of(result["bandwidth"], rid, f"STREAM triad, node {node} (best)", f"triad-node{node}",
                        "best_bytes_per_second", "max", format_rate,
                        {"suite": "memory", "test": "triad", "metric": "bandwidth_bytes_per_second"}, test="triad", node=node)
        h2 = headline_of(result["latency"], rid, f"memory latency, node {node} (median, largest working set)",
                         f"latency-node{node}", "median_seconds", "median", format_time,
                         {"suite": "memory", "test": "latency", "metric": "latency_seconds"}, test="latency", node=node)
        heads += [x for x in (h, h2) if x]
    return section, heads


def device_section(db, run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> tuple[Section, list[Headline]]:
    from ..measure.results import device_results

    rid = run["run_id"]
    result = device_results(SimpleNamespace(rows=rows, failures=[]), folder / rid, peaks=peak_of(run))
    accel = (run.get("inventory") or {}).get("accelerator") or {}
    name = accel.get("name") or next((r.get("device_name") for r in rows if r.get("device_name")), "?")
    section = Section(f"Accelerator {name} (run {rid})", f"run-{rid}",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC",
                       f"device: {accel.get('backend', '?')} #{accel.get('index', '?')} {name}; "
                       f"platform {accel.get('platform', '?')}; driver {accel.get('driver', '?')}"])
    section.commands.append(command_of(run))
    if result["overview"]:
        section.tables.append(Table("Copies (medians, with the 95 % interval of each median; latency of the smallest copy, "
                                    "bandwidth of the largest; n½ = size reaching half of it)",
                                    [("host_kind", "host memory"), ("direction", "direction"), ("latency_seconds", "latency"),
                                     ("latency_ci", "latency 95% CI"), ("bandwidth_bytes_per_second", "bandwidth"),
                                     ("bandwidth_ci", "bandwidth 95% CI"), ("largest_bytes", "at"),
                                     ("half_bandwidth_bytes", "n½")],
                                    ci_rows(result["overview"],
                                            ("latency_ci", "latency_seconds", "latency_ci_low_seconds", "latency_ci_high_seconds"),
                                            ("bandwidth_ci", "bandwidth_bytes_per_second", "bandwidth_ci_low_bytes_per_second",
                                             "bandwidth_ci_high_bytes_per_second"))))
        section.tables.append(Table("Against the link's peak: the largest copy beside the link model's payload limit for "
                                    "its size (bidir: the sum of both directions, and each way)",
                                    [("host_kind", "host memory"), ("direction", "direction"), ("largest_bytes", "size"),
                                     ("bandwidth_bytes_per_second", "bandwidth (median)"),
                                     ("direction_bandwidth_bytes_per_second", "each way"),
                                     ("hardware_peak_bytes_per_second", "link peak"), ("fraction_of_peak", "% of peak")],
                                    result["overview"], counting_notes("device", [{"test": r["direction"]} for r in
                                                                                  result["overview"]], result["peaks"])))
    if result["chunks"]:
        section.tables.append(Table("Granularity: one total moved in chunks (seed 004)",
                                    [("host_kind", "host memory"), ("chunk_bytes", "chunk"), ("transfers", "transfers"),
                                     ("median_seconds", "total time"), ("median_ci", "median 95% CI"),
                                     ("median_bytes_per_second", "bandwidth"), ("cov", "CoV"), ("count", "n")],
                                    ci_rows(result["chunks"], ("median_ci", "median_seconds", "median_ci_low_seconds",
                                                               "median_ci_high_seconds"))))
    if result["launch"]:
        section.tables.append(Table("Kernel launch latency (empty kernel, submit + wait; host clock)",
                                    [("kernel_args", "buffer args"), ("pinned_cpu", "pinned"), ("median_seconds", "median"),
                                     ("median_ci", "median 95% CI"), ("p99_seconds", "p99"), ("max_seconds", "max"),
                                     ("device_median_seconds", "device (kernel)"), ("count", "n")],
                                    ci_rows(result["launch"], ("median_ci", "median_seconds", "median_ci_low_seconds",
                                                               "median_ci_high_seconds"))))
    for path in result["plots"]:
        section.figures.append(Figure(path.stem.replace("-", " "), path, plot_command(run, "device")))
    heads = []
    kinds = [r["host_kind"] for r in result["overview"] if r["direction"] == "h2d"]
    kind = "pageable" if "pageable" in kinds else (kinds[0] if kinds else None)
    for direction in ("h2d", "d2h"):
        h = headline_of(result["overview"], rid, f"{name}: {direction} copy bandwidth, {kind} memory (median, largest copy)",
                        f"{direction}-{kind}-{rid}", "bandwidth_bytes_per_second", "median", format_rate,
                        {"suite": "device", "test": direction, "metric": "bandwidth_bytes_per_second", "host_kind": kind},
                        host_kind=kind, direction=direction)
        if h:
            heads.append(h)
    h = headline_of(result["launch"], rid, f"{name}: kernel launch latency, no arguments (median)", f"launch-{rid}",
                    "median_seconds", "median", format_time,
                    {"suite": "device", "test": "launch", "metric": "latency_seconds", "kernel_args": 0}, kernel_args=0)
    if h:
        heads.append(h)
    return section, heads


def collab_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> Section:
    from ..measure.collab import summary
    from ..plots.measured import plot_collab

    rid = run["run_id"]
    rows_ = summary(rows)
    section = Section(f"CPU–device collaboration (run {rid})", f"run-{rid}",
                      [f"recorded by `{command_of(run)}`; D = discrete copies, U = unified/shared memory (seed 001, Figure 4)"])
    section.commands.append(command_of(run))
    section.tables.append(Table("Phases (medians), normalized to D", [("pattern", "pattern"), ("version", "version"),
                                ("allocation_seconds", "allocation"), ("copy_seconds", "copy"), ("kernel_seconds", "kernel"),
                                ("total_seconds", "total"), ("device_share", "device share"), ("count", "n")], rows_))
    if rows_:
        section.figures.append(Figure("collaboration", plot_collab(rows_, folder / rid / "collab.png"),
                                      plot_command(run, "collab")))
    return section


def failures_table(db, run_ids: list[str]) -> Optional[Table]:
    rows = [f for rid in run_ids for f in db.failures(rid)]
    if not rows:
        return None
    return Table("Measurements that failed, with their reason", [("run_id", "run"), ("suite", "suite"), ("what", "what"),
                                                                ("reason", "reason")], rows)


def scenario_section(folder: Path) -> Section:
    from .. import scenarios

    section = Section("The seeds' figures, recomputed by xferlab's models", "scenarios")
    rows = []
    for name in scenarios.names():
        scenario = scenarios.load(name)
        result = scenario.run()
        for check in result["checks"]:
            seed, ours = scenarios.describe_check(check)
            rows.append({"scenario": name, "figure": check["figure"], "section": check["section"], "seed": seed,
                         "xferlab": ours, "status": check["status"], "why": check["status_reason"]})
        for path in scenario.plot(folder / "scenarios"):
            section.figures.append(Figure(f"{name}: {path.stem.replace('-', ' ')}", path, f"xferlab scenario run {name}"))
        section.commands.append(f"xferlab scenario run {name}")
    section.tables.append(Table("Seed figures and xferlab's values", [("scenario", "scenario"), ("figure", "figure"),
                                ("section", "seed's section"), ("seed", "seed"), ("xferlab", "xferlab"),
                                ("status", "status"), ("why", "why")], rows))
    return section


def runtime_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> Section:
    """A `runtime bench` run: every workload x mode x latency, with the speedup plot when the run swept
    the bus latency."""
    from ..plots.measured import plot_runtime_speedup

    rid = run["run_id"]
    points = [{**r, "workload": r["test"], "mode": r["mode"], "seconds": r["value"]} for r in rows]
    backend = points[0].get("backend") if points else "?"
    section = Section(f"Offload runtime on {backend} (run {rid})", f"run-{rid}",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC; every run validated against the "
                       "plain host computation; transactions: the runtime's accounting, 64-byte lines written and read plus "
                       "doorbells (its saving is an identity of that formula: 3 a request in sync, 0.625 line + 1/32 "
                       "doorbell a request plus the reads in forward); bus-counted: what the bus itself counted (lines "
                       "both ways, doorbells, read requests); saved: against sync at the same latency"])
    section.commands.append(command_of(run))
    section.tables.append(Table("Modes compared (medians of the repeats; counters of the last)", [
        ("workload", "workload"), ("opset", "operation set"), ("mode", "mode"), ("latency_seconds", "one-way latency"),
        ("seconds", "time"), ("speedup_over_sync", "vs sync"), ("requests", "requests"),
        ("bus_transactions", "transactions"), ("transactions_saved", "saved fraction"),
        ("counted_transactions", "bus-counted"), ("counted_saved", "bus-counted saved"), ("result_reads", "reads"),
        ("forwarded", "forwarded"), ("p_over_o", "P/O")], points))
    if len({p.get("latency_seconds") for p in points}) > 1:
        section.figures.append(Figure("speedup over sync against bus latency",
                                      plot_runtime_speedup(points, folder / rid / "runtime-speedup.png"),
                                      f"{command_of(run)} --plot FILE"))
    return section

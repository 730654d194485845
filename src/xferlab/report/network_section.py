"""The report's network section: a `measure network` run's OSU tables, the ping-pong fitted as a link
beside EDR InfiniBand, the plots and the latency headline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..units import format_size, format_time
from .collect import Figure, Headline, Section, Table, ci_rows, command_of, counting_notes, headline_of, plot_command


def network_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path) -> tuple[Section, list[Headline]]:
    """MPI between ranks: OSU's figures per test, size, pair kind and path, the fitted link of the
    ping-pong set beside seed 001's EDR InfiniBand, and the latency and bandwidth plots."""
    from ..fit.network import AGAINST, fit_network
    from ..measure.network import COLLECTIVES, NONBLOCKING
    from ..measure.network_results import overview, summary
    from ..plots.measured import plot_network

    rid = run["run_id"]
    hosts = (run.get("summary") or {}).get("hosts") or []
    table = summary(rows, (run.get("inventory") or {}).get("peaks") or {}, hosts)
    mpi = (run.get("summary") or {}).get("mpi") or {}
    section = Section(f"Network: MPI between ranks (run {rid})", f"run-{rid}-network",
                      [f"recorded by `{command_of(run)}` at {run['started_utc']} UTC",
                       f"MPI: {mpi.get('library', '?')} (MPI {mpi.get('mpi_version', '?')}, standard ABI "
                       f"{mpi.get('abi_version', '?')}); {len(hosts)} ranks on "
                       f"{len({h.get('host') for h in hosts})} host(s); GPU-aware: {mpi.get('gpu_aware', '?')}",
                       "OSU's definitions: latency = ping-pong round trip / 2 (mean = OSU's Avg), bandwidth = a window "
                       "of 64 messages and an ack (OSU's figure: bytes / total time); collectives: per call, mean over "
                       "ranks of each rank's mean (OSU's Avg) with the slowest and fastest rank"])
    section.commands.append(command_of(run))
    view = overview(table)
    if view:
        section.tables.append(Table("Latency of the smallest message and bandwidth of the largest (seed 001 quotes 2 µs "
                                    "host to host, 7-8 µs GPU to GPU, 12.3 GB/s by OSU over EDR InfiniBand)",
                                    [("pair", "pair"), ("path", "path"), ("latency_size_bytes", "latency at"),
                                     ("latency_mean_seconds", "latency (OSU)"), ("latency_median_seconds", "median"),
                                     ("bandwidth_size_bytes", "bandwidth at"),
                                     ("bandwidth_mean_bytes_per_second", "bandwidth (OSU)"),
                                     ("best_bytes_per_second", "best window")], view))
    lat = [t for t in table if t["test"] in ("latency", "multi_lat")]
    if lat:
        section.tables.append(Table("Latency, one way", [("test", "test"), ("pair", "pair"), ("path", "path"),
                                    ("size_bytes", "size"), ("mean_seconds", "mean (OSU)"), ("median_seconds", "median"),
                                    ("median_ci", "median 95% CI"), ("count", "n")],
                                    ci_rows(lat, ("median_ci", "median_seconds", "median_ci_low_seconds",
                                                  "median_ci_high_seconds"))))
    bw = [t for t in table if t["test"] in ("bw", "bibw", "mbw_mr")]
    if bw:
        section.tables.append(Table("Bandwidth", [("test", "test"), ("pair", "pair"), ("path", "path"), ("size_bytes", "size"),
                                    ("mean_bytes_per_second", "bandwidth (OSU)"),
                                    ("direction_mean_bytes_per_second", "each way"), ("median_bytes_per_second", "median"),
                                    ("best_bytes_per_second", "best"), ("messages_per_second", "messages/s"),
                                    ("fraction_of_peak", "% of peak"), ("count", "n")], bw,
                                    counting_notes("network", bw) + [f"peak: {p}" for p in
                                                                     dict.fromkeys(t["peak_source"] for t in bw)]))
    coll = [t for t in table if t["test"] in COLLECTIVES and t["test"] not in NONBLOCKING]
    if coll:
        section.tables.append(Table("Collectives, per call (algbw, busbw: nccl-tests' algorithm and bus bandwidth of "
                                    "the mean; busbw assumes a ring or flat topology)",
                                    [("test", "test"), ("path", "path"), ("size_bytes", "size"),
                                    ("mean_seconds", "mean (OSU)"), ("rank_min_mean_seconds", "min rank"),
                                    ("rank_max_mean_seconds", "max rank"), ("median_seconds", "median"),
                                    ("algorithm_mean_bytes_per_second", "algbw"), ("bus_mean_bytes_per_second", "busbw"),
                                    ("count", "n")], coll))
    nbc = [t for t in table if t["test"] in NONBLOCKING]
    if nbc:
        section.tables.append(Table("Non-blocking collectives (OSU's method): overall = start + compute + wait, the "
                                    "compute sized to the pure communication; overlap = max(0, 1 - (overall - compute) / pure)",
                                    [("test", "test"), ("path", "path"), ("size_bytes", "size"),
                                     ("mean_seconds", "overall (OSU)"), ("compute_mean_seconds", "compute"),
                                     ("pure_mean_seconds", "pure comm."), ("overlap", "overlap"), ("count", "n")], nbc))
    try:
        fits, _, figures, notes, skipped = fit_network(rows, AGAINST, folder / rid / "fits", None, rid)
    except Exception as error:  # noqa: BLE001 - a run without ping-pong sizes to fit still shows its tables
        fits, figures, notes, skipped = [], [], [f"not fitted: {error}"], []
    if fits:
        section.tables.append(Table(f"The ping-pong as a link model (`xferlab fit {rid} --name NAME` saves it as a "
                                    f"profile), beside {AGAINST}'s limit",
                                    [("pair", "pair"), ("path", "path"), ("model", "model"), ("latency_seconds", "t_s"),
                                     ("description", "rates"), ("cv_relative_error", "held-out error"),
                                     ("poor_cause", "poor (cause)"), ("fraction_of_model_limit", f"of {AGAINST}")],
                                    fits, notes + [f"not fitted: {s['group']}: {s['reason']}" for s in skipped]))
    for path in plot_network(table, folder / rid):
        section.figures.append(Figure(path.stem.replace("-", " "), path, plot_command(run, "network")))
    for path in figures:
        section.figures.append(Figure(path.stem.replace("-", " "), path, f"xferlab fit {rid} --plots DIR"))
    heads = []
    for row in view:
        where = f"{row['pair']}, {row['path']}"
        if row.get("latency_mean_seconds") is not None:
            h = headline_of(view, rid, f"MPI latency {where}, {format_size(row['latency_size_bytes'])} (OSU mean)",
                            f"mpi-latency-{row['pair']}-{row['path']}-{rid}", "latency_mean_seconds", "mean", format_time,
                            {"suite": "network", "test": "latency", "metric": "latency_seconds", "pair": row["pair"],
                             "path": row["path"], "size_bytes": row["latency_size_bytes"]},
                            pair=row["pair"], path=row["path"])
            heads += [h] if h else []
    return section, heads

"""The memory section's loaded-latency part: for each memory node measured, the family of
bandwidth-latency curves, one per read/write mix (measure/loaded.py), as a table per node with the
counting rule under it; the figures are plots/measured.py's ``plot_loaded`` (one per node)."""

from __future__ import annotations

from typing import Any

from .collect import Table, ci_rows


def loaded_tables(points: list[dict[str, Any]]) -> list[Table]:
    """A table per memory node: every (mix, delay) point's median traffic and latency, each with its
    95 % interval, in the order measured (each mix from idle to saturation)."""
    from ..measure.conventions import footer
    from ..measure.loaded import TEST, title

    tables = []
    for node in dict.fromkeys(p["node"] for p in points):
        mine = [{**p, "mix": title(p["mix"])} for p in points if p["node"] == node]
        rows = ci_rows(mine, ("traffic_ci", "median_bytes_per_second", "median_ci_low_bytes_per_second",
                              "median_ci_high_bytes_per_second"),
                       ("latency_ci", "median_seconds", "median_ci_low_seconds", "median_ci_high_seconds"))
        tables.append(Table(f"Loaded latency, memory node {node}: the chase under each read/write mix of the other "
                            "CPUs' traffic, from idle (long delay) to saturation (delay 0), medians over the windows",
                            [("mix", "mix"), ("delay", "delay"), ("median_bytes_per_second", "traffic"),
                             ("traffic_ci", "traffic 95% CI"), ("best_bytes_per_second", "best window"),
                             ("write_allocate_median_bytes_per_second", "+ write-allocate"), ("median_seconds", "latency"),
                             ("latency_ci", "latency 95% CI"), ("count", "windows")],
                            rows, footer("memory", [TEST])))
    return tables

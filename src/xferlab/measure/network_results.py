"""What `measure network` rows add up to (measure/network.py makes the rows): OSU's figures per test,
size, pair kind and path beside the robust ones, and the overview seed 001 quotes."""

from __future__ import annotations

from typing import Any

from ..stats import summarize
from .network import BANDWIDTH, COLLECTIVES, TESTS, WINDOW
from .precision import ci_fields
from .samples import kept, value_of
from .peak import network_rows




def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (test, size, pair kind, path) of the validated samples, OSU's figure beside the
    robust ones: ``mean_seconds`` is OSU's "Avg Latency" (its timer / iterations), ``median_seconds``
    and its 95 % interval the robust centre; for the bandwidth tests ``mean_bytes_per_second`` is
    OSU's "Bandwidth" (bytes / total time), ``median_bytes_per_second`` and ``best_bytes_per_second``
    (the fastest iteration) beside it, and mbw_mr's ``messages_per_second`` (OSU's "Messages/s").
    Collectives: ``mean_seconds`` is the mean over ranks of each rank's mean (OSU's "Avg
    Latency"), ``rank_min_mean_seconds`` / ``rank_max_mean_seconds`` OSU's "Min" and "Max"."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r.get("suite") == "network" and not r.get("warmup"):
            groups.setdefault((r["test"], r["size_bytes"], value_of(r, "pair"), value_of(r, "path")), []).append(r)
    order = {t: i for i, t in enumerate(TESTS)}
    out = []
    for (test, size, pair, path), members in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][3] or "",
                                                                                    kv[0][2] or "", kv[0][1])):
        secs = [m["seconds"] for m in members]
        s = summarize(secs)
        entry: dict[str, Any] = {"test": test, "size_bytes": size, "pair": pair, "buffer": value_of(members[0], "buffer"),
                                 "path": path, "count": s["count"], "headline": "mean",
                                 "mean_seconds": s["mean"], "median_seconds": s["median"], "min_seconds": s["min"],
                                 "max_seconds": s["max"], "cov": s["cov"], **ci_fields(secs)}
        if test in BANDWIDTH:
            moved = members[0]["bytes"]
            entry.update({"iteration_bytes": moved, "mean_bytes_per_second": moved * len(secs) / sum(secs),
                          "median_bytes_per_second": moved / s["median"], "best_bytes_per_second": moved / s["min"],
                          **ci_fields(secs, "bytes_per_second", moved)})
            if test == "mbw_mr":
                messages = (value_of(members[0], "window") or WINDOW) * (value_of(members[0], "pairs") or 1)
                entry["messages_per_second"] = messages * len(secs) / sum(secs)
        if test in COLLECTIVES or test == "multi_lat":
            by_rank: dict[Any, list[float]] = {}
            for m in members:
                by_rank.setdefault(value_of(m, "rank"), []).append(m["seconds"])
            means = [sum(v) / len(v) for v in by_rank.values()]
            entry.update({"ranks": len(by_rank), "mean_seconds": sum(means) / len(means),
                          "rank_min_mean_seconds": min(means), "rank_max_mean_seconds": max(means)})
        out.append(entry)
    return network_rows(out)  # issue 28: counting rule, bibw per direction, the peak (measure/peak.py)


def overview(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (pair kind, path): the smallest message's latency and the largest message's bandwidth,
    the two figures seed 001 quotes (2 µs host to host, 12.3 GB/s by OSU)."""
    out = []
    for pair, path in dict.fromkeys((t["pair"], t["path"]) for t in table):
        lat = sorted((t for t in table if t["test"] == "latency" and (t["pair"], t["path"]) == (pair, path)),
                     key=lambda t: t["size_bytes"])
        bw = sorted((t for t in table if t["test"] == "bw" and (t["pair"], t["path"]) == (pair, path)),
                    key=lambda t: t["size_bytes"])
        if not lat and not bw:
            continue
        small = next((t for t in lat if t["size_bytes"] > 0), lat[0] if lat else None)
        out.append({"pair": pair, "path": path,
                    "latency_size_bytes": small["size_bytes"] if small else None,
                    "latency_mean_seconds": small["mean_seconds"] if small else None,
                    "latency_median_seconds": small["median_seconds"] if small else None,
                    "bandwidth_size_bytes": bw[-1]["size_bytes"] if bw else None,
                    "bandwidth_mean_bytes_per_second": bw[-1]["mean_bytes_per_second"] if bw else None,
                    "best_bytes_per_second": max(t["best_bytes_per_second"] for t in bw) if bw else None})
    return out

"""What `measure network` rows add up to (measure/network.py makes the rows): OSU's figures per test,
size, pair kind and path beside the robust ones, and the overview seed 001 quotes."""

from __future__ import annotations

from typing import Any, Optional

from ..stats import summarize
from .network import ALL_TESTS, COLLECTIVES, NONBLOCKING, RATES, WINDOW
from .network_rma import ONE_SIDED
from .precision import ci_fields
from .samples import kept, value_of
from .peak import crossings, network_rows

#: OSU's notation of the buffers per side, sender first (a collective's: one kind), in OSU's order.
SIDES = ("H H", "H D", "D H", "D D", "H", "D")


def _one_kind(buffer: Any, test: str) -> str:
    """The ``buffers`` of a run recorded before they were per side: both sides of the one kind."""
    kind = "D" if buffer == "device" else "H"
    return kind if test in COLLECTIVES else f"{kind} {kind}"


#: Collectives whose algorithm bytes are every rank's block: S = ranks x OSU's message size (per rank).
_EVERY_BLOCK = ("allgather", "allgatherv", "alltoall", "alltoallv", "gather", "scatter")


def bus_terms(test: str, size: int, ranks: int) -> Optional[tuple[int, float]]:
    """nccl-tests' algorithm bytes S and bus-bandwidth factor of a collective (its doc/PERFORMANCE.md and
    each test's GetBw): algorithm bandwidth = S / time, bus bandwidth = algorithm bandwidth x factor, the
    factor making the figures of any rank count comparable with a link's peak on a ring or flat topology.
    With OSU's sizes (per rank): allreduce S = size, factor 2(n-1)/n; reduce, bcast S = size, 1;
    reduce_scatter (OSU's size is the whole vector) S = the bytes reduced, (n-1)/n; allgather, alltoall
    S = n x size (every rank's block), (n-1)/n. nccl-tests' gather and scatter take S = n x size and
    (n-1)/n too (the root's link carries every block but its own); the v-variants, with OSU's equal
    counts, move what their plain forms move, so take their terms. A non-blocking collective takes
    its operation's. None for barrier (no data)."""
    op = test[1:] if test in NONBLOCKING else test
    n = max(int(ranks), 1)
    if op == "allreduce":
        return size, 2 * (n - 1) / n
    if op in ("reduce", "bcast"):
        return size, 1.0
    if op == "reduce_scatter":
        return (size // 4 // n) * n * 4, (n - 1) / n
    if op in _EVERY_BLOCK:
        return size * n, (n - 1) / n
    return None


def _bus_fields(test: str, size: int, ranks: int, mean: Optional[float], median: Optional[float]) -> dict[str, Any]:
    terms = bus_terms(test, size, ranks)
    if terms is None:
        return {}
    moved, factor = terms
    rate = lambda t: moved / t if t else None  # noqa: E731
    return {"algorithm_bytes": moved, "bus_factor": factor,
            "algorithm_mean_bytes_per_second": rate(mean), "algorithm_median_bytes_per_second": rate(median),
            "bus_mean_bytes_per_second": rate(mean) and rate(mean) * factor,
            "bus_median_bytes_per_second": rate(median) and rate(median) * factor}


def overlap_of(overall: float, compute: float, pure: float) -> Optional[float]:
    """OSU's overlap of a non-blocking collective (print_stats_nbc of osu_util_mpi.c), as a ratio: the
    share of the pure communication time the compute hid, max(0, 1 - (overall - compute) / pure)."""
    if not pure:
        return None
    return max(0.0, 1.0 - (overall - compute) / pure)


def _rank_means(members: list[dict[str, Any]], key: str) -> list[float]:
    """Each rank's mean of ``key`` (``seconds`` or a params series), rank after rank."""
    by_rank: dict[Any, list[float]] = {}
    for m in members:
        v = m["seconds"] if key == "seconds" else value_of(m, key)
        if v is not None:
            by_rank.setdefault(value_of(m, "rank"), []).append(v)
    return [sum(v) / len(v) for v in by_rank.values()]

def summary(rows: list[dict[str, Any]], peaks: Optional[dict[str, Any]] = None,
            hosts: Optional[list[dict[str, Any]]] = None) -> list[dict[str, Any]]:
    """One row per (test, size, pair kind, path, buffers per side) of the validated samples, OSU's figure beside the
    robust ones: ``mean_seconds`` is OSU's "Avg Latency" (its timer / iterations), ``median_seconds``
    and its 95 % interval the robust centre; for the bandwidth tests ``mean_bytes_per_second`` is
    OSU's "Bandwidth" (bytes / total time), ``median_bytes_per_second`` and ``best_bytes_per_second``
    (the fastest iteration) beside it, and mbw_mr's ``messages_per_second`` (OSU's "Messages/s").
    Collectives: ``mean_seconds`` is the mean over ranks of each rank's mean (OSU's "Avg
    Latency"), ``rank_min_mean_seconds`` / ``rank_max_mean_seconds`` OSU's "Min" and "Max"; beside it
    nccl-tests' algorithm and bus bandwidth (:func:`bus_terms`) of the mean and of the median.
    Non-blocking collectives: ``mean_seconds`` is OSU's "Overall", ``compute_mean_seconds`` its
    "Compute", ``pure_mean_seconds`` its "Pure Comm." (each the mean over ranks of each rank's mean,
    as OSU averages over processes) and ``overlap`` its "Overlap(%)" / 100 (:func:`overlap_of`); their
    bandwidths are the pure communication's. With the run's ``peaks`` and the ranks' ``hosts`` (its summary's
    rank-to-host map) the bandwidth rows between hosts are held against the links recorded (measure/peak.py)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r.get("suite") == "network" and not r.get("warmup"):
            groups.setdefault((r["test"], r["size_bytes"], value_of(r, "pair"), value_of(r, "path"),
                               value_of(r, "buffers")), []).append(r)
    order = {t: i for i, t in enumerate(ALL_TESTS)}
    sides = {k: i for i, k in enumerate(SIDES)}
    out, ranks = [], []
    for (test, size, pair, path, buffers), members in sorted(
            groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][3] or "", sides.get(kv[0][4], 9), kv[0][2] or "",
                                            kv[0][1])):
        secs = [m["seconds"] for m in members]
        s = summarize(secs)
        entry: dict[str, Any] = {"test": test, "size_bytes": size, "pair": pair, "buffer": value_of(members[0], "buffer"),
                                 "buffers": buffers or _one_kind(value_of(members[0], "buffer"), test), "path": path, "count": s["count"], "headline": "mean",
                                 "mean_seconds": s["mean"], "median_seconds": s["median"], "min_seconds": s["min"],
                                 "max_seconds": s["max"], "cov": s["cov"], **ci_fields(secs)}
        if test in ONE_SIDED:  # the synchronization and the window it ran with (OSU's -s and -w)
            entry.update({"rma_sync": value_of(members[0], "rma_sync"), "rma_window": value_of(members[0], "rma_window")})
        if test in RATES:
            moved = members[0]["bytes"]
            entry.update({"iteration_bytes": moved, "mean_bytes_per_second": moved * len(secs) / sum(secs),
                          "median_bytes_per_second": moved / s["median"], "best_bytes_per_second": moved / s["min"],
                          **ci_fields(secs, "bytes_per_second", moved)})
            if test == "mbw_mr":
                messages = (value_of(members[0], "window") or WINDOW) * (value_of(members[0], "pairs") or 1)
                entry["messages_per_second"] = messages * len(secs) / sum(secs)
        if test in COLLECTIVES or test == "multi_lat":
            means = _rank_means(members, "seconds")
            entry.update({"ranks": len(means), "mean_seconds": sum(means) / len(means),
                          "rank_min_mean_seconds": min(means), "rank_max_mean_seconds": max(means)})
            mean, median = entry["mean_seconds"], s["median"]
            if test in NONBLOCKING:
                compute, pure = _rank_means(members, "compute_seconds"), _rank_means(members, "pure_seconds")
                c = sum(compute) / len(compute) if compute else None
                mean = sum(pure) / len(pure) if pure else None
                pure_all = [v for v in (value_of(m, "pure_seconds") for m in members) if v is not None]
                median = summarize(pure_all)["median"] if pure_all else None
                entry.update({"compute_mean_seconds": c, "pure_mean_seconds": mean,
                              "overlap": overlap_of(entry["mean_seconds"], c, mean) if c is not None and mean else None})
            if test in COLLECTIVES:
                entry.update(_bus_fields(test, size, len(means), mean, median))
        out.append(entry)
        ranks.append(value_of(members[0], "ranks"))
    return network_rows(out, peaks, crossings(ranks, hosts))  # issue 28: counting rule, bibw per direction, the peak (measure/peak.py)


def overview(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (pair kind, path): the smallest message's latency and the largest message's bandwidth,
    the two figures seed 001 quotes (2 µs host to host, 12.3 GB/s by OSU); of both sides' buffers of
    one kind (H H, D D), not the mixed pairs."""
    table = [t for t in table if t.get("buffers") in (None, "H H", "D D")]
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

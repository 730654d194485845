"""What `measure kernels` rows add up to (measure/kernels.py makes the rows): device STREAM per point
with BabelStream's headline, the scaling table, first-touch faults, copies by alignment, device to
device, and the overview per memory kind. The CLI, the lab and the report print these."""

from __future__ import annotations

from typing import Any

from ..stats import summarize
from .kernels import KERNELS, MEMORIES
from .precision import ci_fields
from .samples import kept, value_of


def stream_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kernel, memory, type, width, groups, instances): BabelStream's figure (the best
    iteration's bandwidth, ``best_bytes_per_second``), the median's with its interval, GFLOP/s of
    SpMV, and the arrays' size class against the LLC the probe run recorded (``array_size_class``,
    ``llc_bytes``: measure/sizeclass.py; None for SpMV and for runs recorded without it)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r.get("suite") == "kernels" and (r["test"] in KERNELS or r["test"] == "spmv"):
            groups.setdefault((r["test"], r["host_kind"], value_of(r, "type"), value_of(r, "width"), value_of(r, "groups"),
                               value_of(r, "instances"), r["size_bytes"]), []).append(r)
    order = {k: i for i, k in enumerate((*KERNELS, "spmv"))}
    out = []
    for (kernel, memory, type_, width, ngroups, instances, _), members in sorted(
            groups.items(), key=lambda kv: (kv[0][6] or 0, MEMORIES.index(kv[0][1]) if kv[0][1] in MEMORIES else 9,
                                            order[kv[0][0]], kv[0][2] or "", kv[0][3] or 0, kv[0][5] or 0, kv[0][4] or 0)):
        secs = [m["seconds"] for m in members]
        s = summarize(secs)
        moved = members[0]["bytes"]
        entry = {"kernel": kernel, "memory": memory, "type": type_, "width": width, "groups": ngroups,
                 "local": value_of(members[0], "local"), "instances": instances, "size_bytes": members[0]["size_bytes"],
                 "count": s["count"], "headline": "best", "best_bytes_per_second": moved / s["min"],
                 "median_bytes_per_second": moved / s["median"], "median_seconds": s["median"], "min_seconds": s["min"],
                 "cov": s["cov"], **ci_fields(secs, "bytes_per_second", moved),
                 "llc_bytes": value_of(members[0], "llc_bytes"), "array_size_class": value_of(members[0], "array_size_class")}
        if kernel == "spmv":
            flops = value_of(members[0], "flops")
            entry.update({"rows": value_of(members[0], "rows"), "nnz": value_of(members[0], "nnz"),
                          "best_flops_per_second": flops / s["min"], "median_flops_per_second": flops / s["median"]})
        out.append(entry)
    return out


def scaling(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scaling table (seed 004's): per kernel, memory, type and width, each work-group count and
    each instance count with its best bandwidth and the speedup over the fewest groups (one
    instance) and over one instance (the same groups)."""
    out = []
    for key in dict.fromkeys((s["kernel"], s["memory"], s["type"], s["width"]) for s in summary):
        mine = [s for s in summary if (s["kernel"], s["memory"], s["type"], s["width"]) == key]
        if len({s["groups"] for s in mine}) < 2 and len({s["instances"] for s in mine}) < 2:
            continue
        one = {s["groups"]: s for s in mine if s["instances"] == 1}
        fewest = min(one) if one else None
        for s in sorted(mine, key=lambda s: (s["instances"], s["groups"])):
            base_groups = one.get(fewest)
            base_instance = one.get(s["groups"])
            out.append({"kernel": key[0], "memory": key[1], "type": key[2], "width": key[3], "groups": s["groups"],
                        "instances": s["instances"], "best_bytes_per_second": s["best_bytes_per_second"],
                        "speedup_vs_fewest_groups": (s["best_bytes_per_second"] / base_groups["best_bytes_per_second"]
                                                     if base_groups and s["instances"] == 1 else None),
                        "speedup_vs_one_instance": (s["best_bytes_per_second"] / base_instance["best_bytes_per_second"]
                                                    if base_instance else None)})
    return out


def fault_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (memory, stride): the first touch's and the second touch's median time, the fault cost
    per touch (first - second over the touches: a 4 KiB stride touches each page once) and the
    host's read-back per touch."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r.get("suite") == "kernels" and r["test"] == "first-touch":
            groups.setdefault((r["host_kind"], value_of(r, "stride_bytes")), []).append(r)
    out = []
    for (memory, stride), members in groups.items():
        touches = value_of(members[0], "touches")
        first = summarize(m["seconds"] for m in members)
        second = summarize(value_of(m, "second_seconds") for m in members)
        per = summarize(value_of(m, "fault_seconds_per_touch") for m in members)
        back = summarize(value_of(m, "host_back_seconds") for m in members)
        out.append({"memory": memory, "stride_bytes": stride, "touches": touches, "size_bytes": members[0]["size_bytes"],
                    "count": first["count"], "headline": "median", "first_touch_median_seconds": first["median"],
                    "second_touch_median_seconds": second["median"], "fault_per_touch_median_seconds": per["median"],
                    "host_back_per_touch_median_seconds": back["median"] / touches if touches else None})
    return out


def align_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (allocator, offset, direction): the median and best bandwidth, and the median against the
    runtime allocator's at offset 0 (1.0: as fast as runtime-pinned memory)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r.get("suite") == "kernels" and r["test"] in ("h2d", "d2h"):
            groups.setdefault((r["host_kind"], value_of(r, "offset_bytes"), r["test"]), []).append(r)
    medians = {k: summarize(m["seconds"] for m in v) for k, v in groups.items()}
    out = []
    for (allocator, offset, direction), members in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        s = medians[(allocator, offset, direction)]
        size = members[0]["size_bytes"]
        ref = medians.get(("runtime", 0, direction))
        out.append({"allocator": allocator, "offset_bytes": offset, "direction": direction, "size_bytes": size,
                    "count": s["count"], "headline": "median", "median_bytes_per_second": size / s["median"],
                    "best_bytes_per_second": size / s["min"],
                    "relative_to_runtime_aligned": (ref["median"] / s["median"]) if ref else None})
    return out


def d2d_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per path (runtime: one context holding both devices; staged: through pinned host memory):
    the median and best bandwidth of a device-to-device copy."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r.get("suite") == "kernels" and r["test"] == "d2d-devices":
            groups.setdefault((value_of(r, "path"), r["size_bytes"]), []).append(r)
    out = []
    for (path, size), members in groups.items():
        s = summarize(m["seconds"] for m in members)
        out.append({"path": path, "size_bytes": size, "device_index": value_of(members[0], "device_index"),
                    "peer_index": value_of(members[0], "peer_index"), "count": s["count"], "headline": "median",
                    "median_bytes_per_second": size / s["median"], "best_bytes_per_second": size / s["min"],
                    "median_seconds": s["median"]})
    return out


def overview(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per memory kind and array size: each kernel's best bandwidth at its best point (any width,
    groups; one instance), the figure to set beside host STREAM and the copy bandwidth of the same
    size class (``array_size_class``, the triad's where kernels differ)."""
    out = []
    for memory, size in dict.fromkeys((s["memory"], s["size_bytes"]) for s in summary if s["kernel"] in KERNELS):
        mine = [s for s in summary if (s["memory"], s["size_bytes"]) == (memory, size) and s["kernel"] in KERNELS]
        triad = next((s for s in mine if s["kernel"] == "triad"), mine[0])
        row: dict[str, Any] = {"memory": memory, "size_bytes": size, "statistic": "best",
                               "array_size_class": triad.get("array_size_class"), "llc_bytes": triad.get("llc_bytes")}
        for kernel in KERNELS:
            points = [s for s in mine if s["kernel"] == kernel and s["instances"] == 1]
            if points:
                best = max(points, key=lambda s: s["best_bytes_per_second"])
                row[f"{kernel}_best_bytes_per_second"] = best["best_bytes_per_second"]
                row[f"{kernel}_at"] = f"{best['type']} x{best['width']}, {best['groups']} groups"
        out.append(row)
    return out


def with_peaks(got: dict[str, list[dict[str, Any]]], peaks: dict[str, Any], backend: str) -> dict[str, list[dict[str, Any]]]:
    """A kernels run's summaries (``stream``, ``align``, ``d2d``; changed in place and returned) with the peak
    fields every bandwidth row carries (measure/peak.py), from the ``peaks`` the run recorded: a STREAM point
    against its device memory's peak or, on mapped pinned host memory, the link (peak.kernel_rows); an aligned
    copy, a DMA copy over the device's link, against the link as `measure device`'s copies (its median); a copy
    between two devices has none."""
    from . import peak

    peak.kernel_rows(got.get("stream") or [], peaks, backend)
    peak.device_rows(got.get("align") or [], peaks, "median_bytes_per_second", "size_bytes")
    for row in got.get("d2d") or []:
        row.update(peak.peak_fields(None, None, peak.BETWEEN_DEVICES if row.get("path") == "runtime" else
                                    "peak unknown: staged through pinned host memory over both devices' links, and the "
                                    "peer's link is not recorded"))
    return got

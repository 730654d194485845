"""The launch latency summary of ``measure launch`` and ``measure device --launch`` rows (and the launch
study's table): per API, argument count and pinned CPU, the median and the tail; a SYCL run's launches
held against the same device's OpenCL launches (``relative_to_opencl``)."""

from __future__ import annotations

from typing import Any

from ..stats import summarize
from .precision import ci_fields, stopped_of
from .samples import kept, value_of


def _quantile(data: list[float], q: float) -> float:
    data = sorted(data)
    return data[min(len(data) - 1, int(q * len(data)))]


def launch_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (backend, buffer arguments, pinned CPU): the launch times' median and tail. Beside OpenCL
    launches on the same device (a SYCL run's), a row's ``relative_to_opencl`` is its median / OpenCL's."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in kept(rows):
        if r["test"] == "launch":
            groups.setdefault((value_of(r, "backend"), r["kernel_args"], r.get("cpus")), []).append(r)
    summaries = {key: summarize([m["seconds"] for m in members]) for key, members in groups.items()}
    out = []
    for (backend, nargs, cpu), members in groups.items():
        host = [m["seconds"] for m in members]
        s = summaries[(backend, nargs, cpu)]
        devs = [m["device_seconds"] for m in members if m.get("device_seconds") is not None]
        opencl = summaries.get(("opencl", nargs, cpu)) if backend != "opencl" else None
        out.append({"backend": backend, "kernel_args": nargs, "pinned_cpu": cpu,
                    "relative_to_opencl": s["median"] / opencl["median"] if opencl and opencl["median"] else None,
                    "count": s["count"], "headline": "median",
                    "median_seconds": s["median"], "p99_seconds": _quantile(host, 0.99), "min_seconds": s["min"],
                    "max_seconds": s["max"], "mean_seconds": s["mean"], "cov": s["cov"],
                    "device_median_seconds": summarize(devs)["median"] if devs else None,
                    **ci_fields(host), "stopped": stopped_of(members)})
    return out

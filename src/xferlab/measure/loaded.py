"""Loaded latency per read/write mix: the bandwidth-latency curves of Intel MLC's ``--loaded_latency``
(its -W modes: all reads, 3:1, 2:1, 1:1 reads:writes, non-temporal writes) and of the Mess benchmark
(Esmaili-Dokht et al., "A Mess of Memory System Benchmarking, Simulation and Application Profiling",
MICRO 2024), one curve per mix in one run of ``xferlab-probe loaded`` (native/probe/loaded.cpp).

A mix is ``R:W`` (R lines read for every W written), ``read`` (1:0), ``write`` (0:1, ordinary stores)
or ``nt-write`` (0:1, non-temporal stores); ``R:W-nt`` writes non-temporally. Each (mix, delay) point
is ``repeats`` windows; each window gives the chase's seconds per load and the generators' bandwidth in
the same window. A point's figures: the median latency (``median_seconds``, with its 95 % interval)
and the median bandwidth (``median_bytes_per_second``, with its interval; ``best_bytes_per_second``
the fastest window), counted as measure/conventions.py's ``loaded`` rule says. A window is stored as two
samples (its latency and its bandwidth), validated only when the probe's check of the point held: the
lines each generator claims were read add up to what they hold, and those it claims were written hold
its writes. A point whose check failed is never shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from ..errors import BadValue
from ..stats import summarize
from .samples import validated, value_of

TEST = "loaded-latency"
#: The family `measure memory --loaded` runs when --mixes is not given (MLC's read-only traffic, -W3, -W2, -W5, -W6).
DEFAULT_MIXES = ("read", "3:1", "2:1", "1:1", "nt-write")
ALLOWED = "read, write, nt-write, R:W or R:W-nt (R, W 0..16, not both 0; -nt: non-temporal writes, W >= 1)"
_MIX = re.compile(r"^(\d{1,2}):(\d{1,2})(-nt)?$")


@dataclass(frozen=True)
class Mix:
    name: str
    reads: int
    writes: int
    nt: bool = False

    @property
    def description(self) -> str:
        if not self.writes:
            return "all reads"
        stores = "non-temporal" if self.nt else "ordinary"
        if not self.reads:
            return f"all writes ({stores} stores)"
        return f"{self.reads}:{self.writes} reads:writes ({stores} stores)"


def parse_mix(text: str) -> Mix:
    """One mix, as the probe reads it; a bad one is refused naming it and what is allowed."""
    name = text.strip()
    if name == "read":
        return Mix(name, 1, 0)
    if name in ("write", "nt-write"):
        return Mix(name, 0, 1, name == "nt-write")
    match = _MIX.match(name)
    if match:
        reads, writes, nt = int(match[1]), int(match[2]), bool(match[3])
        if reads <= 16 and writes <= 16 and reads + writes and not (nt and not writes):
            return Mix(name, reads, writes, nt)
    raise BadValue(f"--mixes: '{name}' is not a read/write mix; allowed: {ALLOWED}")


def parse_mixes(text: str) -> list[str]:
    """``--mixes LIST``: each checked, none twice, in the order given."""
    names = [parse_mix(part).name for part in text.split(",")]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BadValue(f"--mixes names {', '.join(twice)} twice; each mix is a curve of its own, given once")
    return names


def probe_args(mixes: Iterable[str]) -> list[str]:
    return ["--mixes", ",".join(mixes)]


def rows(base: dict[str, Any], run) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The tidy rows of one ``loaded`` probe run (``base``: the step's suite and placement), the windows
    dropped (a bad time) and the points whose traffic check failed. A window is validated when the probe
    ended cleanly and its point's check held; a point with no check record (the probe ended first) is not."""
    setup = run.first("setup")
    checks = {(c.get("mix", "read"), c.get("delay")): c for c in run.of("check")}
    refused = [f"mix {m} delay {d}: {c.get('detail')}" for (m, d), c in checks.items() if not c.get("ok")]
    out: list[dict[str, Any]] = []
    dropped: list[str] = []
    for i, r in enumerate(run.of("sample")):
        mix = r.get("mix", "read")
        seconds, latency = r.get("seconds"), r.get("latency_seconds")
        if not (_positive(seconds) and _positive(latency)):
            dropped.append(f"mix {mix} delay {r.get('delay')}: {latency} s")
            continue
        check = checks.get((mix, r.get("delay")))
        shared = {**base, "test": TEST, "size_bytes": setup.get("size_bytes"), "cpus": str(setup.get("chase_cpu")),
                  "iteration": r.get("repeat", i), "warmup": False, "seconds": seconds, "delay": r["delay"],
                  "mix": mix, "variant": mix,  # variant: the store's stats and campaigns tell the curves apart by it
                  "traffic_threads": setup.get("traffic_threads"), "traffic_cpus": setup.get("traffic_cpus"),
                  "validated": run.ok and bool(check and check.get("ok"))}
        out.append({**shared, "metric": "latency_seconds", "value": latency, "loads": r.get("loads")})
        out.append({**shared, "metric": "bandwidth_bytes_per_second", "value": r["traffic_bandwidth_bytes_per_second"],
                    "read_bytes": r.get("read_bytes"), "write_bytes": r.get("write_bytes"),
                    "write_allocate_bytes": r.get("write_allocate_bytes")})
    return out, dropped, refused


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and value > 0 and value == value and value != float("inf")


def mix_of(row: dict[str, Any]) -> str:
    """A loaded-latency row's mix (rows recorded before mixes existed: their one traffic kind)."""
    return value_of(row, "mix") or ("write" if value_of(row, "traffic") == "write" else "read")


def points(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One point per (node, mix, delay) of the validated windows: the median latency and bandwidth with
    their 95 % intervals, the best window's bandwidth, the write-allocate traffic beside it; in the order
    measured (each mix from idle to saturation)."""
    groups: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        if r.get("test") != TEST or not validated(r) or r.get("warmup"):
            continue
        key = (r.get("node"), mix_of(r), value_of(r, "delay"))
        groups.setdefault(key, {}).setdefault(r["metric"], []).append(r)
    out = []
    for (node, mix, delay), metrics in groups.items():
        lat, bw = metrics.get("latency_seconds", []), metrics.get("bandwidth_bytes_per_second", [])
        if not lat or not bw:
            continue
        ls, bs = summarize(r["value"] for r in lat), summarize(r["value"] for r in bw)
        allocate = [value_of(r, "write_allocate_bytes") or 0.0 for r in bw]
        rates = [a / r["seconds"] for a, r in zip(allocate, bw) if r.get("seconds")]
        out.append({"node": node, "mix": mix, "delay": delay, "count": ls["count"],
                    "median_seconds": ls["median"], "median_ci_low_seconds": _num(ls["median_ci_low"]),
                    "median_ci_high_seconds": _num(ls["median_ci_high"]), "min_seconds": ls["min"],
                    "median_bytes_per_second": bs["median"], "median_ci_low_bytes_per_second": _num(bs["median_ci_low"]),
                    "median_ci_high_bytes_per_second": _num(bs["median_ci_high"]), "best_bytes_per_second": bs["max"],
                    "write_allocate_median_bytes_per_second": summarize(rates)["median"] if rates else None,
                    "traffic_threads": value_of(lat[0], "traffic_threads"), "counting": "loaded"})
    return out


def _num(value: Optional[float]) -> Optional[float]:
    return None if value is None or value != value else value


def curves(pts: Iterable[dict[str, Any]]) -> dict[Any, dict[str, list[dict[str, Any]]]]:
    """node → mix → its points from the lowest bandwidth to the highest (the family to plot)."""
    out: dict[Any, dict[str, list[dict[str, Any]]]] = {}
    for p in pts:
        out.setdefault(p["node"], {}).setdefault(p["mix"], []).append(p)
    for family in out.values():
        for mix in family:
            family[mix].sort(key=lambda p: p["median_bytes_per_second"])
    return out


def title(mix: str) -> str:
    """A curve's label: ``3:1`` → ``3:1 reads:writes (ordinary stores)``, ``read`` → ``read: all reads``."""
    try:
        description = parse_mix(mix).description
    except BadValue:
        return mix
    return description if description.startswith(mix) else f"{mix}: {description}"

"""Memory-tier profiles (`Tier`) fitted from a recorded memory run, saved beside link profiles.

One Tier per memory node and mode of the run (``mode`` ``memory``, or ``app-direct`` and
``app-direct+persist`` for persistent memory). Its parts, each from the samples of
:func:`xferlab.measure.memory.rows_of`:

* **Idle latency**: the pointer chase (lmbench's ``lat_mem_rd`` method: McVoy and Staelin,
  "lmbench: Portable tools for performance analysis", USENIX 1996). The median of every chase
  sample at the working sets of at least 2 x the last-level cache (past the LLC, so almost every
  load misses it); the sizes used are stored. Its spread is (max - min) / median of the per-size
  medians; above :data:`FLAT` the plateau is not flat and a note says so.
* **Cache latency steps**: level k's plateau is the chase at working sets from 2 x the size of
  level k-1 to half the size of level k (sizes between are transitions), from the run's inventory;
  it is reported only if its per-size medians spread at most :data:`STEP_FLAT`, else a note says
  that no plateau was found (e.g. TLB misses or a shared LLC under a hypervisor blur the step).
* **Bandwidth per kernel**: STREAM (McCalpin, "Memory Bandwidth and Machine Balance in Current
  High Performance Computers", IEEE TCCA Newsletter, 1995): the best iteration (STREAM's figure)
  and the median, per thread count, warm-ups left out. Bytes are counted as STREAM counts them
  (copy: the array read plus the array written). Each kernel's figure carries its arrays' size class
  against the last-level cache (``array_size_class``: memory when each array is at least 4x it,
  STREAM's run rule; measure/sizeclass.py); a tier whose STREAM is not of class memory says so in a
  note, and its link view is then a cache's, not the memory's.
* **Loaded-latency curve**: (traffic bandwidth, chase latency) per traffic delay of the read mix
  (the medians over each point's windows), sorted by bandwidth (the Mess benchmark's bandwidth-latency
  curve: Esmaili-Dokht et al., MICRO 2024; the other mixes are measure memory's and the report's).

**Link view.** A tier is usable as a LINK (``xferlab model time``, ``advise links``) as a
memory-to-memory copy: t(n) = idle latency + n / r, where r = STREAM copy's best rate / 2 (bytes
copied per second: STREAM counts each copied byte twice, once read and once written), at the thread
count where copy was fastest. A tier without both parts has no link view.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import BadFile, BadValue
from ..measure.memory import KERNELS
from ..units import format_size, format_time
from ..links import profiles
from ..links.presets import check_profile_name, save_profile
from ..measure.samples import kept, unvalidated_count
from ..measure.sizeclass import HOST_ARRAYS, MEMORY, size_class

FLAT = 0.15  # an idle-latency plateau whose per-size medians spread more than this (relative) gets a note
STEP_FLAT = 0.5  # a cache level's sizes whose medians spread more than this show no plateau: not reported


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Plateau(_Model):
    """The chase latency over a range of working sets that one level of the hierarchy serves."""

    level: str  # "L1", "L2", "L3" … or "memory" (past the last-level cache)
    cache_size_bytes: Optional[int] = None  # the cache's size (the LLC's, for "memory")
    latency_seconds: float  # median of the samples at sizes_bytes
    sizes_bytes: list[int]
    spread: float  # (max - min) / median of the per-size medians


class KernelBandwidth(_Model):
    kernel: str
    threads: Optional[int] = None
    best_bytes_per_second: float  # the fastest timed iteration: STREAM's figure
    median_bytes_per_second: float
    iterations: int  # timed iterations, warm-up excluded
    array_size_bytes: Optional[int] = None
    array_size_class: Optional[str] = None  # memory, mixed or cache-resident (measure/sizeclass.py); None: unknown


class LoadedPoint(_Model):
    bandwidth_bytes_per_second: float  # traffic the loading threads moved during the chase
    latency_seconds: float
    delay: Optional[int] = None  # spin iterations between the loading threads' accesses
    traffic: Optional[str] = None


class Tier(_Model):
    """A memory tier's profile: idle latency, cache steps, bandwidth per kernel, loaded-latency curve."""

    name: str
    run_id: str
    node: str  # memory node, or "default" (the OS's policy)
    mode: str  # "memory", "app-direct", "app-direct+persist"
    idle_latency: Optional[Plateau] = None
    cache_latency: list[Plateau] = []
    bandwidth: list[KernelBandwidth] = []
    loaded_latency: list[LoadedPoint] = []
    notes: list[str] = []

    @property
    def idle_latency_seconds(self) -> Optional[float]:
        return self.idle_latency.latency_seconds if self.idle_latency else None

    def best_copy(self) -> Optional[KernelBandwidth]:
        """STREAM copy at the thread count where it was fastest, if measured."""
        copies = [k for k in self.bandwidth if k.kernel == "copy"]
        return max(copies, key=lambda k: k.best_bytes_per_second) if copies else None

    def link_fields(self) -> Optional[dict[str, Any]]:
        """The link view (a ``simple`` link: t = idle latency + n / (copy / 2)), or None without both parts."""
        copy = self.best_copy()
        if copy is None or self.idle_latency is None:
            return None
        return {"kind": "simple", "bandwidth": copy.best_bytes_per_second / 2,
                "latency": self.idle_latency.latency_seconds}


def data_caches(inventory: Optional[dict]) -> list[tuple[int, int]]:
    """(level, bytes) of the data caches in a run's inventory (``db.run(id)["inventory"]``), innermost first."""
    from ..system.inventory import data_cache_sizes

    return [c for c in data_cache_sizes(found=(inventory or {}).get("caches") or []) if c[1]]


def _per_size(rows: list[dict]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for r in rows:
        out.setdefault(int(r["size_bytes"]), []).append(float(r["value"]))
    return dict(sorted(out.items()))


def _plateau(level: str, cache: Optional[int], by_size: dict[int, list[float]], sizes: list[int]) -> Plateau:
    medians = [median(by_size[s]) for s in sizes]
    centre = median(v for s in sizes for v in by_size[s])
    return Plateau(level=level, cache_size_bytes=cache, latency_seconds=centre, sizes_bytes=sizes,
                   spread=(max(medians) - min(medians)) / centre)


def _span(sizes: list[int]) -> str:
    return format_size(sizes[0]) if len(sizes) == 1 else f"{format_size(sizes[0])}-{format_size(sizes[-1])}"


def _latency(rows: list[dict], caches: list[tuple[int, int]], notes: list[str]):
    """(idle latency plateau or None, cache plateaus) of the chase samples ``rows``."""
    by_size = _per_size(rows)
    steps: list[Plateau] = []
    lower = 0
    for level, size in caches:
        inside = [s for s in by_size if 2 * lower <= s <= size // 2]
        lower = size
        if not inside:
            continue
        step = _plateau(f"L{level}", size, by_size, inside)
        if step.spread <= STEP_FLAT:
            steps.append(step)
        else:
            low, high = min(median(by_size[s]) for s in inside), max(median(by_size[s]) for s in inside)
            notes.append(f"no L{level} plateau found: the chase latency goes from {format_time(low)} to "
                         f"{format_time(high)} over working sets of {_span(inside)}")
    if caches:
        llc = caches[-1][1]
        past = [s for s in by_size if s >= 2 * llc]
        if not past:
            past = [s for s in by_size if s > llc]
            if past:
                notes.append(f"idle latency: no working set reaches 2 x the last-level cache ({format_size(llc)}); "
                             f"used {_span(past)}, just past it, where some loads may still hit the cache")
        if not past:
            notes.append(f"idle latency unknown: the largest working set ({format_size(max(by_size))}) fits in the "
                         f"last-level cache ({format_size(llc)})")
            return None, steps
        idle = _plateau("memory", llc, by_size, past)
    else:
        largest = max(by_size)
        past = [s for s in by_size if s >= largest // 4]
        notes.append(f"cache sizes unknown (no inventory): idle latency from the working sets within 4x of the "
                     f"largest ({_span(past)}), no cache steps")
        idle = _plateau("memory", None, by_size, past)
    if idle.spread > FLAT:
        notes.append(f"idle latency plateau is not flat: its per-size medians spread {idle.spread:.0%} over "
                     f"{_span(idle.sizes_bytes)}")
    return idle, steps


def _bandwidth(rows: list[dict], llc: Optional[int] = None) -> list[KernelBandwidth]:
    groups: dict[tuple[str, Optional[int]], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["test"], r.get("threads")), []).append(r)
    out = []
    for (kernel, threads), members in sorted(groups.items(), key=lambda g: (KERNELS.index(g[0][0]), g[0][1] or 0)):
        values = [float(m["value"]) for m in members]
        size = members[0].get("size_bytes")
        out.append(KernelBandwidth(kernel=kernel, threads=threads, best_bytes_per_second=max(values),
                                   median_bytes_per_second=median(values), iterations=len(values),
                                   array_size_bytes=size, array_size_class=size_class(size, llc, HOST_ARRAYS[kernel])))
    return out


def _loaded(rows: list[dict]) -> list[LoadedPoint]:
    """The read mix's curve (measure/loaded.py's points: the median latency and bandwidth of each delay's
    windows); the other mixes' curves are the report's and `measure memory`'s, not the tier's."""
    from ..measure.loaded import mix_of, points

    reads = points(r for r in rows if mix_of(r) == "read")
    return sorted((LoadedPoint(bandwidth_bytes_per_second=p["median_bytes_per_second"], latency_seconds=p["median_seconds"],
                               delay=p["delay"], traffic="read") for p in reads),
                  key=lambda q: q.bandwidth_bytes_per_second)


def _default_name(node: str, mode: str) -> str:
    where = "default" if node == "default" else f"node{node}"
    if mode == "memory":
        return where
    return mode if node == "default" else f"{mode}-{where}"


def fit_tiers(samples: list[dict], run_id: str, caches: Optional[list[tuple[int, int]]] = None) -> list[Tier]:
    """The Tiers of a memory run's ``samples`` (``db.samples(run_id)``), one per (node, mode), from
    its validated samples only (each tier notes how many unvalidated ones were left out).

    ``caches``: (level, bytes) of the data caches (:func:`data_caches` of the run's inventory);
    without them the idle latency comes from the largest working sets and no cache steps are found."""
    tests = {*KERNELS, "latency", "loaded-latency"}
    mine = [s for s in kept(samples) if s.get("suite") == "memory" and s.get("test") in tests and not s.get("warmup")]
    unchecked = unvalidated_count(s for s in samples if s.get("suite") == "memory")
    if not mine:
        raise BadValue(f"run {run_id} has no memory samples (STREAM, latency or loaded latency) to fit a tier; "
                       "record one with `xferlab measure memory --latency --loaded`")
    tiers = []
    for node, mode in dict.fromkeys((str(s.get("node")), str(s.get("mode"))) for s in mine):
        here = [s for s in mine if (str(s.get("node")), str(s.get("mode"))) == (node, mode)]
        chase = [s for s in here if s["test"] == "latency" and s["metric"] == "latency_seconds"]
        stream = [s for s in here if s["test"] in KERNELS and s["metric"] == "bandwidth_bytes_per_second"]
        loaded = [s for s in here if s["test"] == "loaded-latency"]
        notes: list[str] = []
        idle, steps = _latency(chase, caches or [], notes) if chase else (None, [])
        if not chase:
            notes.append("no pointer-chase samples: idle latency and cache steps unknown (measure with --latency)")
        bandwidth = _bandwidth(stream, caches[-1][1] if caches else None)
        if not stream:
            notes.append("no STREAM samples: bandwidth unknown")
        off = sorted({f"{format_size(k.array_size_bytes)} arrays: {k.array_size_class or 'class unknown'}"
                      for k in bandwidth if k.array_size_class != MEMORY and k.array_size_bytes})
        if off:
            notes.append(f"STREAM not of class memory ({'; '.join(off)}): STREAM's rule wants each array at least 4x "
                         "the last-level cache; these figures (and a link view from them) are partly or wholly the "
                         "cache's")
        if not loaded:
            notes.append("no loaded-latency samples: no bandwidth-latency curve (measure with --loaded)")
        if unchecked:
            notes.append(f"{unchecked} unvalidated sample{'s' * (unchecked > 1)} of the run left out (the probe ended "
                         "before validating them)")
        tier = Tier(name=_default_name(node, mode), run_id=run_id, node=node, mode=mode, idle_latency=idle,
                    cache_latency=steps, bandwidth=bandwidth, loaded_latency=_loaded(loaded), notes=notes)
        if tier.link_fields() is None:
            tier.notes.append("no link view: it needs both a STREAM copy bandwidth and an idle latency")
        tiers.append(tier)
    return tiers


def fit_stored(db, run: str) -> tuple[str, list[Tier]]:
    """(run id, Tiers) of run ``run`` (an id, a prefix or 'latest') of an open store ``db``."""
    run_id = db.resolve_run(run)
    return run_id, fit_tiers(db.samples(run_id), run_id, data_caches(db.run(run_id).get("inventory")))


def tier_rows(tiers: list[Tier]) -> list[dict[str, Any]]:
    """One row per tier x kernel x thread count (one row for a tier without bandwidth), units in the names."""
    rows = []
    for t in tiers:
        link = t.link_fields()
        base = {"tier": t.name, "node": t.node, "mode": t.mode, "idle_latency_seconds": t.idle_latency_seconds,
                "copy_rate_bytes_per_second": link["bandwidth"] if link else None,
                "loaded_points": len(t.loaded_latency)}
        for k in t.bandwidth or [None]:
            rows.append({**base, "kernel": k.kernel if k else None, "threads": k.threads if k else None,
                         "best_bytes_per_second": k.best_bytes_per_second if k else None,
                         "median_bytes_per_second": k.median_bytes_per_second if k else None,
                         "iterations": k.iterations if k else None,
                         "array_size_bytes": k.array_size_bytes if k else None,
                         "array_size_class": k.array_size_class if k else None})
    return rows


def save_tier(name: str, tier: Tier) -> Path:
    """Save ``tier`` as profile ``name`` (its link view under ``links:``, the profile under ``tier:``)."""
    tier = tier.model_copy(update={"name": name})
    link = tier.link_fields()
    if link:
        copy = tier.best_copy()
        note = (f"memory tier fitted by xferlab on run {tier.run_id} (node {tier.node}, mode {tier.mode}); link view: "
                f"t = idle latency + n / (STREAM copy best / 2), copy at {copy.threads} threads")
    else:
        note = f"memory tier fitted by xferlab on run {tier.run_id} (node {tier.node}, mode {tier.mode}); no link view"
    return save_profile(name, link, note, tier=tier.model_dump(mode="json"))


def save_tiers(prefix: str, tiers: list[Tier], run_id: str) -> list[tuple[str, Path]]:
    """Save each tier as ``<prefix>-node<N>`` (``<prefix>-default`` for the OS's default policy),
    or ``<prefix>-<mode>`` for App-Direct; every name is checked before anything is written."""
    check_profile_name(prefix)
    named = [(f"{prefix}-{t.name}", t) for t in tiers]
    for name, t in named:
        check_profile_name(name)
        if t.run_id != run_id:
            raise BadValue(f"tier {t.name} was fitted on run {t.run_id}, not on run {run_id}")
    if len({n for n, _ in named}) != len(named):
        raise BadValue(f"tiers of run {run_id} have the same name: {', '.join(n for n, _ in named)}")
    return [(name, save_tier(name, t)) for name, t in named]


def load_tier(name: str) -> Optional[Tier]:
    """The Tier saved as profile ``name``, or None (no such profile, or a link profile without a tier)."""
    target = profiles.path_of(name)
    if not target.is_file():
        return None
    data = profiles.read(target)
    if not isinstance(data, dict) or profiles.TIER not in data:
        return None
    try:
        return Tier.model_validate(data[profiles.TIER])
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadFile(f"tier profile '{target}': {where}: {first['msg']}") from None


def tier_names() -> list[str]:
    """Names of the saved profiles that are memory tiers."""
    out = []
    for name in profiles.names():
        data = profiles.read(profiles.path_of(name))
        if isinstance(data, dict) and profiles.TIER in data:
            out.append(name)
    return out

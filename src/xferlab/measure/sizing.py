"""The memory suite sized to this machine and a time budget (``xferlab lab``'s memory stage).

*What* to measure follows from what the machine reports: STREAM's arrays at least 4 x the
last-level cache (STREAM's run rule), the latency sweep's working sets from 4 KiB to 8 x that cache
(:func:`memory.latency_sizes`), the loaded-latency chase over 8 x it; every allocation within half of
the memory the kernel says is available (MemAvailable).

*What it costs here* follows from a calibration at the start (:func:`calibrate`): one probe run of a
16 MiB chase (less on a smaller cache) whose lines are flushed out of the caches before its warm-up
pass, so that pass times a load from memory (``latency --cold``). It gives the set-up cost of a line
(building the random cycle), a load in the caches and a load from memory. A point of the sweep
then costs its lines x (set-up + two loads from memory past half the last-level cache: the links'
writes and the warm-up pass; one load from the cache below) plus its timed chase (the search for a
step count, then its repeats up to ``--max-time``); STREAM costs its passes over three arrays at the
rate Little's law gives for that memory latency with :data:`LINES_IN_FLIGHT` lines in flight per
thread (J. D. C. Little, "A proof for the queuing formula L = λW", Operations Research 9(3), 1961;
10 line-fill buffers per core, Intel 64 and IA-32 Architectures Optimization Reference Manual):
pessimistic, since prefetchers keep more lines in flight.

*What is left out* follows from the stage's share of the budget: STREAM at most 40 % of it (fewer
iterations), or with its shortest timed work up to 70 % where 40 % cannot hold it (STREAM's bandwidth
is the stage's headline; the latency sweep takes what is left, cut to fit), else skipped; loaded latency at most 15 % (a shorter --min-time, else skipped), and
the latency sweep what is left: its timed work per point is cut first (a shorter --min-time and
--max-time), then the working sets below the last-level cache thinned to one per doubling, then the
largest left out, so the sweep reaches as far past the last-level cache as the budget allows. Each
thing left out is named with why. The probe gets the sweep's share as ``--budget`` and starts no
working set it estimates (from the one before) would end past it, so a machine slower than its
calibration ends with fewer points, never killed; each step's timeout is its plan's estimate with
room to spare (:func:`xferlab.measure.steps.planned_limit`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..system import inventory as inv
from ..units import format_size
from .probe import run_probe

LINE = 64
CALIBRATION_BYTES = 16 * 2**20
LINES_IN_FLIGHT = 10  # per thread: the line-fill buffers of a core (see the module's docstring)
MEMORY_FRACTION = 0.5  # of MemAvailable, for a step's arrays
STREAM_SHARE, LOADED_SHARE = 0.4, 0.15  # of the memory stage's share, at most
#: STREAM's share where 40 % cannot hold its shortest run: on a 2-vCPU VM with a 260 MiB last-level cache (1 GiB
#: arrays) under load, `lab --budget 30s` estimated 10.9 s for STREAM against 5.8 s and skipped its headline
STREAM_SHARE_MOST = 0.7
LOADED_DELAYS = 7  # the probe's default delays, 4096 down to 0
LOADED_MIXES, LOADED_REPEATS = 5, 8  # measure/loaded.py's default family; the probe's windows per point
LOADED_TIMES = (0.01, 0.005, 0.002, 0.001)  # --min-time per loaded window, longest first
#: (min_time, max_time) per latency point, from the finest to the shortest timed work
CHASE_TIMINGS = ((0.02, 0.5), (0.02, 0.2), (0.01, 0.1), (0.005, 0.05), (0.002, 0.02), (0.001, 0.005))
LATENCY_REPEATS = 5
STREAM_TIMES = (0.5, 0.2, 0.1, 0.05, 0.02, 0.005)  # max_time per STREAM kernel, longest first


@dataclass
class Calibration:
    """What the calibration measured here: seconds per 64-byte line to build a chase cycle, per load
    in the caches and per load from memory, and the run's own seconds."""

    setup_seconds_per_line: float
    cache_load_seconds: float
    memory_load_seconds: float
    size_bytes: int
    seconds: float
    cold: bool = True  # False: no flush instruction here, the memory load is the cached pass's (optimistic)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def calibrate(llc: int, timeout: float = 60.0) -> Calibration:
    """One quick probe run (``latency --cold`` on a set of :data:`CALIBRATION_BYTES`, or half the
    last-level cache when that is smaller). Raises RuntimeError when the probe fails."""
    size = max(2**20, min(CALIBRATION_BYTES, llc // 2 or CALIBRATION_BYTES))
    args = ["latency", "--sizes", str(size), "--repeats", "1", "--min-time", "0.001"]
    cold = True
    run = run_probe([*args, "--cold"], timeout=timeout)
    if not run.ok and "--cold" in str(run.failure):  # no flush instruction (not x86): the cached pass
        cold, run = False, run_probe(args, timeout=timeout)
    point = run.first("point")
    if not run.ok or not point.get("lines"):
        raise RuntimeError(f"the calibration's chase failed: {run.failure or 'no point record'}")
    lines = point["lines"]
    warm = point["warmup_seconds"] / lines
    return Calibration(setup_seconds_per_line=max(0.0, point["setup_seconds"] / lines - warm),
                       cache_load_seconds=point["median_seconds"], memory_load_seconds=max(warm, point["median_seconds"]),
                       size_bytes=point["size_bytes"], seconds=point["seconds"], cold=cold)


def chase_setup_seconds(cal: Calibration, size: int, llc: int) -> float:
    """Building the cycle of a ``size``-byte working set and its warm-up pass."""
    lines = max(2, size // LINE)
    per_line = (cal.setup_seconds_per_line + cal.cache_load_seconds if size <= llc // 2
                else cal.setup_seconds_per_line + 2 * cal.memory_load_seconds)
    return lines * per_line


def chase_timed_seconds(min_time: float, max_time: float, repeats: int = LATENCY_REPEATS) -> float:
    """A point's chase at most: the search for a step count (up to 2 x min_time), then its repeats,
    each up to 2 x min_time, until max_time of them is spent (or the repeats are done)."""
    return 2 * min_time + max(repeats * 2 * min_time, max_time + 2 * min_time)


def stream_seconds(cal: Calibration, size: int, kernels: int, iterations: int, threads: int,
                   max_time: Optional[float]) -> float:
    """STREAM on three ``size``-byte arrays: the first touch and the validation (3 passes, a pass
    reading or writing all three), a warm-up iteration per kernel, then its timed ones: iterations - 1
    of them, or with a precision target until max_time of them is spent (the last one started ends)."""
    rate = threads * LINES_IN_FLIGHT * LINE / cal.memory_load_seconds
    per_pass = 3 * size / rate
    timed = (iterations - 1) * per_pass if max_time is None else max_time + per_pass
    return (3 + kernels) * per_pass + kernels * timed


def loaded_seconds(cal: Calibration, size: int, loaders: int, min_time: float, llc: int,
                   mixes: int = LOADED_MIXES) -> float:
    """Loaded latency over a ``size``-byte chase (measure/loaded.py): its set-up; per mix the generators'
    buffers (``size`` bytes together, each generator its part) written once; per (mix, delay) point a
    settling chase and :data:`LOADED_REPEATS` windows, each up to 2 x min_time, then the check reading
    a generator's buffer at most once."""
    per_thread = (size / max(1, loaders)) / (LINES_IN_FLIGHT * LINE / cal.memory_load_seconds)
    point = (LOADED_REPEATS + 1) * 2 * min_time + per_thread
    return chase_setup_seconds(cal, size, llc) + mixes * (per_thread + LOADED_DELAYS * point)


@dataclass
class Sizing:
    """The memory stage's plan: what each step runs, its estimated seconds, what was left out."""

    calibration: Calibration
    llc: int
    share: float
    stream_bytes: Optional[int] = None  # None: STREAM skipped
    stream_max_time: float = 0.5  # seconds of timed work per kernel, at most (with the lab's precision target)
    stream_estimate: float = 0.0
    latency_sizes: list[int] = field(default_factory=list)
    latency_min_time: float = 0.02
    latency_max_time: float = 0.5
    latency_budget: float = 0.0
    latency_estimate: float = 0.0
    loaded_bytes: Optional[int] = None  # None: loaded latency skipped
    loaded_min_time: float = LOADED_TIMES[0]
    loaded_estimate: float = 0.0
    skipped: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {**{k: v for k, v in self.__dict__.items() if k != "calibration"},
                "calibration": self.calibration.as_json()}


def plan(share: float, cal: Calibration, llc: int, kernels: int, threads: int, cpus: int,
         available: Optional[int] = None) -> Sizing:
    """The memory stage within ``share`` seconds (see the module's docstring)."""
    from .memory import MIN_ARRAY, latency_sizes

    available = available if available is not None else inv.memory_available()
    room = int(MEMORY_FRACTION * available) if available else None
    out = Sizing(calibration=cal, llc=llc, share=share)

    rule = max(4 * llc, MIN_ARRAY)
    size = rule if room is None else min(rule, room // 3 // 2**20 * 2**20)
    if size < rule:
        out.skipped.append(f"STREAM: arrays of {format_size(size)}, not STREAM's {format_size(rule)} (4 x the "
                           f"last-level cache): three would not fit in half the available memory")
    for max_time in STREAM_TIMES:
        estimate = stream_seconds(cal, size, kernels, 5, threads, max_time)
        if estimate <= STREAM_SHARE * share:
            out.stream_bytes, out.stream_max_time, out.stream_estimate = size, max_time, estimate
            break
    else:
        needed = stream_seconds(cal, size, kernels, 5, threads, STREAM_TIMES[-1])
        if needed <= STREAM_SHARE_MOST * share:  # the headline before the sweep: its shortest run, the sweep cut
            out.stream_bytes, out.stream_max_time, out.stream_estimate = size, STREAM_TIMES[-1], needed
        else:
            out.skipped.append(f"STREAM: needs about {needed:.1f} s for {format_size(size)} arrays, "
                               f"{STREAM_SHARE_MOST * share:.1f} s of the budget is the most it may take")

    loaders = cpus - 1
    if loaders >= 1:
        lsize = max(8 * llc, 128 * 2**20)
        if room is not None:  # the chase and the generators' buffers, as large together
            lsize = min(lsize, room // 2 // 2**20 * 2**20)
        for min_time in LOADED_TIMES:
            estimate = loaded_seconds(cal, lsize, loaders, min_time, llc)
            if estimate <= LOADED_SHARE * share:
                out.loaded_bytes, out.loaded_min_time, out.loaded_estimate = lsize, min_time, estimate
                break
        else:
            out.skipped.append(f"loaded latency: needs about {loaded_seconds(cal, lsize, loaders, LOADED_TIMES[-1], llc):.1f} s "
                               f"over {format_size(lsize)}, {LOADED_SHARE * share:.1f} s of the budget is its share")

    out.latency_budget = max(0.0, share - out.stream_estimate - out.loaded_estimate)
    wanted = latency_sizes(llc)
    if room is not None:
        wanted = [s for s in wanted if s <= room]
    best = None
    for min_time, max_time in CHASE_TIMINGS:
        for thin in (False, True):
            sizes = [s for s in wanted if not thin or s > llc or s & (s - 1) == 0]
            taken, spent = [], 0.0
            for s in sizes:
                cost = chase_setup_seconds(cal, s, llc) + chase_timed_seconds(min_time, max_time)
                if taken and spent + cost > out.latency_budget:
                    break
                taken.append(s)
                spent += cost
            score = (max(taken), not thin, max_time)
            if best is None or score > best[0]:
                best = (score, taken, spent, min_time, max_time)
    _, taken, spent, out.latency_min_time, out.latency_max_time = best
    out.latency_sizes, out.latency_estimate = taken, spent
    thinned = [s for s in latency_sizes(llc) if s < max(taken) and s not in taken]
    beyond = [s for s in latency_sizes(llc) if s > max(taken)]
    if thinned:
        out.skipped.append(f"latency: {len(thinned)} working sets below {format_size(max(taken))} left out (one a "
                           f"doubling kept below the last-level cache, {format_size(llc)}): the sweep's "
                           f"{out.latency_budget:.1f} s reaches further so")
    if beyond:
        out.skipped.append(f"latency: {len(beyond)} working sets past {format_size(max(taken))} left out "
                           f"({_sizes_text(beyond)}): the sweep's {out.latency_budget:.1f} s holds {len(taken)} up to "
                           f"{format_size(max(taken))} ({max(taken) / llc:.2g} x the last-level cache)")
    return out


def _sizes_text(sizes: list[int]) -> str:
    if len(sizes) <= 4:
        return ", ".join(format_size(s) for s in sizes)
    return f"{format_size(sizes[0])}, {format_size(sizes[1])} … {format_size(sizes[-1])}"

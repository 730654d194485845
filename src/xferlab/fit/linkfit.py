"""Fit transfer-time models to a measured size sweep and choose the one the data support.

Seed 000's Figure 4 sets measured transfer times beside the model's; this closes that loop by
calibrating models on the measurements. The candidates, simplest first:

* ``plain``: t = t_s + n / b (seed 000's t = n / b_n + t_s with a constant b);
* ``packet``: t = t_s + ceil(n / P) * o + n / b, a fixed cost o per packet or DMA descriptor of P
  bytes (LogGP's per-message overhead paid per packet, as pcie-model pays a header per TLP), P
  chosen from the powers of two 64 B … 64 KiB (PCIe payloads, pages, descriptors);
* ``piecewise-1`` and ``piecewise-2``: t = t_s + the bytes of each segment over that segment's rate,
  with 1 or 2 breakpoints searched over the measured sizes (at most 32 of them, log-spaced): the
  rate changes where the data stop fitting in a cache (PLogP's size-dependent gap).

Each is a linear model with non-negative coefficients once P or the breakpoints are fixed. It is
fitted to the per-size medians (each size counts once, however many samples it has; the median
already discards preempted iterations) by robust relative least squares: soft-L1 loss (scale 5 %) on
(t_model - t) / t, so that a 1 µs copy and a 100 ms copy weigh alike, solved by iteratively
reweighted non-negative least squares (Holland and Welsch, 1977; scipy.optimize.nnls). P and the
breakpoints are chosen by the least squared relative error, every candidate at once.

Quality is stated, not assumed, on the per-size medians: R² of log times, the median and worst
relative error over the sizes, 95 % bootstrap intervals of the parameters (200 resamples of the
points within each size, P and breakpoints held at the chosen values), and the held-out error: the
mean relative error at each size when that size is left out and the whole fit, P or breakpoint
search included, is redone without it (the mean, not the median: a model that misses only the few
largest sizes must show it). The model kept is the simplest whose held-out error is within 1.5
points of the best candidate's, so a richer model is kept only when it beats the plain one clearly.
A fit whose held-out error exceeds 10 % or whose worst error exceeds 25 % is marked poor.

**Why a fit is poor.** A poor fit names its cause, ``drift``, ``noise`` or ``model``; the last two by
setting the held-out error at each size beside that size's measurement noise: the relative half-width of the 95 %
distribution-free interval of its median (:func:`xferlab.stats.median_interval`; the CoV where a size
has too few samples for one). At the sizes where the held-out error is largest (the 3 largest), if
it is within :data:`NOISE_FACTOR` x the noise everywhere there, the measurements cannot say more than
the model does: the cause is ``noise`` (repeat with ``--precision``). Otherwise it is ``model``: the
model misses the sizes whose error exceeds both 2 x their noise and 10 %, and they are named. Before
either, ``drift``: where a larger size's median is below a smaller size's by more than both their
intervals, the times fall with size, which no transfer-time model (non-decreasing in n) can follow:
the machine's speed changed between the points (on a shared VM, other tenants), however precise each
point is; the inversions are named (re-measure on a quieter machine).

**What cannot be fitted.** Fewer distinct sizes than parameters + 1, a non-finite or non-positive time
or size, and times that do not grow with size (the plain model's fitted cost per byte is 0: an
infinite bandwidth, as 1 B … 64 B copies that all take the launch latency give) raise
:class:`~xferlab.errors.BadValue` with the reason; a richer candidate with a zero-cost segment is
not kept (the next candidate is).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BadValue
from ..stats import median_interval, relative_half_width
from ..units import format_size, format_time

POOR_CV = 0.10
POOR_WORST = 0.25
BOOTSTRAP = 200
F_SCALE = 0.05  # soft-L1 scale: relative residuals beyond 5 % weigh less than squared
IRLS_ITERATIONS = 30
TOLERANCE = 0.015  # held-out error (points) within which the simpler candidate is kept
PACKETS = tuple(2**k for k in range(6, 17))  # 64 B … 64 KiB
NOISE_FACTOR = 2.0  # a poor fit's held-out error within this many times the noise: the cause is noise
DRIFT_DROP = 0.05  # a median this far below a smaller size's (beyond both intervals): the cause is drift
WORST_SIZES = 3  # the sizes of largest held-out error that decide the cause
MAX_BREAKPOINTS = 32  # breakpoint candidates: at most this many measured sizes, log-spaced
#: Candidates, simplest first, and their parameter counts (P and each breakpoint count as one).
PARAMETERS = {"plain": 2, "packet": 4, "piecewise-1": 4, "piecewise-2": 6}
FAMILIES = {"auto": tuple(PARAMETERS), "plain": ("plain",), "packet": ("packet",),
            "piecewise": ("piecewise-1", "piecewise-2")}
MODELS = tuple(FAMILIES)
WHAT = {"plain": "latency + bandwidth", "packet": "packet-overhead", "piecewise-1": "piecewise",
        "piecewise-2": "piecewise"}

Shape = tuple  # (packet size or None, breakpoints)


@dataclass
class LinkFit:
    """A fitted model: t = latency + sum over segments of bytes / bandwidth (+ ceil(n / packet) * overhead)."""

    model: str  # plain, packet or piecewise
    latency_seconds: float
    bandwidths_bytes_per_second: tuple[float, ...]
    breakpoints_bytes: tuple[int, ...]
    packet_bytes: int | None
    packet_overhead_seconds: float
    latency_ci: tuple[float, float]
    bandwidths_ci: tuple[tuple[float, float], ...]
    packet_overhead_ci: tuple[float, float] | None
    r2_log: float
    median_relative_error: float
    worst_relative_error: float
    cv_relative_error: float
    points: int
    sizes: int
    resamples: int
    candidates: dict[str, float] = field(default_factory=dict)  # held-out error of each candidate tried
    notes: list[str] = field(default_factory=list)
    size_bytes: tuple[float, ...] = ()  # the distinct sizes, ascending
    held_out_errors: tuple[float, ...] = ()  # relative held-out error at each size (the kept model's)
    noise: tuple[float, ...] = ()  # relative noise of each size's median (CI half-width, else CoV; nan: unknown)
    poor_cause: str | None = None  # poor fits: "drift", "noise" or "model"; None for a good fit
    missed_sizes_bytes: tuple[float, ...] = ()  # poor_cause "model": the sizes the model misses

    @property
    def bandwidth_bytes_per_second(self) -> float:
        """The rate of the last segment: that of large transfers."""
        return self.bandwidths_bytes_per_second[-1]

    @property
    def bandwidth_ci(self) -> tuple[float, float]:
        return self.bandwidths_ci[-1]

    @property
    def poor(self) -> bool:
        return self.cv_relative_error > POOR_CV or self.worst_relative_error > POOR_WORST

    def link_fields(self) -> dict:
        """The fields of the Link this fit stands for (``simple`` for the plain model, else ``piecewise``)."""
        if self.model == "plain":
            return {"kind": "simple", "bandwidth": self.bandwidth_bytes_per_second, "latency": self.latency_seconds}
        fields = {"kind": "piecewise", "latency": self.latency_seconds, "breakpoints": list(self.breakpoints_bytes),
                  "bandwidths": list(self.bandwidths_bytes_per_second)}
        if self.packet_bytes is not None:
            fields.update(packet=self.packet_bytes, packet_overhead=self.packet_overhead_seconds)
        return fields

    def spec(self) -> str:
        """A LINK string that resolves to this fit's link (lists joined by ';')."""
        fields = self.link_fields()
        kind = fields.pop("kind")
        text = ",".join(f"{k}={';'.join(map(repr, v)) if isinstance(v, list) else repr(v)}" for k, v in fields.items())
        return f"{kind}:{text}"

    def predict(self, n) -> np.ndarray:
        from ..links.piecewise import PiecewiseLink

        shape = PiecewiseLink.model_construct(breakpoints=list(self.breakpoints_bytes), packet=self.packet_bytes,
                                              bandwidths=list(self.bandwidths_bytes_per_second),
                                              packet_overhead=self.packet_overhead_seconds)
        return self.latency_seconds + shape.transfer_seconds(n)


def _design(n: np.ndarray, shape: Shape) -> np.ndarray:
    """Columns whose non-negative coefficients are t_s, (o,) and the seconds per byte of each segment."""
    packet, breakpoints = shape
    columns = [np.ones_like(n)] + ([np.ceil(n / packet)] if packet else [])
    edges = (0.0, *breakpoints, np.inf)
    columns += [np.clip(n - low, 0.0, high - low) for low, high in zip(edges[:-1], edges[1:])]
    return np.stack(columns, axis=1)


def _solve(x: np.ndarray, m: np.ndarray, weights: np.ndarray | None = None,
           robust: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients p >= 0 minimizing sum soft_l1(((x p) - m) / m), by iteratively reweighted
    scipy.optimize.nnls starting from ``weights`` (one unweighted squared-error step if not robust);
    returns p and the final weights."""
    from scipy.optimize import nnls  # here, not at the top: scipy costs every CLI command 0.4 s to import

    a = x / m[:, None]
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    a = a / scale
    weights = np.ones(len(m)) if weights is None else weights
    p = np.zeros(a.shape[1])
    for _ in range(IRLS_ITERATIONS if robust else 1):
        root = np.sqrt(weights)
        q = nnls(a * root[:, None], root)[0]
        weights = 1.0 / np.sqrt(1.0 + ((a @ q - 1.0) / F_SCALE) ** 2)
        done = np.max(np.abs(q - p)) <= 1e-7 * np.max(np.abs(q))
        p = q
        if done:
            break
    return p / scale, weights


def _shapes(family: str, n: np.ndarray) -> list[Shape]:
    """The packet sizes or breakpoints a family tries on the distinct sizes ``n`` (sorted)."""
    if family == "plain":
        return [(None, ())]
    if family == "packet":
        return [(packet, ()) for packet in PACKETS if np.sum(n <= packet) >= 2 and np.sum(n > packet) >= 2]
    inner = n[1:-1]  # two sizes or more in the first and the last segment
    if len(inner) > MAX_BREAKPOINTS:
        targets = np.geomspace(inner[0], inner[-1], MAX_BREAKPOINTS)
        inner = inner[np.unique(np.argmin(np.abs(np.log(inner[:, None] / targets)), axis=0))]
    if family == "piecewise-1":
        return [(None, (b,)) for b in inner]
    return [(None, (low, high)) for i, low in enumerate(inner) for high in inner[i + 2:]]


def _search(family: str, n: np.ndarray, m: np.ndarray) -> tuple[list[Shape], np.ndarray]:
    """The family's shapes, and for each size i left out (i < len(n)) and for none (i = len(n)) the
    index of the shape of least squared relative error with a positive cost in every term and two
    sizes or more in each segment (-1: none qualifies). All folds and shapes are solved at once by
    least squares on the normal equations; an intercept that comes out negative is pinned at 0."""
    shapes = _shapes(family, n)
    if not shapes:
        return shapes, np.full(len(n) + 1, -1)
    a = np.stack([_design(n, shape) for shape in shapes]) / m[None, :, None]  # (shape, size, term)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-300)
    k, rows = a.shape[2], a.transpose(1, 0, 2)
    gram = np.einsum("csk,csl->ckl", a, a)
    gram = np.concatenate([gram[None] - np.einsum("sck,scl->sckl", rows, rows), gram[None]])  # (fold, shape, k, k)
    rhs = np.concatenate([a.sum(axis=1)[None] - rows, a.sum(axis=1)[None]])
    ridge = 1e-12 * np.eye(k)
    p = np.linalg.solve(gram + ridge, rhs[..., None])[..., 0]
    pinned = np.linalg.solve(gram[..., 1:, 1:] + ridge[1:, 1:], rhs[..., 1:, None])[..., 0]
    p = np.where(p[..., :1] < 0, np.concatenate([np.zeros_like(p[..., :1]), pinned], axis=-1), p)
    error = len(n) - 1 - 2 * np.einsum("fck,fck->fc", p, rhs) + np.einsum("fck,fckl,fcl->fc", p, gram, p)
    error[-1] += 1  # no size left out
    ok = np.ones(error.shape, dtype=bool) if family == "plain" else np.all(p[..., 1:] > 0, axis=-1)
    for c, (packet, breakpoints) in enumerate(shapes):  # two training sizes or more in each segment
        spans = [(0, packet), (packet, np.inf)] if packet else list(zip((0.0, *breakpoints), (*breakpoints, np.inf)))
        for low, high in spans:
            inside = (n >= low) & (n <= high) if not packet else (n > low) & (n <= high)
            ok[:, c] &= inside.sum() - np.append(inside, False) >= 2
    best = np.where(ok, error, np.inf).argmin(axis=1)
    return shapes, np.where(ok.any(axis=1), best, -1)


def _fit_shape(shape: Shape, n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Robust coefficients of one shape; the squared-error ones if the robust fit frees a term."""
    x = _design(n, shape)
    p, _ = _solve(x, m)
    return p if shape == (None, ()) or np.all(p[1:] > 0) else _solve(x, m, robust=False)[0]


def _held_out(family: str, n: np.ndarray, m: np.ndarray) -> tuple[float, Shape | None, np.ndarray]:
    """Mean relative error at each size of a fit (search included) made without that size, the shape
    chosen on every size, and the error at each size (nan, None, nans when some fold has no shape
    that qualifies)."""
    shapes, best = _search(family, n, m)
    if np.any(best < 0):
        return float("nan"), None, np.full(len(n), np.nan)
    errors = []
    for i in range(len(n)):
        keep = np.arange(len(n)) != i
        p = _fit_shape(shapes[best[i]], n[keep], m[keep])
        errors.append(abs(float((_design(n[i:i + 1], shapes[best[i]]) @ p)[0]) - m[i]) / m[i])
    return float(np.mean(errors)), shapes[best[-1]], np.asarray(errors)


def _interval(values: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _rate_interval(seconds_per_byte: np.ndarray) -> tuple[float, float]:
    low, high = _interval(seconds_per_byte)
    return (1.0 / high if high > 0 else float("inf")), (1.0 / low if low > 0 else float("inf"))


def _check(n: np.ndarray, t: np.ndarray, families: tuple[str, ...]) -> np.ndarray:
    distinct = np.unique(n)
    need = PARAMETERS[families[0]] + 1
    if len(n) != len(t) or len(distinct) < need:
        what = "a latency + bandwidth" if families[0] == "plain" else f"a {WHAT[families[0]]}"
        raise BadValue(f"{what} fit needs measurements at {need} sizes or more ({need - 1} parameters and one to "
                       f"check them); got {len(distinct)} size{'s' * (len(distinct) != 1)}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(n))):
        raise BadValue("a fit needs finite sizes and times; got a non-finite one")
    if np.any(t <= 0) or np.any(n <= 0):
        raise BadValue("a fit needs positive sizes and times")
    return distinct


def fit(sizes, seconds, seed: int = 0) -> LinkFit:
    """Fit t = t_s + n / b to (sizes, seconds), several points per size allowed."""
    return select(sizes, seconds, "plain", seed)


def select(sizes, seconds, model: str = "auto", seed: int = 0) -> LinkFit:
    """Fit the candidates of ``model`` (auto, plain, packet or piecewise) and keep the simplest whose
    held-out error is within 1.5 points of the best; its quality and intervals come with it."""
    if model not in FAMILIES:
        raise BadValue(f"model '{model}' is not allowed; allowed: {', '.join(MODELS)}")
    n, t = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    families = FAMILIES[model]
    distinct = _check(n, t, families)
    groups = [t[n == s] for s in distinct]
    med = np.array([np.median(g) for g in groups])
    held = {f: _held_out(f, distinct, med) for f in families if len(distinct) > PARAMETERS[f]}
    candidates = {f: e for f, (e, _, _) in held.items()}
    tried = {f: e for f, e in candidates.items() if np.isfinite(e)}
    if not tried:
        what = (f"no packet size from {format_size(PACKETS[0])} to {format_size(PACKETS[-1])} has" if model == "packet"
                else "no breakpoint among the measured sizes has")
        raise BadValue(f"the {WHAT[families[0]]} model does not fit these {len(distinct)} sizes: {what} two sizes or "
                       "more on each side and a positive cost in every term, with each size left out in turn")
    # A candidate whose fit on every size has a segment of zero cost per byte (an infinite rate) is
    # not kept: the next simplest within the tolerance of the best remaining one is.
    usable = dict(tried)
    while True:
        if not usable:
            raise BadValue(f"the times do not grow with size from {format_size(distinct[0])} to "
                           f"{format_size(distinct[-1])} (per-size medians {format_time(float(med.min()))} to "
                           f"{format_time(float(med.max()))}): no bandwidth can be fitted (its cost per byte comes out "
                           "0); measure larger sizes")
        best = min(usable.values())
        chosen = next(f for f in families if f in usable and usable[f] <= best + TOLERANCE)
        shape = held[chosen][1]
        packet, breakpoints = shape
        p = _fit_shape(shape, distinct, med)
        # Zero, or a float rounding's worth (all times equal): under 1e-9 of the largest copy's time.
        if np.all((p[2:] if packet else p[1:]) * distinct[-1] > 1e-9 * med[-1]):
            break
        del usable[chosen]
    x = _design(distinct, shape)
    weights = _solve(x, med)[1]
    # Bootstrap: resample the points within each size, refit with the chosen P or breakpoints.
    rng = np.random.default_rng(seed)
    boot = np.empty((BOOTSTRAP, len(distinct)))
    for j, g in enumerate(groups):
        boot[:, j] = np.median(g[rng.integers(0, len(g), (BOOTSTRAP, len(g)))], axis=1)
    coefficients = np.array([_solve(x, row, weights)[0] for row in boot])
    rates = p[2:] if packet else p[1:]
    rate_columns = coefficients[:, 2:] if packet else coefficients[:, 1:]
    result = LinkFit(
        "plain" if chosen == "plain" else "packet" if chosen == "packet" else "piecewise", float(p[0]),
        tuple(float(1 / g) if g > 0 else float("inf") for g in rates), tuple(int(b) for b in breakpoints), packet,
        float(p[1]) if packet else 0.0, _interval(coefficients[:, 0]),
        tuple(_rate_interval(c) for c in rate_columns.T), _interval(coefficients[:, 1]) if packet else None,
        0.0, 0.0, 0.0, tried[chosen], len(n), len(distinct), BOOTSTRAP, candidates)
    relative = np.abs(result.predict(distinct) - med) / med
    log_t, log_m = np.log(med), np.log(result.predict(distinct))
    result.r2_log = float(1 - np.sum((log_t - log_m) ** 2) / max(np.sum((log_t - log_t.mean()) ** 2), 1e-300))
    result.median_relative_error, result.worst_relative_error = float(np.median(relative)), float(np.max(relative))
    result.size_bytes = tuple(float(v) for v in distinct)
    result.held_out_errors = tuple(float(v) for v in held[chosen][2])
    result.noise = tuple(_noise(g, m) for g, m in zip(groups, med))
    if result.poor:
        result.poor_cause, result.missed_sizes_bytes, why = diagnose(result.size_bytes, result.held_out_errors,
                                                                     result.noise, med)
        result.notes.append(f"poor fit: held-out error {result.cv_relative_error:.1%}, worst {result.worst_relative_error:.1%}; "
                            f"cause: {result.poor_cause}: {why}")
    if len(families) > 1:
        tried_text = ", ".join(f"{f} {e:.1%}" if np.isfinite(e) else f"{f} n/a" for f, e in candidates.items())
        dropped = [f for f in tried if f not in usable]
        result.notes.append(f"held-out error by model: {tried_text}; kept {chosen}, the simplest within "
                            f"{TOLERANCE * 100:.1f} points of the best"
                            + (f" ({', '.join(dropped)} left out: a segment fitted at zero cost per byte)" if dropped else ""))
    return result


def _noise(values: np.ndarray, centre: float) -> float:
    """A size's relative measurement noise: the half-width of its median's 95 % interval over the
    median, or its CoV when it has too few samples for an interval (nan with one sample)."""
    low, high = median_interval(sorted(float(v) for v in values))
    noise = relative_half_width(float(centre), low, high)
    if np.isfinite(noise):
        return float(noise)
    if len(values) > 1 and np.mean(values) > 0:
        return float(np.std(values, ddof=1) / np.mean(values))
    return float("nan")


def _pct(values) -> str:
    return ", ".join(f"{v:.1%}" if np.isfinite(v) else "?" for v in values)


def inversions(sizes, medians, noise) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j by size, where the larger size's median is below the smaller's by more than
    both their relative noises and by at least :data:`DRIFT_DROP`: the times fall with size beyond what
    the measurements can hide (small dips, such as an aligned size copied faster, are left alone)."""
    med = np.asarray(medians, dtype=float)
    noise = np.nan_to_num(np.asarray(noise, dtype=float), nan=0.0)
    floor = med * np.maximum(1 - noise, 0.0)  # each median's interval, low end
    found = []
    for j in range(1, len(med)):
        i = int(np.argmax(floor[:j]))
        if med[j] * (1 + noise[j]) < floor[i] and med[j] < (1 - DRIFT_DROP) * med[i]:
            found.append((i, j))
    return found


def diagnose(sizes, errors, noise, medians=None) -> tuple[str, tuple[float, ...], str]:
    """(cause, sizes concerned, why) of a poor fit from the held-out error, the relative noise and
    (optionally) the median at each size: "drift" when medians fall with size beyond their noise
    (:func:`inversions`; the sizes named are the later, faster ones); else "noise" if at the
    :data:`WORST_SIZES` sizes of largest error the error is within :data:`NOISE_FACTOR` x the noise;
    else "model" and the sizes it misses. An unknown noise (one sample) counts as none."""
    sizes, errors = np.asarray(sizes, dtype=float), np.asarray(errors, dtype=float)
    if medians is not None:
        falls = inversions(sizes, medians, noise)
        if falls:
            med = np.asarray(medians, dtype=float)
            named = ", ".join(f"{format_size(sizes[j])} ({format_time(med[j])}) below {format_size(sizes[i])} "
                              f"({format_time(med[i])})" for i, j in falls[:4])
            more = f" and {len(falls) - 4} more" if len(falls) > 4 else ""
            return "drift", tuple(sorted({float(sizes[j]) for _, j in falls})), (
                f"the medians fall with size beyond their intervals: {named}{more}; no transfer-time model "
                "can follow that: the machine's speed changed between points (other load, or the first points still "
                "warming up; re-measure on a quieter machine)")
    noise = np.nan_to_num(np.asarray(noise, dtype=float), nan=0.0)
    errors = np.nan_to_num(errors, nan=0.0)
    worst = np.argsort(-errors)[:WORST_SIZES]
    within = errors[worst] <= NOISE_FACTOR * noise[worst]
    where = ", ".join(format_size(s) for s in sizes[worst])
    if np.all(within):
        return "noise", (), (f"at {where} the held-out error ({_pct(errors[worst])}) is within {NOISE_FACTOR:g}x the "
                             f"noise of the medians there (± {_pct(noise[worst])}): repeat with --precision")
    missed = (errors > NOISE_FACTOR * noise) & (errors > POOR_CV)
    if not missed.any():
        missed[worst[~within]] = True
    order = [i for i in np.argsort(-errors) if missed[i]]
    named = ", ".join(f"{format_size(sizes[i])} ({errors[i]:.0%} vs ± {noise[i]:.1%})" for i in order[:6])
    more = f" and {len(order) - 6} more" if len(order) > 6 else ""
    return "model", tuple(float(sizes[i]) for i in sorted(order)), (
        f"the model misses {named}{more}, beyond {NOISE_FACTOR:g}x the noise of the medians there")

"""Fit the latency + bandwidth model t(n) = t_s + n / b to a measured size sweep.

Seed 000's Figure 4 sets measured transfer times beside the model's; this closes that loop by
calibrating the model on the measurements. The fit is a robust, relative least-squares problem
(scipy.optimize.least_squares, soft-L1 loss on (t_model - t) / t), so that a 1 µs copy and a 100 ms
copy weigh alike and a few outliers (a preempted iteration) do not drag it. Its quality is stated,
not assumed: R² of log times, the median and worst relative error over the sizes, 95 % bootstrap
intervals of t_s and b (resampling the measured points), and the median relative error of
leave-one-size-out cross-validation. A fit whose cross-validated error exceeds 10 % or whose worst
error exceeds 25 % is marked poor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from ..errors import BadValue

POOR_CV = 0.10
POOR_WORST = 0.25
BOOTSTRAP = 200


@dataclass
class LinkFit:
    latency_seconds: float
    bandwidth_bytes_per_second: float
    latency_ci: tuple[float, float]
    bandwidth_ci: tuple[float, float]
    r2_log: float
    median_relative_error: float
    worst_relative_error: float
    cv_relative_error: float
    points: int
    sizes: int
    notes: list[str] = field(default_factory=list)

    @property
    def poor(self) -> bool:
        return self.cv_relative_error > POOR_CV or self.worst_relative_error > POOR_WORST

    def predict(self, n) -> np.ndarray:
        return self.latency_seconds + np.asarray(n, dtype=float) / self.bandwidth_bytes_per_second


def _solve(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """(t_s, 1/b) minimizing the robust relative error; both kept non-negative."""
    small, large = np.argmin(n), np.argmax(n)
    inv_b0 = max((t[large] - t[small]) / max(n[large] - n[small], 1.0), 1e-15)
    x0 = [max(float(np.min(t)), 1e-12), inv_b0]
    scale = np.array([max(x0[0], 1e-9), inv_b0])

    def residual(p: np.ndarray) -> np.ndarray:
        ts, g = p * scale
        return (ts + n * g - t) / t

    sol = least_squares(residual, np.array(x0) / scale, bounds=([0.0, 1e-12], [np.inf, np.inf]), loss="soft_l1",
                        f_scale=0.05)
    ts, g = sol.x * scale
    return float(ts), float(g)


def fit(sizes, seconds, seed: int = 0) -> LinkFit:
    """Fit t = t_s + n / b to (sizes, seconds): every measured point, several per size allowed."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    distinct = np.unique(n)
    if len(n) != len(t) or len(distinct) < 3:
        raise BadValue(f"a latency + bandwidth fit needs measurements at 3 sizes or more (2 parameters and one to "
                       f"check them); got {len(distinct)} size{'s' * (len(distinct) != 1)}")
    if np.any(t <= 0) or np.any(n <= 0):
        raise BadValue("a fit needs positive sizes and times")
    ts, g = _solve(n, t)
    model = ts + n * g
    # Quality on the per-size medians (what a user reads off a sweep).
    med = np.array([np.median(t[n == s]) for s in distinct])
    rel_med = np.abs(ts + distinct * g - med) / med
    log_t, log_m = np.log(t), np.log(model)
    r2 = 1 - np.sum((log_t - log_m) ** 2) / max(np.sum((log_t - log_t.mean()) ** 2), 1e-300)
    # Leave one size out.
    cv = []
    for s, m in zip(distinct, med):
        keep = n != s
        if len(np.unique(n[keep])) >= 2:
            a, b = _solve(n[keep], t[keep])
            cv.append(abs(a + s * b - m) / m)
    # Bootstrap over points.
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(BOOTSTRAP):
        pick = rng.integers(0, len(n), len(n))
        if len(np.unique(n[pick])) >= 2:
            boot.append(_solve(n[pick], t[pick]))
    b_ts = np.array([x[0] for x in boot])
    b_bw = 1 / np.array([x[1] for x in boot])
    result = LinkFit(ts, 1 / g, tuple(np.percentile(b_ts, [2.5, 97.5]).tolist()),
                     tuple(np.percentile(b_bw, [2.5, 97.5]).tolist()), float(r2), float(np.median(rel_med)),
                     float(np.max(rel_med)), float(np.median(cv)) if cv else float("nan"), len(n), len(distinct))
    if result.poor:
        result.notes.append(f"poor fit: cross-validated error {result.cv_relative_error:.1%}, worst "
                            f"{result.worst_relative_error:.1%}; t = t_s + n/b does not describe these measurements well")
    return result

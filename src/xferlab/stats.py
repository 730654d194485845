"""The statistics every figure carries: count, min, median, mean, max, coefficient of variation, and
the 95 % distribution-free confidence interval of the median.

A leaf module (no xferlab imports), so that the store, the measurements and the report share it.

The interval of the median comes from order statistics: for ``n`` sorted values ``x(1) <= … <= x(n)``
the interval ``[x(k), x(n-k+1)]`` holds the true median with probability ``1 - 2 P(B <= k-1)``,
``B ~ binomial(n, 1/2)``, whatever the distribution. ``k`` is the largest rank whose coverage still
reaches the level; below 6 values no rank reaches 95 % (``2 / 2**5`` > 5 %) and the interval is
(nan, nan).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

__all__ = ["interval_rank", "median_interval", "relative_half_width", "summarize"]


def interval_rank(n: int, level: float = 0.95) -> int:
    """The rank ``k`` (1-based) of the lower end of the median's interval among ``n`` sorted values,
    or 0 when ``n`` values cannot reach ``level``. The upper end has rank ``n - k + 1``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level {level!r} must lie strictly between 0 and 1")
    if n < 1:
        return 0
    from scipy.stats import binom

    tail = (1.0 - level) / 2.0
    j = int(binom.ppf(tail, n, 0.5))  # smallest j with P(B <= j) >= tail
    if binom.cdf(j, n, 0.5) > tail * (1 + 1e-12):
        j -= 1  # P(B <= j) must stay within the tail
    return max(0, min(j + 1, (n + 1) // 2))


def median_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float]:
    """The distribution-free ``level`` confidence interval of the median of ``values`` as (low, high);
    (nan, nan) when there are too few values to reach the level (fewer than 6 at 95 %).

    ``values`` already sorted (a list or tuple) are used as they are; anything else is sorted."""
    data: Sequence[float]
    if isinstance(values, (list, tuple)) and all(values[i] <= values[i + 1] for i in range(len(values) - 1)):
        data = values
    else:
        data = sorted(float(v) for v in values)
    k = interval_rank(len(data), level)
    if k == 0:
        return math.nan, math.nan
    return float(data[k - 1]), float(data[len(data) - k])


def relative_half_width(median: float | None, low: float | None, high: float | None) -> float:
    """Half the interval's width over |median|, as a fraction (0.031 is said "± 3.1 %"); nan when any of
    the three is missing or not finite, or the median is 0."""
    if median is None or low is None or high is None:
        return math.nan
    if not all(math.isfinite(v) for v in (median, low, high)) or median == 0:
        return math.nan
    return (high - low) / 2.0 / abs(median)


def summarize(values: Iterable[float]) -> dict[str, float | int]:
    """Summary of ``values`` (warm-ups already removed): count, min, median, mean, max, CoV (sample
    standard deviation / mean) and the median's 95 % interval (``median_ci_low``, ``median_ci_high``)."""
    data = sorted(float(v) for v in values)
    n = len(data)
    if n == 0:
        return {"count": 0, "min": math.nan, "median": math.nan, "mean": math.nan, "max": math.nan, "cov": math.nan,
                "median_ci_low": math.nan, "median_ci_high": math.nan}
    mean = sum(data) / n
    mid = n // 2
    median = data[mid] if n % 2 else (data[mid - 1] + data[mid]) / 2
    var = sum((x - mean) ** 2 for x in data) / (n - 1) if n > 1 else 0.0
    low, high = median_interval(data)
    return {"count": n, "min": data[0], "median": median, "mean": mean, "max": data[-1],
            "cov": math.sqrt(var) / mean if mean else math.nan, "median_ci_low": low, "median_ci_high": high}

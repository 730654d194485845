"""The statistics every figure carries: min, median, mean, max, coefficient of variation, count."""

from __future__ import annotations

import math
from typing import Iterable


def summarize(values: Iterable[float]) -> dict[str, float | int]:
    """Summary of ``values`` (warm-ups already removed). CoV uses the sample standard deviation."""
    data = sorted(float(v) for v in values)
    n = len(data)
    if n == 0:
        return {"count": 0, "min": math.nan, "median": math.nan, "mean": math.nan, "max": math.nan, "cov": math.nan}
    mean = sum(data) / n
    mid = n // 2
    median = data[mid] if n % 2 else (data[mid - 1] + data[mid]) / 2
    var = sum((x - mean) ** 2 for x in data) / (n - 1) if n > 1 else 0.0
    return {"count": n, "min": data[0], "median": median, "mean": mean, "max": data[-1],
            "cov": math.sqrt(var) / mean if mean else math.nan}

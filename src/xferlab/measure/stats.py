"""The statistics every figure carries; they live in :mod:`xferlab.stats` (a leaf module the store
shares) and are re-exported here for the measurement modules."""

from __future__ import annotations

from ..stats import interval_rank, median_interval, relative_half_width, summarize

__all__ = ["interval_rank", "median_interval", "relative_half_width", "summarize"]

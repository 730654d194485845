"""A measured matrix as a heat map: `measure memory --matrix`'s latency or bandwidth grid (rows: CPU nodes,
columns: memory nodes, as Intel MLC prints them) and `measure device --matrix`'s copies per direction (rows:
sources, columns: destinations, as nvbandwidth prints them). A cell not measured (null, N/A) is left empty."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence

from . import plot_heatmap

#: How a matrix's unit is drawn: the scale's label and the factor from the stored unit.
SCALES = {"seconds": ("latency (ns)", 1e9), "bytes_per_second": ("bandwidth (GB/s)", 1e-9)}


def plot_matrix(values: Sequence[Sequence[Optional[Any]]], rows: Sequence[str], columns: Sequence[str], unit: str,
                ylabel: str, xlabel: str, title: str, path: Path) -> Path:
    """``values`` (in ``unit``: seconds or bytes_per_second; None, text such as "N/A" or NaN: not measured) as a
    heat map, each cell labelled in ns or GB/s."""
    scale, factor = SCALES[unit]
    grid = [[float(v) * factor if isinstance(v, (int, float)) and math.isfinite(v) else math.nan for v in row]
            for row in values]
    return plot_heatmap(grid, list(rows), list(columns), ylabel, xlabel, scale, title, path,
                        label=lambda v: f"{v:.3g}")

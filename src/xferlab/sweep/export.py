"""What a sweep writes besides the store: every point to a Parquet file (:func:`write_parquet`) and
the best speedup over two axes as a heat map (:func:`write_heatmap`), each whole or not at all."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ..outputs import write_atomic
from ..units import format_size
from .summary import heatmap_grid


def write_parquet(rows: list[dict], path: Path) -> Path:
    """Every point to a Parquet file, through DuckDB (read_json, write_parquet), whole or not at all."""
    import duckdb

    with tempfile.TemporaryDirectory() as folder:
        lines = Path(folder) / "points.json"
        lines.write_text("".join(json.dumps(r) + "\n" for r in rows))

        def write(temporary: Path) -> None:  # DuckDB's relation API: no path is pasted into SQL
            duckdb.connect().read_json(str(lines)).write_parquet(str(temporary))

        return write_atomic(path, write, "--parquet file")


def write_heatmap(rows: list[dict], path: Path, y: str, x: str, baseline: str) -> Path:
    """The best speedup at each pair of ``y`` and ``x`` values (:func:`~xferlab.sweep.summary.heatmap_grid`),
    as a heat map."""
    from ..plots import plot_heatmap

    ys, xs, grid, over = heatmap_grid(rows, y, x)

    def label(axis: str, value) -> str:
        return format_size(value) if axis == "chunk" else (value or "its own links" if axis == "link" else str(value))

    return plot_heatmap(grid, [label(y, v) for v in ys], [label(x, v) for v in xs], y, x, f"speedup over {baseline}",
                        f"speedup by {y} and {x}" + (f" (best over {', '.join(over)})" if over else ""), path)

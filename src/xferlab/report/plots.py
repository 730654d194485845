"""Plots in the style of seed 000's figures: transfer time (Figure 2), relative time (Figure 3),
total time by chunk size (Figure 5). Written with matplotlib's Agg backend (no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import BadFile
from ..links.analysis import chunked_time, ratio
from ..links.base import Link, Op
from ..units import format_size

FORMATS = (".png", ".svg", ".pdf")


Curve = tuple[str, np.ndarray, np.ndarray]  # label, sizes, values


def _plot(curves: Sequence[Curve], ylabel: str, title: str, path: Path, unity: bool = False,
          xlabel: str = "transfer size") -> Path:
    """Log-log lines against a transfer-size axis, written to ``path``."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise BadFile(f"plot file '{path}' must end in {', '.join(FORMATS)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    try:
        for label, x, y in curves:
            ax.plot(x, y, marker=".", label=label)
        if unity:
            ax.axhline(1.0, color="grey", lw=0.8)
        sizes = np.concatenate([x for _, x, _ in curves])
        ax.set_xscale("log", base=2)
        ticks = [s for s in 2.0 ** np.arange(0, 61, 4) if sizes.min() <= s <= sizes.max()]
        if ticks:
            ax.set_xticks(ticks, [format_size(t) for t in ticks], rotation=30, ha="right")
        ax.set_xlabel(xlabel)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path)
    except OSError as error:
        raise BadFile(f"plot file '{path}' cannot be written: {error.strerror or error}") from None
    finally:
        plt.close(fig)
    return path


def plot_times(links: Sequence[Link], sizes: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """Transfer time against size, log-log, one line per link (seed 000, Figure 2)."""
    curves = [(link.label, sizes, np.asarray(link.time(sizes, op)) * 1e6) for link in links]
    return _plot(curves, "transfer time (µs)", title or f"Single transfer time ({op})", path)


def plot_ratio(base: Link, others: Sequence[Link], sizes: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """t_base / t_other against size: how many times faster each other link is (Figure 3)."""
    curves = [(f"{base.label} / {other.label}", sizes, ratio(base, other, sizes, op)) for other in others]
    return _plot(curves, f"relative transfer time (t[{base.label}] / t)", title or f"Relative transfer time ({op})",
                 path, unity=True)


def plot_chunks(links: Sequence[Link], total: float, chunks: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """Total time to move ``total`` bytes against chunk size (Figure 5)."""
    curves = [(link.label, chunks, chunked_time(link, total, chunks, op)[1]) for link in links]
    return _plot(curves, "total transfer time (s)", title or f"Moving {format_size(total)} in chunks ({op})", path,
                 xlabel="chunk size")

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


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    return plt, fig, ax


def _size_axis(ax, sizes: np.ndarray) -> None:
    ax.set_xscale("log", base=2)
    ticks = [s for s in 2.0 ** np.arange(0, 61, 4) if sizes.min() <= s <= sizes.max()]
    if ticks:
        ax.set_xticks(ticks, [format_size(t) for t in ticks], rotation=30, ha="right")
    ax.set_xlabel("transfer size")
    ax.grid(True, which="major", alpha=0.3)


def _save(plt, fig, path: Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise BadFile(f"plot file '{path}' must end in {', '.join(FORMATS)}")
    try:
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
    plt, fig, ax = _figure()
    for link in links:
        ax.plot(sizes, np.asarray(link.time(sizes, op)) * 1e6, marker=".", label=link.label)
    _size_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set_ylabel("transfer time (µs)")
    ax.set_title(title or f"Single transfer time ({op})")
    ax.legend()
    return _save(plt, fig, path)


def plot_ratio(base: Link, others: Sequence[Link], sizes: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """t_base / t_other against size: how many times faster each other link is (Figure 3)."""
    plt, fig, ax = _figure()
    for other in others:
        ax.plot(sizes, ratio(base, other, sizes, op), marker=".", label=f"{base.label} / {other.label}")
    ax.axhline(1.0, color="grey", lw=0.8)
    _size_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set_ylabel(f"relative transfer time (t[{base.label}] / t)")
    ax.set_title(title or f"Relative transfer time ({op})")
    ax.legend()
    return _save(plt, fig, path)


def plot_chunks(links: Sequence[Link], total: float, chunks: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """Total time to move ``total`` bytes against chunk size (Figure 5)."""
    plt, fig, ax = _figure()
    for link in links:
        _, seconds = chunked_time(link, total, chunks, op)
        ax.plot(chunks, seconds, marker=".", label=link.label)
    _size_axis(ax, chunks)
    ax.set_yscale("log")
    ax.set_ylabel("total transfer time (s)")
    ax.set_title(title or f"Moving {format_size(total, 10)} in chunks ({op})")
    ax.legend()
    return _save(plt, fig, path)

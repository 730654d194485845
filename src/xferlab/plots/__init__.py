"""Plots in the style of seed 000's figures: transfer time (Figure 2), relative time (Figure 3),
total time by chunk size (Figure 5); a simulated timeline, a fit against its link, a sweep's heatmap; and the
shared pieces (axes, atomic writing, the size axis). Written with matplotlib's Agg backend (no display
needed). Plots of measurements are in :mod:`xferlab.plots.measured`."""

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


def _axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    return plt, fig, ax


def check_plot_path(path: Path, option: str = "plot file") -> Path:
    """Refuse, before any work, a plot file of an unknown format or in a place where it cannot be
    written (see :func:`xferlab.outputs.check_file`)."""
    from ..outputs import check_file

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise BadFile(f"{option} '{path}' must end in {', '.join(FORMATS)}")
    return check_file(path, option, f"plot{path.suffix.lower()}")


def _write(plt, fig, path: Path) -> Path:
    """Save ``fig`` to ``path`` whole or not at all: through a temporary file beside it, renamed
    when complete; a full disk leaves nothing behind and is one line naming the path."""
    from ..outputs import write_atomic

    path = Path(path)
    try:
        if path.suffix.lower() not in FORMATS:
            raise BadFile(f"plot file '{path}' must end in {', '.join(FORMATS)}")
        fig.tight_layout()
        write_atomic(path, lambda temporary: fig.savefig(temporary, format=path.suffix.lower()[1:]), "plot file")
    finally:
        plt.close(fig)
    return path


def _size_axis(ax, sizes: np.ndarray, label: str) -> None:
    """A log2 axis of byte sizes, labelled every 16x (4 KiB, 64 KiB, 1 MiB …)."""
    ax.set_xscale("log", base=2)
    ticks = [s for s in 2.0 ** np.arange(0, 61, 4) if sizes.min() <= s <= sizes.max()]
    if ticks:
        ax.set_xticks(ticks, [format_size(t) for t in ticks], rotation=30, ha="right")
    ax.set_xlabel(label)


LINESTYLES = ("-", "--", ":", "-.")


def plot_lines(curves: Sequence[Curve], ylabel: str, title: str, path: Path, unity: bool = False,
          xlabel: str = "transfer size", groups: Sequence[tuple[int, int]] | None = None) -> Path:
    """Log-log lines against a transfer-size axis, written to ``path``. ``groups`` gives each curve's
    (colour, line style) index (e.g. direction and host memory kind), else curves past the tenth repeat
    the colours with another line style; past six curves the legend goes beside the plot."""
    if Path(path).suffix.lower() not in FORMATS:
        raise BadFile(f"plot file '{path}' must end in {', '.join(FORMATS)}")
    plt, fig, ax = _axes()
    for i, (label, x, y) in enumerate(curves):
        colour, style = groups[i] if groups else (i % 10, i // 10)
        ax.plot(x, y, marker=".", label=label, color=f"C{colour % 10}", linestyle=LINESTYLES[style % len(LINESTYLES)])
    if unity:
        ax.axhline(1.0, color="grey", lw=0.8)
    _size_axis(ax, np.concatenate([x for _, x, _ in curves]), xlabel)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if len(curves) > 6:
        fig.set_size_inches(9.5, 4.8)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        ax.legend()
    return _write(plt, fig, path)


def plot_times(links: Sequence[Link], sizes: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """Transfer time against size, log-log, one line per link (seed 000, Figure 2)."""
    curves = [(link.label, sizes, np.asarray(link.time(sizes, op)) * 1e6) for link in links]
    return plot_lines(curves, "transfer time (µs)", title or f"Single transfer time ({op})", path)


def plot_ratio(base: Link, others: Sequence[Link], sizes: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """t_base / t_other against size: how many times faster each other link is (Figure 3)."""
    curves = [(f"{base.label} / {other.label}", sizes, ratio(base, other, sizes, op)) for other in others]
    return plot_lines(curves, f"relative transfer time (t[{base.label}] / t)", title or f"Relative transfer time ({op})",
                 path, unity=True)


def plot_chunks(links: Sequence[Link], total: float, chunks: np.ndarray, op: Op, path: Path, title: str = "") -> Path:
    """Total time to move ``total`` bytes against chunk size (Figure 5)."""
    curves = [(link.label, chunks, chunked_time(link, total, chunks, op)[1]) for link in links]
    return plot_lines(curves, "total transfer time (s)", title or f"Moving {format_size(total)} in chunks ({op})", path,
                 xlabel="chunk size")


def plot_gantt(timeline, path: Path, title: str) -> Path:
    """One row per resource, one bar per op (seed 000, Figure 6 style)."""
    plt, fig, ax = _axes()
    names = [r for r, u in timeline.resources.items() if u.ops]
    colors = {"task": "#4c72b0", "transfer": "#dd8452"}
    for row, name in enumerate(names):
        kind = "transfer" if "->" in name else "task"  # link directions are named a->b
        spans = [(s.start, s.end - s.start) for s in timeline.spans.values() if s.resource == name]
        for start, width in spans:
            ax.barh(row, width, left=start, height=0.6, color=colors[kind], edgecolor="black", linewidth=0.2)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(title)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=c, label=k) for k, c in colors.items()], loc="lower right")
    return _write(plt, fig, path)


def plot_fit(sizes, seconds, fit, against: Link, path: Path, title: str, op: Op = "write", ways: int = 1) -> Path:
    """Seed 000's Figure 4 for one sweep: measured transfer times (per-size median, interquartile bars,
    min–max whiskers) beside the fitted model (a :class:`~xferlab.fit.linkfit.LinkFit`) and a preset's.
    The preset moves ``n / ways`` bytes each way (``ways=2`` for copies in both directions at once)."""
    if Path(path).suffix.lower() not in FORMATS:
        raise BadFile(f"plot file '{path}' must end in {', '.join(FORMATS)}")
    n, t = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float) * 1e6
    distinct = np.unique(n)
    low, q1, med, q3, high = np.array([np.percentile(t[n == s], [0, 25, 50, 75, 100]) for s in distinct]).T
    grid = np.geomspace(distinct.min(), distinct.max(), 256)
    plt, fig, ax = _axes()
    ax.errorbar(distinct, med, yerr=[med - low, high - med], fmt="none", ecolor="lightgrey", elinewidth=1, capsize=2,
                label="measured min–max")
    ax.errorbar(distinct, med, yerr=[med - q1, q3 - med], fmt="o", color="black", markersize=4, elinewidth=2,
                label="measured median, interquartile range")
    ax.plot(grid, np.asarray(fit.predict(grid)) * 1e6, color="tab:blue", label=f"fitted {fit.model} model")
    for breakpoint in getattr(fit, "breakpoints_bytes", ()):
        ax.axvline(breakpoint, color="tab:blue", lw=0.8, ls=":")
    ax.plot(grid, np.asarray(against.time(grid / ways, op)) * 1e6, color="tab:orange", ls="--",
            label=f"{against.label} model ({op})")
    _size_axis(ax, distinct, "transfer size")
    ax.set_yscale("log")
    ax.set_ylabel("transfer time (µs)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return _write(plt, fig, path)


def plot_heatmap(values: Sequence[Sequence[float]], rows: Sequence[str], columns: Sequence[str], ylabel: str,
                 xlabel: str, scale: str, title: str, path: Path, label=lambda v: f"{v:.2f}") -> Path:
    """A heat map of ``values`` (NaN: an empty cell), each cell labelled with ``label(value)``; ``rows`` and
    ``columns`` label the axes, ``scale`` the colour bar (`xferlab sweep run --heatmap FILE`, the report's
    matrices: plots/matrix.py)."""
    grid = np.asarray(values, dtype=float)
    plt, fig, ax = _axes()
    image = ax.imshow(grid, aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(columns)), list(columns), rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), list(rows))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, label(v), ha="center", va="center", fontsize=8,
                    color="black" if image.norm(v) > 0.6 else "white")  # readable on viridis' bright end too
    fig.colorbar(image, ax=ax, label=scale)
    ax.set_title(title)
    return _write(plt, fig, path)


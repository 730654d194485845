"""Analyses over link models: sweeps, ratios, exact crossovers, chunked transfers.

These answer seed 000's questions for any pair of links: how long a transfer takes (Figure 2),
the relative transfer time of two links (Figure 3), the size below which one beats the other
("CXL outperforms PCIe for transfers less than 12.7–76.5 KiB"), and the total time to move a
data set in chunks of a given size (Figure 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Link, Op

#: Crossovers are searched between these sizes (1 byte to 1 PiB).
SEARCH_LOW, SEARCH_HIGH = 1, 2**50
#: Grid density of the search before exact refinement: points per doubling of size.
POINTS_PER_OCTAVE = 64


@dataclass(frozen=True)
class Crossover:
    """Where the faster of two links changes: below ``size_bytes`` one wins, from it the other."""

    size_bytes: int
    faster_below: str
    faster_above: str
    seconds: float  # transfer time of the link that is faster from size_bytes on, at size_bytes


def crossovers(a: Link, b: Link, op: Op = "write", low: int = SEARCH_LOW, high: int = SEARCH_HIGH) -> list[Crossover]:
    """Every size where the faster of ``a`` and ``b`` changes, exact to the byte.

    A log-spaced grid brackets each change of sign of t_a(n) - t_b(n); integer bisection then
    finds the first byte count at which the other link is faster (strictly). Changes closer
    together than the grid spacing (1/64 of a doubling) could be missed; the models' jumps
    (one packet header at a time) are far smaller than that.
    """
    octaves = np.log2(high) - np.log2(low)
    grid = np.unique(np.round(np.logspace(np.log2(low), np.log2(high), int(octaves * POINTS_PER_OCTAVE) + 1, base=2)))
    diff = np.sign(np.asarray(a.time(grid, op)) - np.asarray(b.time(grid, op)))
    result = []
    # Ties (diff == 0) take the sign of the next non-tie point, so a tie is not a crossing.
    nonzero = np.flatnonzero(diff)
    for i, j in zip(nonzero[:-1], nonzero[1:]):
        if diff[i] == diff[j]:
            continue
        lo, hi = int(grid[i]), int(grid[j])  # sign(lo) = diff[i], sign(hi) = diff[j]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if np.sign(a.time(mid, op) - b.time(mid, op)) == diff[i]:
                lo = mid
            else:
                hi = mid
        winner, loser = (a, b) if diff[j] < 0 else (b, a)
        result.append(Crossover(hi, loser.label, winner.label, float(winner.time(hi, op))))
    return result


def ratio(a: Link, b: Link, sizes: np.ndarray, op: Op = "write") -> np.ndarray:
    """t_a(n) / t_b(n): how many times faster ``b`` is than ``a`` (seed 000, Figure 3)."""
    return np.asarray(a.time(sizes, op)) / np.asarray(b.time(sizes, op))


def chunked_time(link: Link, total: float, chunks: np.ndarray, op: Op = "write") -> tuple[np.ndarray, np.ndarray]:
    """(transfers, seconds) to move ``total`` bytes as back-to-back transfers of each chunk size.

    ``floor(total / c)`` full chunks and one last partial chunk if ``c`` does not divide
    ``total``; each transfer pays the link's start-up time (seed 000, Figure 5).
    """
    chunks = np.minimum(np.asarray(chunks, dtype=np.float64), total)
    full = np.floor(total / chunks)
    rest = total - full * chunks
    seconds = full * np.asarray(link.time(chunks, op))
    partial = rest > 0
    if np.any(partial):
        seconds = seconds + np.where(partial, np.asarray(link.time(np.where(partial, rest, 1.0), op)), 0.0)
    return full + partial, seconds

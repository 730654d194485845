"""Scenario kind ``figures``: a seed's published figures, each recomputed by a named xferlab model.

Seeds 001-004 publish figures of many sorts (a link's bandwidth, a ratio of two tiers, a speedup, a
latency), so a row names the function that computes xferlab's value rather than a fixed recipe:

.. code-block:: yaml

    kind: figures
    name: ac922
    title: ...
    source: seed 001 (...)
    checks:
      - figure: NVLink 2.0 CPU-GPU bandwidth, 2 bricks per GPU
        section: "the seed's slide or section the figure is from"
        compute: link_bandwidth          # registered with @figure("link_bandwidth")
        args: {link: nvlink2, op: read}  # its keyword arguments
        seed: 50                         # or [low, high] for a range the seed gives
        unit: GB/s
        tolerance: 0.05
        basis: independent
        reason: ...

A compute function lives in a module of this package named ``figures_*.py`` (one per seed or
topic), is registered with :func:`figure`, takes the row's ``args`` as keywords and returns xferlab's
value in the row's unit. Modules are found by name, so a new seed's functions need no edit here.
Every row gets its status from :func:`xferlab.scenarios.checks.check_row`.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BadFile
from .checks import Basis, check_row

COMPUTE: dict[str, Callable[..., float]] = {}


def figure(name: str) -> Callable[[Callable[..., float]], Callable[..., float]]:
    """Register ``function`` as the compute named ``name`` of ``figures`` scenarios."""
    def register(function: Callable[..., float]) -> Callable[..., float]:
        if name in COMPUTE and COMPUTE[name] is not function:
            raise ValueError(f"figure compute '{name}' is registered twice")
        COMPUTE[name] = function
        return function
    return register


def _load_modules() -> None:
    """Import every ``figures_*`` module of this package (each registers its computes)."""
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name.startswith("figures_"):
            importlib.import_module(f"{__package__}.{info.name}")


class FigureCheck(BaseModel):
    """One of the seed's figures and the xferlab function that recomputes it."""

    model_config = ConfigDict(extra="forbid")
    figure: str
    section: str = Field("", description="where in the seed the figure is (slide, section, table)")
    compute: str = Field(description="a function registered with @figure in a figures_*.py module")
    args: dict[str, Any] = {}
    seed: float | tuple[float, float] = Field(description="the seed's figure, or the [low, high] range it gives")
    unit: str = Field(description="the unit of both values: GB/s, us, s, x, %, bytes ...")
    tolerance: float = Field(0.1, description="relative deviation accepted as a reproduction")
    basis: Basis = "independent"
    reason: str = ""
    note: str = ""


class Figures(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["figures"]
    name: str
    title: str
    source: str
    checks: list[FigureCheck]

    def run(self) -> dict[str, Any]:
        _load_modules()
        rows = []
        for check in self.checks:
            function = COMPUTE.get(check.compute)
            if function is None:
                raise BadFile(f"scenario '{self.name}': compute '{check.compute}' is not a registered figure; "
                              f"registered: {', '.join(sorted(COMPUTE)) or 'none'}")
            value = float(function(**check.args))
            low, high = check.seed if isinstance(check.seed, tuple) else (check.seed, None)
            rows.append(check_row(check.figure, low, value, check.unit, check.tolerance, check.basis, check.reason,
                                  check.note, seed_high=high, kind="figure", section=check.section,
                                  compute=check.compute))
        return {"scenario": self.name, "title": self.title, "source": self.source, "checks": rows}

    def plot(self, out: Path) -> list[Path]:
        return []


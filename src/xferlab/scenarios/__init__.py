"""Packaged scenarios: the seeds' studies, as YAML files beside this module, and their runner.

A scenario file names its ``kind``; each kind has a pydantic model that validates the file and a
``run`` that computes the scenario's results and sets them beside the seed's figures. Kinds:

* ``link-comparison``: a baseline link against candidate links over a size sweep, with checks
  of two sorts: ``crossover`` (the size below which the candidate is faster) and ``ratio``
  (t_baseline / t_candidate at a size).
* ``deceval``: seed 000's application study (:mod:`xferlab.scenarios.deceval`).
* ``figures``: a seed's published figures, each recomputed by a named model function
  (:mod:`xferlab.scenarios.figures`; the functions in its ``figures_*.py`` modules).

Every row carries a ``status`` (reproduced, consistent, fitted, not-reproduced) and its reason, as
:mod:`xferlab.scenarios.checks` defines them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal, Optional

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import BadFile, UnknownName, suggest
from ..links import resolve
from ..links.analysis import crossovers, ratio
from ..links.base import OPS, Bytes, Link, Op
from ..units import format_size, parse_size, parse_sizes
from .checks import STATUSES, Basis, check_row  # noqa: F401  (STATUSES: the statuses' meanings, for the CLI and report)


class Check(BaseModel):
    """One of the seed's figures and how xferlab recomputes it."""

    model_config = ConfigDict(extra="forbid")
    figure: str
    section: str = Field("", description="where in the seed the figure is (slide, section, table)")
    kind: Literal["crossover", "ratio"]
    candidate: str
    size: Optional[Bytes] = None
    seed: float | str = Field(description="the seed's figure: a size for crossovers, a number otherwise")
    tolerance: float = Field(0.1, description="relative deviation accepted as a reproduction")
    basis: Basis = Field("independent", description="independent (the model's own inputs), seed-inputs (follows "
                         "from the seed's inputs), or fitted (a parameter chosen to match: name it in reason)")
    fitted: Optional[Literal["op"]] = Field(None, description="the scenario's parameter chosen to match this figure")
    reason: str = ""
    note: str = ""


class LinkComparison(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["link-comparison"]
    name: str
    title: str
    source: str
    baseline: str
    candidates: list[str]
    op: Op = "write"
    sizes: str
    checks: list[Check] = []

    def _value(self, check: Check, base: Link, link: Link, op: Op) -> tuple[float, float, str]:
        """xferlab's value of ``check`` with the links moving data by ``op``, the seed's, and the unit."""
        if check.kind == "crossover":
            found = crossovers(base, link, op)
            value = float(found[0].size_bytes) if found else float("nan")
            return value, float(parse_size(check.seed, f"scenario {self.name} check seed", whole=False)), "bytes"
        at = np.asarray([float(check.size or 64)])
        return float(ratio(base, link, at, op)[0]), float(check.seed), "x"

    def run(self) -> dict[str, Any]:
        base = resolve(self.baseline)
        candidates = {spec: resolve(spec) for spec in self.candidates}
        sizes = parse_sizes(self.sizes, f"scenario {self.name} sizes")
        checks = []
        for check in self.checks:
            link = candidates.get(check.candidate) or resolve(check.candidate)
            value, seed, unit = self._value(check, base, link, self.op)
            basis, reason = ("fitted", self._fitted_op(check, base, link)) if check.fitted else (check.basis, check.reason)
            checks.append(check_row(check.figure, seed, value, unit, check.tolerance, basis, reason, check.note,
                                    kind=check.kind, section=check.section, candidate=check.candidate,
                                    size_bytes=check.size))
        sweep = [{"link": link.label, "size_bytes": int(n), "seconds": float(t),
                  "time_ratio": float(base.time(n, self.op) / t)}
                 for link in [base, *candidates.values()] for n, t in zip(sizes, link.time(sizes, self.op))]
        return {"scenario": self.name, "title": self.title, "source": self.source, "op": self.op,
                "baseline": base.label, "candidates": list(candidates), "checks": checks, "sweep": sweep}

    def _fitted_op(self, check: Check, base: Link, link: Link) -> str:
        """The reason of a row whose figure chose the scenario's op: what the other ops give."""
        others = []
        for op in OPS:
            if op != self.op:
                value, _, unit = self._value(check, base, link, op)
                others.append(f"{op}: {format_size(value) if unit == 'bytes' else f'{value:.4g}x'}")
        return (f"op = {self.op} was chosen among the link models' operations to match the seed's figures "
                f"(the seed does not say which one its b_n is for); {', '.join(others)}")

    def plot(self, out: Path) -> list[Path]:
        from ..plots import plot_ratio, plot_times

        base = resolve(self.baseline)
        others = [resolve(spec) for spec in self.candidates]
        sizes = parse_sizes(self.sizes)
        return [plot_times([base, *others], sizes, self.op, out / f"{self.name}-time.png", self.title),
                plot_ratio(base, others, sizes, self.op, out / f"{self.name}-ratio.png", self.title)]


from .deceval import DecEval  # noqa: E402  (a scenario kind of its own module)
from .figures import Figures  # noqa: E402

SCENARIO_KINDS = {"link-comparison": LinkComparison, "deceval": DecEval, "figures": Figures}


def names() -> list[str]:
    """The packaged scenarios, by name."""
    return sorted(p.name.removesuffix(".yaml") for p in resources.files(__name__).iterdir() if p.name.endswith(".yaml"))


def load(name: str) -> LinkComparison | DecEval | Figures:
    """The packaged scenario ``name``, validated."""
    available = names()
    if name not in available:
        raise UnknownName(f"scenario '{name}' is not packaged; {suggest(name, available)}")
    text = resources.files(__name__).joinpath(f"{name}.yaml").read_text()
    data = yaml.safe_load(text)
    cls = SCENARIO_KINDS.get(data.get("kind")) if isinstance(data, dict) else None
    if cls is None:
        raise BadFile(f"scenario '{name}': kind must be one of {', '.join(SCENARIO_KINDS)}")
    try:
        scenario = cls.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise BadFile(f"scenario '{name}': {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    seed_document(scenario)  # refused here, not when listed
    return scenario


SEEDS = ("seed 000", "seed 001", "seed 002", "seed 003", "seed 004")


def seed_document(scenario: LinkComparison | DecEval | Figures) -> str:
    """The seed document a scenario reproduces, as its ``source`` declares it in its first words
    ("seed 000 (Cabrera, Young and Vetter, ExHET '22), ..."): one of :data:`SEEDS`."""
    first = " ".join(scenario.source.split()[:2])
    if first not in SEEDS:
        raise BadFile(f"scenario '{scenario.name}': source must begin with the seed it reproduces, one of "
                      f"{', '.join(SEEDS)}; it begins {first!r}")
    return first


def describe_check(row: dict[str, Any]) -> tuple[str, str]:
    """People's rendering of a check's seed and xferlab values (a seed's range as low-high)."""
    unit, high = row["unit"], row.get("seed_high")
    if unit == "bytes":
        seed = format_size(row["seed"]) + (f"-{format_size(high)}" if high is not None else "")
        return seed, f"{format_size(row['xferlab'])} ({row['xferlab']:.0f} B)"
    seed = f"{row['seed']:g}" + (f"-{high:g}" if high is not None else "")
    if unit == "x":
        return f"{seed}x", f"{row['xferlab']:.4g}x"
    return f"{seed} {unit}", f"{row['xferlab']:.4g} {unit}"

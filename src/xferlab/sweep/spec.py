"""The sweep file and its grid. A sweep::

    kind: sweep
    name: deceval-links
    systems: [seed-testbed]            # YAML files or packaged names
    replace: host-gpu                  # the link of each system the `links` stand in for (a LINK or a-b)
    links: [pcie3x16, pcie4x16, "pcie5x16:mps=128", cxl2x16]   # presets, fitted profiles, overrides
    workflows: [deceval]
    strategies: [staged, direct, pipelined]
    chunks: [1MiB, 16MiB, 64MiB]       # pipelined points only
    baseline: staged                   # speedups are against this strategy, same system, link, workflow
    costs: {pcie3x16: 1, pcie4x16: 1.3}  # optional, per link: the Pareto front of makespan against cost

Without ``replace``/``links`` each system keeps its own links. The grid is the product of the lists;
a pipelined point comes once per chunk size, the others once. Every point has a key (its coordinates
as text) by which a resumed sweep knows it is done.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..links.base import Bytes
from ..units import format_size
from ..choices import STRATEGIES
from ..system.models import Name, Strategy

MAX_POINTS = 10_000_000


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["sweep"] = "sweep"
    name: Name
    description: str = ""
    systems: list[str] = Field(min_length=1, description="systems: YAML files or packaged names")
    replace: Optional[str] = Field(None, description="the link of each system that `links` replace (a LINK or a-b)")
    links: list[str] = Field([], description="LINKs standing in for `replace`: presets, profiles, overrides")
    workflows: list[str] = Field(min_length=1, description="workflows: YAML files or packaged names")
    strategies: list[Strategy] = Field(list(STRATEGIES), min_length=1)
    chunks: list[Bytes] = Field([], description="pipelined points: bytes per chunk")
    baseline: Strategy = Field("staged", description="speedups are against this strategy")
    costs: dict[str, float] = Field({}, description="a cost per LINK of `links` (any unit: price, watts): the "
                                                    "Pareto front of makespan against cost is marked")

    @model_validator(mode="after")
    def _check(self) -> "Sweep":
        for field in ("systems", "links", "workflows", "strategies", "chunks"):
            items = [int(v) if field == "chunks" else v for v in getattr(self, field)]
            seen: set = set()  # one pass: a list of 100,000 chunk sizes is checked at once, not in n^2 steps
            twice = next((v for v in items if v in seen or seen.add(v)), None)
            if twice is not None:
                shown = format_size(twice) if field == "chunks" else repr(twice)
                raise ValueError(f"{field}: {shown} comes twice; each point is evaluated once")
        _check_names(self)  # an unknown name first, before what the strategies need
        if bool(self.links) != bool(self.replace):
            raise ValueError("links: `links` and `replace` go together: the links stand in for the `replace` link")
        if "pipelined" in self.strategies and not self.chunks:
            raise ValueError("chunks: the pipelined strategy needs chunk sizes")
        unknown = sorted(set(self.costs) - set(self.links))
        if unknown:
            raise ValueError(f"costs: '{unknown[0]}' is not one of the links ({', '.join(self.links) or 'none'})")
        if any(not (0 <= c < float("inf")) for c in self.costs.values()):
            raise ValueError("costs: every cost is a finite number >= 0")
        if self.baseline == "pipelined":
            raise ValueError("baseline: 'pipelined' has a point per chunk size and a baseline is one point per "
                             "system, link and workflow: staged, direct or coherent")
        if self.baseline not in self.strategies:
            raise ValueError(f"baseline: '{self.baseline}' is not one of the strategies ({', '.join(self.strategies)})")
        if self.size() > MAX_POINTS:
            raise ValueError(f"the grid has {self.size():,} points; at most {MAX_POINTS:,}")
        return self

    def size(self) -> int:
        per = sum(len(self.chunks) if s == "pipelined" else 1 for s in self.strategies)
        return len(self.systems) * max(1, len(self.links)) * len(self.workflows) * per

    def points(self) -> list[dict]:
        """Every point of the grid, in a fixed order: system, link, workflow, strategy, chunk_bytes, key."""
        out = []
        for system in self.systems:
            for link in self.links or [None]:
                for workflow in self.workflows:
                    for strategy, chunk in self._variants():
                        point = {"system": system, "link": link, "workflow": workflow, "strategy": strategy,
                                 "chunk_bytes": chunk}
                        point["key"] = key_of(point)
                        out.append(point)
        return out

    def _variants(self) -> list[tuple[str, Optional[int]]]:
        """(strategy, chunk bytes) of one system, link and workflow: a pipelined one per chunk size."""
        return [(s, None if c is None else int(c)) for s in self.strategies
                for c in (self.chunks if s == "pipelined" else [None])]

    def point(self, index: int) -> dict:
        """Point ``index`` of :meth:`points` (0 <= index < size()), without building the others."""
        variants, links = self._variants(), self.links or [None]
        rest, v = divmod(index, len(variants))
        rest, w = divmod(rest, len(self.workflows))
        s, link = divmod(rest, len(links))
        point = {"system": self.systems[s], "link": links[link], "workflow": self.workflows[w],
                 "strategy": variants[v][0], "chunk_bytes": variants[v][1]}
        point["key"] = key_of(point)
        return point

    def digest(self) -> str:
        """The sweep's identity for resuming: its name and grid, not its description."""
        grid = self.model_dump(exclude={"description"})
        return hashlib.sha1(json.dumps(grid, sort_keys=True, default=str).encode()).hexdigest()[:10]


def _check_names(spec: Sweep) -> None:
    """Every system, workflow and link the sweep names exists (a file, a packaged name, a preset or
    profile): the first that does not is refused naming it and the known ones."""
    from ..links import resolve
    from ..scenarios.packaged import load_named
    from ..system.models import System, Workflow

    for system in spec.systems:
        load_named(system, System, "system")
    for workflow in spec.workflows:
        load_named(workflow, Workflow, "workflow")
    for link in spec.links:
        resolve(link)


def key_of(point: dict) -> str:
    return "|".join(str(point[k]) for k in ("system", "link", "workflow", "strategy", "chunk_bytes"))

"""The seeds' experiments as one-command studies (`xferlab study run NAME`). A study is data (which
measurement suites, which placements, which comparison table) plus a small function; it runs the
existing measurements (measure/), never timing loops of its own. base.py says what a study is,
run.py runs one (budgeted, resumable, one run group in the store); one module per study."""

from __future__ import annotations

from ..errors import UnknownName, suggest
from ..units import shown
from .base import Study
from .characterize import CHARACTERIZE
from .deceval import DECEVAL
from .granularity import GRANULARITY
from .launch import LAUNCH
from .offload import OFFLOAD
from .tiers import TIERS

STUDIES: dict[str, Study] = {s.name: s for s in (TIERS, GRANULARITY, LAUNCH, CHARACTERIZE, DECEVAL, OFFLOAD)}


def find(name: str) -> Study:
    if name not in STUDIES:
        raise UnknownName(f"study {shown(name)} is not known; {suggest(name, list(STUDIES))}")
    return STUDIES[name]

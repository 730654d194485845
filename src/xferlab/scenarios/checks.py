"""What a scenario row says about a seed's figure: one status per row, decided by how xferlab's
value was obtained and by how far it lands from the seed's.

* ``reproduced``: the model computes the figure from inputs independent of it (a spec table, a
  link model), within the row's tolerance.
* ``consistent``: the figure follows from the seed's own inputs; the model could not disagree.
* ``fitted``: a parameter was chosen to match the figure; the reason names it.
* ``not-reproduced``: xferlab's value is outside the tolerance; the reason says by how much and why.

A row's *basis* (``independent``, ``seed-inputs`` or ``fitted``) is declared with the scenario; a row
of any basis whose value falls outside its tolerance is ``not-reproduced``."""

from __future__ import annotations

import math
from typing import Any, Literal

STATUSES = {
    "reproduced": "the model computes the figure from inputs independent of it (a spec table, a link model), "
                  "within the tolerance",
    "consistent": "the figure follows from the seed's own inputs; the model could not disagree",
    "fitted": "a parameter was chosen to match the figure (the reason names it)",
    "not-reproduced": "xferlab's value is outside the tolerance (the reason says by how much and why)",
}
Basis = Literal["independent", "seed-inputs", "fitted"]
_STATUS_OF_BASIS = {"independent": "reproduced", "seed-inputs": "consistent", "fitted": "fitted"}


def status_of(basis: Basis, deviation: float, tolerance: float, reason: str = "") -> tuple[str, str]:
    """The row's status and its reason, from its basis and its deviation from the seed's figure."""
    if not math.isfinite(deviation) or abs(deviation) > tolerance:
        off = (f"{deviation:+.1%} from the seed's figure, outside ±{tolerance:.1%}" if math.isfinite(deviation)
               else "xferlab's model gives no value")
        return "not-reproduced", f"{off}: {reason}" if reason else off
    return _STATUS_OF_BASIS[basis], reason


def check_row(figure: str, seed: float, value: float, unit: str, tolerance: float, basis: Basis, reason: str = "",
              note: str = "", seed_high: float | None = None, **extra: Any) -> dict[str, Any]:
    """One scenario row: the seed's figure, xferlab's, their deviation, and the status with its reason.
    Where the seed gives a range [seed, seed_high], the deviation is from its nearer end (0 inside it)."""
    if seed_high is None or value < seed:
        deviation = value / seed - 1 if seed else float("nan")
    else:
        deviation = 0.0 if value <= seed_high else value / seed_high - 1
    status, why = status_of(basis, deviation, tolerance, reason)
    high = {} if seed_high is None else {"seed_high": seed_high}
    return {"figure": figure, **extra, "seed": seed, **high, "xferlab": value, "unit": unit, "relative_error": deviation,
            "tolerance": tolerance, "basis": basis, "status": status, "status_reason": why, "note": note}

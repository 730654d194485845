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
              note: str = "", **extra: Any) -> dict[str, Any]:
    """One scenario row: the seed's figure, xferlab's, their deviation, and the status with its reason."""
    deviation = value / seed - 1 if seed else float("nan")
    status, why = status_of(basis, deviation, tolerance, reason)
    return {"figure": figure, **extra, "seed": seed, "xferlab": value, "unit": unit, "relative_error": deviation,
            "tolerance": tolerance, "basis": basis, "status": status, "status_reason": why, "note": note}

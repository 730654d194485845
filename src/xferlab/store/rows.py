"""Values on their way into the store: JSON-safe documents, and sample rows checked and converted to
the ``samples`` columns (one line naming the sample and field for anything that does not fit)."""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from numbers import Integral, Real
from typing import Any, Mapping

import numpy as np

from ..errors import BadValue
from .schema import REQUIRED_SAMPLE_KEYS, SAMPLE_COLUMNS


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars, paths, dates and sets made JSON-safe; non-finite floats become None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), allow_nan=False)


def iso(moment: datetime | None) -> str | None:
    """A stored UTC timestamp as ISO 8601 with a Z."""
    return None if moment is None else moment.isoformat(timespec="microseconds") + "Z"


def sample(row: Any, index: int) -> dict[str, Any]:
    """One sample dict checked and converted to the store's columns, its extra keys in ``params``.

    ``value`` must be finite and ``seconds``, when given, a finite number above zero: a figure the
    statistics cannot use is refused, not stored."""
    where = f"sample {index}"
    if not isinstance(row, Mapping):
        raise BadValue(f"{where} is a {type(row).__name__}; samples are dicts of column values")
    for key in REQUIRED_SAMPLE_KEYS:
        if row.get(key) is None:
            raise BadValue(f"{where} has no '{key}'; every sample needs {', '.join(REQUIRED_SAMPLE_KEYS)}")
    for key in ("run_id", "seq"):
        if key in row:
            raise BadValue(f"{where} sets '{key}', which the store assigns")
    out = {name: _convert(row.get(name), kind, f"{where} field '{name}'") for name, kind in SAMPLE_COLUMNS.items()}
    if out["warmup"] is None:
        out["warmup"] = False
    if not math.isfinite(out["value"]):
        raise BadValue(f"{where} field 'value' is {out['value']!r}; it must be a finite number")
    if out["seconds"] is not None and not (math.isfinite(out["seconds"]) and out["seconds"] > 0):
        raise BadValue(f"{where} field 'seconds' is {out['seconds']!r}; it must be a finite number of seconds above 0")
    given = row.get("params")
    if given is not None and not isinstance(given, Mapping):
        raise BadValue(f"{where} field 'params' is a {type(given).__name__}; it must be a dict")
    params = {**(given or {}), **{k: v for k, v in row.items() if k not in SAMPLE_COLUMNS and k != "params"}}
    out["params"] = dumps(params) if params else None
    return out


def _convert(value: Any, kind: str, where: str) -> Any:
    if value is None:
        return None
    if kind == "VARCHAR":
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)
    if kind == "BOOLEAN":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise BadValue(f"{where} is {value!r}; it must be true or false")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise BadValue(f"{where} is {value!r}; it must be a number")
    if kind == "DOUBLE":
        return float(value)
    if isinstance(value, Integral):
        return int(value)
    if math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise BadValue(f"{where} is {value!r}; it must be a whole number")

"""Values on their way into the store: JSON-safe documents, and sample rows checked and converted to
the ``samples`` columns (one line naming the sample and field for anything that does not fit); and
on their way out, a stored sample as the suites produced it (:func:`flat`)."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from numbers import Integral, Real
from typing import Any, Mapping, NamedTuple

import numpy as np

from ..errors import BadValue
from ..outputs import jsonable
from ..units import shown
from .schema import REQUIRED_SAMPLE_KEYS, SAMPLE_COLUMNS, STATUSES

#: What a run id may be: a file-name-safe word (``results export`` names its file after it), not 'latest'.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), allow_nan=False)


def flat(sample: dict[str, Any]) -> dict[str, Any]:
    """A stored sample with its ``params`` spread out again, as the suites produced it."""
    return {**{k: v for k, v in sample.items() if k != "params"}, **(sample.get("params") or {})}


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
        try:
            return float(value)
        except OverflowError:
            raise BadValue(f"{where} is {shown(value)}; it must be a finite number") from None
    if isinstance(value, Integral) or (math.isfinite(value) and float(value).is_integer()):
        return _whole(int(value), kind, where)
    raise BadValue(f"{where} is {value!r}; it must be a whole number")


#: The whole-number columns' ranges (DuckDB's INTEGER and BIGINT).
WHOLE = {"INTEGER": 2**31, "BIGINT": 2**63}


def _whole(value: int, kind: str, where: str) -> int:
    if not -WHOLE[kind] <= value < WHOLE[kind]:
        raise BadValue(f"{where} is {value}; it must be a whole number in -2^{WHOLE[kind].bit_length() - 1}.."
                       f"2^{WHOLE[kind].bit_length() - 1} - 1")
    return value


class Imported(NamedTuple):
    """A run recorded elsewhere, checked and converted, ready for its rows to be inserted."""

    run: list  # the runs row: run_id, started_utc, finished_utc, command, argv, status, xferlab_version, params, summary
    inventory: list  # the inventory row: inventory, versions
    samples: list[dict[str, Any]]  # as :func:`sample` makes them
    seqs: list[int]  # each sample's seq, kept from where it was recorded
    failures: list[list]  # suite, what, reason, at_utc

    @property
    def run_id(self) -> str:
        return self.run[0]


def imported(run: Any, samples: Any, failures: Any) -> Imported:
    """A run recorded elsewhere (a shard), every part checked before anything is written; a
    :class:`BadValue` naming the part otherwise."""
    if not isinstance(run, Mapping):
        raise BadValue(f"its run is a {type(run).__name__}; a run is a dict of fields")
    for key in ("run_id", "command", "started_utc"):
        if not isinstance(run.get(key), str) or not run[key].strip():
            raise BadValue(f"its run has no {key} (text); not a run written by xferlab")
    if not RUN_ID.fullmatch(run["run_id"]) or run["run_id"] == "latest":
        raise BadValue(f"its run_id {shown(run['run_id'])} is not a run id (letters, digits, '.', '_', '-', at "
                       "most 100, such as 20260101-120000-ab12)")
    for key in ("started_utc", "finished_utc"):
        if run.get(key) is not None:
            _timestamp(run[key], f"its run's {key}")
    argv = run.get("argv") or []
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise BadValue("its run's argv is not a list of words")
    for key in ("inventory", "versions", "params"):
        if run.get(key) is not None and not isinstance(run[key], Mapping):
            raise BadValue(f"its run's {key} is a {type(run[key]).__name__}; it must be a dict")
    status = run.get("status") if run.get("status") in STATUSES else "interrupted"  # nothing will finish it here
    row = [run["run_id"], run["started_utc"], run.get("finished_utc"), run["command"], dumps(argv), status,
           run.get("xferlab_version"), dumps(run.get("params") or {}),
           None if run.get("summary") is None else dumps(run["summary"])]
    inventory = [dumps(run.get("inventory") or {}), dumps(run.get("versions") or {})]
    if not isinstance(samples, list):
        raise BadValue(f"its samples are a {type(samples).__name__}; they must be a list")
    cleaned, seqs = [], []
    for i, r in enumerate(samples):
        if not isinstance(r, Mapping):
            raise BadValue(f"sample {i} is a {type(r).__name__}; samples are dicts of column values")
        seq = r.get("seq", i + 1)
        if isinstance(seq, bool) or not isinstance(seq, Integral) or not 1 <= seq < WHOLE["BIGINT"]:
            raise BadValue(f"sample {i} field 'seq' is {seq!r}; it must be a whole number from 1")
        cleaned.append(sample({k: v for k, v in r.items() if k not in ("run_id", "seq")}, i))
        seqs.append(int(seq))
    if len(set(seqs)) != len(seqs):
        twice = next(s for s in seqs if seqs.count(s) > 1)
        raise BadValue(f"sample seq {twice} comes twice; each sample of a run has its own")
    if not isinstance(failures, list) or not all(isinstance(f, Mapping) for f in failures):
        raise BadValue("its failures are not a list of dicts (suite, what, reason, at_utc)")
    rows = []
    for f in failures:
        if f.get("at_utc") is not None:
            _timestamp(f["at_utc"], "a failure's at_utc")
        rows.append([None if f.get(k) is None else str(f[k]) for k in ("suite", "what", "reason")]
                    + [f.get("at_utc") or run["started_utc"]])
    return Imported(row, inventory, cleaned, seqs, rows)


def _timestamp(text: Any, where: str) -> None:
    try:
        datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise BadValue(f"{where} {shown(text)} is not a time (ISO 8601, such as 2026-01-01 12:00:00)") from None

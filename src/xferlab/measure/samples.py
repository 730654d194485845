"""Which stored samples a fit or the report may use.

A sample the probe did not vouch for (``validated`` false: the probe ended, crashed or timed out
before it checked the data it had moved) is kept in the store but left out of every statistic, fit
and table, as :meth:`xferlab.store.Store.stats` leaves it out. Stores of schema version 2 have a
``validated`` column; older rows (and rows of a store written before that column existed) may carry
the flag in ``params``. Missing or null means validated.
"""

from __future__ import annotations

from typing import Any, Iterable


def validated(row: dict[str, Any]) -> bool:
    """False only when the row says the probe did not validate it (column or ``params``)."""
    value = row.get("validated")
    if value is None:
        value = (row.get("params") or {}).get("validated")
    return value is not False


def kept(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The validated rows of ``rows``, in order."""
    return [r for r in rows if validated(r)]


def unvalidated_count(rows: Iterable[dict[str, Any]]) -> int:
    """How many of ``rows`` the probe did not validate."""
    return sum(1 for r in rows if not validated(r))


def value_of(row: dict[str, Any], key: str, default: Any = None) -> Any:
    """A field of a row as a converter made it (``row[key]``) or as the store gives it back (in its
    ``params``); ``default`` when neither has it."""
    value = row.get(key)
    if value is not None:
        return value
    return (row.get("params") or {}).get(key, default)

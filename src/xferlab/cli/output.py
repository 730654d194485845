"""How commands print results: a table for people, ``--json`` or ``--csv`` for machines.

With ``--json`` stdout holds exactly one JSON object, ``{"command": …, "results": [row, …], …}``,
whose row fields are snake_case and carry their unit in the name (``size_bytes``, ``seconds``,
``bandwidth_bytes_per_second``). With ``--csv`` stdout holds the rows with a header line. Notes,
progress and warnings go to stderr in those modes, so stdout stays parseable.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
from rich.console import Console
from rich.table import Table

from ..errors import BadValue

def _width() -> int | None:
    """COLUMNS if set; else the terminal's width; else (a pipe or file) 120 columns, not rich's 80."""
    import os

    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    return None if sys.stdout.isatty() else 120


# No rich markup: text such as "[madvise]" from the machine must print as it is.
stdout = Console(soft_wrap=True, markup=False, width=_width())
stderr = Console(stderr=True, soft_wrap=True, markup=False)


@dataclass(frozen=True)
class Column:
    """One field of the rows: its JSON key, its table header and how people see its value."""

    key: str
    header: str
    show: Callable[[Any], str] = str
    justify: str = "right"
    no_wrap: bool = False  # never wrap or cut this column (ids, figures); text columns fold instead


def or_dash(show: Callable[[Any], str]) -> Callable[[Any], str]:
    """``show`` for a table cell that may be empty: None is shown as "–"."""
    return lambda value: "–" if value is None else show(value)


def output_format(json_: bool, csv_: bool) -> str:
    if json_ and csv_:
        raise BadValue("--json and --csv were both given; choose one")
    return "json" if json_ else "csv" if csv_ else "table"


def _plain(value: Any) -> Any:
    """JSON-safe values: numpy scalars to Python, non-finite floats to null."""
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def emit(command: str, rows: list[dict[str, Any]], columns: Iterable[Column], fmt: str, *,
         title: str | None = None, notes: Iterable[str] = (), extra: dict[str, Any] | None = None) -> None:
    """Print ``rows`` in the chosen format. ``extra`` adds top-level keys to the JSON object."""
    columns = list(columns)
    notes = [n for n in notes if n]
    if fmt == "json":
        doc = {"command": command, "results": _plain(rows), **_plain(extra or {})}
        if notes:
            doc["notes"] = notes
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        keys = [c.key for c in columns]
        writer.writerow(keys)
        for row in rows:
            writer.writerow([_plain(row.get(k)) for k in keys])
        for note in notes:
            stderr.print(note, highlight=False)
        return
    table = Table(title=title, title_justify="left", header_style="bold")
    cells = [[column.show(row.get(column.key)) if row.get(column.key) is not None else "–" for column in columns]
             for row in rows]
    for i, column in enumerate(columns):
        longest = max([len(word) for line in cells for word in line[i].split()] + [len(column.header)])
        table.add_column(column.header, justify=column.justify, no_wrap=column.no_wrap, min_width=min(longest, 12),
                         overflow="fold")
    for line in cells:
        table.add_row(*line)
    stdout.print(table)
    for note in notes:
        stdout.print(note, highlight=False)

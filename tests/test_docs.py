"""Figures in docs/models.md tables are the models' own: each row is recomputed here."""

import re
from pathlib import Path

import pytest

from xferlab.links import resolve

DOC = Path(__file__).resolve().parent.parent / "docs" / "models.md"
COLUMNS = {
    "raw": lambda link: link.derived()["raw_bytes_per_second"],
    "TLP layer": lambda link: link.tlp_rate,
    "write peak": lambda link: link.peak_rate("write"),
    "peak": lambda link: link.peak_rate("write"),
    "read peak": lambda link: link.peak_rate("read"),
    "readwrite peak": lambda link: link.peak_rate("readwrite"),
}


def rows():
    found = []
    for table in re.findall(r"(\| preset \|.*?)\n\n", DOC.read_text(), flags=re.S):
        lines = table.strip().splitlines()
        headers = [h.strip() for h in lines[0].strip("|").split("|")]
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            spec = cells[0].split(" (")[0]
            for header, cell in zip(headers[1:], cells[1:]):
                found.append((spec, header, cell))
    return found


ROWS = rows()


def test_tables_found():
    assert len(ROWS) > 40


@pytest.mark.parametrize("spec, column, cell", ROWS, ids=[f"{s}-{c}" for s, c, _ in ROWS])
def test_figure(spec, column, cell):
    value = float(re.match(r"([\d.]+) GB/s", cell)[1]) * 1e9
    assert COLUMNS[column](resolve(spec)) == pytest.approx(value, rel=5e-4)

"""The docs: figures in docs/models.md tables are the models' own (each row is recomputed here); the
repository points nowhere outside itself; every relative link resolves."""

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


# --- The repository stands on its own -------------------------------------------------------------

ROOT = DOC.parent.parent
# Built from pieces so that this file does not hold what it looks for.
OUTSIDE = ("..", "shared")
SEED_FILE = re.compile(r"\b00[0-4]_[0-9a-f]{16}\b")


def tracked_files() -> list[Path]:
    import subprocess

    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: no list of tracked files")
    return [ROOT / name for name in done.stdout.decode().split("\0") if name]


def test_no_file_points_outside_the_repository():
    """No tracked file names the seeds' or the design's folder outside the repository, or a seed's
    file name: cite a seed as "seed 002 (…); see docs/architecture.md" instead."""
    outside = "/".join(OUTSIDE).encode()
    found = []
    for path in tracked_files():
        if not path.is_file():
            continue
        data = path.read_bytes()
        if outside in data:
            found.append(f"{path.relative_to(ROOT)}: '{outside.decode()}'")
        match = SEED_FILE.search(data.decode("utf-8", "replace"))
        if match:
            found.append(f"{path.relative_to(ROOT)}: seed file name {match[0]}")
    assert not found, found


def test_seed_file_names_are_recognized():
    """The check above would see a seed's file name and the outside folder if one came back."""
    assert SEED_FILE.search("see 002_" + "163233d0" + "32715662.txt")
    assert not SEED_FILE.search("seed 002 (Chen, Zhang and Austin)")


def test_architecture_cites_every_seed():
    text = " ".join((ROOT / "docs" / "architecture.md").read_text().split())  # titles wrap
    for number, title in [("000", "Design and Analysis of CXL Performance Models"),
                          ("001", "AC922 Data Movement for CORAL"),
                          ("002", "Zipper: Latency-Tolerant Optimizations for High-Performance Buses"),
                          ("003", "CXL Memory as Persistent Memory for Disaggregated HPC"),
                          ("004", "Data Transfers and Host/Device Communication using OneAPI for FPGA")]:
        assert f"**seed {number}**" in text and title in text, number


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve(page):
    """Every relative link of the README and the docs names a file that exists, and an anchor that
    one of its headings makes."""
    broken = []
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists():
            broken.append(target)
            continue
        if anchor and path.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), flags=re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, broken

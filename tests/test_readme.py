"""The README's tour and the docs show real output: each `$ xferlab …` block must match what the code
prints now.

Blocks of measurements (the commands in VARYING: lab, measure, results, inventory, fit, report, runtime, study, sweep, campaign,
kernels)
and the benchmarks' timings are not compared: they differ from run to run. A command shown in more
than one place is run once and compared with each.
After a change that moves a figure, refresh the pages with
``XFERLAB_UPDATE_README=1 pytest tests/test_readme.py`` and read the diff; an update run fails for every
block it rewrote (so it never reads as green), and the next plain run checks the new text.
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def fenced_blocks(text: str) -> list[str]:
    """The contents of the plain ``` blocks (no language named) of a Markdown text."""
    blocks, current, plain = [], None, False
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current, plain = [], line.strip() == "```"
            else:
                if plain:
                    blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def examples(page: Path) -> list[tuple[str, str]]:
    found = []
    for block in fenced_blocks(page.read_text()):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("$ xferlab "):
                command = lines[i][2:]
                j = i + 1
                while j < len(lines) and not lines[j].startswith("$ "):
                    j += 1
                found.append((command, "\n".join(lines[i + 1:j]).strip()))
                i = j
            else:
                i += 1
    return found


# Measurements and what they read back differ from run to run and machine to machine.
VARYING = ("xferlab lab", "xferlab measure", "xferlab results", "xferlab inventory", "xferlab fit",
           "xferlab report", "xferlab runtime", "xferlab study", "xferlab sweep", "xferlab campaign",
           "xferlab kernels")  # kernels build: the machine's device, its driver and its binaries' sizes
README_EXAMPLES = [e for e in examples(README) if not e[0].startswith(VARYING)]

# command -> [(page, expected output), …]
SHOWN: dict[str, list[tuple[Path, str]]] = {}
for _page in PAGES:
    for _command, _expected in examples(_page):
        if not _command.startswith(VARYING):
            SHOWN.setdefault(_command, []).append((_page, _expected))


def test_readme_has_a_tour():
    assert len(README_EXAMPLES) >= 8


def test_fenced_blocks_skip_languages():
    """A ```yaml block does not shift which fences open and close the plain blocks."""
    text = "```yaml\na: 1\n```\n\n```\n$ xferlab x\nout\n```\n"
    assert fenced_blocks(text) == ["$ xferlab x\nout"]


@pytest.mark.parametrize("command", list(SHOWN), ids=list(SHOWN))
def test_shown_output_is_current(command):
    args = shlex.split(command)[1:]
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "xferlab", *args], capture_output=True, text=True, env=env, timeout=120)
    printed = (done.stdout + done.stderr).strip()
    rewritten = []
    for page, expected in SHOWN[command]:
        if printed != expected and os.environ.get("XFERLAB_UPDATE_README") == "1":
            text = page.read_text()
            block = f"$ {command}\n{expected}\n"
            assert text.count(block) == 1, f"cannot locate the block of {command!r} in {page.name} to update"
            page.write_text(text.replace(block, f"$ {command}\n{printed}\n"))
            rewritten.append(page.name)
            continue
        assert printed == expected, f"{page.relative_to(ROOT)}: the output of {command!r} has changed"
    # An update run never reads as green: what it rewrote is to be read in the diff, then the test run again.
    assert not rewritten, f"rewrote the output of {command!r} in {', '.join(rewritten)}: read `git diff`, then run again"

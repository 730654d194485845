"""The README's tour shows real output: each `$ xferlab …` block must match what the code prints now.

Blocks of measurements (the commands in VARYING: lab, measure, results, inventory, fit, report, runtime) and the benchmarks' timings are
not compared: they differ from run to run.
After a change that moves a figure, refresh the README with
``XFERLAB_UPDATE_README=1 pytest tests/test_readme.py`` and read the diff.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def examples():
    found = []
    for block in re.findall(r"```\n(.*?)```", README.read_text(), flags=re.S):
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
           "xferlab report", "xferlab runtime")
EXAMPLES = [e for e in examples() if not e[0].startswith(VARYING)]


def test_readme_has_a_tour():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("command, expected", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_readme_output_is_current(command, expected):
    args = shlex.split(command)[1:]
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "xferlab", *args], capture_output=True, text=True, env=env, timeout=120)
    printed = (done.stdout + done.stderr).strip()
    if printed != expected and os.environ.get("XFERLAB_UPDATE_README") == "1":
        text = README.read_text()
        block = f"$ {command}\n{expected}\n"
        assert text.count(block) == 1, f"cannot locate the block of {command!r} to update"
        README.write_text(text.replace(block, f"$ {command}\n{printed}\n"))
        return
    assert printed == expected

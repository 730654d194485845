import json
import subprocess
import sys

import pytest


class Cli:
    """Runs `python -m xferlab …` as a user would, returning (exit code, stdout, stderr)."""

    def __call__(self, *args, check=None, env=None):
        import os

        done = subprocess.run([sys.executable, "-m", "xferlab", *map(str, args)], capture_output=True, text=True,
                              timeout=300, env={**os.environ, **(env or {})})
        if check is not None:
            assert done.returncode == check, (done.returncode, done.stdout, done.stderr)
        return done.returncode, done.stdout, done.stderr

    def json(self, *args):
        code, out, err = self(*args, "--json", check=0)
        return json.loads(out)


@pytest.fixture
def cli():
    return Cli()

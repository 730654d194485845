"""Where the machine's /proc and /sys are read from: ``$XFERLAB_STATE_ROOT`` (a faked tree: how the tests give a
command a known machine) or /. Imports nothing of xferlab, so every reader of /sys may use it."""

from __future__ import annotations

import os
from pathlib import Path


def state_root() -> Path:
    """Where /proc and /sys are read from: ``$XFERLAB_STATE_ROOT`` (a faked tree) or /."""
    return Path(os.environ.get("XFERLAB_STATE_ROOT") or "/")

"""`xferlab report [RUN…] [-o FILE]`: the self-contained HTML report of recorded runs."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import AGAINST, STORE
from .output import stderr

DEFAULT = Path("xferlab-results") / "report.html"


def report(runs: Optional[list[str]] = typer.Argument(None, metavar="[RUN...]",
                                                      help="Runs to report: ids, prefixes or 'latest' (default: the newest "
                                                           "memory run and the newest run of each accelerator)."),
           output: Path = typer.Option(DEFAULT, "-o", "--output", metavar="FILE", help="The HTML file to write."),
           against: str = AGAINST,
           name: Optional[str] = typer.Option(None, "--name", metavar="PROFILE",
                                              help="Also save the fitted links as profiles NAME-<direction>-<kind> and the memory tiers as NAME-node<N>."),
           store: Optional[Path] = STORE) -> None:
    """Write one self-contained HTML file: machine, measurements, fits, scenarios, advice, and the commands."""
    from ..report.html import write_report

    path, summary = write_report(runs or None, output, against, name, store, option="--output")
    stderr.print(summary, highlight=False)
    print(path)

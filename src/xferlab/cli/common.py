"""Options shared by several commands, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..links import Link, resolve
from ..links.presets import load_links_files
from ..store import STORE_HELP
from ..links.base import OPS
from ..errors import BadValue

JSON = typer.Option(False, "--json", help="Print one JSON object on stdout instead of a table.")
CSV = typer.Option(False, "--csv", help="Print CSV rows on stdout instead of a table.")
OP = typer.Option("write", "--op", help="write (posted, one way), read (requests out, data back) or readwrite (both at once).",
                  metavar="write|read|readwrite")
LINKS_FILE = typer.Option(None, "--links", help="YAML file of named links (see `xferlab schema`); repeatable.",
                          metavar="FILE")
STORE = typer.Option(None, "--store", help=STORE_HELP, metavar="PATH")
def _checked_plot(path: Optional[Path]) -> Optional[Path]:
    """--plot FILE, refused before any work when its format is unknown or it cannot be written."""
    if path is None:
        return None
    from ..plots import check_plot_path

    return check_plot_path(path, "--plot")


PLOT = typer.Option(None, "--plot", help="Also write a plot to FILE (PNG, SVG or PDF by extension).", metavar="FILE",
                    callback=_checked_plot)
#: --plot FILE writes one file; --plots DIR writes a command's plots into a folder.
PLOTS = typer.Option(None, "--plots", help="Write the plots into DIR (created if needed).", metavar="DIR")


def renamed(old: str, new: str, meaning: str):
    """A hidden option under an option's old name, refused in one line that names the new one."""
    def refuse(value):
        if value is not None:
            raise BadValue(f"{old} is now {new} ({meaning}); see docs/cli.md, 'Renamed options'")
        return value

    return typer.Option(None, old, hidden=True, callback=refuse, metavar="X")


OLD_PLOT = renamed("--plot", "--plots DIR", "a folder of plots; --plot FILE writes one file")


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set parameter ``name`` (on the command line or from the environment), as
    opposed to its default: an option given with its default value counts as given."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


def only_with(ctx: typer.Context, ties: list[tuple[str, bool, str]]) -> None:
    """Refuse an option that would be ignored: ``ties`` holds (parameter name, whether it applies here,
    when it applies: "with --faults", "without --scaling …"); the first one given that does not apply
    is one line: "--strides applies only with --faults"."""
    for name, applies, when in ties:
        if not applies and given(ctx, name):
            option = next(max(p.opts, key=len) for p in ctx.command.params if p.name == name)
            raise BadValue(f"{option} applies only {when}")


def check_op(op: str) -> str:
    if op not in OPS:
        raise BadValue(f"--op '{op}' is not allowed; allowed: {', '.join(OPS)}")
    return op


def user_links(files: Optional[list[Path]]) -> dict[str, Link]:
    return load_links_files(files)


def links_from(specs: list[str], files: Optional[list[Path]]) -> list[Link]:
    defined = user_links(files)
    return [resolve(spec, defined) for spec in specs]

"""The `xferlab` command line. One module per verb; this one assembles them and handles errors.

Exit codes: 0 success, 2 bad input or an unavailable resource the user asked for, 1 anything else or every
measurement step failed, 3 some measurement steps failed (results kept), 143/130 SIGTERM/SIGINT.
Errors print one line, ``error: …``, on stderr; ``--debug`` (or XFERLAB_DEBUG=1) shows the traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from .. import __version__, signals
from ..errors import XferlabError
from . import advise as advise_cli
from . import fit as fit_cli
from . import inventory as inventory_cli
from . import lab as lab_cli
from . import measure
from . import simulate as simulate_cli
from . import model, report as report_cli, results, runtime as runtime_cli, scenario, schema, study as study_cli
from . import campaign as campaign_cli, sweep as sweep_cli

app = typer.Typer(
    name="xferlab",
    help="Measure, model and simulate data movement between CPUs, memory tiers and accelerators.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(model.app, name="model")
app.add_typer(scenario.app, name="scenario")
app.add_typer(measure.app, name="measure")
app.add_typer(results.app, name="results")
app.command("lab")(lab_cli.lab)
app.command("schema")(schema.schema)
app.command("inventory")(inventory_cli.inventory)
app.command("simulate")(simulate_cli.simulate)
app.command("fit")(fit_cli.fit)
app.add_typer(advise_cli.app, name="advise")
app.command("report")(report_cli.report)
app.command("study")(study_cli.study)
app.add_typer(runtime_cli.app, name="runtime")
app.add_typer(sweep_cli.app, name="sweep")
app.add_typer(campaign_cli.app, name="campaign")


def _version(value: bool) -> None:
    if value:
        print(f"xferlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    if debug:
        os.environ["XFERLAB_DEBUG"] = "1"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Typer handles usage errors (exit 2) itself."""
    debug = "--debug" in (argv if argv is not None else sys.argv) or os.environ.get("XFERLAB_DEBUG") == "1"
    previous = signals.install()
    try:
        return _run(argv, debug)
    finally:
        signals.restore(previous)


def _run(argv: list[str] | None, debug: bool) -> int:
    try:
        app(args=argv, prog_name="xferlab", standalone_mode=True)
    except SystemExit as done:
        interrupt = _interrupt_of(done)
        if interrupt is not None:
            return _interrupted(interrupt)
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except XferlabError as error:
        if debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt as interrupt:
        return _interrupted(interrupt)
    except BrokenPipeError:
        return 0
    return 0


def _interrupt_of(done: BaseException) -> Optional[KeyboardInterrupt]:
    """The SIGINT/SIGTERM behind an exit (Typer turns a KeyboardInterrupt into exit 130)."""
    seen, error = set(), done
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _interrupted(interrupt: KeyboardInterrupt) -> int:
    """One line on stderr for an interruption, and its exit code: 130 (SIGINT) or 143 (SIGTERM)."""
    note = getattr(interrupt, "xferlab_note", None)
    try:
        print(f"interrupted by {signals.signal_name(interrupt)}" + (f": {note}" if note else ""), file=sys.stderr)
    except (OSError, ValueError):
        pass
    return signals.exit_code(interrupt)


def entry() -> None:
    sys.exit(main())

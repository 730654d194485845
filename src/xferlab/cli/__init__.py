"""The `xferlab` command line. One module per verb; this one assembles them and handles errors.

Exit codes: 0 success, 2 bad input or an unavailable resource the user asked for, 1 anything else or every
measurement step failed, 3 some measurement steps failed (results kept), 143/130 SIGTERM/SIGINT.
Errors print one line, ``error: …``, on stderr; ``--debug`` (or XFERLAB_DEBUG=1) shows the traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Optional

import typer
from typer.core import TyperGroup

from .. import __version__, signals
from ..errors import XferlabError


# Click's base of usage errors, as the installed Typer has it (Typer 0.29 carries its own copy of Click).
ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def usage_line(error: Exception) -> str:
    """A usage error (a bad option value, an unknown option, a missing argument) as one line: Click's
    message with the value it refused, if the message does not show it, and where to find help."""
    message = " ".join(error.format_message().split()).rstrip(".")
    cause = error.__cause__  # Typer parses values with pydantic: its ValidationError holds the value
    details = cause.errors() if callable(getattr(cause, "errors", None)) else None
    refused = details[0].get("input") if details else None
    if isinstance(refused, str) and repr(refused) not in message:
        message = f"{message} (got {refused!r})"
    ctx = getattr(error, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        message += f"; see {ctx.command_path} {ctx.help_option_names[0]}"
    return message


class _Group(TyperGroup):
    """The root command: every usage error below it (parsing, conversion, a missing argument) is one
    line, ``error: …``, on stderr, with Click's exit code (2), in place of Typer's boxed panel."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except ClickException as error:
            _one_line(error)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ClickException as error:
            _one_line(error)


def _one_line(error: Exception):
    if type(error).__name__ == "NoArgsIsHelpError":  # the help is printed; Click's exit code (2) stays
        raise error
    print(f"error: {usage_line(error)}", file=sys.stderr)
    raise typer.Exit(getattr(error, "exit_code", 2))


#: The verbs in --help's order: (name, module of this package, attribute): a sub-app (a Typer) or one command's
#: function. A run imports only its verb's module (numpy, pydantic, DuckDB, Rich load where that verb needs them):
#: every `xferlab …` starts faster; --help, a misspelt verb and `app` (tests walk it) build them all.
VERBS = (
    ("model", "model", "app"), ("scenario", "scenario", "app"), ("measure", "measure", "app"),
    ("results", "results", "app"), ("lab", "lab", "lab"), ("schema", "schema", "schema"),
    ("inventory", "inventory", "inventory"), ("simulate", "simulate", "app"), ("fit", "fit", "fit"),
    ("advise", "advise", "app"), ("report", "report", "report"), ("study", "study", "app"),
    ("runtime", "runtime", "app"), ("sweep", "sweep", "app"), ("campaign", "campaign", "app"),
    ("kernels", "kernels", "app"),
)


def _version(value: bool) -> None:
    if value:
        print(f"xferlab {__version__}")
        raise typer.Exit()


def _root(
    version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    if debug:
        os.environ["XFERLAB_DEBUG"] = "1"


def build(verb: Optional[str] = None) -> typer.Typer:
    """The root command with every verb, or with only ``verb`` when it is one of them (its module alone imported)."""
    root = typer.Typer(
        name="xferlab",
        cls=_Group,
        help="Measure, model and simulate data movement between CPUs, memory tiers and accelerators.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root)
    only = verb if any(name == verb for name, *_ in VERBS) else None
    for name, module, attribute in VERBS:
        if only in (None, name):
            part = getattr(importlib.import_module(f".{module}", __name__), attribute)
            if isinstance(part, typer.Typer):
                root.add_typer(part, name=name)
            else:
                root.command(name)(part)
    return root


def __getattr__(name: str):
    """``app``: the whole CLI (every verb), built on first use."""
    if name == "app":
        globals()["app"] = built = build()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _verb(args: list[str]) -> Optional[str]:
    """The verb a command line runs: its first word that is not an option (the root's options take no value)."""
    return next((a for a in args if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Typer handles usage errors (exit 2) itself."""
    debug = "--debug" in (argv if argv is not None else sys.argv) or os.environ.get("XFERLAB_DEBUG") == "1"
    previous, process_argv = signals.install(), sys.argv
    if argv is not None:  # runs record sys.argv[1:] as the command that reproduces them: this call's, not the process's
        sys.argv = [process_argv[0] if process_argv else "xferlab", *argv]
    try:
        return _run(argv, debug)
    finally:
        sys.argv = process_argv
        signals.restore(previous)


def _run(argv: list[str] | None, debug: bool) -> int:
    try:
        build(_verb(sys.argv[1:] if argv is None else argv))(args=argv, prog_name="xferlab", standalone_mode=True)
    except SystemExit as done:
        interrupt = signals.behind(done)  # Typer turns a KeyboardInterrupt into exit 130
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
    except Exception as error:  # a signal that cut an import short: ImportError raised from it
        interrupt = signals.behind(error)
        if interrupt is None:
            raise
        return _interrupted(interrupt)
    return 0


def _interrupted(interrupt: KeyboardInterrupt) -> int:
    """One line on stderr for an interruption, and its exit code: 130 (SIGINT) or 143 (SIGTERM)."""
    note = signals.note_of(interrupt)
    try:
        print(f"interrupted by {signals.signal_name(interrupt)}" + (f": {note}" if note else ""), file=sys.stderr)
    except (OSError, ValueError):
        pass
    return signals.exit_code(interrupt)


def entry() -> None:
    sys.exit(main())

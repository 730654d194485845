"""One name per concept across the CLI: every command's options are walked from the Typer app, and an
option name means the same thing (the same metavar, so the same parser) wherever it appears; an option
of the table in cli/common.py (TABLE) has there its one default and help text, with its named variants,
and no command declares such a flag on its own. The renamed options and commands and the combinations
that used to be accepted and ignored are refused in one line. Bad input tried: each old option name,
each old command spelling (`simulate SYSTEM WORKFLOW`, `study NAME`, with control characters and a
300-character name), each option given where it does not apply."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import typer.main

from xferlab.cli import app
from xferlab.cli.common import TABLE

#: Option name -> the one metavar (value grammar) it has everywhere. A name missing here may appear
#: in one command only; a name here must have this metavar in every command that has it.
ONE_MEANING = {
    "--plot": "FILE",        # one plot file
    "--plots": "DIR",        # a folder of plots
    "--chunk": "SIZE",       # one chunk size, bytes
    "--chunks": "LIST",      # chunk sizes to sweep
    "--sizes": "LIST",       # byte sizes
    "--size": "SIZE",        # bytes
    "--iterations": "N",     # timed repetitions
    "--store": "PATH",
    "--budget": "TIME",
    "--timeout": "TIME",
    "--links": "FILE",
    "--device": "N",
    "--precision": "P",
    "--max-time": "TIME",
}


def _commands(group, prefix: str = ""):
    if hasattr(group, "commands"):
        for name, command in group.commands.items():
            yield from _commands(command, f"{prefix} {name}".strip())
    else:
        yield prefix, group


def _options():
    """(command path, flag, the click option) for every visible option."""
    for path, name, param, _ in _uses():
        yield path, name, param


def test_every_option_name_has_one_meaning():
    found: dict[str, set] = {}
    for path, name, param in _options():
        if name in ONE_MEANING:
            found.setdefault(name, set()).add((param.metavar, path))
    wrong = sorted(f"{path} {name} {metavar}" for name, uses in found.items() for metavar, path in uses
                   if metavar != ONE_MEANING[name])
    assert not wrong, wrong
    assert {"--plot", "--plots", "--chunk", "--chunks", "--iterations"} <= set(found)  # the table is exercised


def _declared(command, param):
    """The option object the command's function was declared with (Typer keeps the function as
    ``__wrapped__`` of the command's callback)."""
    return inspect.signature(command.callback).parameters[param.name].default


def _uses():
    """(command path, flag, the click option, the object it was declared with) for every visible option."""
    root = typer.main.get_command(app)
    for path, command in _commands(root):
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option" and not param.hidden:
                for name in param.opts:
                    if name.startswith("--"):
                        yield path, name, param, _declared(command, param)


def test_every_shared_option_comes_from_the_table():
    """A flag of the table is declared only there: each use is one of its variants' objects, so the
    same object, default and help text; a copy with drifted help or default fails here."""
    declared = {flag: {id(info): variant for variant, info in variants.items()} for flag, variants in TABLE.items()}
    outside, drifted, used = [], [], set()
    for path, flag, param, info in _uses():
        if flag not in TABLE:
            continue
        variant = declared[flag].get(id(info))
        if variant is None:
            outside.append(f"{path} {flag}")
            continue
        used.add((flag, variant))
        kept = TABLE[flag][variant]
        if (param.default, param.help, param.metavar) != (kept.default, kept.help, kept.metavar):
            drifted.append(f"{path} {flag}")
    assert not outside, f"declared outside the table in cli/common.py: {outside}"
    assert not drifted, drifted
    unused = sorted(f"{flag} {variant or '(default)'}" for flag, variants in TABLE.items() for variant in variants
                    if (flag, variant) not in used)
    assert not unused, f"table rows no command uses: {unused}"


def test_one_default_and_help_per_flag_and_variant():
    """Every command's option, walked from the CLI: per flag, the (default, help) pairs found are the
    table's variants and no others (so two commands agree unless the table names their variant)."""
    found: dict[str, set] = {}
    for path, flag, param, _ in _uses():
        if flag in TABLE:
            found.setdefault(flag, set()).add((repr(param.default), param.help))
    for flag, pairs in found.items():
        allowed = {(repr(info.default), info.help) for info in TABLE[flag].values()}
        assert pairs <= allowed, (flag, pairs - allowed)
    assert {"--budget", "--timeout", "--store", "--json", "--csv", "--plots", "--precision", "--max-time", "--backend",
            "--device"} <= set(found)  # the list is in the table and used
    budgets = {info.default for info in TABLE["--budget"].values()}
    assert budgets == {None, "5m"}  # measure's none, the lab's and a study's 5m
    for variant, info in TABLE["--budget"].items():  # a variant with a default states it in its help
        assert info.default is None or f"default {info.default}" in info.help, variant


def test_the_docs_table_lists_every_shared_option():
    """docs/cli.md, 'Shared options', has a row per flag of the table."""
    text = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    section = text.split("## Shared options", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(--[a-z-]+)", section, re.M))
    assert rows == set(TABLE), (rows ^ set(TABLE))


def test_the_walk_sees_every_command():
    paths = {path for path, _, _ in _options()}
    assert {"measure memory", "measure collab", "simulate run", "simulate sweep", "study run", "study list",
            "runtime bench", "advise offload", "fit"} <= paths
    assert "model offload" not in paths  # one command, registered once (the old name is hidden and refuses)


@pytest.mark.parametrize("args, fragment", [
    (["measure", "memory", "--plot", "d"], "--plot is now --plots DIR"),
    (["measure", "device", "--plot", "d"], "--plot is now --plots DIR"),
    (["measure", "launch", "--plot", "d"], "--plot is now --plots DIR"),
    (["measure", "collab", "--plot", "d"], "--plot is now --plots DIR"),
    (["fit", "latest", "--plot", "d"], "--plot is now --plots DIR"),
    (["measure", "collab", "--size", "16Mi"], "--size is now --elements COUNT"),
    (["measure", "collab", "--iterations", "4"], "--iterations is now --math-iterations N"),
    (["runtime", "bench", "--size", "100"], "--size is now --problem-size COUNT"),
    (["model", "offload", "pcie3x16", "--bytes", "1MB"], "now `xferlab advise offload`"),
])
def test_renamed_options_name_the_new_one(cli, args, fragment):
    code, out, err = cli(*args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("args, fragment", [
    # each subcommand has only its own options (click's one line names the option and the help)
    (["simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MB,2MB", "--strategy", "direct"], "No such option: --strategy"),
    (["simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MB,2MB", "--gantt", "g.png"], "No such option: --gantt"),
    (["simulate", "sweep", "seed-testbed", "deceval", "--chunk", "1MB"], "No such option: --chunk"),
    (["simulate", "run", "seed-testbed", "deceval", "--plot", "p.png"], "No such option: --plot"),
    (["simulate", "run", "seed-testbed", "deceval", "--chunks", "1MB"], "No such option: --chunks"),
    (["study", "list", "--budget", "1m"], "No such option: --budget"),
    # the fast path (past the engine's chunk limit) has no timeline to draw
    (["simulate", "run", "seed-testbed", "deceval", "--strategy", "pipelined", "--chunk", "64B", "--gantt", "g.png"], "no timeline"),
    (["runtime", "bench", "--backend", "opencl", "--latency", "1us"], "--latency sets the emulated bus"),
    (["runtime", "bench", "--backend", "opencl", "--bandwidth", "1GB/s"], "--bandwidth sets the emulated bus"),
    (["runtime", "bench", "--problem-size", "lots"], "--problem-size 'lots' is not a count"),
])
def test_options_that_do_not_apply_are_refused(cli, tmp_path, args, fragment):
    code, out, err = cli(*args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "g.png").exists() and not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("args, fragment", [
    (["simulate", "seed-testbed", "deceval"], "`simulate seed-testbed` is now `simulate run seed-testbed`"),
    (["simulate", "seed-testbed", "deceval", "--strategy", "staged"], "`simulate seed-testbed` is now `simulate run"),
    (["simulate", "my system.yaml", "w.yaml"], "`simulate my system.yaml` is now `simulate run my system.yaml`"),
    (["study", "tiers"], "`study tiers` is now `study run tiers`"),
    (["study", "deceval", "--total", "1MiB"], "`study deceval` is now `study run deceval`"),
    (["study", "ti\x1b[2Jers"], "`study 'ti\\x1b[2Jers'` is now `study run 'ti\\x1b[2Jers'`"),
    (["study", "x" * 300], "is now `study run 'xxx"),
])
def test_old_command_spellings_name_the_new_one(cli, tmp_path, args, fragment):
    """`simulate SYSTEM WORKFLOW` and `study NAME` (before `simulate run`, `study run`): one line, exit 2,
    nothing run or stored."""
    code, out, err = cli(*args, "--store", tmp_path / "s.duckdb") if args[0] == "study" else cli(*args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1 and not out, err
    assert "'Renamed commands'" in err and len(err) < 400
    assert not (tmp_path / "s.duckdb").exists()


def test_one_count_parser():
    from xferlab.errors import BadValue
    from xferlab.units import parse_count

    assert parse_count("16Mi", "x") == 16 * 2**20 and parse_count("16M", "x") == 16_000_000 and parse_count(7, "x") == 7
    for bad in ("", "1.5K", "-3", "0", "１６", "16MiB"):  # bad input: empty, fraction, negative, zero, non-ASCII, bytes
        with pytest.raises(BadValue):
            parse_count(bad, "--elements")

"""One name per concept across the CLI: every command's options are walked from the Typer app, and an
option name means the same thing (the same metavar, so the same parser) wherever it appears. The
renamed options and the combinations that used to be accepted and ignored are refused in one line.
Bad input tried: each old option name, each option given where it does not apply."""

from __future__ import annotations

import pytest
import typer.main

from xferlab.cli import app

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
    root = typer.main.get_command(app)
    for path, command in _commands(root):
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option" and not param.hidden:
                for name in param.opts:
                    if name.startswith("--"):
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


def test_the_walk_sees_every_command():
    paths = {path for path, _, _ in _options()}
    assert {"measure memory", "measure collab", "simulate", "runtime bench", "advise offload", "fit"} <= paths
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
    (["simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MB,2MB", "--strategy", "direct"], "does not take --strategy"),
    (["simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MB,2MB", "--gantt", "g.png"], "does not take --gantt"),
    (["simulate", "sweep", "seed-testbed", "deceval", "--chunk", "1MB"], "does not take --chunk"),
    (["simulate", "seed-testbed", "deceval", "--plot", "p.png"], "--plot is for `simulate sweep`"),
    (["simulate", "seed-testbed", "deceval", "--chunks", "1MB"], "--chunks is for `simulate sweep`"),
    # the fast path (past the engine's chunk limit) has no timeline to draw
    (["simulate", "seed-testbed", "deceval", "--strategy", "pipelined", "--chunk", "64B", "--gantt", "g.png"], "no timeline"),
    (["runtime", "bench", "--backend", "opencl", "--latency", "1us"], "--latency sets the emulated bus"),
    (["runtime", "bench", "--backend", "opencl", "--bandwidth", "1GB/s"], "--bandwidth sets the emulated bus"),
    (["runtime", "bench", "--problem-size", "lots"], "--problem-size 'lots' is not a count"),
])
def test_options_that_do_not_apply_are_refused(cli, tmp_path, args, fragment):
    code, out, err = cli(*args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "g.png").exists() and not (tmp_path / "p.png").exists()


def test_one_count_parser():
    from xferlab.errors import BadValue
    from xferlab.units import parse_count

    assert parse_count("16Mi", "x") == 16 * 2**20 and parse_count("16M", "x") == 16_000_000 and parse_count(7, "x") == 7
    for bad in ("", "1.5K", "-3", "0", "１６", "16MiB"):  # bad input: empty, fraction, negative, zero, non-ASCII, bytes
        with pytest.raises(BadValue):
            parse_count(bad, "--elements")

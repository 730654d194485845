"""Every check before any work (issue 24): an output path that cannot be written, an option that does
not apply, a sweep too large to start without being asked — refused in one line, exit 2, before
anything is measured, computed or stored.

The output-path walk is derived from the CLI itself (``typer.main.get_command``): every option of
every command whose value is a path (annotated ``Path`` or with a FILE/DIR/PATH metavar) is an output
unless it is listed in ``INPUTS``, so a new output option is walked without touching this file. Each
is given ``/proc/x/out`` (nothing can be created under /proc) and ``<a regular file>/out`` (a parent
that is a file); the command must exit 2 with one ``error:`` line naming the option and the path,
print nothing on stdout, store no run and create nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from xferlab.cli import app

#: Path-valued options that are read, not written (each with what it reads).
INPUTS = {"--links": "a YAML file of links", "--spmv": "a Matrix Market file",
          "--program": "OpenCL program binaries: a folder `xferlab kernels build` wrote, or one binary file",
          "--mpi": "an MPI's compiler wrapper (mpicc) or its library, or auto|wheel",
          "--launch-agent": "a program the MPI's launcher reaches other hosts with, called as ssh is"}

#: What a command needs besides the option under test to get as far as its work, with tiny budgets so
#: that a command that failed to refuse still ends quickly. Keys: the command, or (command, option).
#: RUN stands for a run of the test store.
TINY_MEMORY = ["measure", "memory", "--size", "1MiB", "--kernels", "copy", "--iterations", "2", "--threads", "1"]
BASE: dict = {
    "lab": ["--budget", "5s"],
    "simulate run": ["seed-testbed", "deceval"],
    "simulate sweep": ["seed-testbed", "deceval", "--chunks", "1MiB,2MiB"],
    "fit": ["RUN"],
    "results export": ["RUN", "--format", "json"],
    "results show": ["RUN"],
    "results import": ["SHARD"],
    "study run": ["tiers", "--budget", "0.5s", "--iterations", "2"],  # below any step: paths must be said first
    "model time": ["pcie4x16", "--sizes", "4KiB"],
    "model compare": ["pcie4x16", "pcie3x16", "--sizes", "4KiB"],
    "model chunks": ["pcie4x16", "--total", "1MiB", "--chunks", "64KiB"],
    "scenario run": ["cxl-vs-pcie"],
    "measure memory": TINY_MEMORY[2:],
    "measure device": ["--sizes", "4KiB", "--iterations", "2", "--kinds", "pageable", "--directions", "h2d"],
    "measure launch": ["--count", "10"],
    "measure collab": ["--patterns", "histogram", "--elements", "1000", "--repeats", "2"],
    "measure network": ["--tests", "latency", "--sizes", "1", "--iterations", "2", "--warmup", "0"],
    "measure kernels": ["--size", "1MiB", "--kernels", "copy", "--iterations", "2", "--widths", "1",
                        "--memory", "device"],
    "runtime bench": ["--backend", "emulated", "--workload", "gcd", "--mode", "sync", "--repeats", "1",
                      "--latency", "1us,2us"],
    "sweep run": ["--systems", "seed-testbed", "--workflows", "deceval", "--chunks", "1MiB,2MiB"],
    "campaign run": ["--nodes", "1", "--", *TINY_MEMORY],
    "campaign node": ["--", *TINY_MEMORY],
}
PATH_METAVAR = re.compile(r"\b(FILE|DIR|PATH)\b")


def _commands(command=None, path=()):
    """(command path, click command) for every leaf command of the CLI, hidden ones included."""
    command = command or typer.main.get_command(app)
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield " ".join(path), command
        return
    for name, sub in sorted(subcommands.items()):
        yield from _commands(sub, (*path, name))


def _path_valued(param) -> bool:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return "Path" in str(annotation) or bool(PATH_METAVAR.search(param.metavar or ""))


def output_options() -> list[tuple[str, str]]:
    """(command, option) for every visible path-valued option that is not an input."""
    found = []
    for name, command in _commands():
        for param in command.params:
            if param.param_type_name != "option" or param.hidden or not _path_valued(param):
                continue
            option = max(param.opts, key=len)  # the long name
            if option not in INPUTS:
                found.append((name, option))
    return found


def test_the_walk_covers_the_known_outputs():
    """The derivation finds what the CLI has (so that the walk is not empty by a broken test)."""
    found = set(output_options())
    for expected in [("measure memory", "--plots"), ("measure network", "--plots"), ("sweep run", "--parquet"),
                     ("sweep run", "--heatmap"), ("report", "--output"), ("results export", "--output"),
                     ("lab", "--out"), ("scenario run", "--out"), ("simulate run", "--gantt"), ("campaign run", "--shards"),
                     ("measure memory", "--store"), ("measure memory", "--pmem")]:
        assert expected in found, expected
    assert not {option for _, option in found} & set(INPUTS)


def _runs(store: Path) -> list[str]:
    from xferlab.store import open_store

    if not store.exists():
        return []
    with open_store(store, read_only=True) as db:
        return [r["run_id"] for r in db.runs()]


def _in_process(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """`xferlab ARGV` run by the CLI's own entry (``cli.main``) in this process, in ``cwd``: (exit code,
    stdout, stderr). In-process keeps the walk quick (some hundred commands); a command that fails to
    refuse still only runs with the tiny budgets of BASE."""
    import contextlib
    import io
    import os

    from xferlab.cli import main

    out, err, before = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(before)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A store holding one small memory run (for `fit RUN`, `results export RUN` …) and that run as a shard."""
    from conftest import Cli

    store = tmp_path_factory.mktemp("early-store") / "xferlab.duckdb"
    run_id = Cli().json(*TINY_MEMORY, "--store", store)["run_id"]
    shard = store.parent / "shard.json"
    Cli()("results", "export", run_id, "--format", "json", "-o", shard, "--store", store, check=0)
    return store, run_id, shard


def _bad_paths(tmp: Path) -> list[tuple[str, Path]]:
    afile = tmp / "a-file"
    afile.write_text("not a folder\n")
    return [("/proc", Path("/proc/x/out")), ("a file as parent", afile / "out"),
            ("a name too long", tmp / ("n" * 300) / "out")]


@pytest.mark.parametrize("command,option", output_options(), ids=lambda v: v)
def test_every_output_path_is_checked_before_any_work(command, option, recorded, tmp_path, monkeypatch):
    """Bad input: /proc/x/out, <a regular file>/out and a 300-character folder name, for each output option."""
    source, run_id, shard = recorded
    base = BASE.get((command, option), BASE.get(command, []))
    base = [{"RUN": run_id, "SHARD": str(shard)}.get(a, a) for a in base]
    store = tmp_path / "store.duckdb"
    shutil.copy(source, store)
    monkeypatch.setenv("XFERLAB_STORE", str(store))
    before = _runs(store)
    work = tmp_path / "cwd"
    work.mkdir()
    for label, bad in _bad_paths(tmp_path):
        afile = tmp_path / "a-file"
        content = afile.read_text()
        code, out, err = _in_process([*command.split(), option, str(bad), *base], work)
        what = f"{command} {option} {bad} ({label}): {code}\n{out}\n{err}"
        assert code == 2, what
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), what
        # the option by name (the store, which may also come from XFERLAB_STORE or a default: by the word)
        assert ("store" if option == "--store" else option) in lines[0] and str(bad) in lines[0], what
        assert out == "", what
        assert _runs(store) == before, what  # nothing stored
        assert list(work.iterdir()) == [], what  # nothing created
        assert afile.read_text() == content and not Path("/proc/x").exists()


def _cli(*args, cwd=None, timeout=120, env=None):
    import os

    done = subprocess.run([sys.executable, "-m", "xferlab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})})
    return done.returncode, done.stdout, done.stderr


# --- options that do not apply are refused, not ignored ------------------------------------------------------

INAPPLICABLE = [
    # (arguments, the message): each an option given without the option or the case it applies to
    (["measure", "kernels", "--strides", "8192"], "--strides applies only with --faults"),
    (["measure", "kernels", "--offsets", "0,64"], "--offsets applies only with --align"),
    (["measure", "kernels", "--per-row", "8"], "--per-row applies only with --spmv ROWS"),
    (["measure", "kernels", "--spmv", "M.mtx", "--per-row", "8"], "--per-row applies only with --spmv ROWS"),
    (["measure", "kernels", "--structure", "banded"], "--structure applies only with --spmv ROWS"),
    (["measure", "kernels", "--spmv-type", "float"], "--spmv-type applies only with --spmv"),
    (["measure", "kernels", "--scaling", "--groups", "4"], "--groups applies only without --scaling"),
    (["measure", "network", "--tests", "allreduce", "--window", "8"], "--window applies only with bw, bibw or mbw_mr"),
    (["measure", "network", "--tests", "latency", "--bw-iterations", "5"], "--bw-iterations applies only with bw"),
    (["measure", "network", "--tests", "bw", "--iterations", "5"], "--iterations applies only with latency or multi_lat"),
    (["measure", "network", "--tests", "barrier", "--collective-sizes", "4"],
     "--collective-sizes applies only with a collective that moves data"),
    (["measure", "network", "--tests", "latency", "--collective-iterations", "5"],
     "--collective-iterations applies only with a collective"),
    (["measure", "network", "--tests", "allreduce", "--sizes", "8"], "--sizes applies only with a point-to-point test"),
    (["measure", "network", "--path", "direct"], "--path applies only with --buffers device"),
    (["measure", "network", "--device", "1"], "--device applies only with --buffers device"),
    (["measure", "device", "--chunks", "", "--total", "1MiB"], "--total applies only with --chunks"),
    (["measure", "collab", "--patterns", "histogram", "--block", "64"], "--block applies only with taskqueue"),
    (["measure", "collab", "--patterns", "histogram", "--math-iterations", "4"],
     "--math-iterations applies only with taskqueue"),
    (["runtime", "bench", "--device", "1"], "--device applies only with --backend opencl"),
    (["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--chunks", "1MiB", "--heatmap-axes",
      "link,chunk"], "--heatmap-axes applies only with --heatmap"),
    (["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--chunks", "1MiB", "--connect-timeout",
      "5s"], "--connect-timeout applies only with --scheduler"),
    (["sweep", "run", "SWEEP", "--name", "other"], "--name applies only with the grid as lists"),
    (["simulate", "run", "seed-testbed", "deceval", "--strategy", "staged", "--chunk", "1MiB"],
     "--chunk applies only with the pipelined strategy"),
    (["advise", "whatif", "seed-testbed", "deceval", "--replace", "pcie3x16=pcie4x16", "--strategy", "direct",
      "--chunk", "1MiB"], "--chunk applies only with the pipelined strategy"),
    (["study", "list", "--budget", "1m"], "No such option: --budget"),  # `study list` has no options but its own
]


@pytest.mark.parametrize("args,message", INAPPLICABLE, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_an_option_that_does_not_apply_is_refused(args, message, tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("kind: sweep\nname: s\nsystems: [seed-testbed]\nworkflows: [deceval]\nstrategies: [staged, direct]\n")
    args = [str(sweep) if a == "SWEEP" else a for a in args]
    code, out, err = _cli(*args, cwd=tmp_path, env={"XFERLAB_STORE": str(tmp_path / "s.duckdb")})
    assert code == 2 and err.startswith(f"error: {message}") and len(err.strip().splitlines()) == 1, (code, out, err)
    assert out == "" and not (tmp_path / "s.duckdb").exists()


def test_an_option_given_where_it_applies_is_taken(tmp_path):
    """The same options where they apply pass the check (they reach the work, or the next check)."""
    sweep = ["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged,pipelined",
             "--chunks", "1MiB,2MiB", "--heatmap", tmp_path / "h.png", "--heatmap-axes", "strategy,chunk", "--store",
             tmp_path / "s.duckdb"]
    code, out, err = _cli(*sweep, cwd=tmp_path)
    assert code == 0 and (tmp_path / "h.png").exists(), err
    code, out, err = _cli("simulate", "run", "seed-testbed", "deceval", "--strategy", "pipelined", "--chunk", "4MiB", "--json",
                          cwd=tmp_path)
    assert code == 0 and json.loads(out)["chunks"] > 1, err


# --- a sweep too large to start without being asked -----------------------------------------------------------

def _huge_sweep(path: Path, links: int, chunks: int) -> int:
    """A sweep file of 1 system x ``links`` links x 1 workflow x (staged + ``chunks`` pipelined) points."""
    import yaml

    path.write_text(yaml.safe_dump({
        "kind": "sweep", "name": "huge", "systems": ["seed-testbed"], "replace": "host-gpu",
        "links": [f"simple:bandwidth={k}GB/s" for k in range(1, links + 1)], "workflows": ["deceval"],
        "strategies": ["staged", "pipelined"], "chunks": [4096 * (k + 1) for k in range(chunks)]}))
    return links * (1 + chunks)


def test_a_huge_sweep_is_refused_with_its_count_and_estimate(tmp_path):
    grid = tmp_path / "huge.yaml"
    points = _huge_sweep(grid, 100, 8000)
    assert points == 800_100
    store = tmp_path / "s.duckdb"
    # the unfixed code starts evaluating (about half an hour here): the timeout ends it, and the test fails
    code, out, err = _cli("sweep", "run", grid, "--store", store, cwd=tmp_path, timeout=90)
    line = err.strip()
    assert code == 2 and len(line.splitlines()) == 1 and out == "", err
    assert line.startswith("error: the grid has 800,100 points, above the limit of 100,000 (--max-points)"), line
    assert "give --max-points 800100 or more" in line and re.search(r"about [\d.]+ \w+ in this process \([\d.]+ \S+ a "
                                                                       r"point, timed on \d+ points here\)", line), line
    assert not store.exists()  # nothing stored, no store made
    # a lower limit, and one that is not a count
    code, _, err = _cli("sweep", "run", grid, "--max-points", "0", "--store", store, cwd=tmp_path)
    assert code == 2 and err.startswith("error: --max-points 0: at least 1"), err
    code, _, err = _cli("sweep", "run", grid, "--max-points", "-5", "--store", store, cwd=tmp_path)
    assert code == 2 and "--max-points" in err and len(err.strip().splitlines()) == 1, err
    assert not store.exists()


def test_a_sweep_says_its_count_and_estimate_and_runs_up_to_the_limit(tmp_path):
    grid = tmp_path / "small.yaml"
    points = _huge_sweep(grid, 2, 3)  # 8 points
    store = tmp_path / "s.duckdb"
    code, _, err = _cli("sweep", "run", grid, "--max-points", points - 1, "--store", store, cwd=tmp_path)
    assert code == 2 and f"the grid has {points} points, above the limit of {points - 1}" in err, err
    assert not store.exists()
    code, out, err = _cli("sweep", "run", grid, "--max-points", points, "--store", store, "--json", cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out)["evaluated"] == points
    said = err.strip().splitlines()[0]
    assert re.fullmatch(rf"sweep huge: {points} points to evaluate, about [\d.]+ \S+ in this process \([\d.]+ \S+ a "
                        rf"point, timed on {points} points here\)", said), said
    # resumed: the points already stored are not counted again
    code, out, err = _cli("sweep", "run", grid, "--resume", "--store", store, "--json", cwd=tmp_path)
    assert code == 0 and err.startswith(f"sweep huge: 0 points to evaluate ({points} reused)"), err

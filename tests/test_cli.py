"""The CLI contract of docs/cli.md: commands, --json rows with units in their names, exit codes,
one-line errors naming the bad value."""

import csv
import io

import pytest

from xferlab import __version__


def test_version(cli):
    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"xferlab {__version__}"


def test_help_lists_the_verbs(cli):
    code, out, _ = cli("--help")
    assert code == 0
    for verb in ("model", "scenario", "lab", "schema"):
        assert verb in out


def test_a_verb_imports_only_its_own_module(tmp_path):
    """`xferlab VERB …` imports the CLI module of VERB alone (every command's start-up; the suite starts the CLI
    hundreds of times), and a misspelt verb still gets the whole list of verbs. The shared option table
    (cli/common.py) loads no link model: `results` never needs one."""
    import subprocess
    import sys

    from xferlab.cli import VERBS

    show = "import sys; from xferlab.cli import main; main({}); print(sorted(m for m in sys.modules if m.startswith('xferlab.cli.')))"
    done = subprocess.run([sys.executable, "-c", show.format(["schema", "--help"])], capture_output=True, text=True)
    assert done.stdout.splitlines()[-1] == "['xferlab.cli.schema']", done.stdout[-300:]
    done = subprocess.run([sys.executable, "-c", show.format(["shcema"])], capture_output=True, text=True)
    assert "No such command 'shcema'" in done.stderr
    assert all(f"'xferlab.cli.{module}'" in done.stdout for _, module, _ in VERBS)
    links = "import sys; from xferlab.cli import main; main(['results', '--help']); print('xferlab.links' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", links], capture_output=True, text=True)
    assert done.stdout.splitlines()[-1] == "False", done.stdout[-300:]


def test_model_time_json(cli):
    doc = cli.json("model", "time", "pcie3x16", "cxl-seed", "--sizes", "64B..4KiB", "--op", "readwrite")
    assert doc["command"] == "model time"
    rows = doc["results"]
    assert len(rows) == 2 * 7
    assert set(rows[0]) == {"link", "op", "size_bytes", "seconds", "bandwidth_bytes_per_second",
                            "streaming_bytes_per_second"}
    pcie = [r for r in rows if r["link"] == "pcie3x16"]
    assert [r["size_bytes"] for r in pcie] == [64, 128, 256, 512, 1024, 2048, 4096]
    assert all(a["seconds"] < b["seconds"] for a, b in zip(pcie, pcie[1:]))
    assert pcie[0]["seconds"] == pytest.approx(738.77e-9 + 64 / 8.1214e9, rel=1e-4)


def test_model_time_csv(cli):
    code, out, _ = cli("model", "time", "nvlink2", "--sizes", "1KiB,1MiB", "--csv", check=0)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["size_bytes"] for r in rows] == ["1024", "1048576"]


def test_model_table_states_units(cli):
    code, out, _ = cli("model", "time", "pcie3x16", "--sizes", "64B", check=0)
    assert "64 B" in out and "ns" in out and "MB/s" in out


def test_compare_converges_to_the_penalty(cli):
    doc = cli.json("model", "compare", "pcie3x16", "cxl-seed:penalty=0.9", "--sizes", "64B,1GiB", "--op", "readwrite")
    first, last = doc["results"]
    assert 14.0 <= first["time_ratio"] <= 18.7 and first["faster"] == "cxl-seed:penalty=0.9"
    assert last["time_ratio"] == pytest.approx(0.9, rel=1e-3) and last["faster"] == "pcie3x16"


def test_crossover_exact(cli):
    doc = cli.json("model", "crossover", "pcie3x16", "cxl-seed:penalty=0.6", "--op", "readwrite")
    (row,) = doc["results"]
    assert row["size_bytes"] == 13049 and row["faster_below"] == "cxl-seed:penalty=0.6"


def test_crossover_none(cli):
    code, out, _ = cli("model", "crossover", "pcie3x16", "pcie4x16", check=0)
    assert "no crossover" in out and "pcie4x16 is faster throughout" in out


def test_chunks(cli):
    doc = cli.json("model", "chunks", "pcie3x16", "--total", "1.6GB", "--chunks", "64B,1MiB,1.6GB")
    rows = doc["results"]
    assert [r["transfers"] for r in rows] == [25_000_000, 1526, 1]
    assert rows[0]["seconds"] > rows[1]["seconds"] > rows[2]["seconds"]


def test_offload(cli):
    doc = cli.json("advise", "offload", "pcie3x16", "--bytes", "1MiB", "--host-time", "1ms", "--device-time", "0.5ms")
    (row,) = doc["results"]
    assert row["pays"] is True and row["p_over_o"] > 1
    assert row["communication_seconds"] == pytest.approx(2 * (738.77e-9 + 2**20 / 12.9921e9), rel=1e-3)
    doc = cli.json("advise", "offload", "pcie3x16", "--bytes", "64MiB", "--host-time", "1ms", "--device-time", "0.5ms")
    assert doc["results"][0]["pays"] is False


def test_presets_and_show(cli):
    names = [r["name"] for r in cli.json("model", "presets")["results"]]
    for name in ("pcie3x16", "pcie5x16", "cxl2x16", "cxl3x16", "nvlink2", "nvlink4", "c2c", "ib-edr"):
        assert name in names
    fields = {r["field"]: r["value"] for r in cli.json("model", "show", "pcie3x8")["results"]}
    assert fields["tlp_bytes_per_second"] * 8 / 1e9 == pytest.approx(57.885, rel=1e-4)


def test_plot_written(cli, tmp_path):
    path = tmp_path / "t.png"
    cli("model", "time", "pcie3x16", "cxl2x16", "--sizes", "64B..1GiB", "--plot", path, check=0)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_json_stdout_is_only_json(cli):
    code, out, err = cli("model", "time", "pcie3x16", "--sizes", "64B", "--json", "--plot", "/tmp/xferlab-test-plot.png")
    assert code == 0
    import json

    json.loads(out)


# Bad input: one line on stderr naming the value and what is allowed, exit code 2, no traceback.
@pytest.mark.parametrize("args, fragment", [
    (["model", "time", "pcie3x16", "--sizes", "-5"], "'-5'"),
    (["model", "time", "pcie3x16", "--sizes", "12XB"], "'12XB'"),
    (["model", "time", "pcie9x3", "--sizes", "64B"], "gen=9"),
    (["model", "time", "pcie3x16:mps=100", "--sizes", "64B"], "mps=100"),
    (["model", "time", "cxl2x16:penalty=0", "--sizes", "64B"], "penalty=0"),
    (["model", "time", "cxl2x16:penalty=1.2", "--sizes", "64B"], "penalty=1.2"),
    (["model", "time", "warp9", "--sizes", "64B"], "'warp9'"),
    (["model", "time", "pcie3x16:colour=red", "--sizes", "64B"], "unknown parameter 'colour'"),
    (["model", "time", "pcie3x16", "--sizes", "64B", "--op", "copy"], "--op 'copy'"),
    (["model", "chunks", "pcie3x16", "--total", "0", "--chunks", "1KiB"], "'0'"),
    (["model", "crossover", "pcie3x16", "cxl2x16", "--min", "1MiB", "--max", "1KiB"], "--max"),
    (["advise", "offload", "pcie3x16", "--bytes", "1KiB", "--host-time", "soon", "--device-time", "1ms"], "'soon'"),
    (["scenario", "run", "nope"], "'nope'"),
    (["model", "time", "pcie3x16", "--sizes", "64B", "--plot", "out.gif"], "out.gif"),
    (["model", "time", "pcie3x16", "--sizes", "64B", "--json", "--csv"], "--json"),
    (["schema", "widgets"], "'widgets'"),
])
def test_bad_input(cli, args, fragment):
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert fragment in err
    assert "Traceback" not in err and out == ""


def test_usage_errors_exit_2(cli):
    code, _, err = cli("model", "time", "pcie3x16")  # --sizes missing
    assert code == 2 and "--sizes" in err


def test_debug_shows_the_traceback(cli):
    code, _, err = cli("--debug", "model", "time", "pcie9x3", "--sizes", "64B")
    assert code != 0 and "Traceback" in err


def test_an_in_process_run_records_its_own_command(tmp_path, monkeypatch):
    """main(argv) called inside another program (a notebook, a test) stores argv as the run's command, not
    the host process's command line, and puts the host's sys.argv back afterwards."""
    import sys

    from xferlab.cli import main
    from xferlab.store import open_store

    store = tmp_path / "s.duckdb"
    monkeypatch.setattr(sys, "argv", ["host-program", "--its-own-option"])
    argv = ["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval",
            "--strategies", "staged", "--store", str(store)]
    assert main(argv) == 0
    assert sys.argv == ["host-program", "--its-own-option"]
    with open_store(store, read_only=True) as db:
        (run,) = db.runs()
        assert db.run(run["run_id"])["argv"] == argv

"""One JSON vocabulary (src/xferlab/schemas): every field name follows the naming rule, docs/cli.md's table is
made from it, every command with --json has a schema, and every command's real output, run here with
cheap arguments, is strict JSON its schema accepts (renamed fields fail; numbers are numbers).

Bad input tried: `schema output` with an unknown command, with no command, `schema links extra`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import typer
from jsonschema import Draft202012Validator

from json_output import check_output, strict_loads
from xferlab.cli import app
from xferlab.schemas import FIELDS, OUTPUTS, output_schema, schema_name
from xferlab.schemas.commands import names_used
from xferlab.schemas.fields import breaks_rule, markdown

ROOT = Path(__file__).resolve().parents[1]

DEVICE = ["measure", "device", "--kinds", "pinned", "--directions", "h2d", "--sizes", "1KiB,1MiB,8MiB", "--chunks", "",
          "--min-time", "0", "--no-launch"]  # sizes far apart: the copy time must grow for fit
NETWORK = ["measure", "network", "--tests", "latency,bw", "--sizes", "1,256Ki,4Mi", "--iterations", "4", "--warmup", "1",
           "--bw-iterations", "2", "--bw-warmup", "0", "--window", "4", "--timeout", "60s"]  # sizes far apart: fit's growth
MEMORY = ["measure", "memory", "--size", "1MiB", "--kernels", "copy", "--iterations", "2", "--threads", "1"]
SWEEP = ["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged"]

#: Every command with --json, once: (the command its output names, its arguments without --json, runs before it,
#: what it costs: light (model only), measures (seconds of measuring), heavy (a whole study or the lab: tens of
#: seconds on the 2-vCPU VM, each under its --budget where it takes one)). The one list of commands and their
#: spellings (the lead changes `simulate`/`study` here when their subcommands move).
COMMANDS = [
    ("model presets", ["model", "presets"], [], "light"),
    ("model show", ["model", "show", "pcie3x8"], [], "light"),
    ("model time", ["model", "time", "pcie3x16", "cxl-seed", "--sizes", "64B..4KiB"], [], "light"),
    ("model compare", ["model", "compare", "pcie3x16", "cxl-seed", "--sizes", "64B,1GiB"], [], "light"),
    ("model crossover", ["model", "crossover", "pcie3x16", "cxl-seed:penalty=0.6", "--op", "readwrite"], [], "light"),
    ("model chunks", ["model", "chunks", "pcie3x16", "--total", "1.6GB", "--chunks", "64B,1MiB"], [], "light"),
    ("model requests", ["model", "requests", "cxl2x16", "cxl-seed", "--outstanding", "1,64"], [], "light"),
    ("advise offload", ["advise", "offload", "pcie3x16", "--bytes", "1MiB", "--host-time", "1ms", "--device-time", "0.5ms"],
     [], "light"),
    ("advise links", ["advise", "links", "pcie3x16", "nvlink2", "c2c", "--sizes", "64B,1GiB"], [], "light"),
    ("advise bias", ["advise", "bias", "cxl2x16:outstanding=16"], [], "light"),
    ("advise chunk", ["advise", "chunk", "seed-testbed", "deceval"], [], "light"),
    ("advise whatif", ["advise", "whatif", "seed-testbed", "deceval", "--replace", "pcie3x16=c2c", "--strategy", "staged"],
     [], "light"),
    ("inventory", ["inventory"], [], "light"),
    ("scenario list", ["scenario", "list"], [], "light"),
    ("scenario run", ["scenario", "run", "cxl-vs-pcie"], [], "light"),
    ("scenario run", ["scenario", "run", "deceval"], [], "light"),
    ("simulate run", ["simulate", "run", "seed-testbed", "deceval"], [], "light"),
    ("simulate run", ["simulate", "run", "seed-testbed-cxl", "deceval", "--strategy", "coherent", "--bias", "device"], [],
     "light"),
    ("simulate run", ["simulate", "run", "seed-testbed-cxl", "deceval", "--strategy", "pipelined", "--chunk", "64MB"], [], "light"),
    ("simulate run", ["simulate", "run", "seed-testbed-cxl", "deceval", "--strategy", "pipelined", "--chunk", "4KiB"], [], "light"),
    ("simulate sweep", ["simulate", "sweep", "seed-testbed", "deceval", "--chunks", "1MiB,16MiB"], [], "light"),
    ("study list", ["study", "list"], [], "light"),
    ("sweep run", SWEEP, [], "light"),
    ("measure memory", MEMORY, [], "measures"),
    ("measure device", DEVICE, [], "measures"),
    ("measure device --matrix", ["measure", "device", "--matrix", "--sizes", "64KiB", "--iterations", "2", "--min-time", "0"],
     [], "measures"),
    ("measure launch", ["measure", "launch", "--args", "0", "--count", "200", "--pin", "0"], [], "measures"),
    ("measure collab", ["measure", "collab", "--patterns", "histogram,taskqueue", "--elements", "4Ki", "--repeats", "2"],
     [], "measures"),
    ("measure kernels", ["measure", "kernels", "--size", "64KiB", "--iterations", "2", "--kernels", "copy", "--widths", "1",
                         "--memory", "device"], [], "measures"),
    ("measure network", NETWORK, [], "measures"),
    ("runtime bench", ["runtime", "bench", "--backend", "emulated", "--workload", "gcd", "--mode", "sync",
                       "--repeats", "1"], [], "heavy"),  # the emulated bus spins: 3 s idle, 30 s and more on a busy VM
    ("results list", ["results", "list"], [MEMORY], "measures"),
    ("results show", ["results", "show", "latest"], [MEMORY], "measures"),
    ("results import", ["results", "import", "run.json", "--store", "other.duckdb"],
     [MEMORY, ["results", "export", "latest", "--format", "json", "--output", "run.json"]], "measures"),
    ("fit", ["fit", "latest"], [DEVICE], "measures"),
    ("fit", ["fit", "latest"], [MEMORY], "measures"),
    ("fit", ["fit", "latest"], [NETWORK], "measures"),
    ("campaign run", ["campaign", "run", "--nodes", "2", "--shards", "shards", "--json", "--", *SWEEP], [], "measures"),
    ("study run launch", ["study", "run", "launch", "--count", "100"], [], "measures"),
    ("study run granularity", ["study", "run", "granularity", "--total", "1Mi", "--chunks", "64Ki,256Ki", "--repeats", "2"], [],
     "measures"),
    ("study run tiers", ["study", "run", "tiers", "--iterations", "2", "--budget", "10s"], [], "heavy"),
    ("study run offload", ["study", "run", "offload", "--workloads", "gcd", "--latencies", "1us", "--repeats", "1"], [], "heavy"),
    ("study run deceval", ["study", "run", "deceval", "--total", "4MiB", "--chunks", "256KiB,1MiB", "--held-out", "512KiB",
                       "--evaluations", "1", "--repeats", "2"], [], "heavy"),
    ("study run characterize", ["study", "run", "characterize", "--budget", "20s"], [], "heavy"),
    ("lab", ["lab", "--out", "lab", "--budget", "2s"], [], "heavy"),
]


def test_every_field_name_follows_the_rule():
    """<quantity>_<statistic>_<unit>: a unit's name ends in it, a unitless field is of a declared kind, a
    statistic comes right before the unit."""
    broken = {name: why for name, f in FIELDS.items() if (why := breaks_rule(f))}
    assert not broken, broken


def test_the_rule_catches_what_the_issue_names():
    from xferlab.schemas.fields import Field

    assert breaks_rule(Field("size", "integer", False, "bytes", "")) == "is in bytes but its name does not end in _bytes"
    assert "declared count" in breaks_rule(Field("elements_bytes", "integer", False, "count", ""))
    assert "statistic 'best'" in breaks_rule(Field("best_bandwidth_bytes_per_second", "number", True, "bytes_per_second", ""))
    assert breaks_rule(Field("latency_median_ci_low_seconds", "number", True, "seconds", "")) is None


def test_every_field_is_used_and_every_name_used_is_declared():
    used = set().union(*(names_used(o) for o in OUTPUTS.values()))
    assert not used - set(FIELDS), f"undeclared: {sorted(used - set(FIELDS))}"
    assert not set(FIELDS) - used, f"declared but printed by no command: {sorted(set(FIELDS) - used)}"


def test_docs_table_is_the_vocabulary():
    text = (ROOT / "docs" / "cli.md").read_text()
    start, end = "<!-- vocabulary: start -->\n", "<!-- vocabulary: end -->"
    assert start in text and end in text
    shown = text[text.index(start) + len(start):text.index(end)]
    assert shown == markdown(), ("docs/cli.md's vocabulary table is not current: put the output of "
                                 "`python -c 'from xferlab.schemas.fields import markdown; print(markdown(), end=\"\")'` "
                                 "between its markers")


def _json_commands(group, path=()):
    """Every command of the CLI that takes --json, as its words."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _json_commands(command, (*path, name))
        elif any("--json" in p.opts for p in command.params):
            yield " ".join((*path, name))


def test_every_command_with_json_has_a_schema_and_a_run_here():
    commands = list(_json_commands(typer.main.get_command(app)))
    assert len(commands) > 25
    missing = [c for c in commands if not any(k == c or k.startswith(c + " ") for k in OUTPUTS)]
    assert not missing, f"commands with --json and no schema in src/xferlab/schemas/shapes.py: {missing}"
    orphans = [k for k in OUTPUTS if not any(k == c or k.startswith(c + " ") for c in commands)]
    assert not orphans, f"schemas of no command: {orphans}"
    assert {name for name, *_ in COMMANDS} == set(OUTPUTS), "every schema is checked against a real run below"


def _run(cli, args):
    code, out, err = cli(*args)
    assert code == 0, (args, code, err[-2000:])
    return out


def _params():
    """COMMANDS as parameters: a whole study or the lab is marked heavy (`-m "not heavy"` leaves them out)."""
    return [pytest.param(*c, id=" ".join(c[1][:3]), marks=[pytest.mark.heavy] if c[3] == "heavy" else [])
            for c in COMMANDS]


@pytest.mark.parametrize("name, args, before, cost", _params())
def test_real_output_matches_its_schema(cli, name, args, before, cost):
    """The command's real stdout (cli checks it against its schema; here again, with its name)."""
    for setup in before:
        _run(cli, setup)
    argv = args if "--json" in args else [*args, "--json"]
    doc = check_output(_run(cli, argv))
    assert schema_name(doc["command"]) == name


def test_a_renamed_field_or_a_number_as_text_fails(cli):
    doc = strict_loads(cli("model", "time", "pcie3x16", "--sizes", "1KiB", "--json", check=0)[1])
    validator = Draft202012Validator(output_schema("model time"))
    assert validator.is_valid(doc)
    renamed = copy.deepcopy(doc)
    renamed["results"][0]["size"] = renamed["results"][0].pop("size_bytes")
    assert not validator.is_valid(renamed)
    as_text = copy.deepcopy(doc)
    as_text["results"][0]["seconds"] = "1.2 µs"
    assert not validator.is_valid(as_text)
    extra = copy.deepcopy(doc)
    extra["surprise"] = 1
    assert not validator.is_valid(extra)
    with pytest.raises(ValueError, match="NaN is not JSON"):
        strict_loads('{"a": NaN}')


def test_schema_output_prints_a_draft_2020_12_schema(cli):
    code, out, err = cli("schema", "output", "measure", "device", check=0)
    schema = json.loads(out)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    rows = schema["properties"]["results"]["items"]
    assert rows["additionalProperties"] is False and "median_seconds" in rows["required"]
    assert "seconds" in rows["properties"]["median_seconds"]["description"]
    assert json.loads(cli("schema", "system", check=0)[1])["title"] == "System"  # the YAML files' schemas stay


@pytest.mark.parametrize("args, shown", [
    (["schema", "output", "measure", "nothing"], "'measure nothing' is not a command with --json; known: advise bias"),
    (["schema", "output"], "output needs a command; known: advise bias"),
    (["schema", "links", "extra"], "schema links takes no more words (got 'extra')"),
])
def test_schema_output_refuses_an_unknown_command(cli, args, shown):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and shown in err, err

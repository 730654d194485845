"""Property-based tests (Hypothesis) of the newer commands' options, run in this process through
``xferlab.cli.main`` (no interpreter start per example): `measure network`, `measure kernels`,
`measure collab`, `study run` (and the old spelling `study NAME`), `sweep run` and its sweep file, `campaign run`, `results import` and its
shards. Whatever value an option gets, the command either succeeds or exits 2 with exactly one
stderr line ``error: …`` that names the value: never a traceback, never exit 1, and every run the
store held before is there after, unchanged.

Each command starts from options that make a real run the tiniest one (one latency point of 1 B, a
4 KiB array, 1 Ki elements, one workload at one latency, a two-point sweep), so a generated value
that is valid measures for real and cheaply; the values that are generated lean to the hostile ones.
Bad input tried (generated): wrong types, negative, zero, huge (2^40 .. 2^70), NaN and inf strings,
empty, unicode, control characters, 5000-character values, path-like values; sweep files of random
YAML; shards with random JSON put in place of the run's fields and samples, and truncated shards."""

from __future__ import annotations

import copy
import itertools
import json
import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xferlab.cli import main
from xferlab.store import open_store
from xferlab.units import format_size

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

WORDS = ["", " ", "0", "-1", "-0", "1e309", "-1e309", "nan", "NaN", "inf", "-inf", "1e30", "2.5", "0x10", "1_000",
         str(2**31), str(2**40), str(2**63), str(2**70), "abc", "ä", "１", "\u202e", "a\nb", "\t", "x" * 5000,
         "/proc/x", "../../etc/passwd", "~", "-", "--", "1KiB", "1TiB", "1e-300", "4,", ",", "1..0", "1s", "-1s",
         "0s", "1e400s"]
#: Whole numbers: small ones (a valid count measures in no time) or past every limit (a valid 10^8
#: latency iterations would measure for minutes).
COUNTS = st.one_of(st.integers(-2**70, 16), st.integers(2**27, 2**70))
HOSTILE = st.one_of(st.sampled_from(WORDS), st.text(max_size=8), COUNTS.map(str), st.floats().map(repr))
#: For --timeout and --budget: a valid tiny time (1e-5 s) only kills or skips the run, as asked;
#: these values are the hostile ones.
TIMES = st.sampled_from(["0", "-1", "nan", "inf", "-inf", "", "abc", "1e400s", "1e30s", "x" * 5000, "ä", "1e-300"])

SWEEP = ["sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged,direct"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store holding one run already (a two-point sweep: real, and fast)."""
    path = tmp_path_factory.mktemp("props") / "s.duckdb"
    assert main([*SWEEP, "--store", str(path)]) == 0
    return path


def _runs(path) -> dict:
    with open_store(path, read_only=True) as db:
        return {r["run_id"]: (r["status"], r["samples"]) for r in db.runs()}


def _forms(value: str) -> set[str]:
    """How a message may name ``value``: as given, escaped, cut, or a number in its normal form."""
    text = value.strip()
    forms = {text[:20], repr(text)[1:-1][:20], repr(value)[1:-1][:20]}
    try:
        number = float(text.replace("_", ""))
        forms |= {f"{number:g}", repr(number)}
        if math.isfinite(number) and number == int(number):
            forms |= {str(int(number)), f"{int(number):,}", format_size(int(number))}
    except (ValueError, OverflowError):
        pass
    try:
        from xferlab.units import parse_size

        size = parse_size(text, "x", allow_zero=True)
        forms |= {str(size), format_size(size)}
    except Exception:  # noqa: BLE001 - not a size: the forms above
        pass
    return {f for f in forms if f}


def outcome(capfd, store, argv: list[str], value: str | None, option: str | None = None) -> int:
    """Run ``xferlab ARGV --store STORE`` in this process; check the contract; the exit code."""
    before = _runs(store)
    capfd.readouterr()
    at = argv.index("--") if "--" in argv else len(argv)
    code = main([*argv[:at], "--store", str(store), *argv[at:]])
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    after = _runs(store)
    assert all(after.get(k) == v for k, v in before.items()), ("a stored run was lost or changed", argv)
    if code == 0:
        return 0
    assert code == 2, (argv, code, lines[-5:])
    assert len(lines) == 1 and lines[0].startswith("error: "), (argv, lines[-5:])
    if value is not None:
        named = value.strip() == "" and ("''" in lines[0] or "empty" in lines[0] or (option or "?") in lines[0])
        # an option that does not apply to this command line is refused naming the option, whatever its value
        named = named or (option is not None and lines[0].startswith(f"error: {option} applies only with"))
        assert named or any(f in lines[0] for f in _forms(value)), (value, lines[0])
    return 2


def _draw(data, options: dict):
    option = data.draw(st.sampled_from(sorted(options)), label="option")
    value = data.draw(options[option], label="value")
    return option, value


def _given(base: list[str], options: dict):
    """A test: ``base`` with one of ``options`` (option -> its values) set to a generated value."""
    @SETTINGS
    @given(data=st.data())
    def test(capfd, store, data):
        option, value = _draw(data, options)
        outcome(capfd, store, [*base, f"{option}={value}"], value, option)

    return test


NETWORK = ["measure", "network", "--tests", "latency", "--sizes", "1", "--iterations", "1", "--warmup", "0",
           "--timeout", "60s"]
test_measure_network_options = _given(NETWORK, {
    o: HOSTILE for o in ("--ranks", "--tests", "--sizes", "--collective-sizes", "--iterations", "--warmup",
                         "--bw-iterations", "--bw-warmup", "--collective-iterations", "--collective-warmup",
                         "--large-from", "--window", "--buffers", "--backend", "--device", "--path", "--node",
                         "--bind")} | {"--budget": TIMES, "--timeout": TIMES})

KERNELS = ["measure", "kernels", "--size", "4KiB", "--iterations", "2", "--kernels", "copy", "--widths", "1",
           "--memory", "device", "--timeout", "60s"]
test_measure_kernels_options = _given(KERNELS, {
    o: HOSTILE for o in ("--backend", "--device", "--kernels", "--size", "--memory", "--types", "--widths",
                         "--groups", "--instances", "--iterations", "--max-time", "--peer", "--spmv",
                         "--structure", "--spmv-type")} | {"--budget": TIMES, "--timeout": TIMES})

COLLAB = ["measure", "collab", "--patterns", "histogram", "--elements", "1Ki", "--repeats", "2", "--timeout", "60s"]
test_measure_collab_options = _given(COLLAB, {
    o: HOSTILE for o in ("--backend", "--device", "--patterns", "--elements", "--host-threads", "--device-share",
                         "--block", "--math-iterations", "--repeats")} | {"--budget": TIMES, "--timeout": TIMES})

#: Each study at its cheapest; a value none of them takes is refused as not applying.
STUDIES = {
    "offload": (["--workloads", "gcd", "--latencies", "0", "--repeats", "1"], ("--workloads", "--latencies", "--repeats")),
    "granularity": (["--total", "64KiB", "--chunks", "16KiB", "--repeats", "1"], ("--total", "--chunks", "--repeats",
                                                                                   "--device")),
    "deceval": ([], ("--depth", "--held-out", "--evaluations", "--chunks")),
    "tiers": ([], ("--iterations", "--pmem-node")),
    "launch": ([], ("--count", "--backend")),
}
#: Values a study option cannot take: a deceval or tiers run with a valid one would measure for minutes.
NEVER = st.one_of(st.sampled_from([w for w in WORDS if w not in ("1KiB", "1TiB", "1s", "2.5", "1e30", str(2**31))]),
                  st.text(st.characters(blacklist_categories=("Nd",)), min_size=1, max_size=6),
                  st.integers(-2**70, 0).map(str))


@SETTINGS
@given(data=st.data())
def test_study_options(capfd, store, data):
    name = data.draw(st.sampled_from(sorted(STUDIES)), label="study")
    base, options = STUDIES[name]
    cheap = name in ("offload", "granularity")
    option, value = _draw(data, {o: HOSTILE if cheap else NEVER for o in options} | {"--budget": TIMES})
    outcome(capfd, store, ["study", "run", name, *base, f"{option}={value}"], value, option)


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.sampled_from(["", "nosuch", "ä", "x" * 300, "../etc", "TIERS", "/", "-", "\n"]), st.text(max_size=12)))
def test_study_names(capfd, store, name):
    outcome(capfd, store, ["study", "run", f"{name}"] if not name.startswith("-") else ["study", "run", "--", name], name)
    if name.strip() and not name.startswith("-") and name not in ("list", "run"):  # the old spelling, refused
        assert outcome(capfd, store, ["study", name], name) == 2


test_sweep_run_options = _given(SWEEP, {
    o: HOSTILE for o in ("--name", "--systems", "--workflows", "--strategies", "--baseline", "--workers", "--batch",
                         "--connect-timeout", "--replace")} | {"--chunks": HOSTILE, "--heatmap-axes": HOSTILE})

SWEEP_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                                      st.sampled_from(WORDS[:40]), st.text(max_size=6),
                                      st.sampled_from(["seed-testbed", "deceval", "staged", "pipelined", "host-gpu",
                                                       "pcie3x16", "1MiB", "sweep"])),
                            lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=6), inner, max_size=2)),
                            max_leaves=6)
GOOD_SWEEP = {"kind": "sweep", "name": "s", "systems": ["seed-testbed"], "workflows": ["deceval"],
              "strategies": ["staged", "direct"]}


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(sorted(GOOD_SWEEP) + ["chunks", "baseline", "costs", "links", "replace", "x"]),
                       SWEEP_VALUES, max_size=3))
def test_sweep_files(capfd, store, tmp_path_factory, changes):
    """A good sweep file with fields replaced by random YAML values (any type, nested)."""
    path = tmp_path_factory.mktemp("sweep") / "sweep.yaml"
    path.write_text(yaml.safe_dump({**GOOD_SWEEP, **changes}))
    outcome(capfd, store, ["sweep", "run", str(path)], None)


CAMPAIGN = ["campaign", "run", "--nodes", "1"]
NODE = ["--", "sweep", "run", "--systems", "seed-testbed", "--workflows", "deceval", "--strategies", "staged"]


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_campaign_run_options(capfd, store, data):
    """A valid value runs one local node for real (seconds): the values lean to the refused ones."""
    option, value = _draw(data, {"--nodes": st.sampled_from(["0", "-1", "257", str(2**40), "nan", "", "1"]),
                                 "--mads": st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e309", "", "x"]),
                                 "--min-deviation": st.sampled_from(["-1", "2", "nan", "inf", "", "abc", "150%", "-5%",
                                                                     "1e400", "ä"])})
    outcome(capfd, store, [*CAMPAIGN, f"{option}={value}", *NODE], value, option)


JSON_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                                     st.text(max_size=6), st.sampled_from(["2026-01-01T00:00:00Z", "latest", "../x", ""])),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                           max_leaves=8)
RUN_KEYS = ["run_id", "started_utc", "finished_utc", "command", "argv", "status", "params", "summary", "inventory",
            "versions"]
SAMPLE_KEYS = ["suite", "test", "metric", "value", "size_bytes", "threads", "seq", "warmup", "seconds", "bytes",
               "params", "validated", "kernel_args", "iteration"]


@pytest.fixture(scope="module")
def shard(store, tmp_path_factory):
    path = tmp_path_factory.mktemp("shard") / "run.json"
    with open_store(store, read_only=True) as db:
        run_id = db.runs()[-1]["run_id"]
    assert main(["results", "export", run_id, "--format", "json", "-o", str(path), "--store", str(store)]) == 0
    return json.loads(path.read_text())


FRESH = itertools.count()


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.tuples(st.just("run"), st.sampled_from(RUN_KEYS), JSON_VALUES),
                          st.tuples(st.just("sample"), st.sampled_from(SAMPLE_KEYS), JSON_VALUES),
                          st.tuples(st.just("top"), st.sampled_from(["run", "samples", "failures"]), JSON_VALUES)),
                min_size=1, max_size=3),
       st.one_of(st.none(), st.integers(0, 400)))
def test_results_import_shards(capfd, store, shard, tmp_path_factory, changes, cut):
    """A shard `results export` wrote, its run's fields, a sample's fields or whole parts replaced by
    random JSON; or the file cut short. The run id is made new, so a good shard is imported for real."""
    doc = copy.deepcopy(shard)
    doc["run"]["run_id"] = f"20990101-000000-{next(FRESH):04x}"
    for part, key, value in changes:
        if part == "run" and isinstance(doc["run"], dict):
            doc["run"][key] = value
        elif part == "sample" and isinstance(doc["samples"], list) and doc["samples"] and isinstance(doc["samples"][0], dict):
            doc["samples"][0][key] = value
        elif part == "top":
            doc[key] = value
    path = tmp_path_factory.mktemp("import") / "shard.json"
    text = json.dumps(doc)
    path.write_text(text if cut is None else text[:cut])
    outcome(capfd, store, ["results", "import", str(path)], None)

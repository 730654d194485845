"""Hostile input to the model side of the CLI: each test names the bad input it tries, and expects
exit code 2, one `error: …` line naming the value, and no traceback."""

import json
from pathlib import Path

import pytest

from xferlab.errors import BadValue
from xferlab.system.models import Workflow, _cycle

SYSTEM = Path(__file__).resolve().parent.parent / "src" / "xferlab" / "scenarios" / "systems" / "seed-testbed.yaml"


def refused(cli, *args, says):
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("error: "), err
    for text in ([says] if isinstance(says, str) else says):
        assert text in err, err
    return err


def test_non_utf8_yaml_is_refused_naming_the_byte(cli, tmp_path):
    """Bad input: a workflow and a links file with bytes 0xff 0xfe (not UTF-8)."""
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"kind: workflow\nname: \xff\xfe\n")
    refused(cli, "simulate", "run", SYSTEM, bad, says=["is not UTF-8 text", "0xff"])
    links = tmp_path / "links.yaml"
    links.write_bytes(b"links:\n  x\xff: {kind: simple}\n")
    refused(cli, "model", "time", "pcie3x16", "--links", links, "--sizes", "1KiB", says="is not UTF-8 text")


def test_a_10000_character_link_is_refused_before_any_file_lookup(cli):
    """Bad input: a LINK of 10,000 characters (it used to reach the profile lookup: File name too long)."""
    refused(cli, "model", "time", "a" * 10_000, "--sizes", "1KiB", says="is 10000 characters long")


def test_links_from_a_device_or_a_huge_file_are_refused(cli, tmp_path):
    """Bad input: --links /dev/zero (memory without end) and a 5 MiB links file (over the 4 MiB cap)."""
    refused(cli, "model", "time", "pcie3x16", "--links", "/dev/zero", "--sizes", "1KiB", says="is not a regular file")
    big = tmp_path / "big.yaml"
    big.write_text("links:\n" + "".join(f"  l{i}: {{kind: simple, bandwidth: 1GB/s, latency: 1us}}\n"
                                         for i in range(110_000)))
    assert big.stat().st_size > 4 * 2**20
    refused(cli, "model", "time", "pcie3x16", "--links", big, "--sizes", "1KiB", says="larger than 4 MiB")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    """Bad input: --links naming a FIFO that nobody writes to (opening it waited for ever)."""
    import os
    import threading

    from xferlab.errors import BadFile
    from xferlab.links.presets import load_links

    fifo = tmp_path / "links.yaml"
    os.mkfifo(fifo)
    outcome: dict = {}

    def read():
        try:
            load_links(fifo)
        except BadFile as error:
            outcome["error"] = str(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # release the blocked open before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert "is not a regular file" in outcome.get("error", ""), outcome


def _laughs(levels: int) -> list[str]:
    """YAML lines defining anchors a0..a<levels-1>, each a list of ten of the one before: 10^levels values."""
    lines = ["a0: &a0 [" + ", ".join(["1KiB"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return lines


def test_aliases_that_expand_a_file_a_millionfold_are_refused(cli, tmp_path):
    """Bad input: a "billion laughs" links file (8 lines of nested aliases standing for 10^7 sizes: the
    link check walked and printed them, 96 s and an 82 MB line) and a workflow with the same; a
    recursive alias (`&a [*a]`)."""
    links = tmp_path / "links.yaml"
    links.write_text("links:\n  bomb:\n    kind: piecewise\n" + "".join(f"    {line}\n" for line in _laughs(7))
                     + "    bandwidths: *a6\n    breakpoints: *a6\n")
    err = refused(cli, "model", "time", "bomb", "--links", links, "--sizes", "1KiB", says="has aliases (*name) that expand")
    assert len(err) < 400
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text("kind: workflow\nname: w\n" + "".join(f"{line}\n" for line in _laughs(7)) + "tasks: *a6\n")
    refused(cli, "simulate", "run", SYSTEM, workflow, says="has aliases (*name) that expand")
    workflow.write_text("kind: workflow\nname: w\ntasks: &a [*a]\n")
    refused(cli, "simulate", "run", SYSTEM, workflow, says="contains itself")
    merged = tmp_path / "merged.yaml"  # anchors and merge keys used as meant stay accepted
    merged.write_text("links:\n  mine: &base {kind: simple, bandwidth: 1GB/s, latency: 1us}\n"
                      "  yours: {<<: *base, latency: 2us}\n")
    code, out, err = cli("model", "time", "yours", "--links", merged, "--sizes", "1KiB", "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["seconds"] == pytest.approx(2e-6 + 1024 / 1e9)  # the merge's latency


@pytest.mark.parametrize("size", ["１KiB", "٣MB", "1e38B", "2EiB"])
def test_sizes_in_other_digits_or_beyond_1_eib_are_refused(cli, size):
    """Bad input: full-width and Arabic-Indic digits (accepted by Python's \\d), and sizes over 1 EiB
    (1e38 B gave `inf s`)."""
    refused(cli, "model", "time", "pcie3x16", "--sizes", size, says=f"size '{size}'")


@pytest.mark.parametrize("link, says", [("simple:bandwidth=1e-300B/s,latency=1us", "under 1 B/s"),
                                        ("simple:bandwidth=1GB/s,latency=1e308s", "over 1e+09 s")])
def test_rates_and_times_that_made_an_infinite_time_are_refused(cli, link, says):
    """Bad input: a bandwidth of 1e-300 B/s and a latency of 1e308 s (1 EiB took `inf s`, exit 0)."""
    refused(cli, "model", "time", link, "--sizes", "1EiB", says=[says, "error: link"])


@pytest.mark.parametrize("sizes", ["x" * 100_000, "1KiB,1KiB.." + "9" * 100_000 + "Q", "1KiB,\n"])
def test_a_huge_or_multi_line_value_gives_one_short_error_line(cli, sizes):
    """Bad input: a 100,000-character --sizes (the error repeated all of it) and a newline in a list
    (it split the error over two lines)."""
    err = refused(cli, "model", "time", "pcie3x16", "--sizes", sizes, says="--sizes")
    assert len(err) < 300, len(err)


@pytest.mark.parametrize("link", ["pcie３x16", "pcie3x١٦", "eth１００"])
def test_preset_names_with_other_digits_are_refused(cli, link):
    """Bad input: full-width and Arabic-Indic digits in a preset's name (`pcie３x16` was pcie3x16)."""
    refused(cli, "model", "time", link, "--sizes", "1KiB", says=["is not a preset", "preset names are ASCII"])


@pytest.mark.parametrize("digits, says", [(5000, "has a value that cannot be read"), (4000, "must be positive and finite")])
def test_integers_too_large_for_python_or_a_float_are_refused(cli, tmp_path, digits, says):
    """Bad input: a bandwidth of 5,000 digits (Python refuses to read an integer of over 4,300 digits:
    a ValueError traceback) and of 4,000 digits (an OverflowError converting it to a float)."""
    links = tmp_path / "links.yaml"
    links.write_text(f"links:\n  x: {{kind: simple, bandwidth: {'9' * digits}, latency: 1us}}\n")
    err = refused(cli, "model", "time", "x", "--links", links, "--sizes", "1KiB", says=says)
    assert len(err) < 400


def test_a_duplicate_override_key_is_refused(cli):
    """Bad input: `pcie3x16:mps=128,mps=256` (the second silently won)."""
    refused(cli, "model", "time", "pcie3x16:mps=128,mps=256", "--sizes", "1KiB", says="'mps' is given twice")


def test_a_links_file_may_not_redefine_a_preset_or_repeat_a_name(cli, tmp_path):
    """Bad input: a --links file defining `pcie3x16`, and two --links files both defining `mine`."""
    redefine = tmp_path / "redefine.yaml"
    redefine.write_text("links:\n  pcie3x16: {kind: simple, bandwidth: 1GB/s, latency: 1us}\n")
    refused(cli, "model", "time", "pcie3x16", "--links", redefine, "--sizes", "1KiB", says="is a preset's name")
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    for path in (one, two):
        path.write_text("links:\n  mine: {preset: pcie3x16}\n")
    refused(cli, "model", "time", "mine", "--links", one, "--links", two, "--sizes", "1KiB",
            says="is defined in both")


@pytest.mark.parametrize("name", ["y" * 200_000, "gp\nu"])
def test_names_in_files_are_short_printable_text(cli, tmp_path, name):
    """Bad input: a 200,000-character device name in a workflow and a link name in a --links file, and
    names with a newline (each was echoed whole: 200 kB on one line, or an error over two lines)."""
    import yaml

    workflow = tmp_path / "workflow.yaml"
    workflow.write_text(yaml.safe_dump({"kind": "workflow", "name": "w", "edges": [],
                                        "tasks": [{"name": "a", "device": name, "seconds": 1e-3}]}))
    err = refused(cli, "simulate", "run", SYSTEM, workflow, says=["tasks[0].device", "1 to 120 printable characters"])
    assert len(err) < 400
    links = tmp_path / "links.yaml"
    links.write_text(yaml.safe_dump({"links": {name: {"kind": "simple", "bandwidth": "1GB/s"}}}))
    err = refused(cli, "model", "time", "pcie3x16", "--links", links, "--sizes", "1KiB", says="link name")
    assert len(err) < 400
    links.write_text(yaml.safe_dump({"links": {"mine": {"kind": name}}}))
    err = refused(cli, "model", "time", "mine", "--links", links, "--sizes", "1KiB", says="is not a link kind")
    assert len(err) < 400


def _chain(n: int) -> dict:
    return {"kind": "workflow", "name": "chain",
            "tasks": [{"name": f"t{i}", "device": "fpga" if i % 2 else "gpu", "seconds": 1e-3} for i in range(n)],
            "edges": [{"from": f"t{i}", "to": f"t{i + 1}", "bytes": 1_000_000} for i in range(n - 1)]}


def test_100000_chained_tasks_validate_and_a_cycle_at_the_end_is_found():
    """Valid input that broke the recursive cycle check (RecursionError from ~1,200 tasks)."""
    data = _chain(100_000)
    assert len(Workflow.model_validate(data).tasks) == 100_000
    data["edges"].append({"from": "t99999", "to": "t0", "bytes": 1})
    with pytest.raises(ValueError, match=r"cycle: t0 -> t1 -> t2 -> t3 -> … \(100000 tasks\) … -> t99997 -> t99998 -> t99999 -> t0"):
        Workflow.model_validate(data)
    assert _cycle(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("c", "d"), ("d", "c")]) == ["c", "d", "c"]


def test_a_long_chain_builds_and_pipelines_in_linear_time():
    """Valid input that was quadratic: 30,000 chained tasks (each task's inbound edges were found by
    scanning every edge: minutes at 16,000 tasks, the 4 MiB file's ~46,000 never finished), and a
    pipelined chain whose long error listed every stage (megabytes on one line)."""
    from xferlab.sim.flows import build, pipelined
    from xferlab.system.yamlfile import load
    from xferlab.system.models import System

    system = load(SYSTEM, System, "system")
    workflow = Workflow.model_validate(_chain(30_000))
    _, ops = build(system, workflow)
    assert len(ops) == 30_000 + 2 * 29_999  # a task each, two hops (through the host) per edge
    assert ops[-1].name == "t29999" and ops[-1].after == ("t29998->t29999#1",)
    with pytest.raises(BadValue, match=r"^pipeline stage 6 of 59999 uses 'gpu->fpga' again: [^\[]*$"):
        pipelined(system, workflow, chunk=2**16)


def test_a_3000_task_chain_simulates_through_the_cli(cli, tmp_path):
    """Valid input: a workflow of 3,000 chained tasks (a traceback at 1,200 before)."""
    import yaml

    path = tmp_path / "chain.yaml"
    path.write_text(yaml.safe_dump(_chain(3000)))
    code, out, err = cli("simulate", "run", SYSTEM, path)
    assert code == 0, err
    assert "critical path: t0 ->" in out and "t2999" in out


def test_profile_names_that_cannot_be_file_names_are_refused():
    """Bad input: profile names with a slash, a NUL, a leading dot, 121 characters."""
    from xferlab.links.presets import check_profile_name

    for name in ("a/b", "a\0b", ".hidden", "x" * 121, ""):
        with pytest.raises(BadValue, match="profile name"):
            check_profile_name(name)

"""Issue 24, "one line": bad input that gave a traceback, a boxed panel, a run that failed late or a
message that misled is refused with one line, ``error: …``, naming the value and what is allowed,
exit 2, before anything is recorded. Each case names the bad input it tries."""

import gzip
import json

import pytest

LONG = "y" * 300  # longer than a file name may be (255): os.stat fails with "File name too long"


def one_line(code, err, *fragments):
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.mark.parametrize("args, fragments", [
    (["measure", "network", "--ranks", "abc"], ["--ranks", "'abc'", "xferlab measure network -h"]),
    (["measure", "network", "--ranks", "2.5"], ["--ranks", "'2.5'"]),
    (["measure", "network", "--iterations", "1e30"], ["--iterations", "'1e30'"]),
    (["measure", "network", "--bogus"], ["No such option: --bogus"]),
    (["measure", "network", "--ranks"], ["'--ranks' requires an argument"]),
    (["simulate", "run"], ["Missing argument", "xferlab simulate run -h"]),
    (["results", "show", "a", "b", "c"], ["unexpected extra argument", "b c"]),
    (["study", "run", "tiers", "--pmem-node", "x"], ["--pmem-node", "'x'"]),
    (["measure", "kernels", "--faults=3"], ["'--faults' does not take a value"]),
    (["nosuchcommand"], ["No such command 'nosuchcommand'"]),
    (["--bogus"], ["No such option: --bogus"]),
])
def test_usage_errors_are_one_line(cli, args, fragments):
    """Click's usage errors, over several commands: one `error: …` line naming the value, exit 2."""
    code, out, err = cli(*args)
    one_line(code, err, *fragments)
    assert out == ""


def test_help_and_no_arguments_still_print_help(cli):
    code, out, _ = cli()
    assert code == 2 and "Usage: xferlab" in out  # no_args_is_help: Click's exit code 2, as before
    code, out, _ = cli("measure")
    assert code == 2 and "Usage: xferlab measure" in out
    code, out, _ = cli("measure", "network", "-h")
    assert code == 0 and "--ranks" in out
    code, out, _ = cli("--version")
    assert code == 0 and out.startswith("xferlab ")


def _mtx(path, header, body="1 1 1.0\n", compress=False):
    text = f"%%MatrixMarket matrix {header}\n{body}"
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    return path


@pytest.mark.parametrize("name, header, body, fragments", [
    ("rows.mtx", "coordinate real general\n99999999999 5 1", "1 1 1.0\n", ["99,999,999,999 x 5", "memory available"]),
    ("cols.mtx", "coordinate real general\n5 99999999999 1", "1 1 1.0\n", ["99,999,999,999 columns", "2^32 - 1"]),
    ("nnz.mtx", "coordinate real general\n10 10 4000000000", "1 1 1.0\n", ["4,000,000,000 entries", "hold at most"]),
    ("dense.mtx", "array real general\n200000 200000", "1.0\n", ["40,000,000,000 values", "hold at most"]),
    ("nnz.mtx.gz", "coordinate real general\n10 10 4000000000", "1 1 1.0\n", ["4,000,000,000 entries", "memory available"]),
])
def test_a_matrix_header_is_bounded_before_anything_is_allocated(cli, tmp_path, name, header, body, fragments):
    """Headers that declared 99999999999 rows or columns, nnz = 4e9 (plain and gzipped) or a dense
    200000 x 200000: numpy's _ArrayMemoryError traceback before the fix."""
    path = _mtx(tmp_path / name, header + "\n", body, compress=name.endswith(".gz"))
    store = tmp_path / "s.duckdb"
    code, _, err = cli("measure", "kernels", "--spmv", path, "--store", store)
    one_line(code, err, f"--spmv '{path}'", *fragments)
    assert not store.exists()


@pytest.mark.parametrize("options, fragments", [
    (["--nodes", "2", "--shards", "/proc/x"], ["--shards '/proc/x' cannot be written"]),
    (["--nodes", "2", "--shards", "{file}"], ["is an existing file; give a folder"]),
    (["--nodes", "2", "--shards", "{file}/sub"], ["is a file, not a folder"]),
    (["--launcher", '"unterminated'], ["--launcher", "cannot be split into words", "No closing quotation"]),
    (["--launcher", ""], ["--launcher '' is empty"]),
    (["--launcher", "   "], ["is empty"]),
    (["--launcher", "{tmp}"], ["cannot be run", "Permission denied"]),
])
def test_campaign_refuses_shards_and_launchers_it_cannot_use(cli, tmp_path, options, fragments):
    """FileNotFoundError, FileExistsError, shlex's ValueError and PermissionError tracebacks before the
    fix; an empty launcher ran one local node and exited 0."""
    (tmp_path / "afile").write_text("x")
    options = [o.format(file=tmp_path / "afile", tmp=tmp_path) for o in options]
    store = tmp_path / "s.duckdb"
    code, _, err = cli("campaign", "run", *options, "--store", store, "--", "inventory")
    one_line(code, err, *fragments)
    assert not store.exists()


@pytest.mark.parametrize("args, fragment", [
    ([LONG, "deceval"], "is neither a file nor a packaged system; packaged: "),
    (["seed-testbed", LONG], "is neither a file nor a packaged workflow; packaged: deceval"),
])
def test_a_name_no_file_can_have_is_an_unknown_name(cli, args, fragment):
    """A 300-character SYSTEM or WORKFLOW: OSError 'File name too long' before the fix."""
    code, _, err = cli("simulate", "run", *args)
    line = one_line(code, err, fragment, "(300 characters)")
    assert len(line) < 400


@pytest.mark.parametrize("args, fragment", [
    (["--tests", "allreduce", "--collective-sizes", "0"], "--collective-sizes 0 B: allreduce takes messages of at least 4 B"),
    (["--tests", "reduce,bcast", "--collective-sizes", "2"], "reduce takes messages of at least 4 B"),
    (["--tests", "bw", "--sizes", "0"], "--sizes 0 B: bw takes messages of at least 1 B"),
])
def test_network_sizes_no_test_takes_are_refused(cli, tmp_path, args, fragment):
    """`--collective-sizes 0` with allreduce ran, stored a run and failed 'no samples' before the fix."""
    store = tmp_path / "s.duckdb"
    code, _, err = cli("measure", "network", *args, "--store", store)
    one_line(code, err, fragment)
    assert not store.exists()


def test_a_pmem_node_that_does_not_exist_is_refused(cli, tmp_path):
    """`study tiers --pmem-node 77` exited 0 before the fix (no --pmem: the node was never looked at)."""
    store = tmp_path / "s.duckdb"
    code, _, err = cli("study", "run", "tiers", "--pmem-node", "77", "--store", store)
    one_line(code, err, "--pmem-node 77: not a NUMA node with CPUs here; allowed: ")
    assert not store.exists()


@pytest.mark.parametrize("args, fragment", [
    (["--widths", "-1"], "--widths '-1' is not a vector width (elements per work-item); allowed: 1, 2, 4, 8, 16"),
    (["--widths", "1.5"], "--widths '1.5' is not a vector width"),
    (["--groups", "-2"], "--groups '-2' is not a number of work-groups"),
    (["--instances", "x"], "--instances 'x' is not a number of kernel instances"),
])
def test_lane_widths_and_counts_are_not_called_bytes(cli, tmp_path, args, fragment):
    """`--widths -1` said "a positive number of bytes" before the fix."""
    code, _, err = cli("measure", "kernels", *args, "--store", tmp_path / "s.duckdb")
    line = one_line(code, err, fragment)
    assert "bytes" not in line


@pytest.mark.parametrize("body, fragment", [
    ("systems: [nosuch]\nworkflows: [deceval]\n", "system 'nosuch' is neither a file nor a packaged system; packaged: "),
    ("systems: [seed-testbed]\nreplace: host-gpu\nlinks: [nolink]\nworkflows: [deceval]\n",
     "link 'nolink' is not a preset or a defined link"),
    ("systems: [seed-testbed]\nworkflows: [nowf]\n", "workflow 'nowf' is neither a file nor a packaged workflow"),
])
def test_a_sweeps_unknown_name_comes_before_its_strategies_details(cli, tmp_path, body, fragment):
    """Before the fix the first two said "the pipelined strategy needs chunk sizes" (no chunks given)."""
    path = tmp_path / "sweep.yaml"
    path.write_text("kind: sweep\nname: t\n" + body)
    code, _, err = cli("sweep", "run", path, "--store", tmp_path / "s.duckdb")
    line = one_line(code, err, fragment)
    assert "chunk" not in line


@pytest.mark.parametrize("name, text", [("file.json", '{"a": 1}\n'), ("table.csv", "a,b\n1,2\n"),
                                        ("notes.parquet", "x" * 100)])
def test_a_store_that_is_another_kind_of_file_is_named(cli, tmp_path, name, text):
    """`results list --store file.json` printed DuckDB's "Cannot launch in-memory database in read-only
    mode!"; `measure memory --store file.json` failed after opening it as an empty database in memory."""
    path = tmp_path / name
    path.write_text(text)
    code, _, err = cli("results", "list", "--store", path)
    one_line(code, err, f"store '{path}' is not a DuckDB database file, so not an xferlab store")
    code, _, err = cli("measure", "memory", "--size", "1MiB", "--iterations", "2", "--threads", "1", "--store", path)
    one_line(code, err, f"store '{path}' is not a DuckDB database file")
    assert path.read_text() == text

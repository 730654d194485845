"""Counting conventions and units (issue 28, "Say what each number means"): one table
(src/xferlab/measure/conventions.py) that the tables' footers, --json and the report read.

Each rule is checked against what the code measures, not only against its text: STREAM's bytes per
kernel are the probe's (McCalpin: copy 2 words, scale 2, add 3, triad 3, no write-allocate); a
bidirectional copy's row carries the sum and each direction; an MPI bibw row OSU's sum and each
direction. Bad input tried: --directions with a direction that does not exist (exit 2, one line).
"""

from __future__ import annotations

import json

import pytest

from xferlab.measure import conventions
from xferlab.measure.probe import run_probe
from xferlab.measure.sizeclass import DEVICE_ARRAYS, HOST_ARRAYS


def test_every_bandwidth_test_has_a_rule_and_the_json_metadata_gives_it():
    for suite, tests in (("device", ("h2d", "d2h", "d2d", "bidir", "chunks")), ("memory", tuple(HOST_ARRAYS)),
                         ("kernels", tuple(DEVICE_ARRAYS)), ("network", ("bw", "bibw", "mbw_mr"))):
        meta = conventions.metadata(suite, tests)
        assert set(meta["counting"]) == {conventions.counting(suite, t) for t in tests}
        assert meta["units"]["rates"].startswith("GB/s = 10^9 B/s")
    assert conventions.counting("network", "latency") is None
    assert "copy 2, scale 2, add 3, triad 3" in conventions.CONVENTIONS["stream"].counting
    assert "copy 2, mul 2, add 3, triad 3, dot 2" in conventions.CONVENTIONS["babelstream"].counting
    assert conventions.footer("device", ["h2d"])[-1] == conventions.UNITS_LINE


def test_streams_bytes_are_counted_as_mccalpin_counts_them():
    """The probe's own byte count per kernel is the arrays the convention names, write-allocate apart."""
    size = 8 * 2**20
    run = run_probe(["stream", "--kernels", "copy,scale,add,triad", "--size", str(size), "--iterations", "2",
                     "--threads", "1"], timeout=120)
    assert run.ok, run.failure
    samples = [r for r in run.records if r.get("kernel") and r.get("bytes")]
    assert {r["kernel"] for r in samples} == {"copy", "scale", "add", "triad"}
    for r in samples:
        assert r["bytes"] == HOST_ARRAYS[r["kernel"]] * size, r
        assert r["write_allocate_bytes"] == size  # one array written: counted apart, not in bytes


def test_a_bidirectional_copy_shows_each_direction_and_the_sum(cli, tmp_path):
    """On the OpenCL device (PoCL): the bidir row's bandwidth is both directions' bytes / the window, and each
    direction half of it; the table labels the sum; --json names the rules; PoCL has no link."""
    args = ["measure", "device", "--kinds", "pageable", "--sizes", "64KiB,1MiB", "--directions", "h2d,bidir",
            "--chunks", "", "--no-launch", "--iterations", "3", "--min-time", "0", "--store", tmp_path / "s.duckdb"]
    code, out, err = cli(*args)
    if code == 2 and "not available" in err:
        pytest.skip(err.strip())
    assert code == 0, err
    assert "bidir (sum)" in out and "each way" in out
    assert f"counting (bidir): {conventions.CONVENTIONS['bidir'].counting}" in out
    assert conventions.UNITS_LINE in out
    doc = json.loads(cli(*args, "--json", check=0)[1])
    assert set(doc["conventions"]["counting"]) == {"copy", "bidir"}
    assert doc["conventions"]["units"] == conventions.UNITS
    for row in doc["results"]:
        assert row["counting"] == ("bidir" if row["direction"] == "bidir" else "copy")
        if row["direction"] == "bidir":
            assert row["median_bytes_per_second"] == pytest.approx(2 * row["size_bytes"] / row["median_seconds"])
            assert row["direction_median_bytes_per_second"] == pytest.approx(row["median_bytes_per_second"] / 2)
        else:
            assert row["median_bytes_per_second"] == pytest.approx(row["size_bytes"] / row["median_seconds"])
            assert "direction_median_bytes_per_second" not in row
        assert row["peak_source"].startswith("no link: a CPU device")
    (bidir,) = [r for r in doc["overview"] if r["direction"] == "bidir"]
    assert bidir["direction_bandwidth_bytes_per_second"] == pytest.approx(bidir["bandwidth_bytes_per_second"] / 2)
    code, _, err = cli("measure", "device", "--directions", "h2d,sideways", "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: direction 'sideways' is not known; allowed:")


def test_an_mpi_bibw_row_carries_osus_sum_and_each_direction(cli, tmp_path):
    code, out, err = cli("measure", "network", "--tests", "bw,bibw", "--sizes", "4KiB", "--json",
                         "--store", tmp_path / "s.duckdb")
    if code != 0 and "MPI" in err and "not" in err:
        pytest.skip(err.strip().splitlines()[-1])
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc["conventions"]["counting"]) == {"osu-bw", "osu-bibw"}
    (bibw,) = [r for r in doc["results"] if r["test"] == "bibw"]
    assert bibw["counting"] == "osu-bibw" and bibw["iteration_bytes"] == 2 * 4096 * 64  # both windows: OSU's sum
    assert bibw["direction_mean_bytes_per_second"] == pytest.approx(bibw["mean_bytes_per_second"] / 2)
    assert bibw["peak_source"].startswith("no link: ranks on one host")
    (bw,) = [r for r in doc["results"] if r["test"] == "bw"]
    assert bw["counting"] == "osu-bw" and "direction_mean_bytes_per_second" not in bw


def test_device_stream_counts_as_babelstream_and_says_so(cli, tmp_path):
    """measure kernels on the OpenCL device: each kernel's bandwidth is BabelStream's arrays x the array bytes /
    the time (dot 2, add 3), the footer names the rule and --json carries it."""
    args = ["measure", "kernels", "--kernels", "copy,add,dot", "--size", "1MiB", "--iterations", "3",
            "--store", tmp_path / "s.duckdb"]
    code, out, err = cli(*args)
    if code == 2 and "not available" in err:
        pytest.skip(err.strip())
    assert code == 0, err
    assert f"counting (babelstream): {conventions.CONVENTIONS['babelstream'].counting}" in out
    doc = json.loads(cli(*args, "--json", check=0)[1])
    assert list(doc["conventions"]["counting"]) == ["babelstream"]
    for row in doc["results"]:
        arrays = DEVICE_ARRAYS[row["kernel"]]
        assert row["median_bytes_per_second"] == pytest.approx(arrays * row["size_bytes"] / row["median_seconds"]), row

import pytest

from xferlab.links.simple import SimpleLink


def test_latency_plus_bandwidth():
    link = SimpleLink(bandwidth="12.4GB/s", latency="738.77ns")
    assert link.time(12.4e9) == pytest.approx(1 + 738.77e-9)
    assert link.effective_bandwidth(2**40) == pytest.approx(12.4e9, rel=1e-6)


def test_loggp_overhead_adds_once_per_message():
    link = SimpleLink(bandwidth=1e9, latency=1e-6, overhead=2e-6)
    assert link.time(1000) == pytest.approx(1e-6 + 2e-6 + 1e-6)
    assert link.startup == pytest.approx(3e-6)


def test_streaming_rate_keeps_the_per_message_overhead():
    """Back-to-back transfers overlap the latency but each pays o: n / (o + n / b). 64 B at 10 GB/s
    with o = 2 us: 64 / 2.0064 us = 31.90 MB/s (not 10 GB/s); without o it is b at every size."""
    link = SimpleLink(bandwidth="10GB/s", latency="1us", overhead="2us")
    assert link.streaming_rate(64) == pytest.approx(64 / (2e-6 + 6.4e-9))
    assert link.streaming_rate([64, 2**30]) == pytest.approx([31.898e6, 2**30 / (2e-6 + 2**30 / 1e10)], rel=1e-4)
    assert SimpleLink(bandwidth="10GB/s", latency="1us").streaming_rate(64) == pytest.approx(1e10)


def test_model_time_streaming_column_with_overhead(cli):
    """`model time` puts the same figure in streaming_bytes_per_second, beside n / t (latency and o in)."""
    row = cli.json("model", "time", "simple:bandwidth=10GB/s,latency=1us,overhead=2us", "--sizes", "64B")["results"][0]
    assert row["streaming_bytes_per_second"] == pytest.approx(64 / 2.0064e-6)
    assert row["bandwidth_bytes_per_second"] == pytest.approx(64 / 3.0064e-6)


def test_read_bandwidth():
    link = SimpleLink(bandwidth=1e9, read_bandwidth=5e8)
    assert link.time(1e9, "read") == pytest.approx(2.0)
    assert link.time(1e9, "write") == pytest.approx(1.0)


@pytest.mark.parametrize("bad", ["0GB/s", "-3GB/s", "fast"])
def test_rejects_bad_bandwidth(bad):
    with pytest.raises(ValueError, match="rate"):
        SimpleLink(bandwidth=bad)

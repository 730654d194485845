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


def test_read_bandwidth():
    link = SimpleLink(bandwidth=1e9, read_bandwidth=5e8)
    assert link.time(1e9, "read") == pytest.approx(2.0)
    assert link.time(1e9, "write") == pytest.approx(1.0)


@pytest.mark.parametrize("bad", ["0GB/s", "-3GB/s", "fast"])
def test_rejects_bad_bandwidth(bad):
    with pytest.raises(ValueError, match="rate"):
        SimpleLink(bandwidth=bad)

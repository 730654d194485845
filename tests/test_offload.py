import pytest

from xferlab.advise.offload import break_even_bytes, offload
from xferlab.links.simple import SimpleLink

LINK = SimpleLink(bandwidth=1e9, latency=1e-6)


def test_rule_t_minus_t_prime_greater_than_2d():
    # d = 1 us + 1 ms for 1 MB: 2d = 2.002 ms.
    v = offload(LINK, 1e6, 1e6, host_seconds=0.010, device_seconds=0.007)
    assert v.communication_seconds == pytest.approx(2 * 1.001e-3)
    assert v.pays and v.p_over_o == pytest.approx(0.003 / 0.002002)
    assert not offload(LINK, 1e6, 1e6, 0.010, 0.008).pays  # saves 2 ms < 2.002 ms


def test_p_over_o_above_one_iff_rule_holds():
    for device in (0.001, 0.005, 0.00799, 0.00801, 0.009):
        v = offload(LINK, 1e6, 1e6, 0.010, device)
        assert v.pays == (v.p_over_o > 1)


def test_break_even_size():
    n = break_even_bytes(LINK, saved_seconds=0.0030005007)
    # 2 (1 us + n / 1 GB/s) < 3.0005007 ms  <=>  n < 1,499,250.35 B
    assert n == 1_499_250
    assert break_even_bytes(LINK, saved_seconds=1e-6) == 0


def test_negative_times_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        offload(LINK, 1, 1, -1.0, 0.0)

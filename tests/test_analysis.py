import numpy as np
import pytest

from xferlab.links import resolve
from xferlab.links.analysis import chunked_time, crossovers, ratio
from xferlab.links.simple import SimpleLink

KiB = 1024


def test_crossover_of_simple_links_matches_the_closed_form():
    # t_a = 700 ns + n / 12 GB/s, t_b = 40 ns + n / 8 GB/s: equal at n* = 660 ns / (1/8 - 1/12) ns per byte.
    a = SimpleLink(bandwidth=12e9, latency=700e-9, name="a")
    b = SimpleLink(bandwidth=8e9, latency=40e-9, name="b")
    n_star = 660e-9 / (1 / 8e9 - 1 / 12e9)
    (c,) = crossovers(a, b)
    assert c.size_bytes == int(np.floor(n_star)) + 1  # first whole byte where a is strictly faster
    assert c.faster_below == "b" and c.faster_above == "a"


def test_no_crossover_when_one_link_dominates():
    assert crossovers(resolve("pcie3x16"), resolve("pcie5x16")) == []


@pytest.mark.parametrize("penalty, seed_kib", [(0.6, 12.7), (0.9, 76.5)])
def test_seed_crossovers(penalty, seed_kib):
    pcie, cxl = resolve("pcie3x16"), resolve(f"cxl-seed:penalty={penalty}")
    (c,) = crossovers(pcie, cxl, "readwrite")
    assert c.size_bytes / KiB == pytest.approx(seed_kib, rel=0.10)
    # The closed form of the seed's model with b_n at that size: n* = dt_s * b_n * p / (1 - p).
    b_n = float(pcie.data_rate(np.asarray([float(c.size_bytes)]), "readwrite")[0])
    assert c.size_bytes == pytest.approx((738.77e-9 - 40e-9) * b_n * penalty / (1 - penalty), rel=1e-3)
    # And for any operation the crossover stays within 10 % of the seed's figure.
    (w,) = crossovers(pcie, cxl, "write")
    assert w.size_bytes / KiB == pytest.approx(seed_kib, rel=0.10)


@pytest.mark.parametrize("op", ["write", "read", "readwrite"])
def test_seed_64_byte_speedup_in_range(op):
    pcie = resolve("pcie3x16")
    for penalty in (0.6, 0.75, 0.9):
        r = ratio(pcie, resolve(f"cxl-seed:penalty={penalty}"), np.asarray([64.0]), op)[0]
        assert 14.0 <= r <= 18.7


def test_ratio_converges_to_the_penalty():
    pcie = resolve("pcie3x16")
    for penalty in (0.6, 0.9):
        r = ratio(pcie, resolve(f"cxl-seed:penalty={penalty}"), np.asarray([2.0**40]))[0]
        assert r == pytest.approx(penalty, rel=1e-5)


def test_chunked_time():
    link = SimpleLink(bandwidth=1e9, latency=1e-6)
    count, seconds = chunked_time(link, 10_000, np.asarray([1000.0, 3000.0, 20_000.0]))
    assert list(count) == [10, 4, 1]
    assert seconds[0] == pytest.approx(10 * (1e-6 + 1e-6))
    assert seconds[1] == pytest.approx(3 * (1e-6 + 3e-6) + (1e-6 + 1e-6))  # three full chunks and 1000 bytes
    assert seconds[2] == pytest.approx(1e-6 + 10e-6)


def test_chunking_a_large_transfer_over_pcie_costs_latency_per_chunk():
    link = resolve("pcie3x16")
    _, seconds = chunked_time(link, 1.6e9, np.asarray([64.0, 4096.0, 2.0**20, 1.6e9]))
    assert np.all(np.diff(seconds) < 0)  # fewer, larger chunks are faster on a latency-bound link
    assert seconds[0] == pytest.approx(1.6e9 / 64 * link.time(64))

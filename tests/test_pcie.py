"""The PCIe model against pcie-model's published figures and the specification's structure."""

import numpy as np
import pytest

from xferlab.links.pcie import PcieLink, raw_rate

GBIT = 1e9 / 8  # bytes per second in one Gb/s


@pytest.fixture
def gen3x8():
    # pcie-model's published configuration: Gen3 x8, MPS 256, MRRS 512, 64-bit addresses, no ECRC.
    return PcieLink(gen=3, lanes=8, mps=256, mrrs=512, addr=64, ecrc=False)


def rate(link, n, op):
    return float(link.data_rate(np.asarray([float(n)]), op)[0]) / GBIT


def test_tlp_layer_bandwidth(gen3x8):
    assert gen3x8.tlp_rate / GBIT == pytest.approx(57.885, rel=1e-3)


@pytest.mark.parametrize("n, op, expected", [(64, "write", 42.098), (64, "read", 44.103), (1500, "write", 52.815)])
def test_published_dma_figures(gen3x8, n, op, expected):
    assert rate(gen3x8, n, op) == pytest.approx(expected, rel=1e-3)


def test_raw_rates_follow_encoding():
    assert raw_rate(1, 1) == pytest.approx(2.5e9 * 0.8 / 8)
    assert raw_rate(3, 16) == pytest.approx(8e9 * 128 / 130 * 16 / 8)
    assert raw_rate(6, 16) == pytest.approx(64e9 * 16 / 8)  # PAM4 flit mode: no line encoding


def test_tlp_header_sizes():
    link = PcieLink()
    assert link.write_overhead == 24 and link.completion_overhead == 20
    assert PcieLink(ecrc=True).write_overhead == 28
    assert PcieLink(addr=32).write_overhead == 20
    assert PcieLink(addr=32, ecrc=True).write_overhead == 24
    assert PcieLink(ecrc=True).completion_overhead == 24


def test_flit_mode_has_no_link_framing_and_236_of_256():
    gen6 = PcieLink(gen=6, lanes=16)
    assert gen6.flit_mode and gen6.write_overhead == 16 and gen6.completion_overhead == 12
    assert gen6.tlp_rate == pytest.approx(gen6.raw_rate * 236 / 256 * (1 - 40 / (40 + 748 * 16)))
    # Flit mode at 64 GT/s beats twice Gen5's TLP layer less its DLLP overhead.
    assert gen6.peak_rate("write") > 2 * PcieLink(gen=5, lanes=16).peak_rate("write")


@pytest.mark.parametrize("gen", range(1, 8))
@pytest.mark.parametrize("op", ["write", "read", "readwrite"])
def test_time_grows_with_size_and_bandwidth_is_bounded(gen, op):
    link = PcieLink(gen=gen, lanes=8)
    n = np.arange(1, 20000, dtype=float)
    t = link.time(n, op)
    assert np.all(np.diff(t) >= 0)
    assert np.all(link.data_rate(n, op) <= link.tlp_rate)


def test_read_is_limited_by_the_busier_direction():
    link = PcieLink(gen=3, lanes=16, mrrs=128, mps=128)
    out, back = link.wire_bytes(np.asarray([4096.0]), "read")
    assert back[0] > out[0]
    assert rate(link, 4096, "read") == pytest.approx(4096 / back[0] * link.tlp_rate / GBIT)
    # Reading and writing at once loads the outbound direction with writes and requests.
    assert rate(link, 4096, "readwrite") < rate(link, 4096, "write")


def test_rcb_chunks_cost_more_completions():
    assert rate(PcieLink(rcb_chunks=True, rcb=64), 4096, "read") < rate(PcieLink(), 4096, "read")


def test_scalar_in_scalar_out():
    t = PcieLink().time(64)
    assert isinstance(t, float) and t == pytest.approx(738.77e-9 + 64 / PcieLink().data_rate(np.asarray([64.0]))[0])


@pytest.mark.parametrize("field, value", [("gen", 9), ("gen", 0), ("lanes", 3), ("mps", 100), ("mrrs", 64), ("rcb", 32), ("addr", 48)])
def test_rejects_values_outside_the_spec(field, value):
    with pytest.raises(ValueError, match=f"{field}={value}"):
        PcieLink(**{field: value})


def test_per_lane_dllp_accounting():
    # The ACK/FC intervals are symbol times; an xW link carries W bytes per symbol time.
    per_lane = PcieLink(gen=3, lanes=8, dllp="per-lane")
    expected = raw_rate(3, 8) * (1 - 16 / (203 * 8) - 4 / 1538)
    assert per_lane.tlp_rate == pytest.approx(expected)
    assert per_lane.tlp_rate / GBIT == pytest.approx(62.2, abs=0.05)
    # x1 links read the same either way.
    assert PcieLink(gen=3, lanes=1, dllp="per-lane").tlp_rate == pytest.approx(PcieLink(gen=3, lanes=1).tlp_rate)


def test_flit_mode_skp_interval_scales_with_width():
    from xferlab.links.pcie import skp_overhead

    # 40 symbols per lane every 748 flits of 256 bytes on x16: 40 / (40 + 748 x 16) per lane.
    assert skp_overhead(16, True) == pytest.approx(40 / (40 + 748 * 16))
    assert skp_overhead(1, True) == pytest.approx(40 / (40 + 46 * 256))
    assert 0.0030 < skp_overhead(8, True) < 0.0036
    assert skp_overhead(16, False) == pytest.approx(4 / 1538)


def test_model_time_gives_streaming_throughput_beside_bandwidth(cli):
    """`model time` names both rates: n / t with the latency, and b_n without it, which on pcie3x8 is
    pcie-model's effective-bandwidth curve (42.098 Gb/s at 64 B, 52.815 Gb/s at 1500 B writes)."""
    rows = cli.json("model", "time", "pcie3x8", "--sizes", "64B,1500B")["results"]
    assert [r["streaming_bytes_per_second"] / GBIT for r in rows] == pytest.approx([42.098, 52.815], rel=1e-3)
    # By hand, pcie-model's method: a write of n bytes is ceil(n / MPS 256) TLPs, each carrying 24 B
    # beside its payload (4 B Gen3 framing token with the sequence number, 16 B 4DW header for 64-bit
    # addresses, 4 B LCRC) at the TLP-layer rate 57.885 Gb/s: 64/88 and 1500/(1500 + 6 x 24) of it.
    tlp = 57.885 * GBIT
    assert rows[0]["streaming_bytes_per_second"] == pytest.approx(tlp * 64 / 88, rel=1e-4)
    assert rows[1]["streaming_bytes_per_second"] == pytest.approx(tlp * 1500 / 1644, rel=1e-4)
    assert PcieLink(gen=3, lanes=8).streaming_rate(64) == pytest.approx(rows[0]["streaming_bytes_per_second"])
    for r in rows:  # the latency-included bandwidth is the smaller, and is n / t
        assert r["bandwidth_bytes_per_second"] == pytest.approx(r["size_bytes"] / r["seconds"])
        assert r["bandwidth_bytes_per_second"] < r["streaming_bytes_per_second"]

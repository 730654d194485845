import numpy as np
import pytest

from xferlab.links.cxl import CxlLink
from xferlab.links.pcie import PcieLink


def test_flit_efficiencies():
    assert CxlLink(gts=32).flit_efficiency == pytest.approx(64 / 68)
    assert CxlLink(gts=64).flit_efficiency == pytest.approx(240 / 256)
    assert CxlLink(gts=64, protocol="io").flit_efficiency == pytest.approx(236 / 256)
    assert CxlLink(gts=64, flit_variant="latency-optimized").flit_efficiency == pytest.approx(236 / 256)
    assert CxlLink(gts=64, flit_variant="latency-optimized", protocol="io").flit_efficiency == pytest.approx(232 / 256)


def test_default_flit_follows_the_rate():
    assert CxlLink(gts=32).flit_bytes == 68
    assert CxlLink(gts=64).flit_bytes == 256
    assert CxlLink(gts=32, flit=256).flit_bytes == 256


def test_flit_accumulation_latency_as_linux_computes_it():
    assert CxlLink(gts=32).derived()["flit_accumulation_seconds"] == pytest.approx(17e-9)
    assert CxlLink(gts=64).derived()["flit_accumulation_seconds"] == pytest.approx(32e-9)


def test_seed_penalty_model_is_pcie_bandwidth_times_penalty():
    cxl = CxlLink(gts=8, lanes=16, penalty=0.6)
    pcie = PcieLink(gen=3, lanes=16)
    n = np.asarray([64.0, 4096.0, 2.0**30])
    for op in ("write", "read", "readwrite"):
        assert np.allclose(cxl.data_rate(n, op), 0.6 * pcie.data_rate(n, op))
    assert cxl.latency == pytest.approx(40e-9)
    # t = n / (b_n x penalty) + t_s
    assert cxl.time(1e6, "write") == pytest.approx(1e6 / (0.6 * pcie.data_rate(np.asarray([1e6]))[0]) + 40e-9)


def test_cachemem_moves_whole_lines():
    link = CxlLink()
    # One byte costs a whole 64-byte line; the 65th byte starts a second one.
    assert link.time(1) == pytest.approx(link.time(64))
    assert link.time(65) == pytest.approx(link.time(128))
    assert link.time(65) > link.time(64)


def test_cachemem_reads_beat_writes_and_readwrite_is_slowest_per_stream():
    link = CxlLink(gts=32, lanes=16)
    assert link.peak_rate("read") > link.peak_rate("write") > link.peak_rate("readwrite")
    # No rate exceeds the slot bandwidth of the flits.
    assert link.peak_rate("read") < link.raw_rate * 64 / 68 * (1 - 4 / 1538)
    # Reads: per line 4 data slots + a third of a slot for its DRS header (three 40-bit DRS per slot).
    assert link.peak_rate("read") == pytest.approx(link.raw_rate * 64 / 68 * (1 - 4 / 1538) * 4 / (4 + 1 / 3))


def test_io_tracks_pcie_inside_68_byte_flits():
    io = CxlLink(gts=32, lanes=16, protocol="io")
    pcie = PcieLink(gen=5, lanes=16)
    assert io.peak_rate("write") == pytest.approx(pcie.peak_rate("write") * 64 / 68)


def test_256_byte_flit_io_is_pcie_flit_mode_at_this_rate():
    io = CxlLink(gts=64, lanes=16, protocol="io")
    assert io.peak_rate("write") == pytest.approx(PcieLink(gen=6, lanes=16).peak_rate("write"))


@pytest.mark.parametrize("kwargs, fragment", [
    ({"penalty": 0}, "penalty=0"), ({"penalty": 1.5}, "penalty=1.5"), ({"penalty": -0.2}, "penalty=-0.2"),
    ({"gts": 20}, "gts=20"), ({"lanes": 32}, "lanes=32"), ({"flit": 128}, "flit=128"),
    ({"gts": 64, "flit": 68}, "64 GT/s"), ({"flit_variant": "latency-optimized"}, "needs flit=256"),
])
def test_rejects(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        CxlLink(**kwargs)


def test_penalty_of_one_is_allowed_and_equals_pcie_bandwidth():
    assert CxlLink(gts=8, penalty=1.0).peak_rate() == pytest.approx(PcieLink(gen=3).peak_rate())

import numpy as np
import pytest

from xferlab.links.network import EthernetLink, InfinibandLink


def test_infiniband_rates_and_headers():
    edr = InfinibandLink(speed="edr")
    assert edr.raw_rate == pytest.approx(12.5e9)
    assert InfinibandLink(speed="ndr").raw_rate == pytest.approx(50e9)
    assert edr.packet_overhead == 26
    assert InfinibandLink(routed=True).packet_overhead == 66
    assert edr.peak_rate() == pytest.approx(12.5e9 * 4096 / 4122, rel=1e-6)
    # RDMA write pays its RETH once per message.
    assert edr.time(64) > InfinibandLink(rdma=False).time(64)


def test_ethernet_frames():
    tcp = EthernetLink(speed_gbps=100, mtu=1500, protocol="tcp")
    assert tcp.payload_per_frame == 1448
    # 1448 bytes of payload take 1538 bytes on the wire (preamble 8, MAC 14, IP+TCP 52, FCS 4, gap 12).
    assert tcp.peak_rate() == pytest.approx(12.5e9 * 1448 / 1538, rel=1e-4)
    # One byte of TCP: 14 + 52 + 1 + 4 = 71-byte frame, plus preamble and gap.
    assert tcp.data_rate(np.asarray([1.0]))[0] == pytest.approx(12.5e9 / 91)
    # One raw byte is padded to the 64-byte minimum frame: 64 + 8 + 12 bytes on the wire.
    raw = EthernetLink(speed_gbps=100, protocol="raw")
    assert raw.data_rate(np.asarray([1.0]))[0] == pytest.approx(12.5e9 / 84)


def test_rocev2_uses_the_largest_ib_mtu_that_fits():
    assert EthernetLink(protocol="rocev2", mtu=1500).payload_per_frame == 1024
    assert EthernetLink(protocol="rocev2", mtu=9000).payload_per_frame == 4096


@pytest.mark.parametrize("cls, kwargs", [
    (InfinibandLink, {"lanes": 3}), (InfinibandLink, {"mtu": 1500}), (InfinibandLink, {"speed": "fdr"}),
    (EthernetLink, {"speed_gbps": 3}), (EthernetLink, {"mtu": 100}), (EthernetLink, {"protocol": "sctp"}),
])
def test_rejects(cls, kwargs):
    with pytest.raises(ValueError):
        cls(**kwargs)


@pytest.mark.parametrize("link", [InfinibandLink(), EthernetLink(), EthernetLink(protocol="udp", mtu=9000)])
def test_monotone(link):
    n = np.arange(1, 50000, dtype=float)
    assert np.all(np.diff(link.time(n)) >= -1e-18)  # non-decreasing, to rounding

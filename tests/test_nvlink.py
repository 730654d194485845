import pytest

from xferlab.links.nvlink import NvlinkLink


@pytest.mark.parametrize("gen, per_link, links", [(1, 20e9, 4), (2, 25e9, 6), (3, 25e9, 12), (4, 25e9, 18), (5, 50e9, 18)])
def test_generation_figures(gen, per_link, links):
    link = NvlinkLink(generation=gen)
    assert link.link_count == links and link.raw_rate == pytest.approx(per_link * links)


def test_h100_totals_900_gb_per_s_both_ways():
    assert 2 * NvlinkLink(generation=4).raw_rate == pytest.approx(900e9)


def test_c2c_is_450_each_way():
    assert NvlinkLink(generation="c2c").raw_rate == pytest.approx(450e9)


def test_ac922_configurations_from_seed_001():
    # "50 GB/s and 75 GB/s bi-directional" CPU-GPU: 2 or 3 NVLink 2.0 links of 25 GB/s each way.
    assert NvlinkLink(generation=2, links=2).raw_rate == pytest.approx(50e9)
    assert NvlinkLink(generation=2, links=3).raw_rate == pytest.approx(75e9)


def test_packet_overhead():
    link = NvlinkLink(generation=2, links=1)
    assert link.peak_rate() == pytest.approx(25e9 * 256 / 272, rel=1e-6)
    assert NvlinkLink(generation=2, links=1, header_bytes=0).peak_rate() == pytest.approx(25e9)
    assert link.time(257) > link.time(256)


@pytest.mark.parametrize("kwargs", [{"generation": 6}, {"generation": "c3c"}, {"links": 0}, {"max_payload": 0}])
def test_rejects(kwargs):
    with pytest.raises(ValueError):
        NvlinkLink(**kwargs)

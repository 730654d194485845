"""CXL.cache as requests (CxlLink's ``outstanding``): Little's law against seed 000's equation and hand
calculations, meeting the flit limit at high concurrency, and `xferlab model requests`.

Bad input tried: outstanding=0, outstanding=70000, outstanding with protocol=io, `model requests` on a PCIe link
and on a CXL.io link, --outstanding 0 and --outstanding x."""

import math

import numpy as np
import pytest

from xferlab.links import resolve
from xferlab.links.cxl import CxlLink
from xferlab.links.pcie import PcieLink


def seed_t_cxl(n: float, penalty: float = 0.6) -> float:
    """Seed 000: t_cxl = n / (b_n x penalty) + 40 ns, b_n from the PCIe 3.0 x16 model."""
    b_n = float(PcieLink(gen=3, lanes=16).data_rate(np.asarray([float(n)]), "read")[0])
    return n / (b_n * penalty) + 40e-9


def test_one_request_in_flight_moves_a_line_per_seed_t_cxl():
    link = resolve("cxl-seed:outstanding=1")
    line = seed_t_cxl(64)
    assert link.line_seconds("read") == pytest.approx(line, rel=1e-12)
    assert link.time(64, "read") == pytest.approx(line, rel=1e-12)
    # 4 KiB is 64 lines, one after the other: 64 x t_cxl(64 B).
    assert link.time(4096, "read") == pytest.approx(64 * line, rel=1e-12)
    assert link.peak_rate("read") == pytest.approx(64 / line, rel=1e-9)  # Little: 1 x 64 B / latency


def test_little_by_hand_on_cxl2x16():
    link = CxlLink(gts=32, lanes=16, outstanding=8)
    # The flit model's read rate per line (tests/test_cxl.py): 4 data slots + a third of a DRS slot.
    slot_rate = link.raw_rate * 64 / 68 * (1 - 4 / 1538)
    line_rate = slot_rate * 4 / (4 + 1 / 3)
    t_line = 40e-9 + 64 / line_rate
    assert link.line_seconds("read") == pytest.approx(t_line, rel=1e-12)
    assert link.peak_rate("read") == pytest.approx(8 * 64 / t_line, rel=1e-9)
    # The first line after t_line, then 8 every t_line: 1 MiB = 16384 lines.
    assert link.time(2**20, "read") == pytest.approx(t_line * (1 + 16383 / 8), rel=1e-12)
    assert link.request_knee("read") == pytest.approx(line_rate * t_line / 64, rel=1e-12)


@pytest.mark.parametrize("name", ["cxl-seed", "cxl1x16", "cxl2x8", "cxl2x16", "cxl3x16", "cxl3x16-lopt"])
def test_bandwidth_is_min_of_little_and_the_flit_limit(name):
    plain = resolve(name)
    knee = plain.request_knee("read")
    for k in (1, 2, 7, math.floor(knee), math.ceil(knee), 4 * math.ceil(knee), 1000):
        link = resolve(f"{name}:outstanding={k}")
        little = k * 64 / plain.line_seconds("read")
        assert link.peak_rate("read") == pytest.approx(min(little, plain.peak_rate("read")), rel=1e-9), k
        assert link.peak_rate("read") <= plain.peak_rate("read") * (1 + 1e-12)
    assert resolve(f"{name}:outstanding={math.floor(knee)}").peak_rate("read") < plain.peak_rate("read")
    assert resolve(f"{name}:outstanding={math.ceil(knee)}").peak_rate("read") == pytest.approx(plain.peak_rate("read"))


@pytest.mark.parametrize("name", ["cxl-seed", "cxl2x16", "cxl3x16"])
def test_past_the_knee_the_link_is_the_flit_model_again(name):
    plain = resolve(name)
    knee = max(plain.request_knee(op) for op in ("write", "read", "readwrite"))
    many = resolve(f"{name}:outstanding={math.ceil(knee) + 1}")
    n = np.asarray([64.0, 4096.0, 2.0**20, 1.6e9] if plain.penalty else [1.0, 64.0, 100.0, 4096.0, 2.0**20, 1.6e9])
    for op in ("write", "read", "readwrite"):
        np.testing.assert_allclose(many.time(n, op), plain.time(n, op), rtol=1e-12)
    # Requests move whole lines: under the seed's PCIe-based model one byte then costs a line (t_line).
    assert many.time(1, "read") == pytest.approx(plain.time(64, "read"))


def test_existing_presets_have_no_request_limit():
    for name in ("cxl-seed", "cxl1x16", "cxl2x8", "cxl2x16", "cxl3x16", "cxl3x16-lopt"):
        assert resolve(name).outstanding is None


@pytest.mark.parametrize("kwargs, fragment", [
    ({"outstanding": 0}, "outstanding=0 is not allowed; allowed: 1 to 65536"),
    ({"outstanding": 70000}, "outstanding=70000"),
    ({"outstanding": 4, "protocol": "io"}, "protocol=io moves PCIe TLPs"),
])
def test_rejects(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        CxlLink(**kwargs)


def test_model_requests_curve(cli, tmp_path):
    doc = cli.json("model", "requests", "cxl2x16", "--outstanding", "1..64", "--plot", tmp_path / "r.png")
    rows = doc["results"]
    link = resolve("cxl2x16")
    assert [r["outstanding"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    for r in rows:
        assert r["bandwidth_bytes_per_second"] == pytest.approx(resolve(f"cxl2x16:outstanding={r['outstanding']}").peak_rate("read"))
        assert r["limited_by"] == ("requests" if r["outstanding"] < link.request_knee("read") else "flits")
    assert (tmp_path / "r.png").stat().st_size > 5000
    code, out, err = cli("model", "requests", "cxl-seed")
    assert code == 0 and "meets the flit limit 7.91 GB/s at 6.2 requests in flight" in out


@pytest.mark.parametrize("args, fragment", [
    (["pcie3x16"], "is a pcie link; model requests takes CXL links"),
    (["cxl2x16:protocol=io"], "is CXL.io (protocol=io): it moves PCIe TLPs"),
    (["cxl2x16", "--outstanding", "0"], "--outstanding '0' is not a count"),
    (["cxl2x16", "--outstanding", "x"], "--outstanding 'x' is not a count"),
])
def test_model_requests_refusals(cli, args, fragment):
    code, out, err = cli("model", "requests", *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and fragment in err, err

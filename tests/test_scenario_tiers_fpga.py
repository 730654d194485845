"""Seeds 003 and 004 as scenarios (stream-tiers, oneapi-fpga): each row's status, the model rows' values by
hand calculation (JEDEC channel peaks, STREAM's counting with write-allocate, the PCIe Gen3 x16 model's
payload rate, the port-balance SpMV model), and the per-transfer overhead re-derived from the seed's figure."""

import math

import pytest

from xferlab import scenarios
from xferlab.errors import BadValue, UnknownName
from xferlab.scenarios import figures_fpga, figures_tiers
from xferlab.system.memory_channels import channel, channel_peak

GB = 1e9


def rows(name):
    return {c["figure"]: c for c in scenarios.load(name).run()["checks"]}


# --- seed 003: STREAM over tiers ------------------------------------------------------------------

def test_stream_tiers_statuses():
    checks = rows("stream-tiers")
    assert {f: c["status"] for f, c in checks.items()} == {
        "local App-Direct DDR5 triad saturates near 23 GB/s": "not-reproduced",
        "remote App-Direct (DDR5 on the other socket) 25-30 % lower than local": "not-reproduced",
        "remote App-Direct's ~6 GB/s drop from 23 GB/s, as a decrease": "consistent",
        "CXL DDR4 about 50 % below remote DDR5 (App-Direct)": "not-reproduced",
        "PMDK App-Direct overhead 10-15 %": "not-reproduced",
        "CXL-attached DDR4 on Sapphire Rapids, 11 GB/s": "not-reproduced",
        "CXL DDR4 on Sapphire Rapids (11 GB/s) against alternate-socket DDR4 on Xeon Gold 5215 (7 GB/s)": "not-reproduced",
        "all cores, on-node DDR4 and CXL DDR4 converge (slightly in CXL's favour)": "not-reproduced",
    }
    # Every row has a section of the seed and a reason; a not-reproduced row's reason starts with its deviation.
    for c in checks.values():
        assert c["section"] and c["status_reason"]
        if c["status"] == "not-reproduced":
            assert c["status_reason"].startswith(f"{c['relative_error']:+.1%} from the seed's figure")


def test_stream_tiers_values_by_hand():
    checks = rows("stream-tiers")
    # JEDEC: DDR5-4800 and DDR4-2666 channels are 8 bytes wide. Triad counts 3 arrays and moves 4 (the written
    # array is read first: write-allocate), so its counted ceiling is 3/4 of the channels' peak.
    ddr5, ddr4 = 4800e6 * 8, 2666e6 * 8
    assert checks["local App-Direct DDR5 triad saturates near 23 GB/s"]["xferlab"] == pytest.approx(8 * ddr5 * 3 / 4 / GB)
    assert checks["CXL-attached DDR4 on Sapphire Rapids, 11 GB/s"]["xferlab"] == pytest.approx(ddr4 * 3 / 4 / GB)
    assert checks["CXL DDR4 about 50 % below remote DDR5 (App-Direct)"]["xferlab"] == pytest.approx(100 * (1 - ddr4 / ddr5))
    ratio = checks["CXL DDR4 on Sapphire Rapids (11 GB/s) against alternate-socket DDR4 on Xeon Gold 5215 (7 GB/s)"]
    assert ratio["xferlab"] == pytest.approx(1 / 6) and ratio["seed"] == pytest.approx(11 / 7, rel=1e-3)
    assert checks["PMDK App-Direct overhead 10-15 %"]["xferlab"] == 0
    consistent = checks["remote App-Direct's ~6 GB/s drop from 23 GB/s, as a decrease"]
    assert consistent["xferlab"] == pytest.approx(600 / 23) and consistent["relative_error"] == 0
    assert (consistent["seed"], consistent["seed_high"]) == (25, 30)


def test_stream_counting_and_the_link_bound():
    # (arrays counted, read, written): write-allocate reads the written array too; without it STREAM's own counts.
    assert figures_tiers.traffic("triad") == (3, 3, 1)
    assert figures_tiers.traffic("copy") == (2, 2, 1)
    assert figures_tiers.traffic("read") == (1, 1, 0)
    assert figures_tiers.traffic("triad", write_allocate=False) == (3, 2, 1)
    assert figures_tiers.ceiling("ddr5-4800", 1, "copy", write_allocate=False) == pytest.approx(4800e6 * 8)
    # Eight DDR5 channels (307 GB/s) behind a CXL x16 link: the link's read direction (3 arrays) sets the pace.
    from xferlab.links import resolve

    link = resolve("cxl1x16")
    behind = figures_tiers.ceiling("ddr5-4800", 8, "triad", link="cxl1x16")
    assert behind == pytest.approx(link.peak_rate("read")) and behind < figures_tiers.ceiling("ddr5-4800", 8)
    with pytest.raises(BadValue, match="STREAM kernel 'tirad'"):  # bad input: a kernel STREAM does not have
        figures_tiers.traffic("tirad")


def test_memory_channel_presets_and_the_dram_peak_share_one_formula():
    assert channel("ddr5-4800").peak(8) == channel_peak(8, 4800, 8) == 307.2e9
    assert channel("hbm2-2000").peak(32) == 512e9  # Intel's 512 GB/s for a Stratix 10 MX's two stacks
    with pytest.raises(UnknownName, match="memory channel 'ddr9-9000' is not a preset.*ddr5-4800"):
        channel("ddr9-9000")  # bad input: a name no preset has
    from xferlab.system.peaks import dram_peak

    text = "\n\n".join(f"Memory Device\n\tSize: 16 GB\n\tLocator: DIMM_{c}1\n\tData Width: 64 bits\n"
                       f"\tConfigured Memory Speed: 4800 MT/s" for c in "ABCDEFGH")
    assert dram_peak(text)["bytes_per_second"] == channel("ddr5-4800").peak(8)


# --- seed 004: oneAPI on an FPGA ------------------------------------------------------------------

def test_oneapi_fpga_statuses():
    checks = rows("oneapi-fpga")
    assert {f: c["status"] for f, c in checks.items()} == {
        "HBM2 through all 32 ports, theoretically 410 GB/s": "not-reproduced",
        "HBM2 through all 32 ports at the board's rate, 410 GB/s": "fitted",
        "STREAM copy per HBM2 port, ~10 GB/s": "not-reproduced",
        "STREAM copy through all 32 ports, ~316 GB/s": "not-reproduced",
        "all ports against one, 31.6x (perfect is 32x)": "reproduced",
        "only 77 % of the theoretical throughput": "consistent",
        "USM: 80 kB x 100,000 transfers average 30 s": "fitted",
        "USM: 8 MB x 1,000 transfers take 4.1 s": "not-reproduced",
        "USM: 80 kB x 100,000 with the overhead that fits 8 MB x 1,000 (4.1 s)": "not-reproduced",
        "buffers/accessors: 80 kB x 100,000 transfers average 18 s": "fitted",
        "buffers/accessors: 8 MB x 1,000 transfers take 4.3 s": "not-reproduced",
        "8 MB transfers' rate, 8 MB x 1,000 / 4.1 s (USM)": "not-reproduced",
        "a kernel with one accessor costs ~20 us more to launch": "not-reproduced",
        "SpMV, 1 kernel with 4 HBM ports: 2.24x": "not-reproduced",
        "SpMV, 8 kernel copies with a port each: 4.7x": "not-reproduced",
        "SpMV, 8 kernels x 4 ports: 7.5x": "not-reproduced",
    }


def test_hbm2_rows_by_hand():
    checks = rows("oneapi-fpga")
    # JESD235A: a pseudo-channel is 64 bits; 2 stacks x 8 channels x 2 pseudo-channels = 32 ports.
    assert checks["HBM2 through all 32 ports, theoretically 410 GB/s"]["xferlab"] == pytest.approx(32 * 8 * 2.0)
    # The fitted rate is the seed's 410 GB/s over 32 ports of 8 bytes, to the 800 MHz clock's 1600 MT/s.
    assert round(410e9 / (32 * 8) / 1e6, -2) == 1600
    assert checks["HBM2 through all 32 ports at the board's rate, 410 GB/s"]["xferlab"] == pytest.approx(409.6)
    assert checks["STREAM copy per HBM2 port, ~10 GB/s"]["xferlab"] == pytest.approx(12.8)
    assert checks["all ports against one, 31.6x (perfect is 32x)"]["xferlab"] == pytest.approx(32)
    assert checks["only 77 % of the theoretical throughput"]["xferlab"] == pytest.approx(100 * 316 / 409.6)


def gen3x16_read_rate(n):
    """pcie3x16's payload rate for an n-byte DMA read, by hand (PCIe Base Spec 5.0 and pcie-model's
    accounting): 8 GT/s x 128/130 x 16 lanes, less ACK/FC DLLPs (2 x 8 B per 168 symbol times at MPS 256)
    and SKP (4 B per 1538); read requests (24 B each per 512 B) out, completions (256 B + 20 B) back."""
    raw = 8e9 * 128 / 130 * 16 / 8
    tlp = raw * (1 - 2 * 8 / 168 - 4 / 1538)
    out, back = math.ceil(n / 512) * 24, n + math.ceil(n / 256) * 20
    return n * tlp / max(out, back)


def test_transfer_rows_and_the_fitted_overhead_re_derived():
    checks = rows("oneapi-fpga")
    small, large = 80e3, 8e6
    for api, seconds, large_seconds in (("USM", 30, 4.1), ("buffers/accessors", 18, 4.3)):
        overhead = seconds / 100_000 - small / gen3x16_read_rate(small)
        assert figures_fpga.transfer_overhead("pcie3x16", small, 100_000, seconds) == pytest.approx(overhead)
        fitted = checks[f"{api}: 80 kB x 100,000 transfers average {seconds} s"]
        assert fitted["xferlab"] == pytest.approx(seconds) and fitted["basis"] == "fitted"
        checked = checks[f"{api}: 8 MB x 1,000 transfers take {large_seconds} s"]
        # Checked on the overhead fitted on 80 kB: 1,000 x (o + t_s + 8 MB / b_n), t_s replaced by o.
        assert checked["xferlab"] == pytest.approx(1000 * (overhead + large / gen3x16_read_rate(large)))
        assert checked["xferlab"] < large_seconds / 4  # the large transfers are a throughput limit, not an overhead
    assert 293 < (30 / 100_000 - small / gen3x16_read_rate(small)) * 1e6 < 295  # the reason's 293.9 us
    reverse = checks["USM: 80 kB x 100,000 with the overhead that fits 8 MB x 1,000 (4.1 s)"]
    o_large = 4.1 / 1000 - large / gen3x16_read_rate(large)
    assert reverse["xferlab"] == pytest.approx(100_000 * (o_large + small / gen3x16_read_rate(small)))
    assert checks["8 MB transfers' rate, 8 MB x 1,000 / 4.1 s (USM)"]["xferlab"] == pytest.approx(gen3x16_read_rate(large) / GB)
    # The launch row: one 64-byte read over the link, its start-up t_s = 738.77 ns (seed 000) included.
    launch = checks["a kernel with one accessor costs ~20 us more to launch"]
    assert launch["xferlab"] == pytest.approx((738.77e-9 + 64 / gen3x16_read_rate(64)) * 1e6)
    # Bad input: a figure faster than the link carries it has no overhead (refused, naming it).
    with pytest.raises(BadValue, match="faster than link 'pcie3x16' carries them"):
        figures_fpga.transfer_overhead("pcie3x16", 8e6, 1000, 0.1)


def test_spmv_port_model_by_hand():
    # 27 entries a row: values and x 8 B an entry (216 B a row each), column indices 4 B (108), a 4-byte row
    # pointer and an 8-byte y: 552 B. On 4 ports the values and x fill one each: 552 / 216.
    assert figures_fpga.spmv_port_speedup(4) == pytest.approx(552 / 216)
    assert figures_fpga.spmv_port_speedup(3) == pytest.approx(552 / 216)  # the 4th port adds nothing
    assert figures_fpga.spmv_port_speedup(2) == pytest.approx(552 / (216 + 108))  # values | x, then indices on one
    assert figures_fpga.spmv_port_speedup(1, kernels=8) == pytest.approx(8)
    assert figures_fpga.spmv_port_speedup(4, kernels=8) == pytest.approx(8 * 552 / 216)
    checks = rows("oneapi-fpga")
    assert checks["SpMV, 1 kernel with 4 HBM ports: 2.24x"]["xferlab"] == pytest.approx(552 / 216)
    assert checks["SpMV, 8 kernels x 4 ports: 7.5x"]["xferlab"] == pytest.approx(8 * 552 / 216)
    # Longest first on the least loaded port (Graham's LPT): 5, 4 | 3 on the 4 | 3 on the 5 | 3 on the 7: 10.
    assert figures_fpga.busiest_port({"a": 5, "b": 4, "c": 3, "d": 3, "e": 3}, 2) == 10
    with pytest.raises(BadValue, match="ports 0"):  # bad input: no port
        figures_fpga.busiest_port({"a": 1}, 0)
    with pytest.raises(BadValue, match="kernels 0"):
        figures_fpga.spmv_port_speedup(1, kernels=0)


def test_cli_lists_and_runs_both(cli):
    code, out, _ = cli("scenario", "list", check=0)
    assert "stream-tiers" in out and "oneapi-fpga" in out
    for name in ("stream-tiers", "oneapi-fpga"):
        doc = cli.json("scenario", "run", name)  # checked against the command's schema by the fixture
        assert doc["scenario"] == name and all(r["status"] and r["status_reason"] for r in doc["results"])
    # Bad input: a scenario name off by one letter: one error line naming it and the close match, exit 2.
    code, out, err = cli("scenario", "run", "stream-tier")
    assert code == 2 and err.strip().startswith("error: scenario 'stream-tier' is not packaged")
    assert "stream-tiers" in err and len(err.strip().splitlines()) == 1

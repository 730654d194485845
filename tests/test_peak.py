"""% of peak (issue 28, "Against the peak"): the PCIe link a device sits on, read from a faked sysfs tree
(Documentation/ABI/testing/sysfs-bus-pci: ``current_link_speed`` "8.0 GT/s PCIe", ``current_link_width``
"16", ``max_link_*``) through the machine-state root ($XFERLAB_STATE_ROOT), resolved to a ``pcie`` preset
whose payload limit for each copy's size comes from the PCIe model; the DRAM peak from ``dmidecode -t
memory`` output in its documented format (SMBIOS type 17, DMTF DSP0134); "peak unknown" with the reason
otherwise; "no link" for a CPU device.

Bad input tried: a link speed that is text ("fast"), a speed no generation has ("7.0 GT/s PCIe"), a width
"x16", a width of 3 lanes, an empty file, no link files at all; dmidecode missing from PATH, dmidecode
failing (exit 1, not root), a DIMM whose speed is "Unknown", no populated DIMM. Each gives "peak unknown"
with the reason, never an exception, and the measuring command still exits 0.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from conftest import build_fake_libcuda
from xferlab.links import resolve
from xferlab.measure import peak
from xferlab.system import peaks as hw

ADDRESS = "0000:65:00.0"  # the stand-in CUDA driver's device (tests/fake_libcuda.c)


def fake_link(root: Path, speed: str, width: str, max_speed: str | None = None, max_width: str | None = None,
              address: str = ADDRESS) -> Path:
    folder = root / "sys" / "bus" / "pci" / "devices" / address
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in (("current_link_speed", speed), ("current_link_width", width),
                        ("max_link_speed", max_speed or speed), ("max_link_width", max_width or width)):
        (folder / name).write_text(value + "\n")
    return root


@pytest.mark.parametrize("speed, width, preset", [
    ("8.0 GT/s PCIe", "16", "pcie3x16"), ("32.0 GT/s PCIe", "16", "pcie5x16"), ("2.5 GT/s PCIe", "1", "pcie1x1"),
    ("64.0 GT/s PCIe", "8", "pcie6x8"), ("8 GT/s", "4", "pcie3x4"),  # an older kernel's spelling
])
def test_a_sysfs_link_resolves_to_its_preset(tmp_path, speed, width, preset):
    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, speed, width))
    assert link["status"] == hw.KNOWN and link["preset"] == preset, link
    assert link["warnings"] == []
    resolve(link["preset"])  # a preset xferlab's models know


def test_a_downtrained_link_takes_its_current_width_and_warns(tmp_path):
    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, "16.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "16"))
    assert link["preset"] == "pcie4x8" and link["maximum"] == "Gen4 x16"
    (warning,) = link["warnings"]
    assert "below its maximum Gen4 x16" in warning and "pcie4x8" in warning


@pytest.mark.parametrize("speed, width, says", [
    ("fast", "16", "current_link_speed is 'fast'"), ("7.0 GT/s PCIe", "16", "current_link_speed is '7.0 GT/s PCIe'"),
    ("8.0 GT/s PCIe", "x16", "current_link_width is 'x16'"), ("8.0 GT/s PCIe", "3", "current_link_width is '3'"),
    ("", "16", "current_link_speed is ''"),
])
def test_a_malformed_sysfs_value_is_peak_unknown_with_the_reason(tmp_path, speed, width, says):
    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, speed, width))
    assert link["status"] == hw.UNKNOWN and link["preset"] is None
    assert link["reason"].startswith("peak unknown:") and says in link["reason"], link["reason"]


def test_no_link_files_and_no_device_are_peak_unknown_and_a_cpu_device_has_no_link(tmp_path):
    assert "has no current_link_speed" in hw.pcie_link(ADDRESS, tmp_path)["reason"]
    assert hw.device_link({"type": "gpu", "backend": "opencl", "pci_bus_id": ""})["reason"].startswith("peak unknown:")
    cpu = hw.device_link({"type": "cpu", "backend": "opencl", "pci_bus_id": ""})
    assert cpu["status"] == hw.NO_LINK and "PoCL" in cpu["reason"]
    rate, why = peak.link_peak(cpu, "h2d", 2**20)
    assert rate is None and why.startswith("no link:")


def test_the_peak_is_the_models_payload_limit_for_the_size_and_direction(tmp_path):
    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, "8.0 GT/s PCIe", "16"))
    model = resolve("pcie3x16:dllp=per-lane")  # the spec's per-lane DLLP reading: an upper bound (peak.UPPER_BOUND)
    for direction, op, ways in (("h2d", "read", 1), ("d2h", "write", 1), ("bidir", "readwrite", 2)):
        for size in (64, 4096, 2**30):
            rate, source = peak.link_peak(link, direction, size)
            assert rate == pytest.approx(ways * float(model.data_rate([size], op)[0]))
            assert source.startswith("pcie3x16")
    assert peak.link_peak(link, "h2d", 64)[0] < peak.link_peak(link, "h2d", 2**30)[0]  # headers weigh on small TLPs
    assert peak.link_peak(link, "d2d", 2**30)[0] is None
    rows = peak.device_rows([{"direction": "bidir", "size_bytes": 2**30, "median_bytes_per_second": 20e9}],
                            {"link": link}, "median_bytes_per_second", "size_bytes")
    assert rows[0]["direction_median_bytes_per_second"] == 10e9
    assert rows[0]["fraction_of_peak"] == pytest.approx(20e9 / rows[0]["hardware_peak_bytes_per_second"])


@pytest.mark.parametrize("direction, measured", [("h2d", 54.50e9), ("d2h", 54.65e9)])
def test_the_peak_bounds_what_a_real_link_carried(tmp_path, direction, measured):
    """An H200 on Gen5 x16 (docs/gpu.md, `measure device --matrix --backend cuda`, pinned 32 MiB copies' medians)
    beat pcie5x16's default accounting (103 % and 105 % of it); the peak a row is held against stays above them."""
    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, "32.0 GT/s PCIe", "16"))
    rate, _ = peak.link_peak(link, direction, 32 * 2**20)
    default = float(resolve("pcie5x16").data_rate([32 * 2**20], peak.OPS[direction])[0])
    assert default < measured < rate


# -- DRAM -----------------------------------------------------------------------------------------

def dimm(locator: str, bank: str, size: str = "32 GB", speed: str = "3200 MT/s", width: str = "64 bits") -> str:
    """One Memory Device record as dmidecode 3.x prints it (SMBIOS type 17)."""
    return (f"Handle 0x0040, DMI type 17, 92 bytes\nMemory Device\n\tArray Handle: 0x003F\n\tTotal Width: 72 bits\n"
            f"\tData Width: {width}\n\tSize: {size}\n\tForm Factor: DIMM\n\tLocator: {locator}\n\tBank Locator: {bank}\n"
            f"\tType: DDR4\n\tSpeed: 3200 MT/s\n\tManufacturer: Samsung\n\tConfigured Memory Speed: {speed}\n"
            "\tMinimum Voltage: 1.2 V\n")


HEADER = "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 3.3.0 present.\n\n"
#: Two sockets, four channels each, one DIMM per channel, and an empty slot on each.
TWO_SOCKETS = HEADER + "\n".join(
    [dimm(f"DIMM_{c}1", f"P{s} CHANNEL {c}") for s in (0, 1) for c in "ABCD"]
    + [dimm(f"DIMM_{c}2", f"P{s} CHANNEL {c}", size="No Module Installed", speed="Unknown", width="Unknown")
       for s in (0, 1) for c in "AB"])


def test_dmidecode_output_gives_the_dram_peak_by_channel():
    found = hw.dram_peak(TWO_SOCKETS)
    assert found["status"] == hw.KNOWN and found["channels"] == 8 and found["dimms"] == 8
    assert found["bytes_per_second"] == 8 * 3200e6 * 8  # 204.8 GB/s
    assert "8 channels (channels named by the DIMMs' locators) x 3200 MT/s x 8 B = 204.8 GB/s" in found["reason"]


def test_two_dimms_on_a_channel_count_once_and_unnamed_channels_are_an_upper_bound():
    shared = HEADER + "\n".join(dimm(f"DIMM_A{i}", "P0 CHANNEL A", speed="2933 MT/s") for i in (1, 2))
    assert hw.dram_peak(shared)["channels"] == 1
    assert hw.dram_peak(shared)["bytes_per_second"] == 2933e6 * 8
    unnamed = HEADER + "\n".join(dimm(f"DIMM {i}", "Not Specified") for i in range(4))
    found = hw.dram_peak(unnamed)
    assert found["channels"] == 4 and "upper bound" in found["reason"]


def test_unreadable_dmidecode_output_is_peak_unknown():
    assert "no populated memory device" in hw.dram_peak(HEADER)["reason"]
    vm = HEADER + dimm("DIMM 0", "Not Specified", speed="Unknown")
    vm = vm.replace("\tSpeed: 3200 MT/s\n", "\tSpeed: Unknown\n")
    assert hw.dram_peak(vm)["reason"].startswith("peak unknown: memory device 'DIMM 0' gives no configured speed")


def fake_dmidecode(folder: Path, output: str, code: int = 0) -> dict[str, str]:
    """A `dmidecode` first on PATH that prints ``output`` (or fails with ``code``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "output.txt").write_text(output)
    tool = folder / "dmidecode"
    tool.write_text(f"#!/bin/sh\n[ \"$1 $2\" = '-t memory' ] || exit 9\n"
                    + (f"cat '{folder / 'output.txt'}'\n" if code == 0 else f"echo 'Permission denied' >&2; exit {code}\n"))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def test_read_dram_runs_dmidecode_and_says_why_not(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_dmidecode(tmp_path / "ok", TWO_SOCKETS)["PATH"])
    assert hw.read_dram()["bytes_per_second"] == 204.8e9
    monkeypatch.setenv("PATH", fake_dmidecode(tmp_path / "denied", "", code=1)["PATH"])
    assert "dmidecode -t memory failed (exit 1: Permission denied" in hw.read_dram()["reason"]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert hw.read_dram()["reason"] == "peak unknown: dmidecode is not installed (SMBIOS gives the DIMMs' channels and speed)"


def test_stream_rows_are_held_against_dram_only_where_it_applies():
    dram = {**hw.dram_peak(TWO_SOCKETS), "memory_nodes": 2}
    row = {"test": "triad", "node": "default", "mode": "memory", "array_size_class": "memory", "best_bytes_per_second": 102.4e9}
    (held,) = peak.memory_rows([dict(row)], {"dram": dram})
    assert held["fraction_of_peak"] == pytest.approx(0.5) and held["hardware_peak_bytes_per_second"] == 204.8e9
    for change, says in (({"node": "1"}, "node 1 alone"), ({"mode": "app-direct"}, "persistent memory"),
                         ({"array_size_class": "cache-resident"}, "cache-resident")):
        (other,) = peak.memory_rows([{**row, **change}], {"dram": dram})
        assert other["fraction_of_peak"] is None and says in other["peak_source"], other
    (one_node,) = peak.memory_rows([{**row, "node": "0"}], {"dram": {**dram, "memory_nodes": 1}})
    assert one_node["fraction_of_peak"] == pytest.approx(0.5)


# -- the commands --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory):
    return str(build_fake_libcuda(tmp_path_factory.mktemp("fake_cuda") / "libcuda.so.1"))


def test_measure_device_shows_the_links_peak_beside_each_copy(cli, tmp_path, fake_cuda):
    """A GPU (the stand-in driver) on a faked downtrained link: the table names pcie4x8, the warning and the %
    of peak; --json rows carry the peak of their size, and the report shows the same."""
    root = fake_link(tmp_path / "root", "16.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "16")
    env = {"XFERLAB_CUDA_LIBRARY": fake_cuda, "XFERLAB_STATE_ROOT": str(root)}
    args = ["measure", "device", "--backend", "cuda", "--kinds", "pinned", "--sizes", "4KiB,1MiB", "--directions",
            "h2d,d2h,bidir", "--chunks", "", "--no-launch", "--iterations", "3", "--min-time", "0",
            "--store", tmp_path / "s.duckdb"]
    code, out, err = cli(*args, env=env)
    assert code == 0, err
    assert "Against the link's peak" in out and "% of peak" in out and "bidir (sum)" in out
    assert "link peak: pcie4x8, the current link in sysfs 0000:65:00.0 (16.0 GT/s PCIe x8)" in out
    assert "below its maximum Gen4 x16" in out
    doc = json.loads(cli(*args, "--json", env=env, check=0)[1])
    assert doc["peaks"]["link"]["preset"] == "pcie4x8"
    model = resolve("pcie4x8" + peak.UPPER_BOUND)
    for row in doc["results"]:
        op = {"h2d": "read", "d2h": "write", "bidir": "readwrite"}[row["direction"]]
        ways = 2 if row["direction"] == "bidir" else 1
        assert row["hardware_peak_bytes_per_second"] == pytest.approx(ways * float(model.data_rate([row["size_bytes"]], op)[0]))
        assert row["fraction_of_peak"] == pytest.approx(row["median_bytes_per_second"] / row["hardware_peak_bytes_per_second"])
        assert row["peak_source"].startswith("pcie4x8")
    report = tmp_path / "r.html"
    code, _, err = cli("report", "--store", tmp_path / "s.duckdb", "--output", report, check=0)
    text = report.read_text()
    assert "Against the link&#39;s peak" in text and "pcie4x8, the current link in sysfs 0000:65:00.0" in text


def test_a_malformed_link_still_measures_and_says_peak_unknown(cli, tmp_path, fake_cuda):
    root = fake_link(tmp_path / "root", "garbage", "16")
    doc = json.loads(cli("measure", "device", "--backend", "cuda", "--kinds", "pinned", "--sizes", "4KiB", "--directions",
                         "h2d", "--chunks", "", "--no-launch", "--iterations", "2", "--min-time", "0", "--json",
                         "--store", tmp_path / "s.duckdb", check=0,
                         env={"XFERLAB_CUDA_LIBRARY": fake_cuda, "XFERLAB_STATE_ROOT": str(root)})[1])
    (row,) = doc["results"]
    assert row["hardware_peak_bytes_per_second"] is None and row["fraction_of_peak"] is None
    assert row["peak_source"] == ("peak unknown: sysfs 0000:65:00.0 current_link_speed is 'garbage', not a PCIe speed "
                                  "(2.5 … 128.0 GT/s)")


def test_measure_memory_records_the_dram_peak_from_dmidecode(cli, tmp_path):
    env = fake_dmidecode(tmp_path / "bin", TWO_SOCKETS)
    args = ["measure", "memory", "--kernels", "copy", "--size", "16MiB", "--threads", "1", "--iterations", "2",
            "--store", tmp_path / "s.duckdb"]
    code, out, err = cli(*args, env=env)
    assert code == 0, err
    assert "DRAM peak: dmidecode -t memory: 8 channels" in out and "DRAM peak" in out
    doc = json.loads(cli(*args, "--json", env=env, check=0)[1])
    assert doc["peaks"]["dram"]["bytes_per_second"] == 204.8e9
    assert list(doc["conventions"]["counting"]) == ["stream"] and "counting (stream): McCalpin's counting" in out
    (row,) = doc["results"]
    assert row["counting"] == "stream"
    if row["array_size_class"] == "memory":  # 16 MiB arrays stream from memory only under a 4 MiB LLC
        assert row["fraction_of_peak"] == pytest.approx(row["best_bytes_per_second"] / 204.8e9)
    else:
        assert row["fraction_of_peak"] is None and row["peak_source"].startswith("not held against DRAM")
    denied = json.loads(cli(*args, "--json", env=fake_dmidecode(tmp_path / "denied", "", code=1), check=0)[1])
    assert denied["results"][0]["fraction_of_peak"] is None
    assert denied["peaks"]["dram"]["reason"].startswith("peak unknown: dmidecode -t memory failed (exit 1")

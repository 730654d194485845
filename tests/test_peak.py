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
import re
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
    tool.write_text("#!/bin/sh\n[ \"$1 $2\" = '-t memory' ] || exit 9\n"
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


def test_the_device_matrix_shows_each_host_copys_percent_of_peak_in_the_terminal(cli, tmp_path, fake_cuda):
    """`measure device --matrix` on the stand-in GPU on a faked Gen5 x16 link: each h2d and d2h cell of the terminal's
    grids reads "<median> (<%> of peak)" as --json's fields give it (the one formatter the report shows it with,
    peak.cell); the device's own d2d cell crosses no link and shows its median alone."""
    from xferlab.units import format_rate

    root = fake_link(tmp_path / "root", "32.0 GT/s PCIe", "16")
    env = {"XFERLAB_CUDA_LIBRARY": fake_cuda, "XFERLAB_STATE_ROOT": str(root)}
    args = ["measure", "device", "--matrix", "--backend", "cuda", "--sizes", "4MiB", "--iterations", "3", "--min-time", "0",
            "--store", tmp_path / "s.duckdb"]
    code, out, err = cli(*args, env=env)
    assert code == 0, err
    doc = json.loads(cli(*args, "--json", env=env)[1])
    by = {(c["direction"], c["src"], c["dst"]): c for c in doc["results"]}
    for key in (("h2d", "host", "#0"), ("d2h", "#0", "host")):
        c = by[key]
        assert c["peak_source"].startswith("pcie5x16") and 0 < c["fraction_of_peak"]
        assert peak.cell(c["median_bytes_per_second"], "bytes_per_second", c["fraction_of_peak"]) == \
            f"{format_rate(c['median_bytes_per_second'])} ({peak.percent(c['fraction_of_peak'])} of peak)"
    # the table run's own cells: a figure and its % in every host copy's cell, none in the device's own copy's
    grids = re.findall(r"│ (host|#0) +│ +(.+?) +│", out)
    shown = {src: text for src, text in grids[:2]}  # host to device, then device to host
    for text in shown.values():
        assert re.fullmatch(r"\d[\d.]* [GM]B/s \(\d+\.\d % of peak\)", text), shown
    d2d = grids[2][1]
    assert "of peak" not in d2d and re.fullmatch(r"\d[\d.]* [GM]B/s", d2d), grids
    assert "link peak: pcie5x16, the current link in sysfs 0000:65:00.0" in out


# -- measure kernels: device memory and kernels on host memory ---------------------------------------

H200 = {"backend": "cuda", "index": 0, "type": "gpu", "memory_clock_rate_hz": 3201e6, "memory_bus_width_bits": 6016}


def test_the_device_memory_peak_is_clock_x_2_x_width_by_hand():
    """An H200 as CUDA's driver reports it (docs/gpu.md): a 3201 MHz memory clock, 6016 bits. By hand: double data
    rate, 3201e6 x 2 = 6402e6 transfers a second, each 6016 / 8 = 752 B wide: 6402e6 x 752 = 4.814304e12 B/s."""
    found = hw.device_memory(H200)
    assert found["status"] == hw.KNOWN and found["bytes_per_second"] == 4.814304e12
    assert found["reason"] == ("cuda #0's memory: 3201 MHz x 2 (double data rate) x 6016 bits / 8 = 4814 GB/s (the "
                               "runtime's memory clock and bus width)")
    opencl = hw.device_memory({"backend": "opencl", "index": 1, "type": "gpu"})
    assert opencl["status"] == hw.UNKNOWN and "the opencl runtime gives no memory clock and bus width" in opencl["reason"]
    zero = hw.device_memory({**H200, "memory_bus_width_bits": 0})
    assert zero["status"] == hw.UNKNOWN and zero["reason"].startswith("peak unknown:")
    cpu = hw.device_memory({"backend": "opencl", "index": 0, "type": "cpu"})
    assert cpu["status"] == hw.UNKNOWN and "CPU device, its memory the host's DRAM" in cpu["reason"]


def test_a_kernel_on_mapped_pinned_memory_is_held_against_the_link_for_its_read_write_mix(tmp_path):
    """BabelStream's bytes of a kernel on CUDA's mapped pinned memory all cross the link: read and dot only read
    (the DMA read limit), copy and mul read as much as they write (twice the full-duplex rate, as a bidir copy),
    add and triad read two arrays for one written: (2 + 1) / max(2 / read limit, 1 / write limit)."""
    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, "32.0 GT/s PCIe", "16"))
    model = resolve("pcie5x16" + peak.UPPER_BOUND)
    size = 256 * 2**20
    read, write, both = (float(model.data_rate([size], op)[0]) for op in ("read", "write", "readwrite"))
    assert write < read  # the read direction binds a triad: 2 / read > 1 / write
    expected = {"read": read, "dot": read, "copy": 2 * both, "mul": 2 * both, "add": 1.5 * read, "triad": 1.5 * read}
    for kernel, rate in expected.items():
        top, source = peak.kernel_link_peak(link, kernel, size)
        assert top == pytest.approx(rate), kernel
        assert source.startswith("pcie5x16, the current link in sysfs") and "mapped pinned host memory" in source
    assert "an upper bound" in peak.kernel_link_peak(link, "triad", size)[1]
    unknown = hw.pcie_link(ADDRESS, fake_link(tmp_path / "bad", "fast", "16"))
    assert peak.kernel_link_peak(unknown, "copy", size) == (None, unknown["reason"])


def test_kernels_rows_are_held_against_device_memory_or_the_link_only_where_the_bytes_go_there(tmp_path):
    from xferlab.measure.kernel_results import with_peaks

    link = hw.pcie_link(ADDRESS, fake_link(tmp_path, "32.0 GT/s PCIe", "16"))
    peaks = {"link": link, "device_memory": hw.device_memory(H200)}
    size = 256 * 2**20

    def point(memory, kernel="triad", best=2.4e12, size_class="memory"):
        return {"kernel": kernel, "memory": memory, "size_bytes": size, "best_bytes_per_second": best,
                "array_size_class": size_class}

    stream = [point("device"), point("pinned", best=40e9), point("managed"), point("device", size_class="cache-resident"),
              {"kernel": "spmv", "memory": "device", "best_bytes_per_second": 1e11}]
    align = [{"direction": "h2d", "size_bytes": 2**24, "median_bytes_per_second": 50e9}]
    d2d = [{"path": "runtime", "median_bytes_per_second": 1e10}, {"path": "staged", "median_bytes_per_second": 1e10}]
    got = with_peaks({"stream": stream, "align": align, "d2d": d2d}, peaks, "cuda")
    device, pinned, managed, small, spmv = got["stream"]
    assert device["hardware_peak_bytes_per_second"] == 4.814304e12
    assert device["fraction_of_peak"] == pytest.approx(2.4e12 / 4.814304e12)
    top, _ = peak.kernel_link_peak(link, "triad", size)
    assert pinned["hardware_peak_bytes_per_second"] == top and pinned["fraction_of_peak"] == pytest.approx(40e9 / top)
    assert managed["fraction_of_peak"] is None and managed["peak_source"].startswith("peak unknown: managed memory")
    assert small["fraction_of_peak"] is None and "cache-resident" in small["peak_source"]
    assert "fraction_of_peak" not in spmv
    (copy,) = got["align"]  # an aligned copy is a DMA copy over the link, as `measure device`'s
    assert copy["hardware_peak_bytes_per_second"] == peak.link_peak(link, "h2d", 2**24)[0]
    assert [r["peak_source"].split(":")[0] for r in got["d2d"]] == ["peak unknown", "peak unknown"]
    # OpenCL's pinned memory: where the kernel's accesses go is the runtime's; a CPU device has no link
    (ocl,) = peak.kernel_rows([point("pinned")], peaks, "opencl")
    assert ocl["fraction_of_peak"] is None and "CL_MEM_ALLOC_HOST_PTR" in ocl["peak_source"]
    cpu = {"type": "cpu", "backend": "opencl", "pci_bus_id": ""}
    on_cpu = peak.kernel_rows([point("pinned"), point("device")], peak.record("kernels", cpu), "opencl")
    assert on_cpu[0]["peak_source"].startswith("no link: a CPU device")
    assert on_cpu[1]["peak_source"].startswith("peak unknown: opencl #? is a CPU device")


def test_measure_kernels_shows_the_device_memory_and_link_peaks(cli, tmp_path, fake_cuda):
    """The stand-in GPU with an H200's memory clock and width (FAKE_CUDA_MEMORY) on a faked Gen5 x16 link: device
    memory rows against 4.81 TB/s, mapped pinned rows against the link for their mix, in the table and --json."""
    root = fake_link(tmp_path / "root", "32.0 GT/s PCIe", "16")
    env = {"XFERLAB_CUDA_LIBRARY": fake_cuda, "XFERLAB_STATE_ROOT": str(root), "FAKE_CUDA_MEMORY": "3201000 6016"}
    args = ["measure", "kernels", "--backend", "cuda", "--memory", "device,pinned", "--kernels", "copy,triad,read",
            "--widths", "1", "--size", "1MiB", "--iterations", "3", "--store", tmp_path / "s.duckdb"]
    code, out, err = cli(*args, env=env)
    assert code == 0, err
    assert "best, % of peak" in out
    assert "device memory peak: cuda #0's memory: 3201 MHz x 2 (double data rate) x 6016 bits / 8 = 4814 GB/s" in out
    doc = json.loads(cli(*args, "--json", env=env)[1])
    assert doc["peaks"]["device_memory"]["bytes_per_second"] == 4.814304e12
    rows = {(r["memory"], r["kernel"]): r for r in doc["results"]}
    assert set(rows) == {(m, k) for m in ("device", "pinned") for k in ("copy", "triad", "read")}
    for (memory, kernel), row in rows.items():
        if row["array_size_class"] not in (None, "memory"):  # 1 MiB arrays fit a cache the stand-in reports
            assert row["fraction_of_peak"] is None and "not held against a peak" in row["peak_source"]
            continue
        top = 4.814304e12 if memory == "device" else peak.kernel_link_peak(doc["peaks"]["link"], kernel, row["size_bytes"])[0]
        assert row["hardware_peak_bytes_per_second"] == pytest.approx(top)
        assert row["fraction_of_peak"] == pytest.approx(row["best_bytes_per_second"] / top)

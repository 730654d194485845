"""The matrices in the report (issue 28, "Matrices"): this machine's real 1x1 `measure memory --matrix` and a real
`measure device --matrix` on PoCL's two devices (POCL_DEVICES="pthread pthread") stored, then `xferlab report`: the
grids rebuilt from the stored samples show the cells the commands printed, each direction's sum/min/max, the % of
the DRAM peak under a faked dmidecode (test_peak.py's, DMTF DSP0134's format), a heat map of each and the command.
The peak fields of the cells: the memory matrix's held against the DRAM as every STREAM row (a matrix cell is DRAM,
not persistent memory), the device matrix's against each device's own link (faked sysfs links, test_peak.py's).

Bad input: none new here (the matrices' refusals are test_memory_matrix.py's and test_device_matrix.py's); a
dmidecode that fails (exit 1, not root) and one missing give "peak unknown" cells, never an error."""

from __future__ import annotations

import html
import json
import re

import pytest

from test_peak import TWO_SOCKETS, fake_dmidecode, fake_link
from xferlab.measure import device_matrix as dm, memory_matrix as mx, peak
from xferlab.measure.device import devices
from xferlab.measure.sizeclass import host_llc, rule_size
from xferlab.system import peaks as hw
from xferlab.units import format_rate, format_time

TWO = {"POCL_DEVICES": "pthread pthread"}


def section(page: str, title: str) -> str:
    """The text of the report's section whose heading starts with ``title`` (tags out, entities decoded)."""
    for m in re.finditer(r"<section id=\"[^\"]*\">\s*<h2>(.*?)</h2>(.*?)</section>", page, re.S):
        if html.unescape(m[1]).startswith(title):
            return m[2]
    raise AssertionError(f"no section {title!r}")


def cells_of(body: str) -> list[list[str]]:
    """Every table row of ``body`` as its cells' text."""
    return [[html.unescape(c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


@pytest.mark.skipif(not devices("opencl")[0], reason="no OpenCL device here (CI installs pocl-opencl-icd)")
def test_stored_memory_and_device_matrices_are_reported_as_grids(cli, tmp_path):
    store = tmp_path / "s.duckdb"
    env = fake_dmidecode(tmp_path / "bin", TWO_SOCKETS)  # 204.8 GB/s
    size = rule_size(host_llc(), 2**40, 64 * 2**20)  # arrays that stream from memory: held against the DRAM peak
    plain = ["measure", "memory", "--kernels", "copy", "--size", "16MiB", "--threads", "1", "--iterations", "2"]
    assert cli(*plain, "--store", store, check=0)[0] == 0
    memory = json.loads(cli("measure", "memory", "--matrix", "--size", f"{size}B", "--iterations", "2", "--json",
                            "--store", store, env=env, check=0)[1])
    # the terminal's grid shows the bandwidth cell with its % of the DRAM peak, as the report does (peak.cell)
    code, out, err = cli("measure", "memory", "--matrix", "--size", f"{size}B", "--iterations", "2", env=env)
    assert code == 0, err
    assert re.search(r"│ +0 │ +\d[\d.]* [GM]B/s \(\d+\.\d % of peak\) │", out), out
    assert re.search(r"│ +0 │ +\d[\d.]* [nµm]s │", out), out  # a latency has no peak
    device = json.loads(cli("measure", "device", "--matrix", "--platform", "Portable", "--sizes", "1MiB", "--iterations",
                            "3", "--min-time", "0", "--json", "--store", store, env=TWO, check=0)[1])
    report = tmp_path / "r.html"
    code, out, err = cli("report", "--store", store, "--output", report)
    assert code == 0, err
    page = report.read_text()
    section(page, "Memory tiers")  # the plain run keeps its own section: a matrix run does not hide it

    mem = section(page, f"Memory matrix (run {memory['run_id']})")
    rows = cells_of(mem)
    lat, bw = memory["matrices"]
    for m in (lat, bw):
        assert m["count"] == len(m["cpu_nodes"]) * len(m["memory_nodes"])
        assert any(r == ["CPU node", *(f"memory node {n}" for n in m["memory_nodes"])] for r in rows)
        summary = html.unescape(re.sub(r"<[^>]+>", "", mem))
        assert mx.summary_line(m) in summary  # sum, min and max as the command printed them
    for cell in memory["results"]:
        if cell["test"] == "latency":
            assert format_time(cell["median_seconds"]) in [c for r in rows if r[0] == cell["cpu_node"] for c in r[1:]]
            continue
        assert cell["peak_source"].startswith("dmidecode -t memory: 8 channels")  # DRAM, not "persistent memory"
        assert cell["hardware_peak_bytes_per_second"] == 204.8e9
        assert cell["fraction_of_peak"] == pytest.approx(cell["best_bytes_per_second"] / 204.8e9)
        shown = f"{format_rate(cell['best_bytes_per_second'])} ({peak.percent(cell['fraction_of_peak'])} of peak)"
        assert shown in [c for r in rows if r[0] == cell["cpu_node"] for c in r[1:]], (shown, rows)
    assert 'alt="memory matrix, latency"' in mem and 'alt="memory matrix, read"' in mem  # the heat maps
    assert "xferlab measure memory --matrix" in mem and "DRAM peak: dmidecode -t memory" in html.unescape(mem)

    dev = html.unescape(section(page, f"Device matrix (run {device['run_id']})"))
    text = re.sub(r"<[^>]+>", "", dev)
    for direction in ("host to device", "device to host", "device to device"):
        assert f"{direction}: median of 1 MiB copies" in text
        assert f'alt="device matrix, {direction}"' in dev
    rows = cells_of(dev)
    for c in device["results"]:
        assert c["status"] == "measured"
        assert c["peak_source"].startswith("no link" if c["src_device"] == c["dst_device"] or None in
                                           (c["src_device"], c["dst_device"]) else "peak unknown: the path between")
        assert any(r[0] == c["src"] and format_rate(c["median_bytes_per_second"]) in r[1:] for r in rows), c
    for t in device["totals"]:
        assert f"{t['direction']} over {t['measured_cells']} cells: {dm.totals_text(t)}" in text
        assert t["measured_cells"] == (2 if t["direction"] != "d2d" else 4)
    assert "Copy engine against kernel copy" in text and "xferlab measure device --matrix --platform Portable" in text


def test_memory_matrix_cells_carry_the_dram_peak_fields():
    dram = hw.dram_peak(TWO_SOCKETS)
    cells = [{"test": "latency", "cpu_node": "0", "memory_node": "0", "node": "0", "mode": "matrix", "median_seconds": 9e-8},
             {"test": "read", "cpu_node": "0", "memory_node": "0", "node": "0", "mode": "matrix",
              "array_size_class": "memory", "best_bytes_per_second": 51.2e9}]
    lat, read = mx.with_peaks([dict(c) for c in cells], {"dram": {**dram, "memory_nodes": 1}})
    assert "fraction_of_peak" not in lat  # a latency has no bandwidth peak
    assert read["counting"] == "stream" and read["fraction_of_peak"] == pytest.approx(0.25)
    assert read["hardware_peak_bytes_per_second"] == 204.8e9 and read["peak_source"] == dram["reason"]
    # two sockets: one memory node alone is not the machine's channels
    (_, other) = mx.with_peaks([dict(c) for c in cells], {"dram": {**dram, "memory_nodes": 2}})
    assert other["fraction_of_peak"] is None and other["peak_source"].startswith("peak unknown: node 0 alone")
    (_, small) = mx.with_peaks([dict(cells[0]), {**cells[1], "array_size_class": "cache-resident"}],
                               {"dram": {**dram, "memory_nodes": 1}})
    assert small["peak_source"].startswith("not held against DRAM: the arrays are cache-resident")
    (_, unread) = mx.with_peaks([dict(c) for c in cells], {"dram": hw._unknown("peak unknown: dmidecode is not installed")})
    assert unread["fraction_of_peak"] is None and unread["peak_source"] == "peak unknown: dmidecode is not installed"


def test_memory_matrix_rebuilt_from_stored_rows_keeps_cpu_nodes_apart():
    """Two CPU nodes reading one memory node with as many threads: two cells, never one group."""
    def sample(cpu, value, i):
        return {"suite": "memory", "test": "read", "metric": "bandwidth_bytes_per_second", "value": value,
                "size_bytes": 2**30, "threads": 4, "node": "0", "mode": "matrix", "cpu_node": cpu, "memory_node": "0",
                "iteration": i, "warmup": False, "validated": True, "cpus": "0-3" if cpu == "0" else "4-7"}
    rows = [sample("0", 20e9 + i, i) for i in range(3)] + [sample("1", 10e9 + i, i) for i in range(3)]
    run = {"params": {"cells": [[0, 0, [0, 1, 2, 3]], [1, 0, [4, 5, 6, 7]]]}, "inventory": {"peaks": {}}}
    plan_cells, cell_rows, (read,) = mx.stored(run, rows)
    assert [(c.cpu_node, c.memory_node) for c in plan_cells] == [(0, 0), (1, 0)]
    assert read["values"] == [[20e9 + 2], [10e9 + 2]] and read["count"] == 2
    assert all(r["peak_source"] == "peak unknown: the run recorded no DRAM peak" for r in cell_rows)


def test_device_matrix_cells_carry_each_devices_link(tmp_path, monkeypatch):
    root = fake_link(tmp_path / "root", "16.0 GT/s PCIe", "16", address="0000:65:00.0")
    fake_link(root, "8.0 GT/s PCIe", "8", address="0000:b3:00.0")
    monkeypatch.setenv("XFERLAB_STATE_ROOT", str(root))
    gpus = [{"index": 0, "type": "gpu", "pci_bus_id": "0000:65:00.0"}, {"index": 1, "type": "gpu", "pci_bus_id": "0000:b3:00.0"}]
    peaks = peak.record("device", gpus[0], gpus)
    assert peaks["links"]["1"]["preset"] == "pcie3x8" and peaks["link"]["preset"] == "pcie4x16"
    plan = dm.MatrixPlan(backend="opencl", kind="pinned", size=2**26, devices=gpus)
    rows = []
    for i, gpu in enumerate(gpus):
        for direction in ("h2d", "d2h", "d2d"):
            rows += [{"suite": "device", "test": direction, "device_index": i, "seconds": 0.01, "validated": True,
                      "warmup": False} for _ in range(3)]
    cells = dm.with_peaks(dm.cells(plan, rows), peaks)
    by = {(c["direction"], c["src"], c["dst"]): c for c in cells}
    h2d1 = by[("h2d", "host", "#1")]
    limit, _ = peak.link_peak(peaks["links"]["1"], "h2d", 2**26)
    assert h2d1["hardware_peak_bytes_per_second"] == limit and h2d1["peak_source"].startswith("pcie3x8")
    assert h2d1["fraction_of_peak"] == pytest.approx(h2d1["median_bytes_per_second"] / limit)
    assert by[("d2h", "#0", "host")]["peak_source"].startswith("pcie4x16")
    assert by[("d2d", "#0", "#0")]["peak_source"].startswith("no link: a device-to-device copy")
    pair = by[("d2d", "#0", "#1")]
    assert pair["status"] == "n/a" and pair["fraction_of_peak"] is None and pair["peak_source"].startswith("peak unknown")

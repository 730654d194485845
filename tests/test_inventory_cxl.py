"""What a memory node is (issue 30, "Knowing what a memory node is"): CXL devices, decoders and regions from fixture
trees built from the kernel's documented sysfs ABI (Documentation/ABI/testing/sysfs-bus-cxl: memX with serial,
numa_node, ram/size, pmem/size; decoderX.Y with start, size, mode, target_type, interleave_*, region, target_list;
regionZ with mode, size, resource, interleave_ways/granularity, targetN and its dax_regionZ/daxZ.Y whose
target_node is the node it backs: sysfs-bus-dax), persistent memory from ndctl's and daxctl's documented JSON
(ndctl-list(1), daxctl-list(1)) printed by stand-in tools first on PATH, HBM from the HMAT's read bandwidth
(Documentation/admin-guide/mm/numaperf.rst). Four machines: a CXL-backed node, a KMEM-DAX PMem node, an HBM node,
and none (this machine: no /sys/bus/cxl, ndctl and daxctl print nothing).

Bad input tried: a malformed sysfs size ("lots"), a region whose dax device has target_node -1, ndctl printing
what is not JSON, daxctl failing (exit 1), the tools absent from PATH: each gives None or a note, never an error."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from xferlab.system import backing, cxl, pmem

GiB = 2**30
CAT = shutil.which("cat")


def write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        path = folder / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return folder


def cxl_tree(root: Path, node: int = 2, ways: int = 2) -> Path:
    """A host bridge's root decoder, ``ways`` Type 3 memory devices each with an endpoint decoder, and one ram
    region interleaved over them, onlined through its dax device on ``node``. As in sysfs, the bus's devices are
    links to the device tree (/sys/devices/platform/ACPI0017:00/root0/…)."""
    tree = root / "sys" / "devices" / "platform" / "ACPI0017:00" / "root0"
    bus = root / "sys" / "bus" / "cxl" / "devices"
    bus.mkdir(parents=True, exist_ok=True)
    size = ways * 4 * GiB
    decoder0 = write(tree / "decoder0.0", start="0x1050000000", size=hex(16 * GiB), target_type="expander",
                     interleave_ways=str(ways), interleave_granularity="256", target_list=",".join(map(str, range(ways))))
    region = write(decoder0 / "region0", mode="ram", size=hex(size), resource="0x1050000000",
                   interleave_ways=str(ways), interleave_granularity="256",
                   **{f"target{i}": f"decoder{i + 2}.0" for i in range(ways)},
                   **{"dax_region0__dax0.0__target_node": str(node), "dax_region0__dax0.0__size": hex(size)})
    links = {"decoder0.0": decoder0, "region0": region}
    for i in range(ways):
        mem = write(root / "sys" / "devices" / "pci0000:0c" / f"0000:0c:0{i}.0" / f"mem{i}", serial=hex(0x1000 + i),
                    numa_node="0", ram__size=hex(4 * GiB), pmem__size="0x0", firmware_version="BWFW VERSION 00")
        endpoint = tree / f"port{i + 1}" / f"endpoint{i + 2}"
        decoder = write(endpoint / f"decoder{i + 2}.0", start="0x1050000000", size=hex(size), mode="ram",
                        target_type="expander", interleave_ways=str(ways), interleave_granularity="256", region="region0",
                        dpa_size=hex(4 * GiB))
        (endpoint / "uport").symlink_to(mem)
        links.update({f"mem{i}": mem, f"decoder{i + 2}.0": decoder})
    for name, target in links.items():
        (bus / name).symlink_to(target)
    return root


def hmat(root: Path, bandwidth: dict[int, int]) -> Path:
    for node, mb in bandwidth.items():
        write(root / "sys" / "devices" / "system" / "node" / f"node{node}" / "access0" / "initiators",
              read_bandwidth=str(mb), read_latency="100")
    return root


def tools(folder: Path, ndctl: str | None = "", daxctl: str | None = "", code: int = 0) -> str:
    """Stand-in ndctl and daxctl first on PATH printing ``ndctl``/``daxctl`` (None: the tool is absent); a PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, output, args in (("ndctl", ndctl, "list --regions --namespaces"), ("daxctl", daxctl, "list")):
        if output is None:
            continue
        (folder / f"{name}.json").write_text(output)
        tool = folder / name
        tool.write_text(f"#!/bin/sh\n[ \"$*\" = '{args}' ] || exit 9\n"
                        + (f"{CAT} '{folder / f'{name}.json'}'\n" if code == 0 else f"echo 'no access' >&2; exit {code}\n"))
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return f"{folder}{os.pathsep}/usr/bin/nothing-else"


#: ndctl-list(1)'s region with its devdax namespace (one region: ndctl prints the object, not a list of one).
NDCTL = json.dumps({"dev": "region1", "size": 1082331758592, "align": 16777216, "available_size": 0,
                    "max_available_extent": 0, "type": "pmem", "iset_id": -2506113243053544244, "numa_node": 1,
                    "target_node": 3, "persistence_domain": "memory_controller",
                    "namespaces": [{"dev": "namespace1.0", "mode": "devdax", "map": "dev", "size": 1065418227712,
                                    "uuid": "7d3e3b6d-a5ba-4c3f-9a3c-0e1d9d7b5a3c", "chardev": "dax1.0",
                                    "align": 2097152, "numa_node": 1}]}, indent=2)
#: daxctl-list(1)'s device after `daxctl reconfigure-device --mode=system-ram dax1.0`.
DAXCTL = json.dumps([{"chardev": "dax1.0", "size": 1065418227712, "target_node": 3, "align": 2097152,
                      "mode": "system-ram", "online_memblocks": 496, "total_memblocks": 496, "movable": True}], indent=2)


def nodes(*memory_only: int) -> list[dict]:
    """Two sockets (nodes 0 and 1) and the memory-only nodes given."""
    out = [{"node": 0, "cpus": [0, 1], "memory_total_bytes": 64 * GiB, "kind": "cpu+memory"},
           {"node": 1, "cpus": [2, 3], "memory_total_bytes": 64 * GiB, "kind": "cpu+memory"}]
    return out + [{"node": n, "cpus": [], "memory_total_bytes": 8 * GiB, "kind": "memory-only"} for n in memory_only]


def test_a_cxl_region_backs_its_node(tmp_path, monkeypatch):
    root = cxl_tree(tmp_path / "root", node=2)
    found = cxl.read(root)
    assert found["present"] and [m["name"] for m in found["memdevs"]] == ["mem0", "mem1"]
    assert found["memdevs"][0] == {"name": "mem0", "serial": 0x1000, "numa_node": 0, "ram_bytes": 4 * GiB, "pmem_bytes": 0,
                                   "firmware_version": "BWFW VERSION 00"}
    assert [d["name"] for d in found["decoders"]] == ["decoder0.0", "decoder2.0", "decoder3.0"]
    assert found["decoders"][1]["mode"] == "ram" and found["decoders"][1]["region"] == "region0"
    assert found["decoders"][0]["target_list"] == "0,1" and found["decoders"][0]["region"] is None
    (region,) = found["regions"]
    assert region["mode"] == "ram" and region["size"] == 8 * GiB and region["interleave_ways"] == 2
    assert region["targets"] == ["decoder2.0", "decoder3.0"] and region["memdevs"] == ["mem0", "mem1"]
    assert region["dax_devices"] == [{"name": "dax0.0", "target_node": 2}] and region["numa_nodes"] == [2]
    monkeypatch.setenv("PATH", tools(tmp_path / "bin"))
    labelled = backing.read(nodes(2), root)["numa_nodes"]
    assert [n["memory_kind"] for n in labelled] == [None, None, "cxl"]
    assert labelled[2]["backing"] == "CXL region0 (ram, 2-way interleave over mem0, mem1, 8 GiB)"


def test_a_kmem_dax_pmem_node_is_memory_only_not_cxl(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", tools(tmp_path / "bin", NDCTL, DAXCTL))
    found = pmem.read()
    assert found["regions"] == [{"name": "region1", "type": "pmem", "size": 1082331758592, "numa_node": 1,
                                 "target_node": 3, "persistence_domain": "memory_controller"}]
    assert found["namespaces"] == [{"name": "namespace1.0", "region": "region1", "mode": "devdax",
                                    "size": 1065418227712, "device": "dax1.0", "numa_node": 1}]
    assert found["dax_devices"] == [{"name": "dax1.0", "mode": "system-ram", "size": 1065418227712, "target_node": 3}]
    assert found["notes"] == []
    labelled = backing.read(nodes(3), tmp_path / "no-cxl")["numa_nodes"]
    assert labelled[2]["memory_kind"] == "pmem-kmem"
    assert labelled[2]["backing"] == ("memory-only: KMEM-DAX PMem, daxctl dax1.0 in system-ram mode from persistent-memory "
                                      "namespace1.0 (devdax, region1)")
    assert "CXL" not in labelled[2]["backing"]
    # the same device in devdax mode is App-Direct, not a NUMA node: nothing backs node 3
    monkeypatch.setenv("PATH", tools(tmp_path / "devdax", NDCTL, DAXCTL.replace("system-ram", "devdax")))
    assert backing.read(nodes(3), tmp_path / "no-cxl")["numa_nodes"][2]["memory_kind"] == "unknown"


def test_an_hbm_node_in_flat_mode_is_memory_only_not_cxl(tmp_path, monkeypatch):
    root = hmat(tmp_path / "root", {0: 204800, 1: 204800, 2: 819200})
    monkeypatch.setenv("PATH", tools(tmp_path / "bin"))
    labelled = backing.read(nodes(2), root)["numa_nodes"]
    assert labelled[2]["memory_kind"] == "hbm"
    assert labelled[2]["backing"] == ("memory-only: HBM in flat mode, HMAT read bandwidth 819200 MB/s above the CPU "
                                      "nodes' (at most 204800 MB/s)")
    slow = hmat(tmp_path / "slow", {0: 204800, 1: 204800, 2: 51200})  # slower than DRAM: not HBM, and not CXL either
    (unknown,) = [n for n in backing.read(nodes(2), slow)["numa_nodes"] if n["memory_kind"]]
    assert unknown["memory_kind"] == "unknown" and unknown["backing"].startswith("memory-only: no CXL region")


def test_none_here_is_said_so(cli, tmp_path):
    empty = tools(tmp_path / "bin")  # ndctl and daxctl that print nothing, as they do here
    code, out, err = cli("inventory", env={"PATH": f"{empty}{os.pathsep}{os.environ['PATH']}",
                                           "XFERLAB_STATE_ROOT": str(tmp_path / "bare")})
    assert code == 0, err
    assert "CXL: none (no /sys/bus/cxl: the kernel shows no CXL bus" in out
    assert "persistent memory: namespaces none; DAX devices none" in out and "what backs it" in out
    doc = json.loads(cli("inventory", "--json", env={"XFERLAB_STATE_ROOT": str(tmp_path / "bare")}, check=0)[1])
    (machine,) = doc["results"]
    assert machine["cxl"]["present"] is False and machine["cxl"]["regions"] == []
    assert machine["pmem"]["namespaces"] == [] and machine["pmem"]["dax_devices"] == []
    assert all(n["memory_kind"] in (None, *backing.KINDS) for n in machine["numa_nodes"])


def test_inventory_shows_a_cxl_machines_facts(cli, tmp_path):
    root = cxl_tree(tmp_path / "root", node=2)
    env = {"XFERLAB_STATE_ROOT": str(root), "PATH": f"{tools(tmp_path / 'bin', NDCTL, DAXCTL)}{os.pathsep}{os.environ['PATH']}"}
    code, out, err = cli("inventory", env=env)
    assert code == 0, err
    assert ("CXL: 2 memory device(s), 3 decoder(s), 1 region(s); CXL region0 (ram, 2-way interleave over mem0, mem1, "
            "8 GiB) backs node(s) 2") in " ".join(out.split())
    assert "namespaces namespace1.0 (devdax, dax1.0); DAX devices dax1.0 (system-ram, node 3)" in " ".join(out.split())
    doc = json.loads(cli("inventory", "--json", env=env, check=0)[1])
    assert doc["results"][0]["cxl"]["regions"][0]["numa_nodes"] == [2]


def test_what_cannot_be_read_is_none_or_a_note(tmp_path, monkeypatch):
    root = cxl_tree(tmp_path / "root", node=2, ways=1)
    (root / "sys" / "bus" / "cxl" / "devices" / "mem0" / "ram" / "size").write_text("lots\n")
    (root / "sys" / "bus" / "cxl" / "devices" / "region0" / "dax_region0" / "dax0.0" / "target_node").write_text("-1\n")
    found = cxl.read(root)
    assert found["memdevs"][0]["ram_bytes"] is None and found["regions"][0]["numa_nodes"] == []
    monkeypatch.setenv("PATH", tools(tmp_path / "bad", "not json", None))
    bad = pmem.read()
    assert bad["namespaces"] == [] and bad["notes"][0].startswith("ndctl list --regions --namespaces printed what is not JSON")
    assert bad["notes"][1] == "daxctl is not installed (Debian: apt-get install daxctl)"
    monkeypatch.setenv("PATH", tools(tmp_path / "fails", "", "", code=1))
    assert pmem.read()["notes"] == ["ndctl list --regions --namespaces failed (exit 1: no access)",
                                    "daxctl list failed (exit 1: no access)"]


@pytest.mark.parametrize("shape", ["object", "list", "regions"])
def test_ndctl_output_in_each_shape(shape):
    region = json.loads(NDCTL)
    data = {"object": region, "list": [region, {**region, "dev": "region2", "namespaces": []}],
            "regions": {"regions": [region]}}[shape]
    regions, spaces = pmem.parse_ndctl(data)
    assert regions[0]["name"] == "region1" and spaces[0]["region"] == "region1" and spaces[0]["device"] == "dax1.0"

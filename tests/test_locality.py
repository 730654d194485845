"""Device locality (issue 26): an accelerator's PCI address, NUMA node and local CPUs, read from sysfs trees
built in the kernel's documented format (Documentation/ABI/testing/sysfs-bus-pci), and from this machine."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from xferlab.cli import app
from xferlab.measure.device import devices
from xferlab.system.locality import HOST_CPU, device_locality, normalize_pci


def sysfs(tmp_path, address, node, cpus):
    """A /sys with one PCI device: ``numa_node`` and ``local_cpulist`` as the kernel writes them."""
    folder = tmp_path / "bus" / "pci" / "devices" / address
    folder.mkdir(parents=True)
    (folder / "numa_node").write_text(f"{node}\n")
    (folder / "local_cpulist").write_text(f"{cpus}\n")
    return tmp_path


def test_a_gpu_on_node_one(tmp_path):
    root = sysfs(tmp_path, "0000:65:00.0", 1, "16-31,48-63")
    found = device_locality({"backend": "opencl", "type": "gpu", "pci_bus_id": "0000:65:00.0"}, root)
    assert found["pci_bus_id"] == "0000:65:00.0"
    assert found["numa_node"] == 1
    assert found["local_cpus"] == list(range(16, 32)) + list(range(48, 64))
    assert found["source"] == "sysfs" and found["note"] == ""


def test_cuda_spelling_is_sysfs_spelling(tmp_path):
    # CUDA's cuDeviceGetPCIBusId spells the domain with 8 digits and upper case
    root = sysfs(tmp_path, "0000:3b:00.0", 0, "0-7")
    assert normalize_pci("00000000:3B:00.0") == "0000:3b:00.0"
    assert normalize_pci("3b:00.0") == "0000:3b:00.0"
    assert normalize_pci("") is None and normalize_pci("garbage") is None
    assert device_locality({"backend": "cuda", "type": "gpu", "pci_bus_id": "00000000:3B:00.0"}, root)["numa_node"] == 0


def test_no_affinity_is_none_not_minus_one(tmp_path):
    # a single-node platform (or a VM) writes -1: the device is not on a node of its own
    root = sysfs(tmp_path, "0000:00:04.0", -1, "0-1")
    found = device_locality({"backend": "opencl", "type": "accelerator", "pci_bus_id": "0000:00:04.0"}, root)
    assert found["numa_node"] is None and found["local_cpus"] == [0, 1]
    assert "no NUMA affinity" in found["note"]


def test_missing_from_sysfs_and_no_address(tmp_path):
    found = device_locality({"backend": "opencl", "type": "gpu", "pci_bus_id": "0000:99:00.0"}, tmp_path)
    assert found["pci_bus_id"] == "0000:99:00.0" and found["numa_node"] is None and "not in sysfs" in found["note"]
    found = device_locality({"backend": "opencl", "type": "gpu", "pci_bus_id": ""}, tmp_path)
    assert found["pci_bus_id"] is None and "cl_khr_pci_bus_info" in found["note"]


def test_cpu_device_is_the_host(tmp_path):
    found = device_locality({"backend": "opencl", "type": "cpu", "pci_bus_id": ""}, tmp_path)
    assert found == {"pci_bus_id": None, "numa_node": None, "local_cpus": [], "source": "none", "note": HOST_CPU}


def test_this_machine_inventory():
    """The real probe: every device record carries its locality; PoCL's CPU device says it is the host."""
    found, why = devices("opencl")
    if why is not None:
        return  # no OpenCL here: the fixture trees above still ran
    assert found and all("pci_bus_id" in d and "locality" in d for d in found)
    for d in found:
        if d["type"] == "cpu":
            assert d["pci_bus_id"] == "" and d["locality"]["note"] == HOST_CPU
    out = CliRunner().invoke(app, ["inventory", "--json"])
    assert out.exit_code == 0, out.output
    record = json.loads(out.output)["results"][0]["accelerators"]["opencl"]["devices"][0]
    assert "locality" in record


def launches(cpu, seconds):
    return [{"test": "launch", "kernel_args": 0, "cpus": str(cpu), "seconds": s, "params": {"governor": "none"}}
            for s in seconds]


def test_launch_study_flags_a_jittery_cpu():
    """Seed 001's OS jitter near GPU 0: a CPU whose p99 is more than twice the best CPU's is flagged; the best
    CPU (lowest median) and one with a p99 1.5x the best's are not."""
    from xferlab.studies.launch import table

    rows = {"cpu0": launches(0, [10e-6] * 100),                       # best: lowest median
            "cpu1": launches(1, [11e-6] * 95 + [50e-6] * 5),          # p99 5x the best's: jitter
            "cpu2": launches(2, [12e-6] * 95 + [15e-6] * 5),          # p99 1.5x: none
            "unpinned": launches("", [30e-6] * 100)}
    by = {r["where"]: r for r in table(rows)}
    assert by["cpu0"]["best_cpu"] and not by["cpu0"]["jitter"] and by["cpu0"]["p99_over_best_cpu"] == 1
    assert by["cpu1"]["jitter"] and by["cpu1"]["p99_over_best_cpu"] == 5
    assert not by["cpu2"]["jitter"] and abs(by["cpu2"]["p99_over_best_cpu"] - 1.5) < 1e-9
    assert "jitter" not in by["unpinned"]  # the unpinned thread is not a CPU to compare
    # the lowest-median CPU may be the jittery one (this VM: CPU 1, 29 µs median, 2 ms p99): flagged against the best tail
    rows = {"cpu0": launches(0, [12e-6] * 100), "cpu1": launches(1, [10e-6] * 95 + [2e-3] * 5)}
    by = {r["where"]: r for r in table(rows)}
    assert by["cpu1"]["best_cpu"] and by["cpu1"]["jitter"] and not by["cpu0"]["jitter"]


def test_placement_notes_say_local_or_remote():
    from xferlab.system.locality import placement_notes

    gpu = {"locality": {"numa_node": 1, "local_cpus": list(range(16, 32))}}
    assert placement_notes([16, 17], gpu) == ["host thread on CPUs 16-17: local to the device (node 1)"]
    assert placement_notes([0], gpu) == ["host thread on CPUs 0: a remote socket; the device's local CPUs are "
                                         "16-31 (node 1)"]
    assert placement_notes(None, gpu) == [] and placement_notes([0], {"locality": {"local_cpus": []}}) == []


def test_cpus_outside_the_allowed_set_is_one_line(cli):
    """Bad input tried: a CPU beyond the allowed set, a word, a negative CPU, an empty list."""
    import os

    beyond = max(os.sched_getaffinity(0)) + 1
    for bad, shown in ((str(beyond), f"--cpus {beyond}: CPU {beyond} does not exist or is not allowed"),
                       ("abc", "--cpus 'abc' is not a CPU list"), ("-1", "--cpus '-1' is not a CPU list"),
                       ("", "--cpus '' is not a CPU list"), ("0,,1", "--cpus '0,,1' is not a CPU list")):
        code, out, err = cli("measure", "device", "--cpus", bad, "--sizes", "4KiB", "--no-launch", "--chunks", "")
        assert code == 2 and err.strip().startswith("error: ") and shown in err and len(err.strip().splitlines()) == 1, (bad, err)


def test_cpus_places_the_copies_host_thread(cli, tmp_path):
    """The real probe: --cpus reaches the transfer run, whose setup record and stored rows carry it."""
    import os

    found, why = devices("opencl")
    if why is not None:
        return
    cpu = min(os.sched_getaffinity(0))
    out = cli.json("measure", "device", "--cpus", str(cpu), "--sizes", "4KiB", "--kinds", "pageable", "--directions",
                   "h2d", "--no-launch", "--chunks", "", "--store", tmp_path / "s.duckdb")
    transfers = [r for r in out["results"] if r["test"] == "transfer"]
    assert transfers and all(r["pinned_cpu"] == str(cpu) for r in transfers), transfers


def test_inventory_table_shows_locality():
    from xferlab.cli.inventory import _where

    assert _where({"pci_bus_id": "0000:65:00.0", "numa_node": 1, "local_cpus": [16, 17, 18], "note": ""}) == \
        "0000:65:00.0, node 1, CPUs 16-18"
    assert _where({"pci_bus_id": None, "numa_node": None, "local_cpus": [], "note": HOST_CPU}) == HOST_CPU


def test_studies_default_to_the_device_socket():
    from xferlab.system.locality import study_cpus

    gpu = {"locality": {"numa_node": 1, "local_cpus": [2, 3, 4, 5]}}
    assert study_cpus(gpu, [0, 1, 2, 3]) == ([2, 3], "the device's local socket (node 1)")
    host = {"locality": {"numa_node": None, "local_cpus": []}}
    assert study_cpus(host, [1, 0]) == ([0, 1], "every allowed CPU (the device gives no local CPUs)")

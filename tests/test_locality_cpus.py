"""Device locality (issue 26), the host thread's placement: `--cpus LIST` on measure launch, collab and kernels
(the probe places the thread once the device is open and reports the CPUs the kernel then gives it), the launch
and granularity studies' default of the device's local socket and their notes saying which CPUs and why, and the
inventory's locality fields in the JSON vocabulary.

Bad input tried: a CPU beyond the allowed set and a word (`abc`) as --cpus of measure launch, collab, kernels and
study run launch/granularity; --cpus given to a study that does not take it (tiers); a CPU beyond the allowed set
given to the probe itself; a locality field renamed in a real inventory."""

from __future__ import annotations

import copy
import json
import os

import pytest
from jsonschema import Draft202012Validator

from xferlab.measure.device import devices
from xferlab.measure.probe import run_probe
from xferlab.schemas import output_schema
from xferlab.store import open_store

ALLOWED = sorted(os.sched_getaffinity(0))
CPU = ALLOWED[-1]  # one CPU, not the whole allowed set where there are several: placement shows
BEYOND = ALLOWED[-1] + 1


def _opencl() -> bool:
    return devices("opencl")[1] is None


COMMANDS = [("measure", "launch", "--count", "100", "--args", "0"),
            ("measure", "collab", "--patterns", "histogram", "--elements", "4096", "--repeats", "2"),
            ("measure", "kernels", "--size", "1MiB", "--memory", "device", "--kernels", "copy"),
            ("study", "run", "launch"), ("study", "run", "granularity")]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:3]))
def test_bad_cpus_is_one_line(cli, tmp_path, command):
    if not _opencl():
        pytest.skip("no OpenCL device: the commands refuse before --cpus is read")
    for bad, shown in ((str(BEYOND), f"--cpus {BEYOND}: CPU {BEYOND} does not exist or is not allowed"),
                       ("abc", "--cpus 'abc' is not a CPU list")):
        code, out, err = cli(*command, "--cpus", bad, "--store", tmp_path / "s.duckdb")
        assert code == 2 and err.strip().startswith("error: ") and shown in err, (command, bad, err)
        assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.duckdb").exists()  # refused before anything was stored


def test_cpus_to_a_study_that_does_not_take_it(cli):
    code, out, err = cli("study", "run", "tiers", "--cpus", "0")
    assert code == 2 and "--cpus does not apply to the tiers study; it applies to: granularity, launch" in err, err


PROBE_RUNS = {
    "launch": ["launch", "--count", "20", "--warmup", "2", "--args", "0"],
    "chunks": ["chunks", "--total", "65536", "--chunks", "65536", "--repeats", "1"],
    "collab": ["collab", "--size", "4096", "--repeats", "2", "--host-threads", "2"],
    "kernels": ["kernels", "--mode", "stream", "--kernels", "copy", "--memory", "device", "--size", "65536",
                "--iterations", "2", "--warmup", "0"],
}


@pytest.mark.parametrize("name", PROBE_RUNS)
def test_probe_places_the_host_thread(name):
    """The real probe: with --cpus the setup record reports the CPUs the kernel gives the host thread once it is
    placed (sched_getaffinity after the placement, not the request echoed); without, nothing."""
    if not _opencl():
        pytest.skip("no OpenCL device")
    placed = run_probe([*PROBE_RUNS[name], "--cpus", str(CPU)], timeout=300)
    assert placed.ok, placed.failure
    assert placed.first("setup")["host_cpus"] == str(CPU)
    free = run_probe(PROBE_RUNS[name], timeout=300)
    assert free.ok and free.first("setup")["host_cpus"] == ""
    refused = run_probe([*PROBE_RUNS[name], "--cpus", str(BEYOND)], timeout=60)
    assert refused.returncode == 2 and f"CPU {BEYOND} does not exist or is not allowed" in refused.failure


def _params(store) -> dict:
    with open_store(store, read_only=True) as db:
        return json.loads(db.query("SELECT params FROM runs ORDER BY run_id")[-1]["params"])


def test_measure_launch_collab_kernels_record_the_placement(cli, tmp_path):
    """The runs store --cpus in their params; measure launch's rows carry it as pinned_cpu."""
    if not _opencl():
        pytest.skip("no OpenCL device")
    store = tmp_path / "s.duckdb"
    out = cli.json("measure", "launch", "--count", "200", "--args", "0", "--cpus", str(CPU), "--store", store)
    launches = [r for r in out["results"] if r["test"] == "launch"]
    assert launches and all(r["pinned_cpu"] == str(CPU) for r in launches), launches
    assert _params(store)["cpus"] == str(CPU)
    cli.json("measure", "collab", "--patterns", "histogram", "--elements", "4096", "--repeats", "2", "--cpus", str(CPU),
             "--store", store)
    assert _params(store)["cpus"] == str(CPU)
    cli.json("measure", "kernels", "--size", "64KiB", "--memory", "device", "--kernels", "copy", "--widths", "1",
             "--iterations", "2", "--cpus", str(CPU), "--store", store)
    assert _params(store)["cpus"] == str(CPU)


def _gpu(local: list[int]) -> dict:
    """A device record as the probe and system/locality.py give it, for a device on node 1 with these local CPUs."""
    return {"backend": "opencl", "index": 0, "name": "a GPU", "type": "gpu", "max_allocation_bytes": 2**30,
            "locality": {"pci_bus_id": "0000:65:00.0", "numa_node": 1, "local_cpus": local, "source": "sysfs",
                         "note": ""}}


@pytest.fixture
def device_record(monkeypatch):
    """The study plans run on a device record given here (the planning logic; nothing is measured)."""
    record: dict = {}
    monkeypatch.setattr("xferlab.measure.device.find_device", lambda backend, index: record)
    return record


def test_launch_study_pins_the_local_socket_and_says_so(device_record):
    from xferlab.studies.launch import LAUNCH

    device_record.update(_gpu([ALLOWED[0]]))
    plan = LAUNCH.plan(dict(LAUNCH.options))
    assert [s.key for s in plan.steps] == ["unpinned", f"cpu{ALLOWED[0]}"]
    assert plan.notes == [f"pinned CPUs {ALLOWED[0]}: the device's local socket (node 1)"]
    device_record.update(_gpu([999]))  # no allowed CPU is local: --cpus names one on a remote socket
    plan = LAUNCH.plan({**LAUNCH.options, "cpus": str(CPU)})
    assert plan.notes[0] == f"pinned CPUs {CPU}: the CPUs --cpus names"
    assert plan.notes[1].startswith(f"CPUs {CPU}: a remote socket (the device's local CPUs are 999, node 1)")


def test_granularity_study_places_its_copies_on_the_local_socket(device_record):
    from xferlab.studies.granularity import GRANULARITY

    device_record.update(_gpu([CPU]))
    plan = GRANULARITY.plan(dict(GRANULARITY.options))
    assert all(s.args[s.args.index("--cpus") + 1] == str(CPU) for s in plan.steps[0].steps)
    assert plan.notes == [f"host thread on CPUs {CPU}: the device's local socket (node 1), the default"]
    device_record.update(_gpu([999]))
    plan = GRANULARITY.plan({**GRANULARITY.options, "cpus": str(CPU)})
    assert plan.notes[0] == f"host thread on CPUs {CPU} (--cpus)"
    assert plan.notes[1].startswith(f"host thread on CPUs {CPU}: a remote socket")
    device_record.update(_gpu([]), type="cpu")
    device_record["locality"].update(note="host CPU device", numa_node=None)
    plan = GRANULARITY.plan(dict(GRANULARITY.options))
    assert all("--cpus" not in s.args for s in plan.steps[0].steps)
    assert plan.notes == ["host thread where the OS puts it: the device gives no local CPUs (host CPU device)"]


def test_launch_study_notes_on_this_machine(cli, tmp_path):
    """The real study: its --json notes say which CPUs it pinned and why (PoCL, a CPU device: every allowed CPU)."""
    if not _opencl():
        pytest.skip("no OpenCL device")
    out = cli.json("study", "run", "launch", "--count", "100", "--store", tmp_path / "s.duckdb")
    assert any(n.startswith("pinned CPUs ") and ": " in n for n in out["notes"]), out["notes"]
    assert {r["where"] for r in out["results"]} >= {"unpinned", *(f"cpu{c}" for c in ALLOWED[:64])}


def test_inventory_locality_is_declared(cli):
    """inventory --json's locality objects are checked by its schema: a renamed field fails."""
    doc = cli.json("inventory")
    validator = Draft202012Validator(output_schema("inventory"))
    assert validator.is_valid(doc)
    apis = doc["results"][0]["accelerators"]
    records = [d for api in apis.values() for d in api.get("devices") or []]
    if not records:
        pytest.skip("no accelerator here: no locality object to rename")
    renamed = copy.deepcopy(doc)
    api = next(a for a in renamed["results"][0]["accelerators"].values() if a.get("devices"))
    locality = api["devices"][0]["locality"]
    locality["node"] = locality.pop("numa_node")
    assert not validator.is_valid(renamed)
    as_text = copy.deepcopy(doc)
    api = next(a for a in as_text["results"][0]["accelerators"].values() if a.get("devices"))
    api["devices"][0]["locality"]["local_cpus"] = "0-3"
    assert not validator.is_valid(as_text)

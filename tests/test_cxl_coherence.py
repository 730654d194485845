"""CXL device types (which coherent edges each can carry) and a Type 2 device's host/device bias in the
simulator (flips counted, their cost against seed 000's t_cxl and hand calculations), and `advise bias`.

Bad input tried: cxl_type on the host, on a device whose host link is PCIe or missing, bias_flip on a Type 1
device and on an untyped one; a task on a Type 3 device; coherent edges a Type 1 owner, a Type 3 reader or an
untyped peer cannot carry; bias on a system without a Type 2 device; bias pipelined; memory_bytes off a Type 2
device; `simulate run --bias sideways`; `advise bias` on PCIe, on CXL.io, with --flip 0 and --accesses 0."""

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from xferlab.errors import BadValue
from xferlab.links import resolve
from xferlab.links.coherence import DEVICE_TYPES, break_even, flip_seconds, refusal
from xferlab.links.pcie import PcieLink
from xferlab.sim import flows
from xferlab.system.models import System, Workflow

SEED_CXL = "cxl-seed:penalty=0.6"


def seed_t_cxl(n: float) -> float:
    """Seed 000: t_cxl = n / (b_n x penalty) + 40 ns, b_n from the PCIe 3.0 x16 model, penalty 0.6."""
    b_n = float(PcieLink(gen=3, lanes=16).data_rate(np.asarray([float(n)]), "read")[0])
    return n / (b_n * 0.6) + 40e-9


def system(fpga: dict | None = None, gpu: dict | None = None, link: str = SEED_CXL, peer: str = SEED_CXL) -> System:
    return System.model_validate({
        "name": "t", "host": "host",
        "devices": [{"name": "host", "kind": "cpu"}, {"name": "fpga", **(fpga or {})}, {"name": "gpu", **(gpu or {})}],
        "links": [{"between": ["host", "fpga"], "link": link}, {"between": ["host", "gpu"], "link": link},
                  {"between": ["fpga", "gpu"], "link": peer}]})


def workflow(edges, bias=None, strategy="coherent", **task) -> Workflow:
    return Workflow.model_validate({
        "name": "w", "strategy": strategy, "bias": bias,
        "tasks": [{"name": "make", "device": "fpga", "seconds": 1e-3, **task},
                  {"name": "use", "device": "gpu", "seconds": 1e-3}, {"name": "read", "device": "host", "seconds": 1e-3}],
        "edges": edges})


def test_the_types_sub_protocols_follow_the_specification():
    assert DEVICE_TYPES == {1: ("io", "cache"), 2: ("io", "cache", "mem"), 3: ("io", "mem")}
    assert refusal("gpu", 2, "fpga", 2, "host") is None
    assert refusal("gpu", 1, "host", None, "host") is None  # Type 1 caches host memory
    assert refusal("host", None, "fpga", 3, "host") is None  # the host reads a Type 3 device over CXL.mem
    assert "over CXL.mem, but 'fpga' is a CXL Type 1" in refusal("host", None, "fpga", 1, "host")
    assert "over CXL.cache, but 'gpu' is a CXL Type 3" in refusal("gpu", 3, "host", None, "host")
    assert refusal("gpu", None, "fpga", None, "host") is None  # untyped devices are not checked


@pytest.mark.parametrize("fpga, gpu, edge, fragment", [
    ({"cxl_type": 1}, {"cxl_type": 2}, {"from": "make", "to": "use"}, "'fpga' exposes its memory to 'gpu' over CXL.mem"),
    ({"cxl_type": 1}, {}, {"from": "make", "to": "read"}, "'fpga' is a CXL Type 1 \\(CXL.io \\+ CXL.cache\\) device"),
])
def test_a_coherent_edge_the_type_cannot_carry_is_refused(fpga, gpu, edge, fragment):
    s, w = system(fpga, gpu), workflow([{**edge, "bytes": "1MiB"}])
    with pytest.raises(BadValue, match=fragment):
        flows.run(s, w)
    flows.run(s, w, "staged")  # DMA over CXL.io: every type runs it


def test_allowed_coherent_edges_run():
    s = system({"cxl_type": 2}, {"cxl_type": 1})
    assert flows.run(s, workflow([{"from": "make", "to": "use", "bytes": "1MiB"}])).timeline.makespan > 0
    assert flows.run(s, workflow([{"from": "read", "to": "use", "bytes": "1MiB"}])).timeline.makespan > 0


def test_a_type_3_device_runs_no_tasks():
    with pytest.raises(BadValue, match="'fpga' is a CXL Type 3 .* it runs no tasks"):
        flows.run(system({"cxl_type": 3}), workflow([]))


@pytest.mark.parametrize("devices, link, fragment", [
    ({"fpga": {"cxl_type": 2}}, "pcie3x16", "its link to the host 'host' is not a CXL link"),
    ({"fpga": {"cxl_type": 1, "bias_flip": "1us"}}, SEED_CXL, "bias_flip and bias_page are a Type 2 device's"),
    ({"fpga": {"bias_page": "64KiB"}}, SEED_CXL, "'fpga' has no cxl_type"),
])
def test_system_refusals(devices, link, fragment):
    with pytest.raises(ValidationError, match=fragment):
        system(devices.get("fpga"), link=link)


def test_the_derived_flip_is_two_start_ups_and_a_page_at_seed_t_cxl():
    link = resolve(SEED_CXL)
    assert flip_seconds(link) == pytest.approx(2 * 40e-9 + seed_t_cxl(4096), rel=1e-12)
    assert flip_seconds(link, 65536) == pytest.approx(2 * 40e-9 + seed_t_cxl(65536), rel=1e-12)


@pytest.mark.parametrize("edges, page, flips", [
    ([{"from": "make", "to": "use", "bytes": "1MiB"}], None, 256),
    ([{"from": "make", "to": "use", "bytes": 4097}], None, 2),
    ([{"from": "make", "to": "use", "bytes": "1MiB"}], "64KiB", 16),
    ([{"from": "make", "to": "use", "bytes": "1MiB"}, {"from": "make", "to": "read", "bytes": "3MiB"}], None, 1024),
    ([{"from": "make", "to": "use", "bytes": "1MiB", "strategy": "staged"}], None, 0),  # its own DMA reads: no flip
    ([{"from": "read", "to": "make", "bytes": "1MiB"}], None, 0),  # it reads host memory: no flip
])
def test_device_bias_flips_are_counted(edges, page, flips):
    s = system({"cxl_type": 2, **({"bias_page": page} if page else {})}, {"cxl_type": 2})
    w = workflow(edges, "device")
    result = flows.run(s, w)
    assert result.flips == flips
    assert flows.run(s, w.model_copy(update={"bias": "host"})).flips == 0
    assert flows.run(s, w.model_copy(update={"bias": None})).flips == 0


def test_device_bias_makespan_adds_the_flips_on_the_host():
    s = system({"cxl_type": 2, "bias_flip": "2us"}, {"cxl_type": 2})
    w = workflow([{"from": "make", "to": "use", "bytes": "1MiB"}], "device")
    timeline = flows.run(s, w).timeline
    flip = timeline.spans["make->use#flip"]
    assert flip.resource == "host" and flip.end - flip.start == pytest.approx(256 * 2e-6)
    reads = 2**20 / resolve(SEED_CXL).peak_rate("read")  # the reader's coherent reads, as before
    assert timeline.makespan == pytest.approx(1e-3 + 256 * 2e-6 + max(1e-3, reads))


def test_host_bias_bounds_the_device_by_its_requests_to_the_host():
    """With one request in flight, the FPGA's own accesses cost a seed t_cxl(64 B) per line."""
    s = system({"cxl_type": 2}, {"cxl_type": 2}, link=f"{SEED_CXL},outstanding=1")
    w = workflow([{"from": "make", "to": "read", "bytes": "1MiB"}], "host", memory_bytes="8MiB", seconds=1e-6)
    assert flows.run(s, w).timeline.spans["make"].end == pytest.approx(8 * 2**20 / 64 * seed_t_cxl(64), rel=1e-9)
    # Without memory_bytes: its output, written to its own memory (1 MiB).
    w = workflow([{"from": "make", "to": "read", "bytes": "1MiB"}], "host", seconds=1e-6)
    assert flows.run(s, w).timeline.spans["make"].end == pytest.approx(2**20 / 64 * seed_t_cxl(64), rel=1e-9)


def test_the_simulator_agrees_with_the_break_even():
    """One 4 KiB region flipped once; the producer touches it `accesses` x 64 B: device bias wins exactly from
    advise's break-even number of accesses."""
    link = resolve(SEED_CXL)
    even = break_even(link)["break_even_accesses"]
    s = system({"cxl_type": 2}, {"cxl_type": 2})
    makespans = {}
    for accesses in (even - 1, even):
        for bias in ("host", "device"):
            w = workflow([{"from": "make", "to": "read", "bytes": 4096}], bias, seconds=1e-12,
                         memory_bytes=accesses * 64)
            makespans[accesses, bias] = flows.run(s, w).timeline.makespan
    assert makespans[even - 1, "host"] <= makespans[even - 1, "device"]
    assert makespans[even, "host"] > makespans[even, "device"]


def test_workflow_refusals():
    with pytest.raises(BadValue, match="system 't' has none; give a device cxl_type: 2"):
        flows.run(system(), workflow([], "host"))
    piped = workflow([{"from": "make", "to": "use", "bytes": "1MiB"}], "host")
    with pytest.raises(BadValue, match="the bias is modelled for the staged, direct and coherent strategies"):
        flows.run(system({"cxl_type": 2}), piped, "pipelined", 65536)
    off = Workflow.model_validate({"name": "w", "tasks": [{"name": "x", "device": "gpu", "seconds": 1,
                                                            "memory_bytes": "1MiB"}]})
    with pytest.raises(BadValue, match="'gpu' is not a CXL Type 2 device; memory_bytes counts"):
        flows.run(system({"cxl_type": 2}), off)


def test_simulate_run_bias_from_the_command_line(cli):
    doc = cli.json("simulate", "run", "seed-testbed-cxl", "deceval", "--strategy", "coherent", "--bias", "device")
    assert doc["bias"] == "device" and doc["flips"] == 390625  # 1.6 GB in 4 KiB pages
    plain = cli.json("simulate", "run", "seed-testbed-cxl", "deceval", "--strategy", "coherent")
    assert "flips" not in plain and plain["makespan_seconds"] == pytest.approx(8.06)  # seed 000: 7.70 + 0.36
    assert doc["makespan_seconds"] == pytest.approx(8.06 + 390625 * flip_seconds(resolve(SEED_CXL)))
    code, out, err = cli("simulate", "run", "seed-testbed-cxl", "deceval", "--bias", "sideways")
    assert code == 2 and out == "" and err.strip() == "error: --bias 'sideways' is not a bias; allowed: host, device"
    code, out, err = cli("simulate", "run", "seed-testbed", "deceval", "--bias", "host")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "system 'seed-testbed' has none" in err


def test_a_system_file_with_a_type_its_link_cannot_be_is_refused_in_one_line(cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"kind": "system", "name": "s", "host": "host",
                                    "devices": [{"name": "host"}, {"name": "fpga", "cxl_type": 2}],
                                    "links": [{"between": ["host", "fpga"], "link": "pcie3x16"}]}))
    code, out, err = cli("simulate", "run", path, "deceval")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a CXL link" in err, err


def test_advise_bias(cli):
    doc = cli.json("advise", "bias", SEED_CXL, "--accesses", "1,78,79,1000")
    link = resolve(SEED_CXL)
    flip = 2 * 40e-9 + seed_t_cxl(4096)
    access = 64 / link.peak_rate("read")
    assert doc["flip_seconds"] == pytest.approx(flip) and doc["access_seconds"] == pytest.approx(access)
    assert doc["break_even_accesses"] == int(flip // access) + 1 == 79
    assert [r["pays"] for r in doc["results"]] == [False, False, True, True]
    given = cli.json("advise", "bias", "cxl2x16:outstanding=4", "--flip", "5us")
    slow = resolve("cxl2x16:outstanding=4")
    assert given["break_even_accesses"] == int(5e-6 / (64 / slow.peak_rate("read"))) + 1


@pytest.mark.parametrize("args, fragment", [
    (["pcie3x16"], "is a pcie link; bias is a CXL Type 2 device's"),
    (["cxl2x16:protocol=io"], "is CXL.io (protocol=io): it moves PCIe TLPs"),
    (["cxl2x16", "--flip", "0"], "--flip"),
    (["cxl2x16", "--accesses", "0"], "--accesses '0' is not a count"),
])
def test_advise_bias_refusals(cli, args, fragment):
    code, out, err = cli("advise", "bias", *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and fragment in err, err

"""Seed 001's figures (the `ac922` scenario) and the AC922 systems: the 8335-GTW as measured, the 4-GPU
configuration, routes through sockets and NICs, each row's value by hand and its status."""

import json

import pytest

from xferlab import scenarios
from xferlab.scenarios.packaged import load_named
from xferlab.sim import flows
from xferlab.system.models import System, Workflow

NVLINK2 = 25e9  # per brick, each way (NVIDIA Tesla V100 whitepaper)
HEADER, PAYLOAD = 16, 256  # NVLink packet: a 16-byte header flit, up to 256 bytes of data
NVLINK_TS = 738.77e-9  # nvlink2's default start-up (the seed 000 PCIe t_s)
# pcie4x8 (pcie-model accounting): 16 GT/s x 128/130 x 8 lanes, less ACK + FC DLLPs (8 B each per 203 symbol
# times at x8, MPS 256) and SKP (4 in 1538), a write TLP carrying 256 B with 24 B of header and framing.
PCIE4X8_WRITE = 16e9 * 128 / 130 * (1 - 2 * 8 / 203 - 4 / 1538) * 256 / 280
IB_EDR = 12.5e9 * 4096 / (4096 + 8 + 12 + 4 + 2)  # 4x EDR, 4096-byte MTU, LRH + BTH + ICRC + VCRC per packet


def _system(name: str) -> System:
    return load_named(name, System, "system")


def _one_edge(src: str, dst: str, size: int, strategy: str = "direct", chunk=None) -> Workflow:
    return Workflow.model_validate({"name": "edge", "strategy": strategy, "chunk": chunk,
                                    "tasks": [{"name": "a", "device": src, "seconds": 0},
                                              {"name": "b", "device": dst, "seconds": 0}],
                                    "edges": [{"from": "a", "to": "b", "bytes": size}]})


def test_the_8335gtw_as_measured_and_the_4_gpu_configuration():
    gtw, four = _system("ac922-8335gtw"), _system("ac922")
    gpus = lambda s: [d.name for d in s.devices if d.kind == "gpu"]
    assert gpus(gtw) == [f"gpu{i}" for i in range(6)] and gpus(four) == [f"gpu{i}" for i in range(4)]
    for system, bricks, per_socket in ((gtw, 2, 3), (four, 3, 2)):
        for i, gpu in enumerate(gpus(system)):
            socket = "host" if i < per_socket else "socket1"
            assert system.link(socket, gpu).raw_rate == pytest.approx(bricks * NVLINK2)
            assert system.link("socket1" if socket == "host" else "host", gpu) is None
        assert system.link("host", "socket1").peak_rate() == pytest.approx(64e9)  # the X-bus (IBM REDP-5472)
        for socket, nic in (("host", "nic0"), ("socket1", "nic1")):
            assert system.link(socket, nic).peak_rate() == pytest.approx(PCIE4X8_WRITE, rel=1e-9)
            assert system.link(nic, "remote").peak_rate() == pytest.approx(IB_EDR, rel=1e-6)
    assert gtw.link("gpu0", "gpu2").raw_rate == pytest.approx(2 * NVLINK2) and gtw.link("gpu0", "gpu3") is None
    assert four.link("gpu0", "gpu1").raw_rate == pytest.approx(3 * NVLINK2)


def test_routes_go_through_sockets_and_nics_only():
    gtw = _system("ac922-8335gtw")
    assert gtw.route("host", "remote") == [("host", "nic0"), ("nic0", "remote")]
    assert gtw.route("gpu0", "remote") == [("gpu0", "host"), ("host", "nic0"), ("nic0", "remote")]
    assert gtw.route("gpu4", "remote") == [("gpu4", "socket1"), ("socket1", "nic1"), ("nic1", "remote")]
    assert gtw.route("gpu0", "gpu3") == [("gpu0", "host"), ("host", "socket1"), ("socket1", "gpu3")]
    assert gtw.route("gpu0", "gpu1") == [("gpu0", "gpu1")]  # a link of its own: one hop
    # `remote` does not forward: nic0 -> nic1 crosses the X-bus, not the fabric (two links, through remote,
    # would be shorter); a GPU does not forward either.
    assert gtw.route("nic0", "nic1") == [("nic0", "host"), ("host", "socket1"), ("socket1", "nic1")]
    assert all("gpu" not in a for a, _ in gtw.route("gpu0", "gpu3")[1:])
    assert gtw.route("remote", "gpu0") == [("remote", "nic0"), ("nic0", "host"), ("host", "gpu0")]
    # Of equally short routes the widest (the largest smallest ceiling), whichever link is listed first.
    fork = System.model_validate({"name": "fork", "host": "a", "devices": [
        {"name": "a"}, {"name": "b"}, {"name": "slow", "forwards": True}, {"name": "fast", "forwards": True}],
        "links": [{"between": ["a", "slow"], "link": "pcie3x4"}, {"between": ["slow", "b"], "link": "pcie5x16"},
                  {"between": ["a", "fast"], "link": "pcie4x16"}, {"between": ["fast", "b"], "link": "pcie4x8"}]})
    assert fork.route("a", "b") == [("a", "fast"), ("fast", "b")] and fork.route("b", "a") == [("b", "fast"), ("fast", "a")]


def test_the_simulator_runs_a_route_link_by_link():
    gtw = _system("ac922-8335gtw")
    n = 4 << 20
    hops = gtw.route("gpu0", "remote")
    by_hand = (NVLINK_TS + n * (PAYLOAD + HEADER) / PAYLOAD / (2 * NVLINK2)) + n / PCIE4X8_WRITE + (2e-6 + n / IB_EDR)
    result = flows.run(gtw, _one_edge("gpu0", "remote", n))
    assert result.timeline.makespan == pytest.approx(by_hand, rel=1e-4)
    used = {u.resource for u in result.timeline.resources.values() if u.bytes}
    assert used == {f"{a}->{b}" for a, b in hops}
    # Staged through the host's memory from the other socket: gpu3 -> socket1 -> host, then host -> nic0 -> remote.
    staged = flows.run(gtw, _one_edge("gpu3", "remote", n, "staged"))
    assert {u.resource for u in staged.timeline.resources.values() if u.bytes} == {
        "gpu3->socket1", "socket1->host", "host->nic0", "nic0->remote"}
    assert flows.makespan(gtw, _one_edge("gpu0", "remote", n, "pipelined", n // 16)) < by_hand  # links overlap


def test_no_route_without_forwarding_devices(tmp_path, cli):
    from xferlab.scenarios.packaged import PACKAGED

    text = PACKAGED.joinpath("systems", "ac922-8335gtw.yaml").read_text().replace(", forwards: true", "")
    (tmp_path / "s.yaml").write_text(text)
    (tmp_path / "w.yaml").write_text("kind: workflow\nname: w\nstrategy: direct\ntasks:\n"
                                     "  - {name: a, device: gpu0, seconds: 1ms}\n  - {name: b, device: remote, seconds: 1ms}\n"
                                     "edges:\n  - {from: a, to: b, bytes: 1MB}\n")
    # Bad input: a direct transfer between devices that neither share a link nor have a forwarding device
    # between them; refused in one line, exit 2.
    code, out, err = cli("simulate", "run", tmp_path / "s.yaml", tmp_path / "w.yaml", check=2)
    assert err.strip().splitlines() == [
        "error: system 'ac922-8335gtw' has no link between 'gpu0' and 'remote' nor a route through devices that "
        "forward; give one, or use the staged strategy through the host"]
    # The staged strategy goes through the host, whose own links reach both ends... but gpu0 -> host -> remote
    # still needs nic0 to forward: refused as well, naming the host's leg.
    code, out, err = cli("simulate", "run", tmp_path / "s.yaml", tmp_path / "w.yaml", "--strategy", "staged", check=2)
    assert "no link between 'host' and 'remote'" in err
    doc = cli.json("simulate", "run", "ac922-8335gtw", tmp_path / "w.yaml")
    assert doc["makespan_seconds"] > 2e-3


def _rows() -> dict:
    return {r["figure"]: r for r in scenarios.load("ac922").run()["checks"]}


def test_every_row_by_hand_and_its_status():
    rows = _rows()
    row = lambda start: next(r for f, r in rows.items() if f.startswith(start))
    assert len(rows) == 13 and all(r["status_reason"] and r["section"] for r in rows.values())

    two, three = row("NVLink 2.0 CPU-GPU bandwidth each way, 6-GPU"), row("NVLink 2.0 CPU-GPU bandwidth each way, 4-GPU")
    assert (two["xferlab"], three["xferlab"]) == (pytest.approx(50), pytest.approx(75))
    assert two["status"] == three["status"] == "reproduced"

    # daxpy: 2 bricks, one 128-byte line per packet with a 16-byte header; reads (16 B an element) set the pace.
    per_line = 2 * NVLINK2 * 128 / (128 + HEADER)
    daxpy = row("a GPU kernel (daxpy)")
    assert daxpy["xferlab"] == pytest.approx(per_line / 16 * 24 / 1e9) == pytest.approx(66.667, abs=1e-3)
    assert daxpy["status"] == "reproduced" and 66.2 / daxpy["xferlab"] > 0.99  # the seed's '> 99 % efficiency'

    perftest, osu = row("GPUDirect RDMA bandwidth, perftest"), row("OSU bandwidth")
    assert perftest["xferlab"] == pytest.approx(IB_EDR / 1e9, rel=1e-4)  # EDR is the route's slowest link
    assert osu["xferlab"] == pytest.approx(PCIE4X8_WRITE / 1e9, rel=1e-9)
    assert perftest["status"] == osu["status"] == "reproduced"
    ninety, ninety_three = row("perftest as a share"), row("OSU as a share")
    assert ninety["xferlab"] == pytest.approx(100 * 11.8e9 / PCIE4X8_WRITE) == pytest.approx(89.19, abs=0.01)
    assert ninety_three["xferlab"] == pytest.approx(100 * 12.3e9 / PCIE4X8_WRITE) == pytest.approx(92.96, abs=0.01)
    assert ninety["status"] == ninety_three["status"] == "reproduced"
    assert row("RDMA bandwidth expected")["status"] == "reproduced"

    # Latencies: the route's start-ups (the NIC's PCIe hop has none) plus 8 bytes on each link.
    host_row, gpu_row = row("host-to-host RDMA latency"), row("GPU-to-GPU RDMA latency")
    gtw = _system("ac922-8335gtw")
    t = lambda a, b, n: sum(gtw.link(x, y).time(n) for x, y in gtw.route(a, b)) * 1e6
    assert host_row["xferlab"] == pytest.approx(t("host", "remote", 8)) and 2 < host_row["xferlab"] < 2.01
    assert host_row["status"] == "consistent"  # ib-edr's t_s is the seed's own 2 us
    nvlink_8 = NVLINK_TS + (8 + HEADER) / (2 * NVLINK2)  # one packet: 8 bytes and a header flit
    assert gpu_row["xferlab"] == pytest.approx(host_row["xferlab"] + nvlink_8 * 1e6)
    assert gpu_row["status"] == "not-reproduced" and gpu_row["relative_error"] == pytest.approx(gpu_row["xferlab"] / 7 - 1)
    ratio = row("GPU-to-GPU over host-to-host latency at 64 KB")
    nvlink_64k = NVLINK_TS + 65536 * (PAYLOAD + HEADER) / PAYLOAD / (2 * NVLINK2)
    assert ratio["xferlab"] == pytest.approx(1 + nvlink_64k * 1e6 / t("host", "remote", 65536), rel=1e-6)
    assert ratio["status"] == "not-reproduced" and ratio["xferlab"] > 1.1

    fault, page = row("a page fault"), row("a 4 KB page")
    assert fault["xferlab"] == pytest.approx((NVLINK_TS + 16 * (PAYLOAD + HEADER) / (2 * NVLINK2)) * 1e6)  # 0.83 us
    assert fault["seed"] == 20 and fault["seed_high"] == 50 and fault["status"] == "not-reproduced"
    assert page["xferlab"] == pytest.approx(t("gpu0", "remote", 4096)) and page["status"] == "not-reproduced"
    assert {r["basis"] for r in rows.values()} == {"independent", "seed-inputs"}  # nothing fitted


def test_scenario_cli_lists_and_runs_it(cli):
    code, out, _ = cli("scenario", "list", check=0)
    assert "ac922" in out
    doc = cli.json("scenario", "run", "ac922")
    results = doc["results"]
    assert len(results) == 13 and all(r["status"] and r["status_reason"] for r in results)
    assert {r["status"] for r in results} == {"reproduced", "consistent", "not-reproduced"}
    assert all(r["compute"].startswith("ac922_") for r in results)
    assert json.dumps(doc)  # strict JSON


def test_what_if_a_faster_nic_slot_on_the_route(tmp_path, cli):
    (tmp_path / "w.yaml").write_text("kind: workflow\nname: w\nstrategy: direct\ntasks:\n"
                                     "  - {name: a, device: gpu0, seconds: 0}\n  - {name: b, device: remote, seconds: 0}\n"
                                     "edges:\n  - {from: a, to: b, bytes: 64MiB}\n")
    doc = cli.json("advise", "whatif", "ac922-8335gtw", tmp_path / "w.yaml", "--replace", "host-nic0=pcie5x8:latency=0")["results"][0]
    n = 64 << 20
    # Only the PCIe hop of the route gpu0 -> host -> nic0 -> remote changes: its time, n / its ceiling, drops.
    from xferlab.links import resolve
    saved = n / PCIE4X8_WRITE - float(resolve("pcie5x8:latency=0").time(n))
    assert doc["before_seconds"] - doc["after_seconds"] == pytest.approx(saved, rel=1e-6) and doc["speedup"] > 1


def test_a_sweep_over_the_nic_route_through_forwarding_devices(tmp_path, cli):
    """`sweep run` end to end on the measured node: a GPU's data to the peer node goes gpu0 -> host ->
    nic0 -> remote (the socket and the NIC forward). Each direct point is the route's hops by hand; the
    NIC's PCIe Gen4 x8 slot swapped for Gen5 x8 (--replace) changes that hop alone; staged, through the
    host's memory, crosses the same links; pipelined chunks overlap them."""
    from xferlab.links import resolve

    n = 4 << 20
    (tmp_path / "w.yaml").write_text("kind: workflow\nname: w\nstrategy: direct\ntasks:\n"
                                     "  - {name: a, device: gpu0, seconds: 0}\n  - {name: b, device: remote, seconds: 0}\n"
                                     f"edges:\n  - {{from: a, to: b, bytes: {n}}}\n")
    doc = cli.json("sweep", "run", "--systems", "ac922-8335gtw", "--workflows", tmp_path / "w.yaml",
                   "--replace", "pcie4x8:latency=0", "--replace-with", "pcie4x8:latency=0;pcie5x8:latency=0",
                   "--strategies", "staged,direct,pipelined", "--chunks", "256KiB", "--store", tmp_path / "s.duckdb")
    points = {(r["link"], r["strategy"]): r for r in doc["results"]}
    assert len(points) == 6 and not any(r["error"] for r in points.values()), points
    nvlink = NVLINK_TS + n * (PAYLOAD + HEADER) / PAYLOAD / (2 * NVLINK2)
    edr = 2e-6 + n / IB_EDR
    gen4 = points[("pcie4x8:latency=0", "direct")]["makespan_seconds"]
    assert gen4 == pytest.approx(nvlink + n / PCIE4X8_WRITE + edr, rel=1e-4)
    gen5 = points[("pcie5x8:latency=0", "direct")]["makespan_seconds"]
    assert gen4 - gen5 == pytest.approx(n / PCIE4X8_WRITE - float(resolve("pcie5x8:latency=0").time(n)), rel=1e-4)
    for link in ("pcie4x8:latency=0", "pcie5x8:latency=0"):
        direct = points[(link, "direct")]["makespan_seconds"]
        assert points[(link, "staged")]["makespan_seconds"] == pytest.approx(direct, rel=1e-6)  # the same hops
        assert points[(link, "pipelined")]["makespan_seconds"] < direct  # the hops overlap chunk by chunk

"""The network link a host pair's traffic leaves by, and the bandwidth rows held against it (issue 28, "Against
the peak": network). The sending host's `getent hosts` and `ip -j route get` are stand-ins first on PATH, its
/sys a faked tree ($XFERLAB_STATE_ROOT): an Ethernet interface's speed (Mb/s), an IPoIB interface whose HCA port
gives "100 Gb/sec (4X EDR)" (ib-edr), a two-port HCA chosen by dev_port; and the unknown cases, each with its
reason: no address, no route, lo, speed -1, no speed file, a malformed rate, an InfiniBand interface without a
port, the host not reachable through the agent. The real two-host run (veth, 10000 Mb/s) is in
tests/test_network_hosts.py.

Bad input tried: speed "-1", "fast", empty; rate "fast", "0 Gb/sec (4X EDR)"; route "RTNETLINK answers: Network is
unreachable"; getent with no answer; an agent that fails (exit 1)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from xferlab.links import resolve
from xferlab.measure import peak
from xferlab.measure.mpi_hosts import link_pairs, network_links
from xferlab.system import netlink

HERE = socket.gethostname()
PEER = "peer-b"
ADDRESS = "10.9.9.2"


def tool(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def machine(tmp_path: Path, monkeypatch, dev: str = "eth7", address: str | None = ADDRESS, route: str | None = None,
            files: dict[str, str] | None = None, ib: dict[str, str] | None = None) -> Path:
    """A sending host: getent resolves PEER to ``address`` (None: nothing), ip routes it by ``dev`` (or says
    ``route`` and fails), /sys/class/net/DEV has ``files``; ``ib`` {port: rate} of an HCA sharing its device."""
    bin_ = tmp_path / "bin"
    tool(bin_, "getent", f'[ "$1 $2" = "hosts {PEER}" ] && echo "{address}       {PEER}"\n' if address else "exit 2\n")
    tool(bin_, "ip", f"echo '{route}' >&2; exit 2\n" if route else
         f'[ "$1 $2 $3 $4" = "-j route get {address}" ] || exit 9\n'
         f'echo \'[{{"dst":"{address}","dev":"{dev}","prefsrc":"10.9.9.1","flags":[],"uid":0,"cache":[]}}]\'\n')
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    root = tmp_path / "root"
    pci = root / "sys" / "devices" / "pci0000:80" / "0000:81:00.0"
    pci.mkdir(parents=True)
    net = root / "sys" / "class" / "net" / dev
    net.mkdir(parents=True)
    (net / "device").symlink_to(pci)
    for name, value in (files or {}).items():
        (net / name).write_text(value + "\n")
    if ib is not None:
        hca = root / "sys" / "class" / "infiniband" / "mlx5_0"
        hca.mkdir(parents=True)
        (hca / "device").symlink_to(pci)
        for port, rate in ib.items():
            (hca / "ports" / port).mkdir(parents=True)
            (hca / "ports" / port / "rate").write_text(rate + "\n")
        other = root / "sys" / "class" / "infiniband" / "mlx5_1"  # another HCA, on another PCI function
        (other / "ports" / "1").mkdir(parents=True)
        (other / "ports" / "1" / "rate").write_text("400 Gb/sec (4X NDR)\n")
        (root / "sys" / "devices" / "other").mkdir()
        (other / "device").symlink_to(root / "sys" / "devices" / "other")
    monkeypatch.setenv("XFERLAB_STATE_ROOT", str(root))
    return root


def link() -> dict:
    (found,) = network_links([(HERE, 1), (PEER, 1)], None, 2, ["bw"])
    assert (found["from"], found["to"]) == (HERE, PEER)
    return found


def test_an_ethernet_interface_gives_its_speed_and_the_tcp_limit_in_its_mtu(tmp_path, monkeypatch):
    machine(tmp_path, monkeypatch, files={"speed": "25000", "mtu": "9000", "type": "1", "dev_port": "0"})
    found = link()
    assert found["status"] == "known" and found["interface"] == "eth7" and found["address"] == ADDRESS
    assert found["speed_mbps"] == 25000 and found["preset"] == "eth25" and found["mtu"] == 9000
    assert found["bytes_per_second"] == 25000e6 / 8
    # TCP/IPv4 with timestamps in full 9000 B frames: the Ethernet model's figure for a long message
    model = resolve("eth25:mtu=9000,protocol=tcp")
    assert found["tcp_payload_bytes_per_second"] == pytest.approx(float(model.data_rate([2**30])[0]), rel=1e-6)
    assert found["tcp_payload_bytes_per_second"] == pytest.approx(25000e6 / 8 * 8948 / 9038)
    assert f"{HERE} → {PEER} ({ADDRESS}) leaves by eth7, 25000 Mb/s in /sys/class/net/eth7/speed (eth25)" in found["reason"]
    assert found["brief"] == f"{HERE} → {PEER} by eth7, 25000 Mb/s (eth25): 3.125 GB/s"
    assert "before the protocol's headers" in found["reason"] and "TCP 20 B + 12 B timestamps" in found["reason"]
    assert "UCX or verbs on InfiniBand (and RoCE) carries no TCP headers" in found["reason"]


def test_an_ipoib_interface_takes_its_hca_ports_rate_and_names_the_preset(tmp_path, monkeypatch):
    machine(tmp_path, monkeypatch, dev="ib0", files={"speed": "100000", "mtu": "2044", "type": "32", "dev_port": "0"},
            ib={"1": "100 Gb/sec (4X EDR)"})
    found = link()
    assert found["status"] == "known" and found["kind"] == "infiniband" and found["preset"] == "ib-edr"
    assert found["ib_device"] == "mlx5_0/1" and found["bytes_per_second"] == 12.5e9
    assert found["bytes_per_second"] == resolve("ib-edr").raw_rate  # the preset's 4 lanes x 25 Gb/s
    assert "100 Gb/sec (4X EDR) in /sys/class/infiniband/mlx5_0/ports/1/rate (ib-edr)" in found["reason"]
    assert "no IP or TCP headers" in found["reason"]


def test_dev_port_picks_the_port_of_a_two_port_hca(tmp_path, monkeypatch):
    machine(tmp_path, monkeypatch, dev="ib1", files={"mtu": "4092", "type": "32", "dev_port": "1"},
            ib={"1": "100 Gb/sec (4X EDR)", "2": "200 Gb/sec (4X HDR)"})
    found = link()
    assert found["ib_device"] == "mlx5_0/2" and found["preset"] == "ib-hdr" and found["bytes_per_second"] == 25e9


@pytest.mark.parametrize("text, parsed, preset", [
    ("100 Gb/sec (4X EDR)", (100.0, 4, "EDR"), "ib-edr"), ("400 Gb/sec (4X NDR)", (400.0, 4, "NDR"), "ib-ndr"),
    ("50 Gb/sec (2X EDR)", (50.0, 2, "EDR"), None), ("56 Gb/sec (4X FDR)", (56.0, 4, "FDR"), None),
    ("2.5 Gb/sec (1X SDR)", (2.5, 1, "SDR"), None), ("fast", None, None), ("0 Gb/sec (4X EDR)", None, None),
    ("", None, None),
])
def test_ib_rates_parse_as_the_kernel_writes_them(text, parsed, preset):
    assert netlink.parse_ib_rate(text) == parsed
    assert (netlink.ib_preset(*parsed) if parsed else None) == preset


@pytest.mark.parametrize("kw, says", [
    ({"address": None}, f"peak unknown: {HERE} does not resolve {PEER} (getent hosts {PEER} gave no address)"),
    ({"route": "RTNETLINK answers: Network is unreachable"},
     f"peak unknown: no route from {HERE} to {PEER} ({ADDRESS}): ip route get said 'RTNETLINK answers: Network is unreachable'"),
    ({"files": {"speed": "-1", "mtu": "1500", "type": "1"}},
     f"peak unknown: {HERE} reaches {PEER} ({ADDRESS}) by eth7, whose /sys/class/net/eth7/speed is '-1' (the driver knows no speed)"),
    ({"files": {"mtu": "1500", "type": "1"}}, "/sys/class/net/eth7/speed cannot be read (the link is down"),
    ({"files": {"speed": "fast", "type": "1"}}, "/sys/class/net/eth7/speed is 'fast', not Mb/s"),
    ({"dev": "ib0", "files": {"type": "32", "dev_port": "0"}, "ib": {"1": "fast"}},
     "peak unknown: /sys/class/infiniband/mlx5_0/ports/1/rate is 'fast', not 'N Gb/sec (NX SPEED)'"),
    ({"dev": "ib0", "files": {"type": "32", "dev_port": "0"}},
     "peak unknown: ib0 on " + HERE + " is InfiniBand (type 32) but no /sys/class/infiniband port shares its device"),
    ({"dev": "ib0", "files": {"type": "32", "dev_port": "5"}, "ib": {"1": "100 Gb/sec (4X EDR)", "2": "100 Gb/sec (4X EDR)"}},
     "has 2 InfiniBand ports and dev_port '5' names none of them"),
])
def test_what_cannot_be_known_is_peak_unknown_with_the_reason(tmp_path, monkeypatch, kw, says):
    machine(tmp_path, monkeypatch, **kw)
    found = link()
    assert found["status"] == "unknown" and found["bytes_per_second"] is None
    assert found["reason"].startswith("peak unknown:") and says in found["reason"], found["reason"]


def test_a_peer_routed_through_lo_is_no_link(tmp_path, monkeypatch):
    machine(tmp_path, monkeypatch, dev="lo", files={"mtu": "65536", "type": "772"})
    found = link()
    assert found["status"] == "no link" and found["reason"].startswith(f"no link: {PEER} ({ADDRESS}) is routed through lo")


def test_a_host_the_agent_cannot_reach_is_peak_unknown(tmp_path):
    agent = tmp_path / "agent"
    tool(tmp_path, "agent", "echo 'agent: no such host' >&2; exit 1\n")
    found = network_links([("far-a", 1), ("far-b", 1)], str(agent), 2, ["bibw"])
    assert [(k["from"], k["to"]) for k in found] == [("far-a", "far-b"), ("far-b", "far-a")]
    assert all(k["status"] == "unknown" for k in found)
    assert found[0]["reason"] == (f"peak unknown: the route from far-a to far-b could not be read through {agent} "
                                  "(exit 1: agent: no such host)")


def test_the_pairs_asked_are_those_the_bandwidth_tests_cross():
    hosts = [("a", 2), ("b", 2), ("c", 1)]
    assert link_pairs(hosts, 5, ["latency"]) == []
    assert link_pairs(hosts, 5, ["bw"]) == [("a", "b")]  # rank 0 and the first rank on another host (2, on b)
    assert link_pairs(hosts, 5, ["bibw"]) == [("a", "b"), ("b", "a")]
    assert link_pairs(hosts, 4, ["mbw_mr"]) == [("a", "b")]  # pairs (0, 2), (1, 3)
    assert link_pairs(hosts, 2, ["bw", "mbw_mr"]) == []  # both ranks on a
    assert link_pairs([("a", 1), ("b", 1), ("c", 1), ("d", 1)], 4, ["mbw_mr"]) == [("a", "c"), ("b", "d")]


# -- rows held against the links --------------------------------------------------------------------

LINKS = [{"from": "a", "to": "b", "status": "known", "bytes_per_second": 1.25e9, "reason": "a → b leaves by eth0"},
         {"from": "b", "to": "a", "status": "known", "bytes_per_second": 1.25e9, "reason": "b → a leaves by eth0"}]


def rows():
    return [{"test": "bw", "pair": "inter-node", "mean_bytes_per_second": 1.0e9},
            {"test": "bibw", "pair": "inter-node", "mean_bytes_per_second": 2.0e9},
            {"test": "bw", "pair": "intra-node", "mean_bytes_per_second": 5.0e9},
            {"test": "latency", "pair": "inter-node", "mean_seconds": 1e-5}]


HOSTS = [{"rank": 0, "host": "a.example"}, {"rank": 1, "host": "a.example"}, {"rank": 2, "host": "b"}]


def test_bw_is_held_against_its_link_and_bibw_against_both_directions():
    held = peak.network_rows(rows(), {"network": LINKS}, peak.crossings(["0,2", "0,2", "0,1", "0,2"], HOSTS))
    bw, bibw, intra, latency = held
    assert bw["hardware_peak_bytes_per_second"] == 1.25e9 and bw["fraction_of_peak"] == pytest.approx(0.8)
    assert bw["peak_source"] == "a → b leaves by eth0"  # a rank's host a.example is --hosts' a
    assert bibw["hardware_peak_bytes_per_second"] == 2.5e9 and bibw["fraction_of_peak"] == pytest.approx(0.8)
    assert bibw["direction_mean_bytes_per_second"] == 1.0e9
    assert bibw["peak_source"].startswith("both directions at once, full duplex") and "b → a" in bibw["peak_source"]
    assert intra["fraction_of_peak"] is None and intra["peak_source"].startswith("no link:")
    assert "peak_source" not in latency


def test_rows_without_a_known_link_say_why():
    pairs = peak.crossings(["0,2", "0,2"], HOSTS)
    bw, bibw = peak.network_rows(rows()[:2], {}, pairs)
    assert bw["fraction_of_peak"] is None and bw["peak_source"] == peak.NOT_RECORDED
    down = [{**LINKS[0]}, {**LINKS[1], "status": "unknown", "bytes_per_second": None, "reason": "peak unknown: speed -1"}]
    bw, bibw = peak.network_rows(rows()[:2], {"network": down}, pairs)
    assert bw["fraction_of_peak"] == pytest.approx(0.8)
    assert bibw["fraction_of_peak"] is None and bibw["peak_source"] == "peak unknown: speed -1"
    (mbw,) = peak.network_rows([{"test": "mbw_mr", "pair": "inter-node", "mean_bytes_per_second": 1e9}], {"network": LINKS},
                               peak.crossings(["0,2,1,3"], HOSTS + [{"rank": 3, "host": "c"}]))
    assert mbw["fraction_of_peak"] is None and "mbw_mr's pairs cross 2 host pairs" in mbw["peak_source"]
    (bw,) = peak.network_rows(rows()[:1], {"network": LINKS}, peak.crossings(["0,2"], HOSTS[:1]))
    assert bw["peak_source"] == "peak unknown: the ranks' hosts are not recorded"

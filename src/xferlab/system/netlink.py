"""The network link traffic to a peer host leaves by, and its peak (issue 28, "Against the peak": network).

On the sending host (this one, or another through the launch agent: measure/mpi_hosts.py) one shell
script (:data:`SCRIPT`) asks what the host itself would do with a message to the peer:

* the peer's address as the host resolves it: ``getent hosts PEER`` (NSS: the hosts file, then DNS);
* the interface the route to it leaves by: ``ip -j route get ADDRESS`` (iproute2's JSON: ``dev``);
* that interface's ``/sys/class/net/IF/speed`` (Mb/s; ``-1`` or unreadable when the driver knows none:
  a link that is down, a virtual device without a speed; a veth reports 10000), ``mtu``, ``type``
  (``32``, ARPHRD_INFINIBAND, is IPoIB) and ``dev_port``;
* for an InfiniBand interface, the rate of its HCA port: ``/sys/class/infiniband/DEV/ports/N/rate``
  ("100 Gb/sec (4X EDR)", the kernel's drivers/infiniband/core/sysfs.c), the HCA being the one whose
  ``device`` is the interface's own ``device`` and the port ``dev_port`` + 1 (IPoIB's numbering).

:func:`link_of` turns what the script printed into the link's record: a link of S Mb/s carries at most
S x 10^6 / 8 B/s of payload before the protocol's own headers (the row is held against that), and over
Ethernet the TCP payload limit in the interface's MTU is given beside it (Ethernet 14 B + FCS 4 B +
preamble 8 B + inter-frame gap 12 B, IEEE 802.3; IPv4 20 B, RFC 791; TCP 20 B + 12 B timestamps, RFC 793
and RFC 7323: links/network.py's constants). An InfiniBand port's rate is its data rate after encoding
from EDR on (IBTA); ``(4X EDR)`` and the like name the ``ib-<speed>`` preset whose 4 lanes give that
rate. Nothing here raises on what it reads: anything missing or malformed gives ``status: unknown``
with the reason. The /sys paths are read under the machine-state root (``$XFERLAB_STATE_ROOT``) on this
host; another host's are its own.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, Optional

from ..links.network import ETH_FCS, ETH_GAP, ETH_HEADER, ETH_PREAMBLE, ETH_PROTOCOL_HEADERS, ETH_SPEEDS_GBPS, IB_LANE_RATE
from ..units import format_rate
from .peaks import KNOWN, NO_LINK, UNKNOWN

MARK = "xferlab-net-"
#: Linux's ARPHRD_INFINIBAND (include/uapi/linux/if_arp.h): the ``type`` of an IPoIB interface.
ARPHRD_INFINIBAND = "32"
_RATE = re.compile(r"(\d+(?:\.5)?) Gb/sec \((\d+)X ?([A-Z0-9]+)\)")
#: Ethernet's cost of a frame beyond the IP packet (the MTU): header, FCS, preamble and inter-frame gap.
ETH_FRAME_EXTRA = ETH_HEADER + ETH_FCS + ETH_PREAMBLE + ETH_GAP
TCP_HEADERS = ETH_PROTOCOL_HEADERS["tcp"]  # IPv4 20 + TCP 20 + timestamps 12
NOT_TCP = ("MPI over UCX or verbs on InfiniBand (and RoCE) carries no TCP headers; "
           "MPI over TCP (Open MPI's btl tcp, UCX's tcp transport) does")


def script(peer: str, root: str = "") -> str:
    """The shell script that reports, on the host that runs it, the route to ``peer`` and its interface's
    files (under ``root``, a faked tree, on this host only), one ``xferlab-net-KEY:VALUE`` line each."""
    p, r = shlex.quote(peer), shlex.quote(root)
    return (f"R={r}; m={MARK}; a=$(getent hosts {p} | awk 'NR==1{{print $1}}'); echo \"${{m}}address:$a\"; "
            "[ -n \"$a\" ] || exit 0; "
            "route=$(ip -j route get \"$a\" 2>&1 | tr '\\n' ' '); echo \"${m}route:$route\"; "
            "dev=$(printf '%s' \"$route\" | sed -n 's/.*\"dev\":\"\\([^\"]*\\)\".*/\\1/p'); [ -n \"$dev\" ] || exit 0; "
            "n=\"$R/sys/class/net/$dev\"; "
            "for f in speed mtu type dev_port; do echo \"${m}$f:$(cat \"$n/$f\" 2>/dev/null | head -n 1)\"; done; "
            "d=$(readlink -f \"$n/device\" 2>/dev/null); [ -n \"$d\" ] || exit 0; "
            "for ib in \"$R\"/sys/class/infiniband/*; do "
            "[ \"$(readlink -f \"$ib/device\" 2>/dev/null)\" = \"$d\" ] || continue; "
            "for port in \"$ib\"/ports/*; do [ -e \"$port\" ] || continue; "
            "echo \"${m}ib:${ib##*/} ${port##*/} $(cat \"$port/rate\" 2>/dev/null | head -n 1)\"; done; done")


def said(text: str) -> dict[str, Any]:
    """What :func:`script` printed: {key: value}, ``ib`` a list of (HCA, port, rate)."""
    out: dict[str, Any] = {"ib": []}
    for line in text.splitlines():
        if not line.startswith(MARK):
            continue
        key, _, value = line[len(MARK):].partition(":")
        if key == "ib":
            parts = value.split(" ", 2)
            if len(parts) == 3:
                out["ib"].append((parts[0], parts[1], parts[2].strip()))
        else:
            out.setdefault(key, value.strip())
    return out


def parse_ib_rate(text: Optional[str]) -> Optional[tuple[float, int, str]]:
    """An InfiniBand port's sysfs rate ("100 Gb/sec (4X EDR)") as (Gb/s, lanes, speed grade); None otherwise."""
    m = _RATE.fullmatch((text or "").strip())
    return (float(m[1]), int(m[2]), m[3]) if m and float(m[1]) > 0 and int(m[2]) > 0 else None


def ib_preset(gbps: float, lanes: int, grade: str) -> Optional[str]:
    """The ``ib-<speed>`` preset (4 lanes, links/network.py) a port's rate matches, or None."""
    lane = IB_LANE_RATE.get(grade.lower())
    return f"ib-{grade.lower()}" if lane and lanes == 4 and lane * lanes == gbps * 1e9 else None


def tcp_payload_limit(link_bytes_per_second: float, mtu: int) -> Optional[float]:
    """TCP/IPv4 payload (with timestamps) an Ethernet link of that rate carries at most in full frames of ``mtu``."""
    if mtu <= TCP_HEADERS:
        return None
    return link_bytes_per_second * (mtu - TCP_HEADERS) / (mtu + ETH_FRAME_EXTRA)


def _unknown(where: dict[str, Any], reason: str, status: str = UNKNOWN) -> dict[str, Any]:
    return {**where, "status": status, "preset": None, "bytes_per_second": None, "reason": reason}


def link_of(sender: str, peer: str, text: str) -> dict[str, Any]:
    """The link from ``sender`` to ``peer`` from what :func:`script` printed on ``sender``: status, interface,
    speed, ``bytes_per_second`` (the peak a row is held against), ``reason`` (where it came from, or why none)."""
    found = said(text)
    where: dict[str, Any] = {"from": sender, "to": peer, "address": found.get("address") or None}
    if not found.get("address"):
        return _unknown(where, f"peak unknown: {sender} does not resolve {peer} (getent hosts {peer} gave no address)")
    route = found.get("route", "")
    try:
        dev = json.loads(route)[0]["dev"]
    except (ValueError, LookupError, TypeError):
        return _unknown(where, f"peak unknown: no route from {sender} to {peer} ({where['address']}): "
                               f"ip route get said {route.strip()[:160] or 'nothing'!r}")
    where["interface"] = dev
    net = f"/sys/class/net/{dev}"
    if dev == "lo":
        return _unknown(where, f"no link: {peer} ({where['address']}) is routed through lo on {sender}, the same host",
                        NO_LINK)
    mtu = found.get("mtu", "")
    where["mtu"] = int(mtu) if mtu.isdigit() else None
    if found.get("type") == ARPHRD_INFINIBAND:
        return _infiniband(where, found, net)
    speed = found.get("speed", "")
    if not re.fullmatch(r"-?\d+", speed) or int(speed) <= 0:
        why = "cannot be read (the link is down, or its driver gives no speed)" if not speed else \
            f"is {speed!r} (the driver knows no speed)" if speed.lstrip("-").isdigit() else f"is {speed!r}, not Mb/s"
        return _unknown(where, f"peak unknown: {sender} reaches {peer} ({where['address']}) by {dev}, whose {net}/speed {why}")
    mbps = int(speed)
    rate = mbps * 1e6 / 8
    tcp = tcp_payload_limit(rate, where["mtu"]) if where["mtu"] else None
    preset = f"eth{mbps // 1000}" if mbps % 1000 == 0 and mbps // 1000 in ETH_SPEEDS_GBPS else None
    tcp_text = (f"; TCP/IPv4 payload at most {format_rate(tcp)} in its {where['mtu']} B MTU (per frame: Ethernet 14 B + "
                f"FCS 4 B + preamble and gap 20 B, IPv4 20 B, TCP 20 B + 12 B timestamps)") if tcp else ""
    return {**where, "status": KNOWN, "kind": "ethernet", "speed_mbps": mbps, "preset": preset, "bytes_per_second": rate,
            "tcp_payload_bytes_per_second": tcp,
            "brief": f"{sender} → {peer} by {dev}, {mbps} Mb/s{' (' + preset + ')' if preset else ''}: {format_rate(rate)}",
            "reason": (f"{sender} → {peer} ({where['address']}) leaves by {dev}, {mbps} Mb/s in {net}/speed"
                       f"{' (' + preset + ')' if preset else ''}: at most {format_rate(rate)} of payload before the "
                       f"protocol's headers{tcp_text}; {NOT_TCP}")}


def _infiniband(where: dict[str, Any], found: dict[str, Any], net: str) -> dict[str, Any]:
    """An IPoIB interface: the rate of its HCA's port (``dev_port`` + 1, or the HCA's one port)."""
    dev, sender, peer = where["interface"], where["from"], where["to"]
    ports = found["ib"]
    if not ports:
        return _unknown(where, f"peak unknown: {dev} on {sender} is InfiniBand (type 32) but no /sys/class/infiniband port "
                               f"shares its device")
    dev_port = found.get("dev_port", "")
    mine = [p for p in ports if dev_port.isdigit() and p[1] == str(int(dev_port) + 1)] or (ports if len(ports) == 1 else [])
    if len(mine) != 1:
        return _unknown(where, f"peak unknown: {dev} on {sender} has {len(ports)} InfiniBand ports and dev_port "
                               f"{dev_port!r} names none of them")
    hca, port, text = mine[0]
    parsed = parse_ib_rate(text)
    if parsed is None:
        return _unknown(where, f"peak unknown: /sys/class/infiniband/{hca}/ports/{port}/rate is {text!r}, not "
                               "'N Gb/sec (NX SPEED)'")
    gbps, lanes, grade = parsed
    preset = ib_preset(gbps, lanes, grade)
    rate = gbps * 1e9 / 8
    return {**where, "status": KNOWN, "kind": "infiniband", "speed_mbps": int(gbps * 1000), "ib_rate": text,
            "ib_device": f"{hca}/{port}", "preset": preset, "bytes_per_second": rate, "tcp_payload_bytes_per_second": None,
            "brief": f"{sender} → {peer} by {dev}, {text}{' (' + preset + ')' if preset else ''}: {format_rate(rate)}",
            "reason": (f"{sender} → {peer} ({where['address']}) leaves by {dev}, InfiniBand {hca} port {port}: {text} in "
                       f"/sys/class/infiniband/{hca}/ports/{port}/rate{' (' + preset + ')' if preset else ''}: at most "
                       f"{format_rate(rate)} of payload before the packets' headers (LRH, BTH, CRCs); MPI over UCX or "
                       "verbs takes the port itself, with no IP or TCP headers")}

"""Ranks on other hosts: ``measure network --hosts A:2,B:2 [--launch-agent PATH]``.

xferlab starts the probe's ranks with the MPI's own launcher as ``mpiexec -hosts`` does, the hosts and
their slots as the site lists them (Hydra's ``-hosts A:2,B:2``, Open MPI's ``--host A:2,B:2``: ranks fill
the first host's slots, then the next). The launcher reaches the other hosts with ssh unless given a
**launch agent**, a program called as ssh is (``AGENT [ssh options] HOST COMMAND...``): Hydra's
``-launcher ssh -launcher-exec AGENT`` (MPICH, the mpich wheel, Intel MPI), Open MPI's ``--mca
plm_rsh_agent AGENT``. A site's own agent goes there, and so does ``scripts/netns-agent``, which enters a
network namespace of the host's name instead of logging in (the tests' two hosts on one machine).

Before anything runs, each host other than this one is asked, through the agent, what its launcher says
it is (``LAUNCHER --version``) and whether it holds the library the probe loads: a host that cannot be
reached, a host whose launcher of the same path is another MPI, or one without the library is refused in
one line (exit 2) rather than left to hang the launcher. Open MPI's launcher passes no environment to
other hosts unless told: the variables the probe needs go with ``-x NAME``; Hydra passes them all.

Then, for each pair of hosts whose ranks a bandwidth test joins, the sending host is asked (here, or
through the agent) which interface the traffic to the other leaves by and that interface's speed
(system/netlink.py): the run records them with its inventory (``peaks.network``), and the rows are held
against them (measure/peak.py).
"""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Iterable, Optional

from ..errors import BadValue
from ..system import netlink
from ..system.root import state_root
from ..units import shown

HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$")
MAX_HOSTS = 4096
MAX_SLOTS = 4096
HOSTS_ALLOWED = "a comma-separated list of host names, each with its slots (ranks) as NAME:N (N 1..4096, 1 if left out)"
REACH_SECONDS = 60      # one host's check through the agent (an ssh login included)
SSH = "ssh"             # the launchers' own default agent


def parse_hosts(text: str) -> list[tuple[str, int]]:
    """``A:2,B:2`` as [(A, 2), (B, 2)]; a name without slots has 1. One line naming the bad item otherwise."""
    items = [t.strip() for t in (text or "").split(",")]
    if not any(items):
        raise BadValue(f"--hosts {shown(text)} is empty; allowed: {HOSTS_ALLOWED}")
    hosts: list[tuple[str, int]] = []
    for item in items:
        name, _, slots = item.partition(":")
        if not HOST.match(name):
            raise BadValue(f"--hosts {shown(item)} is not a host name; allowed: {HOSTS_ALLOWED}")
        if slots and not (slots.isdigit() and 1 <= int(slots) <= MAX_SLOTS):
            raise BadValue(f"--hosts {shown(item)}: slots {shown(slots)} is not a whole number in 1..{MAX_SLOTS}; "
                           f"allowed: {HOSTS_ALLOWED}")
        if any(name == h for h, _ in hosts):
            raise BadValue(f"--hosts {shown(text)} names {name} twice; allowed: {HOSTS_ALLOWED}")
        hosts.append((name, int(slots) if slots else 1))
    if len(hosts) > MAX_HOSTS:
        raise BadValue(f"--hosts names {len(hosts)} hosts; allowed: at most {MAX_HOSTS}")
    return hosts


def slots(hosts: list[tuple[str, int]]) -> int:
    return sum(n for _, n in hosts)


def hosts_text(hosts: list[tuple[str, int]]) -> str:
    return ",".join(f"{h}:{n}" for h, n in hosts)


def agent_path(text: str) -> str:
    """The launch agent: an executable file, a path or a name on PATH (as the launcher will run it)."""
    path = Path(text).expanduser()
    found = shutil.which(text) if "/" not in text else (str(path.resolve()) if path.is_file() else None)
    if not text or not found or not Path(found).is_file() or not shutil.which(found):
        raise BadValue(f"--launch-agent {shown(text)} is not an executable file; allowed: a program called as ssh is "
                       "(AGENT [options] HOST COMMAND...), a path or a name on PATH")
    return found


def launcher_hosts(abi: str, hosts: list[tuple[str, int]], agent: Optional[str], forward: Iterable[str]) -> list[str]:
    """The launcher's words for ``hosts`` and the agent: Open MPI's (``abi`` openmpi) or Hydra's (every other)."""
    if abi == "openmpi":
        words = ["--host", hosts_text(hosts)]
        if agent:
            words += ["--mca", "plm_rsh_agent", agent]
        for name in forward:
            words += ["-x", name]
        return words
    words = ["-hosts", hosts_text(hosts)]
    if agent:
        words += ["-launcher", "ssh", "-launcher-exec", agent]
    return words


def is_this_host(name: str) -> bool:
    here = socket.gethostname()
    return name in ("localhost", here, here.split(".")[0])


def reach(agent: Optional[str]) -> list[str]:
    """How another host is reached: the launch agent, or ssh (never asking for a password)."""
    return [agent] if agent else [SSH, "-o", "BatchMode=yes"]


def _said(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()][:3]


def check_hosts(hosts: list[tuple[str, int]], agent: Optional[str], launcher: str, library: str) -> dict[str, Any]:
    """Each other host, through the agent: reachable, its ``launcher`` the same MPI as here (its
    ``--version``'s first lines), ``library`` readable there. :class:`BadValue` naming the first host
    that fails; returns {host: what it said} for the run's params."""
    here = _said(subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=REACH_SECONDS,
                                stdin=subprocess.DEVNULL).stdout)
    marker = "xferlab-library:"
    remote = (f"{shlex.quote(launcher)} --version 2>&1 | head -n 20; "
              f"if test -r {shlex.quote(library)}; then echo {marker}yes; else echo {marker}no; fi")
    start = reach(agent)
    seen: dict[str, Any] = {}
    for name, _ in hosts:
        if is_this_host(name):
            continue
        try:
            done = subprocess.run([*start, name, remote], capture_output=True, text=True, timeout=REACH_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BadValue(f"--hosts: host {name} did not answer through {start[0]} in {REACH_SECONDS} s; allowed: hosts "
                           "the launch agent reaches") from None
        lines = done.stdout.splitlines()
        if done.returncode or not lines or not lines[-1].startswith(marker):
            last = _said(done.stderr or done.stdout)
            raise BadValue(f"--hosts: host {name} cannot be reached through {start[0]} (exit {done.returncode}: "
                           f"{last[-1] if last else 'no message'}); allowed: hosts the launch agent reaches")
        there = _said("\n".join(lines[:-1]))
        if there != here:
            raise BadValue(f"--hosts: host {name} runs another MPI: its {launcher} says {shown(' / '.join(there) or 'nothing', 120)}, "
                           f"here {shown(' / '.join(here), 120)}; allowed: hosts with the same MPI at the same path")
        if lines[-1] != marker + "yes":
            raise BadValue(f"--hosts: host {name} does not hold {library}, the MPI library the probe loads (a shim is "
                           "built in $XDG_CACHE_HOME/xferlab/mpi: share it, or build it there first); allowed: hosts "
                           "that see the same files")
        seen[name] = "same MPI"
    return seen


def rank_hosts(hosts: list[tuple[str, int]], world: int) -> list[str]:
    """Each rank's host as the launchers place them: the first host's slots, then the next host's."""
    return [name for name, n in hosts for _ in range(n)][:world]


def link_pairs(hosts: list[tuple[str, int]], world: int, tests: Iterable[str]) -> list[tuple[str, str]]:
    """The (sending host, receiving host) pairs the run's bandwidth tests cross: rank 0 and the first rank on
    another host (the probe's inter-node pair), both ways for bibw; mbw_mr's pairs (r, r + ranks/2)."""
    placed = rank_hosts(hosts, world)
    tests = set(tests)
    pairs: list[tuple[str, str]] = []
    other = next((h for h in placed if h != placed[0]), None) if placed else None
    if other and tests & {"bw", "bibw"}:
        pairs.append((placed[0], other))
        if "bibw" in tests:
            pairs.append((other, placed[0]))
    if "mbw_mr" in tests:
        half = len(placed) // 2
        pairs += [(placed[r], placed[r + half]) for r in range(half) if placed[r] != placed[r + half]]
    return list(dict.fromkeys(pairs))


def network_links(hosts: list[tuple[str, int]], agent: Optional[str], world: int, tests: Iterable[str]) -> list[dict[str, Any]]:
    """The link each of :func:`link_pairs` leaves its sending host by, asked on that host (here, or through the
    agent): system/netlink.py's record, "peak unknown" with the reason where the host could not be asked."""
    start = reach(agent)
    found = []
    for sender, peer in link_pairs(hosts, world, tests):
        here = is_this_host(sender)
        command = ["sh", "-c", netlink.script(peer, str(state_root()).rstrip("/"))] if here else \
            [*start, sender, netlink.script(peer)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=REACH_SECONDS, stdin=subprocess.DEVNULL)
            text, code, last = done.stdout, done.returncode, _said(done.stderr or done.stdout)
        except (OSError, subprocess.TimeoutExpired) as error:
            text, code, last = "", None, [f"{type(error).__name__}: {error}"]
        if netlink.MARK + "address:" not in text:
            how = "here (sh)" if here else f"through {start[0]}"
            found.append({"from": sender, "to": peer, "status": "unknown", "preset": None, "bytes_per_second": None,
                          "reason": f"peak unknown: the route from {sender} to {peer} could not be read {how} "
                                    f"(exit {code}: {last[-1] if last else 'no message'})"})
            continue
        found.append(netlink.link_of(sender, peer, text))
    return found


def pair_hosts(table: list[dict[str, Any]], rows: list[dict[str, Any]], ranks: list[dict[str, Any]]) -> None:
    """Where the ranks span hosts, each point-to-point table row gains ``pair_hosts``, its two ranks and their
    hosts ("0 A ↔ 2 B"), from the samples' ranks and the setup's rank-to-host map."""
    host = {h.get("rank"): h.get("host") for h in ranks or []}
    if len(set(host.values())) < 2:
        return  # one host: the pair kind says it all
    pairs: dict[tuple, str] = {}
    for r in rows:
        p = r.get("params") or {}
        if r.get("test") in ("latency", "bw", "bibw") and p.get("ranks"):
            pairs.setdefault((r["test"], p.get("pair"), p.get("path")), p["ranks"])
    for t in table:
        found = pairs.get((t["test"], t.get("pair"), t.get("path")))
        if found:
            a, b = (int(x) for x in found.split(",")[:2])
            t["pair_hosts"] = f"{a} {host.get(a, '?')} ↔ {b} {host.get(b, '?')}"

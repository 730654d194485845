"""Two hosts on one machine for the tests: two network namespaces joined by a veth pair, each a host of
its own name (scripts/netns-agent gives each command it starts a UTS namespace named after its host).

* addresses 10.213.0.1/30 and 10.213.0.2/30 (a private range, nothing routed: no default route, no link
  to the machine's own namespace), loopback up in each;
* ``/etc/netns/NAME/hosts`` in each, naming both hosts (``ip netns exec`` bind-mounts it over /etc/hosts),
  so that each name resolves to its veth address in both; a boot id of each host's own (below);
* names unique per process (``xl<pid>a``, ``xl<pid>b``), so parallel test workers never meet; a pair
  left by a killed run of the same pid is removed first.

``hosts()`` is a context manager that always tears the pair down (processes still in the namespaces are
ended first), or skips the test saying why where namespaces cannot be made (not root, no ``ip``,
refused); in CI (CI=true, root) that fails instead. Every command has a timeout.

Run by hand to try a launcher: ``python tests/netns.py up`` makes ``xl<pid>a`` / ``xl<pid>b`` and
prints their names; ``python tests/netns.py down A B`` removes them."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

AGENT = Path(__file__).resolve().parent.parent / "scripts" / "netns-agent"
SUBNET = "10.213.0"  # .1 and .2 of a /30
SECONDS = 20         # any one ip command
IN_CI = os.environ.get("CI") == "true"
#: Each host's own boot id (the agent bind-mounts it over /proc/sys/kernel/random/boot_id): the namespaces share
#: one kernel, and UCX (the wheel's MPICH and Debian's MPICH 4.0, both ch4:ucx) tells machines apart by their boot
#: id, so with the kernel's it took the two hosts for one machine and moved the inter-host pair's bytes through
#: shared memory (the veth's counters saw 13 kB of a 4.8 MB run). Open MPI's btl tcp needs nothing (its locality
#: is the host name).
IDENTITY = Path("/run/xferlab-netns")


class Unavailable(Exception):
    pass


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=SECONDS)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unavailable(f"`ip {' '.join(args)}` could not run: {error}") from None
    if check and done.returncode:
        raise Unavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip() or done.returncode}")
    return done


def why_not() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if not shutil.which("ip") or not shutil.which("unshare"):
        return "no `ip` (iproute2) or `unshare` (util-linux) on PATH"
    return None


def names(pid: int | None = None) -> tuple[str, str]:
    pid = os.getpid() if pid is None else pid
    return f"xl{pid}a", f"xl{pid}b"


def up(a: str, b: str) -> dict[str, str]:
    """Make hosts ``a`` and ``b``; returns {host: address}. Raises Unavailable saying why."""
    reason = why_not()
    if reason:
        raise Unavailable(reason)
    down(a, b)  # a pair left by an earlier run of this pid
    address = {a: f"{SUBNET}.1", b: f"{SUBNET}.2"}
    veth = {a: f"v{a}"[-15:], b: f"v{b}"[-15:]}  # interface names: 15 characters at most
    try:
        for host in (a, b):
            _ip("netns", "add", host)
        _ip("link", "add", veth[a], "type", "veth", "peer", "name", veth[b])
        for host in (a, b):
            _ip("link", "set", veth[host], "netns", host)
            _ip("-n", host, "addr", "add", f"{address[host]}/30", "dev", veth[host])
            _ip("-n", host, "link", "set", "lo", "up")
            _ip("-n", host, "link", "set", veth[host], "up")
            folder = Path("/etc/netns") / host
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text("127.0.0.1 localhost\n" + "".join(f"{address[h]} {h}\n" for h in (a, b)))
            (IDENTITY / host).mkdir(parents=True, exist_ok=True)
            (IDENTITY / host / "boot_id").write_text(str(uuid.uuid4()) + "\n")
    except BaseException:
        down(a, b)
        raise
    return address


def _end_processes(host: str) -> None:
    """End what a test left running in ``host`` (only processes in this namespace, which only the tests start)."""
    done = _ip("netns", "pids", host, check=False)
    pids = [int(p) for p in done.stdout.split() if p.isdigit()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if Path(f"/proc/{p}").exists()]
            time.sleep(0.05)


def down(*hosts: str) -> None:
    for host in hosts:
        if Path(f"/run/netns/{host}").exists():
            _end_processes(host)
            _ip("netns", "del", host, check=False)  # its end of the veth pair goes with it, and so the pair
        shutil.rmtree(Path("/etc/netns") / host, ignore_errors=True)
        shutil.rmtree(IDENTITY / host, ignore_errors=True)


@contextlib.contextmanager
def hosts():
    """Two hosts ({name: address}, in order) for a test module; torn down whatever happens."""
    a, b = names()
    try:
        address = up(a, b)
    except Unavailable as error:
        import pytest

        if IN_CI:
            pytest.fail(f"network namespaces: {error}")
        pytest.skip(f"network namespaces: {error}")
    try:
        yield address
    finally:
        down(a, b)


def run_in(host: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``argv`` run on ``host`` through the agent, as a launcher would run it (a shell's words)."""
    import shlex

    return subprocess.run([sys.executable, str(AGENT), host, shlex.join(argv)], **kwargs)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "up":
        pair = names() if len(sys.argv) == 2 else tuple(sys.argv[2:4])
        print(" ".join(f"{h}={addr}" for h, addr in up(*pair).items()))
    elif len(sys.argv) >= 3 and sys.argv[1] == "down":
        down(*sys.argv[2:])
    else:
        sys.exit("usage: python tests/netns.py up [A B] | down A B...")

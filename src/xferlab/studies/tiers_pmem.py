"""The tiers study's App-Direct classes and thread sweep (seed 003: Technion/Intel, "CXL Memory as Persistent
Memory for Disaggregated HPC", the "Test configurations" slide: Class 1, App-Direct running STREAM-PMem; its
results plotted against thread count).

Targets: ``--pmem PATH`` (the old form: the local target) or named ones, ``--pmem local=PATH,remote=PATH,cxl=PATH``
(or --pmem repeated). Classes, all from the CPUs of the PMem's home node (--pmem-node, default the first CPU's):

* ``app-direct`` (1.a): the local target, each thread pinned to one CPU;
* ``app-direct-remote`` (1.b): remote App-Direct, the threads confined to the node's CPUs and placed by the
  scheduler (as numactl --cpunodebind; the probe's --no-pin --cpus);
* ``app-direct-remote-affinity`` (1.c): the same with thread affinity, each thread pinned to one CPU;
* ``app-direct-cxl``: the CXL target, pinned (the seed's remote CXL App-Direct).

Remote is the remote target when one is named (it needs a second NUMA node somewhere: with one node in all,
nothing is remote and 1.b and 1.c are skipped), else the local target reached from another node's CPUs. xferlab
takes a named target's place on trust: it cannot tell which node a file's memory is on. STREAM-PMem runs when
PMDK's libpmemobj loads (measure/pmdk.py), else the raw mapping, said in a note."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..errors import BadValue, XferlabError
from ..system.locality import cpu_text

TARGETS = ("local", "remote", "cxl")


def node_of_cpu(cpu: int, nodes: list[dict[str, Any]]) -> int:
    return next((n["node"] for n in nodes if cpu in n["cpus"]), nodes[0]["node"])


def targets(text: Optional[str]) -> dict[str, str]:
    """--pmem's targets by name: one bare PATH is the local target; else NAME=PATH items, comma-separated."""
    items = [t.strip() for t in str(text or "").split(",") if t.strip()]
    if len(items) == 1 and "=" not in items[0]:
        return {"local": items[0]}
    out: dict[str, str] = {}
    for item in items:
        name, sep, path = (part.strip() for part in item.partition("="))
        if not sep:
            raise BadValue(f"--pmem '{item}': with several targets each is NAME=PATH (NAME: {', '.join(TARGETS)}); "
                           "one bare PATH alone is the local target")
        if name not in TARGETS:
            raise BadValue(f"--pmem: unknown target '{name}'; allowed: {', '.join(TARGETS)}")
        if name in out:
            raise BadValue(f"--pmem: target {name} given twice ({out[name]}, {path})")
        if not path:
            raise BadValue(f"--pmem {name}=: no path; give {name}=PATH")
        out[name] = path
    return out


def default_sweep(cpus: int) -> list[int]:
    """1, 2, 4, … below ``cpus``, then ``cpus``: from one thread to all CPUs of the placement."""
    counts, t = [], 1
    while t < cpus:
        counts.append(t)
        t *= 2
    return counts + [cpus]


def sweep(given: Optional[Sequence[int]], key: str, cpus: Sequence[int]) -> list[int]:
    """The thread counts class ``key`` runs on its ``cpus``: --threads (each refused above the placement's
    CPUs: a thread per CPU is the most a placement has), else the default sweep."""
    if not given:
        return default_sweep(len(cpus))
    for t in given:
        if not 1 <= t <= len(cpus):
            raise BadValue(f"--threads {t}: class {key} runs on {len(cpus)} CPU(s) ({cpu_text(list(cpus))}); "
                           f"allowed: 1..{len(cpus)}")
    return sorted(set(given))


def _pmdk(notes: list[str]) -> bool:
    from ..measure import pmdk

    try:
        pmdk.library()
        return True
    except XferlabError as error:
        notes.append(f"App-Direct classes run STREAM on the raw mapping, not STREAM-PMem: {str(error).removeprefix('--pmdk: ')}")
        return False


def app_direct(options: dict[str, Any], nodes: list[dict[str, Any]], with_cpus: list[int], local: int,
               cpus_of: Callable[[int], list[int]], add: Callable[..., None], skipped: list[dict[str, str]],
               notes: list[str]) -> None:
    """Adds the App-Direct classes --pmem's targets allow (module docstring), the others to ``skipped``."""
    home = options.get("pmem_node")
    if home is not None and home not in with_cpus:
        raise BadValue(f"--pmem-node {home}: not a NUMA node with CPUs here; allowed: {', '.join(map(str, with_cpus))}")
    named = targets(options.get("pmem"))
    classes = ("app-direct", "app-direct-remote", "app-direct-remote-affinity", "app-direct-cxl")
    if not named:
        from ..system import inventory as inv

        daxes = inv.inventory().get("pmem_devices") or []
        reason = "no --pmem PATH given" + (f" (this machine has {', '.join(daxes)}: give one)" if daxes
                                           else " and no persistent-memory device")
        skipped += [{"class": c, "reason": reason} for c in classes]
        return
    home = local if home is None else home
    mode = {"stream_pmem": _pmdk(notes)}
    what = "STREAM-PMem" if mode["stream_pmem"] else "STREAM"
    if "local" in named:
        add("app-direct", f"1.a: App-Direct {what} at {named['local']} from node {home}'s CPUs",
            pmem=Path(named["local"]), cpus=cpus_of(home), **mode)
    else:
        skipped.append({"class": "app-direct", "reason": "no local target (--pmem local=PATH)"})
    others = [n for n in with_cpus if n != home]
    remote = None
    if "remote" in named:
        if len(nodes) > 1:
            remote = (named["remote"], home, f"at {named['remote']} (named remote)", "")
        else:
            reason = (f"one NUMA node in all (node {nodes[0]['node']}): no memory is remote from any CPU here, so "
                      f"remote={named['remote']} cannot be")
    elif "local" in named and others:
        remote = (named["local"], others[0], f"at {named['local']}", f" (its node: {home})")
    else:
        reason = (f"one NUMA node with CPUs ({len(nodes)} node(s) in all): no remote CPUs to reach the PMem from"
                  if not others else "no remote target (--pmem remote=PATH) and no local one to reach from afar")
    if remote is None:
        skipped += [{"class": c, "reason": reason} for c in ("app-direct-remote", "app-direct-remote-affinity")]
    else:
        path, node, where, home_text = remote
        add("app-direct-remote", f"1.b: remote App-Direct {what} {where}, threads left to the scheduler within "
            f"node {node}'s CPUs{home_text}", pmem=Path(path), cpus=cpus_of(node), pin=False, **mode)
        add("app-direct-remote-affinity", f"1.c: remote App-Direct {what} {where}, each thread pinned to one of "
            f"node {node}'s CPUs (thread affinity){home_text}", pmem=Path(path), cpus=cpus_of(node), **mode)
    if "cxl" in named:
        add("app-direct-cxl", f"App-Direct {what} at {named['cxl']} (named CXL) from node {home}'s CPUs",
            pmem=Path(named["cxl"]), cpus=cpus_of(home), **mode)
    else:
        skipped.append({"class": "app-direct-cxl", "reason": "no CXL target (--pmem cxl=PATH)"})


def plot(table: list[dict[str, Any]], folder: Path) -> list[Path]:
    """One figure per kernel: each class's best bandwidth against its thread count (tiers-threads-KERNEL.png)."""
    from ..plots.measured import plot_thread_sweep

    out = []
    for kernel in dict.fromkeys(r["kernel"] for r in table):
        rows = [r for r in table if r["kernel"] == kernel]
        out.append(plot_thread_sweep(rows, kernel, Path(folder) / f"tiers-threads-{kernel}.png"))
    return out

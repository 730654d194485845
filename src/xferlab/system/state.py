"""The machine's state at a run's start, and the warnings where a setting is known to move results.

Recorded with every run beside the inventory (its ``machine_state``): automatic NUMA balancing
(``/proc/sys/kernel/numa_balancing``), each CPU's cpufreq governor (summarized: one value, or a count
per value) and turbo/boost (``intel_pstate/no_turbo``, ``cpufreq/boost``), transparent huge pages
(``enabled`` and ``defrag``, the bracketed value), SMT (``smt/control``, ``smt/active``), whether it
runs in a virtual machine (the cpuinfo ``hypervisor`` flag, DMI's ``sys_vendor``/``product_name``,
``systemd-detect-virt`` where present), the load average and the other processes busy at the start
(``/proc/PID/stat`` sampled twice, ~100 ms apart; this process and its children left out), and the
clock source. Every file is read from under ``root`` (a test points it at a faked tree) in the format
the kernel documents; a file that is missing or unreadable is ``"unknown"`` (``None`` for numbers),
never an exception.

:data:`RULES` is the one table of warnings: each rule names the setting, when it fires, why it moves
results and a source. :func:`warnings` applies it to a state and a run (:class:`RunKind`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from .root import state_root


UNKNOWN = "unknown"
BUSY_SHARE = 0.10  # a process using more than this share of one CPU over the sample is listed
SAMPLE_SECONDS = 0.1
#: clock sources read from the TSC (or, on Arm, the architected counter) in user space through the vDSO;
#: kvm-clock and Hyper-V's TSC page are the TSC scaled by the hypervisor (Documentation/virt/kvm/x86/timekeeping.rst)
TSC_BACKED = {"tsc", "kvm-clock", "hyperv_clocksource_tsc_page", "arch_sys_counter", "xen"}
VM_VENDORS = re.compile(r"qemu|kvm|vmware|virtualbox|innotek|xen|microsoft corporation|amazon ec2|google|"
                        r"openstack|parallels|bochs|cloud hypervisor", re.I)


def _read(root: Path, rel: str) -> Optional[str]:
    try:
        return (root / rel).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def bracketed(text: Optional[str]) -> str:
    """The selected value of a sysfs choice such as ``always [madvise] never`` (``madvise``)."""
    m = re.search(r"\[([^\]]+)\]", text or "")
    if m:
        return m[1]
    return text if text and " " not in text else UNKNOWN  # one word: the only value


def numa_balancing(root: Path) -> str:
    """``on`` (any mode: 1 normal, 2 memory tiering), ``off`` (0) or ``unknown``
    (Documentation/admin-guide/sysctl/kernel.rst, numa_balancing)."""
    value = _read(root, "proc/sys/kernel/numa_balancing")
    return UNKNOWN if value is None or not value.isdigit() else "off" if int(value) == 0 else "on"


def governors(root: Path) -> dict[str, int]:
    """Each cpufreq governor in use and on how many CPUs (empty: no cpufreq interface)."""
    count: dict[str, int] = {}
    for path in sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        value = _read(path.parent, path.name)
        if value:
            count[value] = count.get(value, 0) + 1
    return count


def governor_text(count: dict[str, int]) -> str:
    """``performance`` when every CPU has it, else ``powersave x12, performance x4``; ``unknown`` without any."""
    if not count:
        return UNKNOWN
    if len(count) == 1:
        return next(iter(count))
    return ", ".join(f"{g} x{n}" for g, n in sorted(count.items(), key=lambda item: -item[1]))


def turbo(root: Path) -> str:
    """``on``/``off`` from intel_pstate's ``no_turbo`` (1: off) or cpufreq's ``boost`` (1: on; global, else
    policy0's, as amd-pstate has it), else ``unknown`` (Documentation/admin-guide/pm/intel_pstate.rst, cpufreq.rst)."""
    no_turbo = _read(root, "sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    for rel in ("sys/devices/system/cpu/cpufreq/boost", "sys/devices/system/cpu/cpufreq/policy0/boost"):
        boost = _read(root, rel)
        if boost in ("0", "1"):
            return "on" if boost == "1" else "off"
    return UNKNOWN


def _cpu_flags(root: Path) -> Optional[list[str]]:
    text = _read(root, "proc/cpuinfo")
    if text is None:
        return None
    line = next((ln for ln in text.splitlines() if re.match(r"(flags|Features)\s*:", ln)), None)
    return line.split(":", 1)[1].split() if line else []


def _detect_virt(option: str) -> str:
    """``systemd-detect-virt --vm`` or ``--container``: the technology, ``none``, or ``unknown`` without it."""
    tool = shutil.which("systemd-detect-virt")
    if not tool:
        return UNKNOWN
    try:
        out = subprocess.run([tool, option], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return out or UNKNOWN


def virtualization(root: Path, detect: bool) -> dict[str, Any]:
    """Whether this is a virtual machine: ``virtual`` is ``yes`` when any sign says so, ``no`` when the CPU
    flags were read and nothing says so, else ``unknown``; ``detect``: also ask systemd-detect-virt."""
    flags = _cpu_flags(root)
    vendor = _read(root, "sys/class/dmi/id/sys_vendor") or UNKNOWN
    product = _read(root, "sys/class/dmi/id/product_name") or UNKNOWN
    vm = _detect_virt("--vm") if detect else UNKNOWN
    container = _detect_virt("--container") if detect else UNKNOWN
    flag = None if flags is None else "hypervisor" in flags
    signs = [flag is True, bool(VM_VENDORS.search(f"{vendor} {product}")), vm not in (UNKNOWN, "none")]
    virtual = "yes" if any(signs) else "no" if flag is False else UNKNOWN
    return {"virtual": virtual, "hypervisor_flag": flag, "sys_vendor": vendor, "product_name": product,
            "detect_virt_vm": vm, "detect_virt_container": container}


def load_average(root: Path) -> Optional[list[float]]:
    """The 1, 5 and 15 minute load averages (/proc/loadavg), None when unreadable."""
    try:
        return [float(v) for v in (_read(root, "proc/loadavg") or "").split()[:3]] or None
    except ValueError:
        return None


def _stats(root: Path) -> dict[int, tuple[str, int, int]]:
    """pid: (name, parent pid, user+system clock ticks) of every process (proc(5): /proc/PID/stat, the name
    in parentheses may hold spaces and parentheses, so the fields are counted after the last ')')."""
    out = {}
    for path in (root / "proc").glob("[0-9]*/stat"):
        text = _read(path.parent, "stat")
        if not text or ")" not in text:
            continue
        head, _, rest = text.rpartition(")")
        fields = rest.split()
        try:  # after the name: state ppid ... utime (14th field of the line) stime (15th)
            out[int(path.parent.name)] = (head.partition("(")[2], int(fields[1]), int(fields[11]) + int(fields[12]))
        except (ValueError, IndexError):
            continue
    return out


def _descendants(stats: dict[int, tuple[str, int, int]], pid: int) -> set[int]:
    tree, grew = {pid}, True
    while grew:
        new = {p for p, (_, parent, _) in stats.items() if parent in tree} - tree
        tree |= new
        grew = bool(new)
    return tree


def busy_processes(root: Path = Path("/"), seconds: float = SAMPLE_SECONDS, exclude: Optional[int] = None,
                   sleep: Callable[[float], None] = time.sleep, share: float = BUSY_SHARE) -> dict[str, Any]:
    """The other processes' CPU use over ``seconds``: ``other_cpu_load`` (in CPUs, every other process
    summed) and ``busy_processes`` (name, pid, ``cpu_share`` of one CPU) using more than ``share``, busiest
    first; process ``exclude`` (this one by default) and its descendants are left out. None when /proc is
    unreadable."""
    exclude = os.getpid() if exclude is None else exclude
    before = _stats(root)
    start = time.monotonic()
    sleep(seconds)
    elapsed = max(time.monotonic() - start, 1e-3)
    after = _stats(root)
    if not before or not after:
        return {"other_cpu_load": None, "busy_processes": None}
    mine = _descendants(before, exclude) | _descendants(after, exclude)
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    used = {pid: (after[pid][2] - before[pid][2]) / tick / elapsed for pid in after.keys() & before.keys() - mine}
    busy = [{"name": after[pid][0], "pid": pid, "cpu_share": round(s, 2)} for pid, s in used.items() if s > share]
    return {"other_cpu_load": round(sum(max(s, 0.0) for s in used.values()), 2),
            "busy_processes": sorted(busy, key=lambda p: -p["cpu_share"])}


def machine_state(root: Path = Path("/"), seconds: float = SAMPLE_SECONDS, detect: Optional[bool] = None,
                  sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The state recorded with a run (see the module's docstring); ``detect`` (default: when ``root`` is
    the real one) runs systemd-detect-virt."""
    root = Path(root)
    count = governors(root)
    smt_active = _read(root, "sys/devices/system/cpu/smt/active")
    return {
        "numa_balancing": numa_balancing(root),
        "governor": governor_text(count),
        "governors": count,
        "turbo": turbo(root),
        "transparent_hugepages": {"enabled": bracketed(_read(root, "sys/kernel/mm/transparent_hugepage/enabled")),
                                  "defrag": bracketed(_read(root, "sys/kernel/mm/transparent_hugepage/defrag"))},
        "smt": {"control": _read(root, "sys/devices/system/cpu/smt/control") or UNKNOWN,
                "active": None if smt_active not in ("0", "1") else smt_active == "1"},
        "virtualization": virtualization(root, root == Path("/") if detect is None else detect),
        "load_average": load_average(root),
        **busy_processes(root, seconds, sleep=sleep),
        "sample_seconds": seconds,
        "clock_source": _read(root, "sys/devices/system/clocksource/clocksource0/current_clocksource") or UNKNOWN,
    }


@dataclass(frozen=True)
class RunKind:
    """What a rule needs to know of a run: does it move memory (or copy to a device), where its memory sits
    against its CPUs (``local``, ``remote`` or ``unknown``), and does it measure latency."""

    memory: bool = False
    placement: str = UNKNOWN
    latency: bool = False


def _cpus(value: Any) -> Optional[list[int]]:
    from .inventory import parse_cpu_list

    if value is None:
        return None
    try:
        return [int(c) for c in value] if isinstance(value, list) else parse_cpu_list(str(value))
    except ValueError:
        return None


def placement(params: dict[str, Any], machine: dict[str, Any]) -> str:
    """``local`` when the memory and the CPUs that use it are on one node (always so with one node), ``remote``
    when a CPU is elsewhere, ``unknown`` when the run does not say (the OS's policy, no --cpus)."""
    nodes = machine.get("numa_nodes") or []
    if len([n for n in nodes if n.get("memory_total_bytes")]) <= 1 and len(nodes) <= 1:
        return "local"
    cpus = _cpus(params.get("cpus"))
    node_of = {c: n["node"] for n in nodes for c in n.get("cpus", [])}
    if cpus is None:
        return UNKNOWN
    accel = machine.get("accelerator") or {}
    if accel:  # a device run: its host thread against the device's node
        local = (accel.get("locality") or {}).get("local_cpus")
        return UNKNOWN if not local else "local" if set(cpus) <= set(local) else "remote"
    memory = params.get("nodes")
    if not memory:
        return UNKNOWN
    return "local" if {node_of.get(c) for c in cpus} <= set(memory) else "remote"


def run_kind(command: str, params: dict[str, Any], machine: dict[str, Any]) -> RunKind:
    """The RunKind of a run from its command, its recorded parameters and the inventory."""
    memory = command.startswith(("measure memory", "measure device", "measure kernels", "measure collab", "study"))
    latency = (command.startswith("measure memory") and bool(params.get("latency") or params.get("loaded"))
               or command.startswith("measure launch"))
    return RunKind(memory=memory, placement=placement(params, machine) if memory else UNKNOWN, latency=latency)


@dataclass(frozen=True)
class Rule:
    setting: str
    condition: str
    why: str
    source: str
    fires: Callable[[dict[str, Any], RunKind], bool]
    level: str = "warning"  # or "info": said, not a fault


RULES = [
    Rule("numa_balancing", "on, for a run whose memory is on a remote node or whose placement is unknown",
         "the kernel migrates pages towards the CPUs that touch them and takes hinting faults to find them, so "
         "a remote placement is undone during the run and the faults add time",
         "Linux, Documentation/admin-guide/sysctl/kernel.rst (numa_balancing); likwid issue #664",
         lambda s, k: s["numa_balancing"] == "on" and k.memory and k.placement != "local"),
    Rule("governor", "powersave on any CPU",
         "the clock follows the load: it rises during the run, so short timings see a slower CPU than long ones",
         "Linux, Documentation/admin-guide/pm/cpufreq.rst (scaling governors)",
         lambda s, k: "powersave" in (s.get("governors") or {})),
    Rule("turbo", "on (said for timing comparisons)",
         "the clock above base depends on temperature, power and how many cores are busy, so runs at other times "
         "or with other thread counts are not at one clock",
         "Linux, Documentation/admin-guide/pm/intel_pstate.rst (no_turbo) and cpufreq.rst (boost)",
         lambda s, k: s["turbo"] == "on", level="info"),
    Rule("other load", "other processes used more than one CPU at the start",
         "they share the cores, caches and memory bandwidth with the measurement",
         "Hoefler and Belli, Scientific Benchmarking of Parallel Computing Systems, SC 2015 (document the "
         "experimental setup)",
         lambda s, k: (s.get("other_cpu_load") or 0.0) > 1.0),
    Rule("transparent huge pages", "always, for a latency run",
         "whether a buffer is backed by 2 MiB pages depends on fragmentation and khugepaged, so the TLB misses in "
         "the latency curve change from run to run",
         "Linux, Documentation/admin-guide/mm/transhuge.rst",
         lambda s, k: k.latency and (s.get("transparent_hugepages") or {}).get("enabled") == "always"),
    Rule("clock source", "not TSC-backed (hpet, acpi_pm …)",
         "each clock read is a system call or a device read of a microsecond or more, added to every short timing",
         "Linux, Documentation/virt/kvm/x86/timekeeping.rst",
         lambda s, k: s["clock_source"] not in TSC_BACKED | {UNKNOWN}),
]


def _value(state: dict[str, Any], rule: Rule) -> str:
    return {"numa_balancing": state["numa_balancing"], "governor": state["governor"], "turbo": state["turbo"],
            "other load": f"{state.get('other_cpu_load') or 0.0:.2f} CPUs" + "".join(
                f", {p['name']} (pid {p['pid']}) {p['cpu_share']:.0%}" for p in (state.get("busy_processes") or [])[:3]),
            "transparent huge pages": (state.get("transparent_hugepages") or {}).get("enabled", UNKNOWN),
            "clock source": state["clock_source"]}[rule.setting]


def warnings(state: dict[str, Any], kind: RunKind) -> list[dict[str, str]]:
    """The rules of :data:`RULES` that fire for ``state`` and a run of ``kind``, each with the value seen."""
    return [{"setting": r.setting, "level": r.level, "value": _value(state, r), "why": r.why, "source": r.source}
            for r in RULES if r.fires(state, kind)]


def warning_lines(state: Optional[dict[str, Any]]) -> list[str]:
    """One line per warning recorded in ``state`` (a run's ``machine_state``), as tables and the report say it."""
    return [f"{w['level']}: {w['setting']} {w['value']}: {w['why']} ({w['source']})"
            for w in (state or {}).get("warnings") or []]


def with_state(machine: dict[str, Any], command: str, params: dict[str, Any]) -> dict[str, Any]:
    """``machine`` (an inventory) with this machine's state and its warnings for the run, as ``machine_state``;
    read under ``$XFERLAB_STATE_ROOT`` where set (a faked tree: how the tests run a command on a known state)."""
    state = machine_state(state_root())
    state["warnings"] = warnings(state, run_kind(command, params, machine))
    return {**machine, "machine_state": state}


def state_lines(state: dict[str, Any]) -> list[str]:
    """The state in two lines for people (``xferlab inventory``, the report's rows are the same facts)."""
    thp, smt, virt = state["transparent_hugepages"], state["smt"], state["virtualization"]
    load = state["load_average"]
    busy = ", ".join(f"{p['name']} (pid {p['pid']}) {p['cpu_share']:.0%}" for p in state["busy_processes"] or []) or "none"
    other = "unknown" if state["other_cpu_load"] is None else f"{state['other_cpu_load']:.2f} CPUs"
    return [f"state: NUMA balancing {state['numa_balancing']}; governor {state['governor']}; turbo {state['turbo']}; "
            f"THP enabled {thp['enabled']}, defrag {thp['defrag']}; SMT {smt['control']}"
            f"{'' if smt['active'] is None else ' (active)' if smt['active'] else ' (inactive)'}; "
            f"virtual machine {virt['virtual']}; clock source {state['clock_source']}",
            f"load: average {' '.join(map(str, load)) if load else 'unknown'} (1, 5, 15 min); other processes over "
            f"{state['sample_seconds'] * 1000:.0f} ms: {other}; busy (over {BUSY_SHARE:.0%} of a CPU): {busy}"]

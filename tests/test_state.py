"""The machine's state at a run's start (src/xferlab/system/state.py) and its warnings.

Read from faked /proc and /sys trees (tmp_path) written in the formats the kernel documents: proc(5) for
/proc/PID/stat and /proc/loadavg, Documentation/admin-guide/sysctl/kernel.rst (numa_balancing),
admin-guide/mm/transhuge.rst (``always [madvise] never``), pm/cpufreq.rst and intel_pstate.rst (governors,
boost, no_turbo), ABI/testing/sysfs-devices-system-cpu (smt/control, smt/active). Each rule of the warning
table fires and does not fire; a tree with nothing in it is all unknown. The busy-process sampler runs on
this machine's /proc: it finds a busy process this test starts outside its own process tree, and leaves out
this process and its children, however busy.

Bad input tried: every file missing (an empty root); garbage in numa_balancing, loadavg, smt/active and a
stat line; a stat line cut short; a process name holding spaces and parentheses; bytes that are not UTF-8 in
cpuinfo; a folder where a file should be. Each reads as unknown (or is skipped), never an exception.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from xferlab.system import state as st
from xferlab.system.state import RunKind, machine_state, placement, warnings

TICK = os.sysconf("SC_CLK_TCK")


def stat_line(pid: int, name: str, ppid: int, ticks: int) -> str:
    """A /proc/PID/stat line (proc(5)): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
    majflt cmajflt utime stime ... ; ``ticks`` split between utime and stime."""
    return (f"{pid} ({name}) R {ppid} {pid} {pid} 0 -1 4194304 120 0 0 0 {ticks - ticks // 3} {ticks // 3} 0 0 20 0 1 0 "
            "5000 10485760 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fake_tree(root: Path, *, balancing="0", governors=("performance",) * 4, no_turbo="1", thp="always [madvise] never",
              clock="tsc", hypervisor=False, processes=()) -> Path:
    """A /proc and /sys tree of a quiet bare-metal machine; the keywords change one setting each."""
    write(root, "proc/sys/kernel/numa_balancing", f"{balancing}\n")
    for cpu, governor in enumerate(governors):
        write(root, f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", f"{governor}\n")
    if no_turbo is not None:
        write(root, "sys/devices/system/cpu/intel_pstate/no_turbo", f"{no_turbo}\n")
    write(root, "sys/kernel/mm/transparent_hugepage/enabled", f"{thp}\n")
    write(root, "sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n")
    write(root, "sys/devices/system/cpu/smt/control", "on\n")
    write(root, "sys/devices/system/cpu/smt/active", "1\n")
    flags = "fpu vme de pse tsc msr" + (" hypervisor" if hypervisor else "")
    write(root, "proc/cpuinfo", f"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: {flags}\n\n")
    write(root, "sys/class/dmi/id/sys_vendor", "Dell Inc.\n")
    write(root, "sys/class/dmi/id/product_name", "PowerEdge R750\n")
    write(root, "proc/loadavg", "0.52 0.58 0.59 1/467 12345\n")
    write(root, "sys/devices/system/clocksource/clocksource0/current_clocksource", f"{clock}\n")
    write(root, f"proc/{os.getpid()}/stat", stat_line(os.getpid(), "pytest", 1, 1000))
    for pid, name, _share in processes:
        write(root, f"proc/{pid}/stat", stat_line(pid, name, 1, 1000))
    return root


def busy_sleep(root: Path, processes, seconds_used=None):
    """A stand-in for time.sleep that, while it sleeps, adds to each fake process the clock ticks of its
    share of a CPU over the sample (and to this process a whole CPU's, which must be left out)."""
    def sleep(seconds: float) -> None:
        for pid, name, share in [*processes, (os.getpid(), "pytest", 1.0)]:
            write(root, f"proc/{pid}/stat", stat_line(pid, name, 1, 1000 + round(share * seconds * TICK)))
        time.sleep(seconds)
    return sleep


def state_of(root: Path, processes=(), seconds=0.2) -> dict:
    return machine_state(root, seconds=seconds, sleep=busy_sleep(root, processes))


REMOTE = RunKind(memory=True, placement="remote")


def test_a_faked_tree_reads_as_written(tmp_path):
    root = fake_tree(tmp_path, governors=("powersave", "powersave", "powersave", "performance"),
                     processes=[(4242, "stress (ng) x", 0.8)])
    s = state_of(root, [(4242, "stress (ng) x", 0.8)])
    assert s["numa_balancing"] == "off" and s["turbo"] == "off" and s["clock_source"] == "tsc"
    assert s["governors"] == {"powersave": 3, "performance": 1} and s["governor"] == "powersave x3, performance x1"
    assert s["transparent_hugepages"] == {"enabled": "madvise", "defrag": "madvise"}
    assert s["smt"] == {"control": "on", "active": True}
    assert s["virtualization"]["virtual"] == "no" and s["virtualization"]["sys_vendor"] == "Dell Inc."
    assert s["load_average"] == [0.52, 0.58, 0.59]
    assert [p["pid"] for p in s["busy_processes"]] == [4242]  # this process (a whole CPU) left out
    assert s["busy_processes"][0]["name"] == "stress (ng) x" and abs(s["busy_processes"][0]["cpu_share"] - 0.8) < 0.15
    assert warnings(s, RunKind(memory=True, placement="unknown", latency=True)) == [
        w for w in warnings(s, REMOTE) if w["setting"] == "governor"]  # only the powersave CPUs warn
    json.dumps(s)  # recorded as JSON in the store


def test_an_empty_tree_is_unknown_and_warns_of_nothing(tmp_path):
    s = machine_state(tmp_path, seconds=0.01)
    assert s["numa_balancing"] == s["governor"] == s["turbo"] == s["clock_source"] == "unknown"
    assert s["governors"] == {} and s["transparent_hugepages"] == {"enabled": "unknown", "defrag": "unknown"}
    assert s["smt"] == {"control": "unknown", "active": None}
    assert s["virtualization"]["virtual"] == "unknown" and s["virtualization"]["hypervisor_flag"] is None
    assert s["load_average"] is None and s["other_cpu_load"] is None and s["busy_processes"] is None
    assert warnings(s, RunKind(memory=True, placement="unknown", latency=True)) == []


def test_garbage_reads_as_unknown(tmp_path):
    root = fake_tree(tmp_path)
    write(root, "proc/sys/kernel/numa_balancing", "yes please\n")
    write(root, "proc/loadavg", "high higher highest\n")
    write(root, "sys/devices/system/cpu/smt/active", "maybe\n")
    write(root, "proc/77/stat", "77 (cut short) R 1 77\n")
    write(root, "proc/78/stat", "garbage without a name\n")
    (root / "proc/cpuinfo").write_bytes(b"flags\t: \xff\xfe hypervisor\n")
    (root / "sys/kernel/mm/transparent_hugepage/enabled").unlink()
    (root / "sys/kernel/mm/transparent_hugepage/enabled").mkdir()  # a folder where a file should be
    s = machine_state(root, seconds=0.01)
    assert s["numa_balancing"] == "unknown" and s["load_average"] is None and s["smt"]["active"] is None
    assert s["transparent_hugepages"]["enabled"] == "unknown" and s["virtualization"]["hypervisor_flag"] is None
    assert s["busy_processes"] == []  # the two broken stat files skipped, this process left out


# (setting, tree that fires, tree that does not, the run's kind, the other kind under which it does not fire)
RULES = [
    ("numa_balancing", dict(balancing="1"), dict(balancing="0"), REMOTE, RunKind(memory=True, placement="local")),
    ("numa_balancing", dict(balancing="2"), dict(balancing="0"), RunKind(memory=True, placement="unknown"),
     RunKind(memory=False)),
    ("governor", dict(governors=("performance", "powersave")), dict(governors=("performance", "ondemand")), REMOTE, None),
    ("turbo", dict(no_turbo="0"), dict(no_turbo="1"), REMOTE, None),
    ("transparent huge pages", dict(thp="[always] madvise never"), dict(thp="always [madvise] never"),
     RunKind(latency=True), RunKind(memory=True)),
    ("clock source", dict(clock="hpet"), dict(clock="kvm-clock"), REMOTE, None),
    ("clock source", dict(clock="acpi_pm"), dict(clock="tsc"), REMOTE, None),
]


@pytest.mark.parametrize("setting, fires, quiet, kind, other", RULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(RULES)])
def test_each_rule_fires_and_does_not(tmp_path, setting, fires, quiet, kind, other):
    on = state_of(fake_tree(tmp_path / "on", **fires))
    off = state_of(fake_tree(tmp_path / "off", **quiet))
    fired = [w for w in warnings(on, kind) if w["setting"] == setting]
    assert len(fired) == 1 and fired[0]["why"] and fired[0]["source"]
    assert not [w for w in warnings(off, kind) if w["setting"] == setting]
    if other is not None:
        assert not [w for w in warnings(on, other) if w["setting"] == setting]
    assert (fired[0]["level"] == "info") == (setting == "turbo")  # turbo is said, not warned of


def test_turbo_from_cpufreq_boost(tmp_path):
    root = fake_tree(tmp_path, no_turbo=None)
    assert state_of(root)["turbo"] == "unknown"
    write(root, "sys/devices/system/cpu/cpufreq/boost", "1\n")
    assert state_of(root)["turbo"] == "on"
    write(root, "sys/devices/system/cpu/cpufreq/boost", "0\n")
    assert state_of(root)["turbo"] == "off"


def test_other_load_above_one_cpu(tmp_path):
    two = [(501, "a", 0.7), (502, "b", 0.6)]
    s = state_of(fake_tree(tmp_path / "two", processes=two), two)
    assert 1.1 < s["other_cpu_load"] < 1.5
    fired = [w for w in warnings(s, RunKind()) if w["setting"] == "other load"]
    assert len(fired) == 1 and "a (pid 501)" in fired[0]["value"]
    one = [(501, "a", 0.7)]
    s = state_of(fake_tree(tmp_path / "one", processes=one), one)  # this process's whole CPU is not other load
    assert s["other_cpu_load"] < 1.0 and not [w for w in warnings(s, RunKind()) if w["setting"] == "other load"]


def test_vm_signs(tmp_path):
    assert state_of(fake_tree(tmp_path / "flag", hypervisor=True))["virtualization"]["virtual"] == "yes"
    root = fake_tree(tmp_path / "dmi")
    write(root, "sys/class/dmi/id/sys_vendor", "QEMU\n")
    assert state_of(root)["virtualization"]["virtual"] == "yes"


TWO_SOCKETS = {"numa_nodes": [{"node": 0, "cpus": [0, 1], "memory_total_bytes": 1 << 30},
                              {"node": 1, "cpus": [2, 3], "memory_total_bytes": 1 << 30},
                              {"node": 2, "cpus": [], "memory_total_bytes": 1 << 30}]}  # CPU-less (CXL-style)


def test_placement_from_the_runs_parameters():
    assert placement({"cpus": [0], "nodes": [0]}, TWO_SOCKETS) == "local"
    assert placement({"cpus": [0, 2], "nodes": [1]}, TWO_SOCKETS) == "remote"
    assert placement({"cpus": [0], "nodes": [2]}, TWO_SOCKETS) == "remote"  # the CPU-less node is never local
    assert placement({"cpus": None, "nodes": [0]}, TWO_SOCKETS) == "unknown"
    assert placement({"cpus": [0], "nodes": None}, TWO_SOCKETS) == "unknown"
    one = {"numa_nodes": [{"node": 0, "cpus": [0, 1], "memory_total_bytes": 1 << 30}]}
    assert placement({"cpus": None, "nodes": None}, one) == "local"
    device = {**TWO_SOCKETS, "accelerator": {"locality": {"local_cpus": [2, 3]}}}
    assert placement({"cpus": "2-3"}, device) == "local" and placement({"cpus": "0"}, device) == "remote"
    kind = st.run_kind("measure memory", {"cpus": None, "nodes": [1], "latency": True}, TWO_SOCKETS)
    assert kind == RunKind(memory=True, placement="unknown", latency=True)


BUSY = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass\n"


def test_the_sampler_finds_a_busy_process_and_not_itself(tmp_path):
    """A busy process started outside this process's tree (its shell exits: it is re-parented) is found; a busy
    child of this process and a busy thread of this process are left out."""
    orphan = child = None
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin, daemon=True)
    try:
        shell = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" >/dev/null 2>&1 & echo $!', BUSY],
                               capture_output=True, text=True, timeout=30, check=True)
        orphan = int(shell.stdout.strip())
        child = subprocess.Popen([sys.executable, "-c", BUSY])
        spinner.start()
        time.sleep(0.3)  # both started and spinning
        found = st.busy_processes(seconds=1.0, share=0.05)
        pids = [p["pid"] for p in found["busy_processes"]]
        assert orphan in pids, found
        assert os.getpid() not in pids and child.pid not in pids, found
        assert next(p for p in found["busy_processes"] if p["pid"] == orphan)["name"].startswith("python")
    finally:
        stop.set()
        if orphan:
            try:
                os.kill(orphan, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if child:
            child.kill()
            child.wait()


def test_a_run_records_its_state_and_says_its_warnings(cli, tmp_path):
    """measure memory stores the state with its inventory; --json carries it as machine_state and says each
    warning on stderr, the table prints the same lines under the tables: those the stored state holds."""
    store = tmp_path / "s.duckdb"
    root = fake_tree(tmp_path / "root", balancing="1", clock="hpet", thp="[always] madvise never")
    env = {"XFERLAB_STATE_ROOT": str(root)}
    args = ["measure", "memory", "--size", "64KiB", "--kernels", "copy", "--iterations", "2", "--threads", "1",
            "--store", store]
    code, out, err = cli(*args, "--json", check=0, env=env)
    doc = json.loads(out)
    state = doc["machine_state"]
    assert state["numa_balancing"] == "on" and state["clock_source"] == "hpet"
    from xferlab.system.inventory import numa_nodes

    several = len(numa_nodes()) > 1  # no --node, no --cpus: placement unknown; with one node it is local
    assert [w["setting"] for w in state["warnings"]] == ["numa_balancing"] * several + ["clock source"]
    assert all(line in err for line in st.warning_lines(state))
    shown = json.loads(cli("results", "show", doc["run_id"], "--json", "--store", store, check=0)[1])
    assert shown["run"]["inventory"]["machine_state"] == state
    code, out, err = cli(*args, check=0, env=env)
    from xferlab.store import open_store

    with open_store(store, read_only=True) as db:
        latest = db.runs()[0]["run_id"]
        recorded = db.run(latest)["inventory"]["machine_state"]
    lines = st.warning_lines(recorded)
    assert len(lines) == 1 + several and all(line in out for line in lines) and not any(line in err for line in lines)


def test_the_report_shows_each_runs_state():
    from xferlab.report.state_section import state_section

    warned = {"numa_balancing": "on", "governor": "powersave", "turbo": "on", "clock_source": "hpet",
              "transparent_hugepages": {"enabled": "always", "defrag": "madvise"}, "smt": {"control": "on", "active": True},
              "virtualization": {"virtual": "no"}, "load_average": [3.0, 2.0, 1.0], "other_cpu_load": 2.5,
              "busy_processes": [{"name": "yes", "pid": 9, "cpu_share": 1.0}], "sample_seconds": 0.1}
    warned["warnings"] = warnings({**warned, "governors": {"powersave": 2}}, RunKind(memory=True, latency=True))
    runs = [{"run_id": "r1", "command": "measure memory", "inventory": {"machine_state": warned}},
            {"run_id": "r0", "command": "measure device", "inventory": {}}]
    section = state_section(runs)
    table = section.tables[0]
    assert [r.get("warnings") for r in table.rows] == [len(warned["warnings"]), None] and len(warned["warnings"]) == 6
    assert table.rows[1]["numa_balancing"] == "not recorded"
    assert table.notes == [f"run r1: {line}" for line in st.warning_lines(warned)]


def test_inventory_shows_the_state(cli):
    code, out, _ = cli("inventory", check=0)
    assert "state: NUMA balancing" in out and "clock source" in out
    machine = cli.json("inventory")["results"][0]
    assert {"numa_balancing", "governor", "turbo", "clock_source", "warnings"} <= set(machine["machine_state"])


def test_docs_list_every_rule():
    """docs/measure.md's rule table names each rule of the one table, and no other."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "measure.md").read_text()
    section = text[text.index("| setting | fires when |"):]
    section = section[:section.index("\n\n")]
    named = [line.split("|")[1].strip().strip("`") for line in section.splitlines()[2:]]
    assert named == [r.setting for r in st.RULES]


def test_runtime_bench_says_its_warnings(cli, tmp_path):
    """runtime bench (not a measure command, the same footer): its --json carries the recorded state, and its
    warnings go to stderr."""
    root = fake_tree(tmp_path / "root", clock="acpi_pm")
    code, out, err = cli("runtime", "bench", "--workload", "kadane", "--mode", "sync", "--latency", "1us", "--repeats",
                         "1", "--store", tmp_path / "s.duckdb", "--json", check=0, env={"XFERLAB_STATE_ROOT": str(root)})
    state = json.loads(out)["machine_state"]
    assert state["clock_source"] == "acpi_pm" and [w["setting"] for w in state["warnings"]] == ["clock source"]
    assert st.warning_lines(state)[0] in err

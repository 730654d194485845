"""`xferlab lab`, the main job, end to end (its own file: it is the suite's longest test, and
pytest-xdist's --dist loadfile starts files in name order, so a late name left it running alone at
the end)."""

import json
import re
import time

import pytest
from conftest import build_fake_libcuda

from xferlab import lab
from xferlab.measure import sizing
from xferlab.measure.memory import latency_sizes


def test_lab_writes_results(cli, tmp_path):
    out, store = tmp_path / "lab", tmp_path / "store.duckdb"
    # 30 s, not the default 5 minutes: memory with latency, the device, the scenarios, fits and the
    # report run (the runtime and collaboration only if time is left), each point to --precision 2%.
    code, stdout, stderr = cli("lab", "--out", out, "--store", store, "--budget", "30s", check=0)
    assert f"results: {out}" in stdout
    for name in ("lab.json", "presets.json", "cxl-vs-pcie.json", "cxl-vs-pcie-time.png", "memory.json",
                 "bandwidth.png", "latency.png"):
        assert (out / name).exists(), name
    assert "Memory bandwidth" in stdout and "Load-to-use latency" in stdout and "status" in stdout
    summary = json.loads((out / "lab.json").read_text())
    assert summary["probe"]["ok"] and summary["probe"]["records"][0]["probe"] == "clock"
    assert summary["store"] == str(store) and not (out / lab.STORE_NAME).exists()  # --store given: used
    assert code == 0, stderr[-500:]
    # the device ran, or (on a machine busy enough that memory used the time) was skipped and said why
    assert summary["devices"] or all("budget" in s for s in summary["skipped_devices"])
    # the runtime ran, or was skipped for the budget and said so
    assert summary["runtime_runs"] or all("budget" in f for f in summary["runtime_failures"])
    # DecEval gets 5 % of 30 s, 1.5 s: on this machine less than its study's estimate, so it is skipped
    # saying so (its need above its share), never run past its share; where it fits it runs and every
    # flow is predicted within the study's 15 % (issue 23's target for held-out flows)
    deceval = json.loads((out / "deceval-measured.json").read_text())
    assert deceval == summary["deceval"]
    if "skipped" in deceval:
        need = re.fullmatch(r"needs about (\d+) s, its share of the budget is (\d+) s", deceval["skipped"])
        assert deceval["skipped"] in ("no OpenCL device", "time budget used up") or (
            need and int(need[2]) == round(0.05 * 30) and int(need[1]) >= int(need[2])), deceval  # whole seconds
    else:
        assert deceval["flows"] and deceval["largest_relative_error"] <= 0.15, deceval
    # the memory stage kept to its share (half the budget) plus the stated margin, and said what it left out
    memory_run = summary["memory_run"]
    assert memory_run["measured_seconds"] <= memory_run["share_seconds"] + 5.0, memory_run
    plan, wanted = memory_run["sizing"], latency_sizes(memory_run["sizing"]["llc"])
    assert plan["latency_sizes"][0] == 4096 and set(plan["latency_sizes"]) <= set(wanted)
    if max(plan["latency_sizes"]) < max(wanted):  # on a busy machine 15 s may not reach 8 x the cache: said
        assert any(line.startswith("latency: ") and " past " in line for line in memory_run["skipped"]), memory_run


def _strict(text: str):
    """``text`` parsed as strict JSON: a bare NaN or Infinity (Python's json writes them) is refused."""
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_tight_budget_everything_under_out_and_earlier_profiles_kept(cli, tmp_path):
    """A 2 s budget ends with exit 0 (a memory step was killed 30 s past the budget before each
    point's timed work was sized to the stage's share), within the budget plus the model stages'
    fixed cost; everything lands under --out, its JSON files strict (missing values null, where
    memory.json had bare NaN: issue 25); a second lab into the same folder keeps the first's
    profiles, and records into $XFERLAB_STORE when that is set (as --store's help says), not into --out."""
    out = tmp_path / "lab"
    started = time.monotonic()
    code, text, err = cli("lab", "--out", out, "--budget", "2s", "--json", check=0)
    elapsed = time.monotonic() - started
    assert code == 0, err
    assert elapsed < 2 + 40  # the scenarios, the fits and the report take ~10 s here; the rest is the budget's
    doc = json.loads(text)
    assert doc["folder"] == str(out) and doc["store"] == str(out / lab.STORE_NAME) and (out / lab.STORE_NAME).exists()
    assert doc["profiles_folder"] == str(out / "profiles") and doc["profiles"]
    assert all((out / "profiles" / f"{name}.yaml").exists() for name in doc["profiles"])
    assert all(r["status"] in ("reproduced", "consistent", "fitted", "not-reproduced") for r in doc["results"])
    assert not doc["memory_summary"]["failures"] and doc["memory_summary"]["skipped"]  # what did not fit: left out and named
    first = {name: (out / "profiles" / f"{name}.yaml").read_text() for name in doc["profiles"]}
    for name in ("lab.json", "memory.json", "deceval-measured.json", "devices.json", "presets.json"):
        _strict((out / name).read_text())
    assert _strict((out / "memory.json").read_text())["skipped"] == doc["memory_summary"]["skipped"]

    env_store = tmp_path / "env.duckdb"
    code, text, err = cli("lab", "--out", out, "--budget", "2s", "--json", check=0, env={"XFERLAB_STORE": str(env_store)})
    again = json.loads(text)
    kept = again["previous_profiles"]
    assert code == 0 and kept and all((tmp_path / kept / f"{name}.yaml").read_text() == body for name, body in first.items())
    assert again["store"] == str(env_store) and _strict((out / "lab.json").read_text())["store"] == str(env_store)
    from xferlab.store import open_store

    def runs(path):
        with open_store(path, read_only=True) as db:
            return {r["run_id"] for r in db.runs()}

    assert again["run_id"] in runs(env_store) and again["run_id"] not in runs(out / lab.STORE_NAME)


def test_the_labs_store(tmp_path, monkeypatch):
    """--store given, else $XFERLAB_STORE, else --out's xferlab.duckdb, else the default (None: the
    store package's own choice, $XFERLAB_STORE or ./xferlab-results/xferlab.duckdb)."""
    given, out = tmp_path / "given.duckdb", tmp_path / "out"
    monkeypatch.delenv("XFERLAB_STORE", raising=False)
    assert lab.store_for(given, out) == given and lab.store_for(None, out) == out / lab.STORE_NAME
    assert lab.store_for(None, None) is None
    monkeypatch.setenv("XFERLAB_STORE", str(tmp_path / "env.duckdb"))
    assert lab.store_for(given, out) == given and lab.store_for(None, out) is None and lab.store_for(None, None) is None


def test_the_stages_in_order():
    """The lab runs its stages from one list, DecEval its own stage (it shared the network's number)."""
    assert [s.name for s in lab.STAGES] == ["probe", "memory", "accelerators", "runtime", "network", "deceval",
                                            "scenarios", "report"]


def test_stages_share_the_budget():
    """Each point's timed work is sized so a stage's points fit its share, within the lab's bounds."""
    assert lab.per_point(100.0, 10, lab.MAX_TIME_MEMORY) == lab.MAX_TIME_MEMORY
    assert lab.per_point(0.1, 100, lab.MAX_TIME_MEMORY) == lab.MIN_TIME_PER_POINT
    assert lab.per_point(10.0, 100, lab.MAX_TIME_MEMORY) == 0.05


MiB, GiB = 2**20, 2**30
#: a machine as a calibration could see it: a line built in 20 ns, a load in 15 ns from the caches, 120 ns from memory
CALIBRATION = sizing.Calibration(setup_seconds_per_line=20e-9, cache_load_seconds=15e-9, memory_load_seconds=120e-9,
                                 size_bytes=16 * MiB, seconds=0.1)


def planned(share, llc=256 * MiB, calibration=CALIBRATION, available=22 * GiB):
    return sizing.plan(share, calibration, llc, kernels=4, threads=2, cpus=2, available=available)


def test_a_plan_fits_its_share_and_reaches_past_the_cache_when_the_share_allows():
    """The plan's estimates fit the share; a share that holds it measures the whole sweep (to 8 x the
    last-level cache) and everything else; a smaller one cuts timed work and thins the sets below the
    cache so that the sweep still passes beyond it, naming what it left out."""
    llc = 256 * MiB
    whole = planned(300.0)
    assert whole.latency_sizes == latency_sizes(llc) and whole.stream_bytes == 4 * llc and whole.loaded_bytes == 8 * llc
    assert not whole.skipped and whole.latency_max_time == 0.5
    for share in (300.0, 60.0, 15.0, 5.0):
        plan = planned(share)
        assert plan.stream_estimate + plan.latency_estimate + plan.loaded_estimate <= share, share
        assert plan.latency_sizes == sorted(plan.latency_sizes) and plan.latency_sizes[0] == 4096
    cut = planned(15.0)
    assert max(cut.latency_sizes) > llc and len(cut.latency_sizes) < len(latency_sizes(llc))
    assert cut.latency_max_time < 0.5  # the timed work was cut before any working set
    assert any("past" in line and "left out" in line for line in cut.skipped), cut.skipped


def test_a_slow_machine_gets_the_first_point_and_says_what_it_left_out():
    """A machine 500,000 times slower than the calibration above: the budget covers the sweep's first
    working set only (1.1 s; the second needs 1.7 s more); STREAM and loaded latency are left out,
    each with its estimate and share."""
    slow = sizing.Calibration(**{**CALIBRATION.as_json(), "setup_seconds_per_line": 1e-2, "cache_load_seconds": 7.5e-3,
                                 "memory_load_seconds": 6e-2})
    plan = planned(2.0, calibration=slow)
    assert plan.latency_sizes == [4096] and plan.stream_bytes is None and plan.loaded_bytes is None
    assert [line.split(":")[0] for line in plan.skipped] == ["STREAM", "loaded latency", "latency"], plan.skipped
    assert "needs about" in plan.skipped[0] and "left out" in plan.skipped[2]


def test_stream_takes_more_of_the_share_before_it_is_left_out():
    """STREAM's bandwidth is the stage's headline: where 40 % of the share cannot hold its shortest run but 70 %
    can, it runs (its shortest timed work) and the latency sweep is cut to what is left; past 70 % it is left
    out, saying the most it may take. (A 260 MiB last-level cache under load skipped it in a 30 s lab.)"""
    llc = 256 * MiB
    shortest = sizing.stream_seconds(CALIBRATION, 4 * llc, 4, 5, 2, sizing.STREAM_TIMES[-1])
    share = shortest / 0.55  # 40 % of it is too little, 70 % enough
    plan = planned(share, llc=llc)
    assert plan.stream_bytes == 4 * llc and plan.stream_max_time == sizing.STREAM_TIMES[-1], plan.skipped
    assert plan.stream_estimate + plan.latency_estimate + plan.loaded_estimate <= share
    assert plan.latency_sizes[0] == 4096
    short = planned(shortest / 0.75, llc=llc)  # 70 % is too little
    assert short.stream_bytes is None
    assert any(line.startswith("STREAM: needs about") and "the most it may take" in line for line in short.skipped)


def test_a_large_cache_is_planned_within_memory_and_budget():
    """A 4 GiB last-level cache on a 22 GiB machine: STREAM's arrays and the loaded chase are capped to
    half the memory available (and the cap is said), the sweep's sets too, and the estimates fit."""
    plan = planned(40.0, llc=4 * GiB)
    room = 11 * GiB
    assert plan.stream_bytes is None or 3 * plan.stream_bytes <= room
    assert any("not STREAM's 16 GiB" in line for line in plan.skipped), plan.skipped
    assert max(plan.latency_sizes) <= room
    assert plan.stream_estimate + plan.latency_estimate + plan.loaded_estimate <= 40.0


def _fake_cache(monkeypatch, llc):
    from xferlab.system import inventory

    monkeypatch.setattr(inventory, "data_cache_sizes", lambda cpu=0, found=None: [(1, 32 * 1024), (2, MiB), (3, llc)])


def test_memory_stage_on_a_faked_large_cache_ends_within_its_share(tmp_path, monkeypatch):
    """The lab's memory stage on this machine told it has a 1 GiB last-level cache (the sizes reach the
    probe on its command line): calibrated, planned, measured within its share plus a stated margin
    (5 s: the store, the inventory, the probe's start, one working set misestimated), no step killed
    or failed, every planned working set measured or named as left out."""
    _fake_cache(monkeypatch, GiB)
    share = 8.0
    outcome, memory, entry = lab.memory_stage(share, tmp_path / "store.duckdb", tmp_path, 2 * share)
    assert entry["measured_seconds"] < share + 5.0, entry
    assert entry["sizing"]["llc"] == GiB and not memory["failures"], memory["failures"]
    measured = sorted({r["size_bytes"] for r in outcome.rows if r["test"] == "latency"})
    planned_sizes = entry["sizing"]["latency_sizes"]
    assert measured and measured == planned_sizes[:len(measured)]
    assert len(measured) == len(planned_sizes) or any("not started" in line for line in entry["skipped"])
    assert entry["skipped"]  # a 1 GiB cache's sweep (to 12 GiB) never fits 8 s: said
    assert json.loads((tmp_path / "memory.json").read_text())["skipped"] == entry["skipped"]


def test_memory_stage_on_a_slow_machine_measures_the_first_point(tmp_path, monkeypatch):
    """A calibration 100,000 times slower than this machine's: the stage measures the sweep's first
    working set only, within its share, says what it left out, and nothing failed."""
    real = sizing.calibrate

    def slow(llc, timeout=60.0):
        cal = real(llc, timeout)
        return sizing.Calibration(**{**cal.as_json(), **{k: 1e5 * getattr(cal, k) for k in
                                     ("setup_seconds_per_line", "cache_load_seconds", "memory_load_seconds")}})

    monkeypatch.setattr(sizing, "calibrate", slow)
    outcome, memory, entry = lab.memory_stage(2.0, tmp_path / "store.duckdb", tmp_path, 4.0)
    assert entry["measured_seconds"] < 2.0 + 5.0, entry
    assert {r["size_bytes"] for r in outcome.rows} == {4096} and not memory["failures"]
    assert outcome.exit_code == 0
    assert [line.split(":")[0] for line in entry["skipped"]] == ["STREAM", "loaded latency", "latency"]


def test_lab_rejects_a_bad_budget(cli):
    code, _, err = cli("lab", "--budget", "0s")  # bad input: a zero budget
    assert code == 2 and "'0s'" in err


def test_a_gpu_is_measured_before_a_cpu_device(tmp_path, monkeypatch):
    """On a GPU machine with PoCL installed, the lab spent a 45 s budget on PoCL's CPU device and skipped
    the GPU: accelerators come first. The GPU here is the stand-in driver (tests/fake_libcuda.c)."""
    library = build_fake_libcuda(tmp_path / "libcuda.so.1")
    monkeypatch.setenv("XFERLAB_CUDA_LIBRARY", str(library))
    from xferlab.lab.devices import quick_device_plans

    plans, _ = quick_device_plans()
    types = [(plan.backend, plan.info.get("type")) for plan in plans]
    assert ("cuda", "gpu") in types, types
    if not any(kind == "cpu" for _, kind in types):
        pytest.skip("no OpenCL CPU device here to order against")
    assert types.index(("cuda", "gpu")) < min(i for i, (_, kind) in enumerate(types) if kind == "cpu"), types


def _pocl_only(tmp_path):
    """An ICD vendor folder holding PoCL's entry alone: the lab measures one OpenCL device, device 0."""
    import os
    import shutil
    from pathlib import Path

    import opencl_platforms

    folder = tmp_path / "vendors"
    folder.mkdir()
    system = Path(os.environ.get("OCL_ICD_VENDORS") or opencl_platforms.vendor_folder())
    icd = next((p for p in system.glob("*.icd") if "pocl" in p.name), None) or Path("/etc/OpenCL/vendors/pocl.icd")
    if not icd.exists():
        opencl_platforms.need(opencl_platforms.POCL)
    shutil.copy(icd, folder / "pocl.icd")
    return {"OCL_ICD_VENDORS": str(folder)}


def test_lab_with_program_loads_the_devices_kernels_from_binaries(cli, tmp_path):
    """`lab --program DIR` on PoCL, the DIR from `xferlab kernels build`: the device stage's launches, its
    collaboration and STREAM runs, the runtime on OpenCL and DecEval carry --program (each run's params name
    it; the runtime's rows say made binary, no source build), and every stage succeeds. Bad input tried: a
    DIR that does not exist, a DIR whose manifest names another device, a DIR lacking the launch binary
    (the device stage fails naming --program, as the probe refuses it)."""
    env = _pocl_only(tmp_path)
    programs = tmp_path / "programs"
    cli("kernels", "build", "--device", "0", "--out", programs, check=0, env=env)
    out, store = tmp_path / "lab", tmp_path / "store.duckdb"
    code, text, err = cli("lab", "--out", out, "--store", store, "--budget", "30s", "--program", programs, "--json",
                          env=env)
    assert code == 0, err[-2000:]
    doc = json.loads(text)
    summary = json.loads((out / "lab.json").read_text())
    assert summary["program"] == str(programs)
    from xferlab.store import open_store

    with open_store(store, read_only=True) as db:
        devices = [db.run(d["run_id"]) for d in doc["devices"] if d["backend"] == "opencl"]
        assert devices and all(r["params"]["program"] == str(programs) for r in devices)
        others = [db.run(r["run_id"]) for r in db.runs() if r["run_id"] not in {d["run_id"] for d in doc["devices"]}]
        opencl_runtime = [r for r in others if r["command"] == "runtime bench" and r["params"].get("backend") == "opencl"]
        for run in opencl_runtime:  # (it runs where the budget leaves time: 30 s here do)
            assert run["params"]["program"] == str(programs)
            assert all(s["params"]["program"] == {"made": "binary", "source_builds": 0, "binary_loads": 1, "il_loads": 0}
                       for s in db.samples(run["run_id"]))
        kernels = [r for r in others if r["params"].get("kernels") or r["params"].get("collab")]
        assert all(r["params"]["program"] == str(programs) for r in kernels)
    assert opencl_runtime or any("budget" in f for f in summary["runtime_failures"]), summary["runtime_failures"]

    for path, fragment in ((tmp_path / "nowhere", "does not exist"), (tmp_path / "other", "none of this machine's")):
        if path.name == "other":
            path.mkdir()
            (path / "manifest.json").write_text((programs / "manifest.json").read_text()
                                                .replace('"device_name":"', '"device_name":"Another Device 9000 '))
        code, text, err = cli("lab", "--out", tmp_path / "refused", "--budget", "5s", "--program", path, env=env)
        assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err
        assert not (tmp_path / "refused").exists()  # refused before anything is made


def test_the_labs_deceval_stage_from_binaries(tmp_path):
    """The DecEval stage with --program DIR (its share wide enough to run it here): its runs' params name the
    DIR, as `study run deceval --program` records it, and the flows are measured."""
    import subprocess
    import sys

    from xferlab.lab.steps import deceval_stage
    from xferlab.measure.device import devices

    found, why = devices("opencl")
    if not found:
        pytest.skip(f"no OpenCL device: {why}")
    programs = tmp_path / "programs"
    done = subprocess.run([sys.executable, "-m", "xferlab", "kernels", "build", "--device", "0", "--out", str(programs),
                           "--evaluations", "1,16"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    if not any(p["program"] == "deceval" for p in json.loads((programs / "manifest.json").read_text())["programs"]):
        pytest.skip("DecEval integrates in double; device 0 has no cl_khr_fp64")
    store = tmp_path / "d.duckdb"
    entry, failure = deceval_stage(120.0, store, programs)
    assert failure is None and entry["flows"] and entry["run_ids"], entry
    from xferlab.store import open_store

    with open_store(store, read_only=True) as db:
        for run in map(db.run, entry["run_ids"]):  # each run's probe got --program DIR (it refuses one it cannot use)
            assert run["params"]["deceval"]["program"] == str(programs)
            assert run["params"]["study"]["options"]["program"] == str(programs)

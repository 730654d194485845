"""The host–device suite on a real OpenCL device (PoCL in CI, and Intel's OpenCL CPU runtime beside it: the
tests taking the `platform` fixture run on each): copies of every host memory kind, validation, launch latency,
granularity, and the errors a user can meet."""

import json
import os
import stat

import pytest

from xferlab.measure.device import DevicePlan, devices, rows_of, steps, transfer_overview, transfer_summary
from xferlab.measure.probe import probe_path, run_probe
from xferlab.measure.steps import Step

from opencl_platforms import device_of

FOUND, WHY = devices("opencl")
# CI installs PoCL (make test's sysdeps): the device tests must run there, not skip.
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)


def transfer(*extra):
    return run_probe(["transfer", "--sizes", "1,64,4096,1048576", "--iterations", "3", "--max-iterations", "3",
                      "--min-time", "0", *extra], timeout=300)


def test_device_inventory(platform):
    _, device = device_of(platform)
    assert device["platform"] == platform
    assert device["backend"] == "opencl" and device["name"] and device["max_allocation_bytes"] > 2**20
    for key in ("svm_coarse_grain", "svm_fine_grain", "svm_atomics", "profiling", "global_memory_bytes"):
        assert key in device


def test_every_kind_and_direction_validates(platform):
    index, device = device_of(platform)
    kinds = ["pageable", "pinned"] + [k for k, flag in (("svm-coarse", "svm_coarse_grain"), ("svm-fine", "svm_fine_grain"))
                                      if device[flag]]
    run = transfer("--kinds", ",".join(kinds), "--device", str(index))
    assert run.ok, run.failure
    assert next(r for r in run.records if r.get("record") == "setup")["device"]["platform"] == platform
    checks = [r for r in run.records if r.get("record") == "validation"]
    assert len(checks) == len(kinds) * 4 * 4 and all(c["ok"] for c in checks)
    samples = [r for r in run.records if r.get("record") == "sample"]
    assert {r["kind"] for r in samples} == set(kinds) and {r["direction"] for r in samples} == {"h2d", "d2h", "d2d", "bidir"}
    assert all(r["host_seconds"] > 0 for r in samples)
    assert any(r["device_seconds"] > 0 for r in samples)  # profiling events timed the copies too
    step = Step("t", "transfer", [], {"node": "default", "mode": "pageable"}, 1.0)
    rows, failure = rows_of(step, run)
    assert failure is None and len(rows) == len(samples)
    bidir = next(r for r in rows if r["test"] == "bidir" and r["size_bytes"] == 4096)
    assert bidir["bytes"] == 2 * 4096  # both directions counted
    overview = transfer_overview(transfer_summary(rows))
    assert {(o["host_kind"], o["direction"]) for o in overview} == {(k, d) for k in kinds for d in ("h2d", "d2h", "d2d", "bidir")}


def test_a_corrupted_copy_is_detected(platform):
    run = transfer("--kinds", "pageable", "--corrupt-copy", "--device", str(device_of(platform)[0]))
    assert run.returncode == 1 and "validation failed" in run.failure
    rows, failure = rows_of(Step("t", "transfer", [], {"node": "default"}, 1.0), run)
    assert rows == [] and failure.startswith("validation failed") and "at byte" in failure


def test_launch_latency_both_clocks(platform):
    index, _ = device_of(platform)
    run = run_probe(["launch", "--count", "300", "--args", "0,3", "--warmup", "20", "--pin", "0", "--device", str(index)],
                    timeout=120)
    assert run.ok, run.failure
    assert run.records[0]["device"]["platform"] == platform
    assert run.records[0]["pinned_cpu"] == 0
    chunks = [r for r in run.records if r.get("record") == "samples"]
    assert {c["args"] for c in chunks} == {0, 3} and sum(len(c["host_seconds"]) for c in chunks) == 600
    for c in chunks:
        assert all(h > 0 for h in c["host_seconds"])
        # The device's own time of an empty kernel is shorter than the host's round trip.
        assert sorted(c["device_seconds"])[150] < sorted(c["host_seconds"])[150]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning one thread leaves others CPUs only with 2 or more")
def test_pinning_the_submitting_thread_leaves_the_runtime_its_cpus():
    """--pin pins the thread that submits, not the device: PoCL's worker threads, started when the
    platform is first used, keep every CPU of the process (pinned before the backend was opened, they
    inherited the one CPU, and the 'pinned' launch timed the whole device on one CPU)."""
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1]
    run = run_probe(["launch", "--count", "20", "--args", "0", "--warmup", "5", "--pin", str(cpu)], timeout=120)
    assert run.ok, run.failure
    setup = run.records[0]
    assert setup["pinned_cpu"] == cpu
    assert setup["other_threads"] >= 1 and setup["other_threads_cpus"] == allowed  # PoCL's workers
    unpinned = run_probe(["launch", "--count", "20", "--args", "0", "--warmup", "5"], timeout=120)
    assert unpinned.ok and unpinned.records[0]["pinned_cpu"] == -1 and unpinned.records[0]["other_threads_cpus"] == allowed


@pytest.mark.parametrize("args, code, fragment", [
    (["transfer", "--device", "9"], 2, "device 9 does not exist"),
    (["transfer", "--sizes", str(2**40)], 2, "exceeds the device's largest allocation"),
    (["transfer", "--kinds", "managed"], 2, "'managed' is not supported"),
    (["transfer", "--kinds", "warp"], 2, "'warp' is not allowed"),
    (["launch", "--args", "9"], 2, "--args item '9'"),
    (["devices", "--backend", "metal"], 2, "--backend 'metal'"),
    (["transfer", "--order", "random"], 2, "--order 'random' is not allowed"),       # no such order
    (["transfer", "--order", "sequential,interleaved"], 2, "--order 'sequential,interleaved'"),  # one order, not a list
])
def test_probe_bad_input(args, code, fragment):
    run = run_probe(args, timeout=60)
    assert run.returncode == code and fragment in run.failure


def test_missing_opencl_library(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("XFERLAB_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1")
    run = run_probe(["devices"], timeout=60)
    assert run.returncode == 3 and "not available" in run.failure and "/nonexistent/libOpenCL.so.1" in run.failure
    # Asked for explicitly: a one-line error and exit 2; nothing recorded.
    code, out, err = cli("measure", "device", "--store", tmp_path / "s.duckdb")
    assert code == 2 and err.startswith("error: the opencl backend is not available") and len(err.splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()
    # Not asked for: the inventory says it plainly and goes on.
    code, out, _ = cli("inventory")
    assert code == 0 and "opencl: not available" in out


@pytest.mark.parametrize("args, fragment", [
    (["--device", "7"], "--device 7 does not exist"), (["--sizes", "4TiB"], "above the device's largest allocation"),
    (["--kinds", "managed"], "'managed' is not supported"), (["--kinds", "gpu-direct"], "'gpu-direct' is not known"),
    (["--backend", "metal"], "--backend 'metal'"), (["--sizes", "-5"], "'-5'"), (["--directions", "up"], "'up'"),
    # Values the probe refused after a run was recorded, refused up front since the hostile-user review:
    (["--node", "99"], "--node 99 does not exist"),                       # no such memory node
    (["--iterations", "99999999999999999999"], "--iterations 99999999999999999999"),  # past the probe's 10^6
    (["--min-time", "2h"], "--min-time 7200 s"),                          # past the probe's hour
    (["--sizes", "0"], "'0'"), (["--chunks", "0"], "'0'"),                # copies of nothing
    (["--total", "2TiB"], "--total 2 TiB"),                               # past the probe's 1 TiB
    (["--plots", "/etc/hostname"], "existing file"), (["--timeout", "0"], "--timeout"),
    (["--order", "shuffled"], "--order 'shuffled' is not allowed"),       # an order that does not exist
])
def test_cli_bad_input(cli, tmp_path, args, fragment):
    """Each bad value: exit 2, one line naming the value, no run recorded."""
    code, out, err = cli("measure", "device", "--store", tmp_path / "s.duckdb", *args)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize("args, fragment", [
    (["--count", "999999999999"], "--count 999999999999"),                # past the probe's 10^8 launches
    (["--args", ""], "--args ''"), (["--args", "9"], "--args 9"),          # no list; a kernel with 9 buffers
    (["--pin", "99999"], "--pin 99999"),                                  # no such CPU
])
def test_cli_launch_bad_input(cli, tmp_path, args, fragment):
    """Each bad value of `measure launch`: exit 2, one line naming the value, no run recorded."""
    code, out, err = cli("measure", "launch", "--store", tmp_path / "s.duckdb", *args)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "s.duckdb").exists()


def test_cli_sweep_recorded(cli, tmp_path):
    store = tmp_path / "s.duckdb"
    doc = cli.json("measure", "device", "--sizes", "1B..64KiB", "--kinds", "pageable,pinned", "--min-time", "0",
                   "--iterations", "3", "--chunks", "4KiB,64KiB", "--total", "256KiB", "--store", store,
                   "--plots", tmp_path / "plots")
    tests = {r["test"] for r in doc["results"]}
    assert tests == {"transfer", "launch", "chunks"}
    h2d = [r for r in doc["results"] if r["test"] == "transfer" and r["host_kind"] == "pinned" and r["direction"] == "h2d"]
    assert [r["size_bytes"] for r in h2d] == [2**i for i in range(17)]
    assert all(r["headline"] == "median" and r["median_bytes_per_second"] > 0 for r in h2d)
    chunks = {r["chunk_bytes"]: r for r in doc["results"] if r["test"] == "chunks" and r["host_kind"] == "pageable"}
    assert chunks[4096]["transfers"] == 64 and chunks[65536]["transfers"] == 4
    for name in ("device-bandwidth.png", "device-latency.png", "launch-latency.png", "chunks.png"):
        assert (tmp_path / "plots" / name).stat().st_size > 5000
    code, out, _ = cli("results", "show", doc["run_id"], "--store", store, "--json", check=0)
    run = json.loads(out)["run"]
    assert run["inventory"]["accelerator"]["name"] == FOUND[0]["name"]


def test_a_hung_probe_is_killed_and_recorded(cli, tmp_path):
    """A transfer that never returns (a hung kernel or DMA) is killed at --timeout; the run goes on."""
    fake = tmp_path / "xferlab-probe"
    fake.write_text(f"#!/bin/sh\ncase \"$1\" in transfer) sleep 60 ;; *) exec {probe_path()} \"$@\" ;; esac\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "device", "--sizes", "64B", "--kinds", "pageable", "--chunks", "", "--timeout", "2s",
                         "--store", store, "--json", env={"XFERLAB_PROBE": str(fake)})
    assert code == 3, err  # one of two steps failed; the other's results are kept
    doc = json.loads(out)  # the JSON is still printed, failures listed
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: 1 of 2 steps failed (first: opencl transfers") and doc["run_id"] in last
    (failure,) = doc["failures"]
    assert "timeout" in failure["reason"] and "transfers" in failure["step"]
    assert any(r["test"] == "launch" for r in doc["results"])  # the next step still ran


def test_plan_steps():
    plan = DevicePlan(sizes=[64, 4096], kinds=["pageable"], launch=True, launch_count=10, pin=0, chunks=[4096])
    plan.check()
    labels = [s.test for s in steps(plan)]
    assert labels == ["transfer", "chunks", "launch", "launch"]


def test_the_full_sweep_validates():
    """1 B to 1 GiB (within the device's largest allocation), every direction, pageable memory."""
    limit = min(2**30, FOUND[0]["max_allocation_bytes"])
    run = run_probe(["transfer", "--kinds", "pageable", "--iterations", "2", "--max-iterations", "2", "--min-time", "0",
                     "--warmup", "1"], timeout=600)
    assert run.ok, run.failure
    checks = [r for r in run.records if r.get("record") == "validation"]
    sizes = sorted({c["size_bytes"] for c in checks})
    assert sizes[0] == 1 and sizes[-1] == limit and len(sizes) == limit.bit_length()
    assert all(c["ok"] for c in checks) and len(checks) == 4 * len(sizes)


def test_budget_scales_the_launch_count(cli, tmp_path):
    doc = cli.json("measure", "launch", "--args", "0", "--budget", "0.5s", "--store", tmp_path / "s.duckdb")
    (row,) = doc["results"]
    assert 1000 <= row["count"] < 100_000  # 0.4 s of ~20-100 µs launches, not the default 100,000


def _points(run):
    """(direction, size) of each point in the order its samples were printed, and its records."""
    samples = [(r["direction"], r["size_bytes"]) for r in run.records if r.get("record") == "sample"]
    points = {(r["direction"], r["size_bytes"]): r for r in run.records if r.get("record") == "point"}
    checks = {(r["direction"], r["size_bytes"]): r for r in run.records if r.get("record") == "validation"}
    return samples, points, checks


def test_interleaved_copies_take_turns_and_validate():
    """--order interleaved: 1000 fixed copies a point in batches of at least 250, so every point takes 2 to 4
    rounds and its samples are not consecutive; each point is still validated, its iterations count 0..999."""
    args = ["--kinds", "pageable", "--sizes", "1,4096,65536", "--directions", "h2d,d2h", "--iterations", "1000",
            "--max-iterations", "1000", "--min-time", "0"]
    run = run_probe(["transfer", *args, "--order", "interleaved"], timeout=300)
    assert run.ok, run.failure
    assert next(r for r in run.records if r.get("record") == "setup")["order"] == "interleaved"
    samples, points, checks = _points(run)
    assert len(points) == len(checks) == 6 and all(c["ok"] for c in checks.values())
    for key, point in points.items():
        assert point["iterations"] == 1000 and point["stopped"] == "fixed" and 2 <= point["rounds"] <= 4
        at = [i for i, s in enumerate(samples) if s == key]
        assert len(at) == 1000 and at[-1] - at[0] + 1 > 1000  # other points' copies came in between
        its = [r["iteration"] for r in run.records if r.get("record") == "sample"
               and (r["direction"], r["size_bytes"]) == key]
        assert its == list(range(1000))
    rows, failure = rows_of(Step("t", "transfer", [], {"node": "default", "mode": "pageable"}, 1.0), run)
    assert failure is None and len(rows) == 6000 and all(r["validated"] for r in rows)
    # Sequential (the default) still times each point whole, one after the other.
    seq = run_probe(["transfer", *args], timeout=300)
    samples, points, _ = _points(seq)
    assert seq.ok and next(r for r in seq.records if r.get("record") == "setup")["order"] == "sequential"
    assert set(points) == set(_points(run)[1]) and "rounds" not in next(iter(points.values()))
    assert all(samples[i * 1000:(i + 1) * 1000] == [samples[i * 1000]] * 1000 for i in range(6))


def test_interleaved_precision_points_all_stop_and_validate():
    """With --precision, interleaved and sequential runs cover the same points, each with how it stopped."""
    args = ["--kinds", "pinned", "--sizes", "64,4096,1048576", "--directions", "h2d,d2h,bidir", "--iterations", "8",
            "--min-time", "0", "--max-iterations", "2000", "--precision", "0.05", "--max-time", "0.3"]
    seen = {}
    for order in ("sequential", "interleaved"):
        run = run_probe(["transfer", *args, "--order", order], timeout=300)
        assert run.ok, run.failure
        _, points, checks = _points(run)
        assert set(points) == set(checks) and all(c["ok"] for c in checks.values())
        assert all(p["stopped"] in ("precision", "max-iterations", "max-time") and p["iterations"] >= 8
                   for p in points.values())
        seen[order] = set(points)
    assert seen["sequential"] == seen["interleaved"] == {(d, s) for d in ("h2d", "d2h", "bidir")
                                                       for s in (64, 4096, 1048576)}


def test_a_corrupted_copy_is_detected_interleaved():
    """--corrupt-copy damages each point's copy after its last timed one: interleaved rounds still catch it."""
    run = transfer("--kinds", "pageable", "--corrupt-copy", "--order", "interleaved")
    assert run.returncode == 1 and "validation failed" in run.failure
    rows, failure = rows_of(Step("t", "transfer", [], {"node": "default"}, 1.0), run)
    assert rows == [] and failure.startswith("validation failed") and "at byte" in failure


def test_plan_order_defaults_to_interleaved_with_a_precision():
    """--order: interleaved by default only with a precision target; sequential passes nothing new to the probe."""
    fixed = DevicePlan(sizes=[64], kinds=["pageable"])
    adaptive = DevicePlan(sizes=[64], kinds=["pageable"], precision=0.02)
    forced = DevicePlan(sizes=[64], kinds=["pageable"], precision=0.02, order="sequential")
    for plan in (fixed, adaptive, forced):
        plan.check()
    assert "--order" not in steps(fixed)[0].args and "--order" not in steps(forced)[0].args
    args = steps(adaptive)[0].args
    assert args[args.index("--order") + 1] == "interleaved"

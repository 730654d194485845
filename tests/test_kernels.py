"""The accelerator's side (`xferlab measure kernels`, xferlab.measure.kernels, the probe's
kernels.cpp) on a real OpenCL device (PoCL in CI; the scaling sweep on Intel's OpenCL CPU runtime too): BabelStream's kernels over device memory and
host memory, float and double, vector widths, the scaling table, first-touch faults of shared
memory, copies by offset and allocator, SpMV checked against SciPy. Bad input tried: a width the
kernels do not have, arrays above the device's largest allocation, an offset past 1 MiB, an
unknown memory kind, the CUDA backend, a malformed and a missing .mtx file, one with a NaN entry, --spmv inf and .1; a wrong result caught;
a probe that crashes midway. Sizes are small: 2 cores, other tests beside."""

import json
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from xferlab.measure.device import devices
from xferlab.measure.kernel_results import scaling, stream_summary
from xferlab.measure.kernels import KernelPlan, rows_of
from xferlab.measure.spmv import load_matrix
from xferlab.measure.probe import ProbeRun
from xferlab.measure.steps import Step
from xferlab.store import open_store
from xferlab.units import format_size

FOUND, WHY = devices("opencl")
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)
SVM_FINE = bool(FOUND and FOUND[0].get("svm_fine_grain"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kernels")
    store = folder / "k.duckdb"
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "xferlab", "measure", "kernels", "--size", "1Mi", "--iterations", "3",
                           "--widths", "1,4", "--types", "float,double", "--memory", "device,pinned,host,svm-fine",
                           "--faults", "--strides", "4096,65536", "--align", "--offsets", "0,1,64,4096",
                           "--spmv", "3000", "--per-row", "8", "--store", str(store), "--plots", str(folder / "plots"),
                           "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return folder, store, json.loads(done.stdout)


def test_stream_on_device_and_host_memory_validates(recorded):
    _, store, doc = recorded
    rows = doc["results"]
    stream = [r for r in rows if r["kernel"] != "spmv"]
    memories = {"device", "pinned", "host"} | ({"svm-fine"} if SVM_FINE else set())
    assert {r["memory"] for r in stream} == memories
    assert {(r["type"], r["width"]) for r in stream} == {("float", 1), ("float", 4), ("double", 1), ("double", 4)}
    assert {r["kernel"] for r in stream} == {"copy", "mul", "add", "triad", "dot", "read"}
    for r in stream:
        assert r["best_bytes_per_second"] >= r["median_bytes_per_second"] > 0 and r["count"] == 3
        assert r["groups"] >= 1 and r["local"] >= 1
    triad = next(r for r in stream if (r["kernel"], r["memory"], r["type"], r["width"]) == ("triad", "device", "float", 1))
    assert triad["size_bytes"] == 2**20
    with open_store(store, read_only=True) as db:
        samples = db.samples(doc["run_id"])
        groups = db.stats(doc["run_id"])
    assert all(s["validated"] for s in samples) and doc["unvalidated_samples"] == 0
    # BabelStream's byte counting: triad moves 3 arrays, dot 2, read 1.
    moved = {s["test"]: s["bytes"] for s in samples if s["host_kind"] == "device" and s["params"]["type"] == "float"}
    assert (moved["triad"], moved["dot"], moved["read"]) == (3 * 2**20, 2 * 2**20, 2**20)
    # The store's statistics keep widths and types apart (params.variant).
    triads = [g for g in groups if g["test"] == "triad" and g["host_kind"] == "device"]
    assert len(triads) == 4 and all(g["count"] == 3 for g in triads)
    assert {os.path.basename(p) for p in doc["plots"]} >= {"kernels-stream.png"}


def test_faults_align_and_spmv(recorded):
    _, _, doc = recorded
    faults = doc["faults"]
    if SVM_FINE:
        fine = {f["stride_bytes"]: f for f in faults if f["memory"] == "svm-fine"}
        assert set(fine) == {4096, 65536} and fine[4096]["touches"] == 256
        assert fine[4096]["first_touch_median_seconds"] > fine[4096]["second_touch_median_seconds"] > 0
    align = doc["align"]
    assert {(a["allocator"], a["offset_bytes"], a["direction"]) for a in align} == {
        (al, o, d) for al in ("runtime", "application") for o in (0, 1, 64, 4096) for d in ("h2d", "d2h")}
    assert next(a for a in align if (a["allocator"], a["offset_bytes"], a["direction"]) == ("runtime", 0, "h2d"))[
        "relative_to_runtime_aligned"] == 1.0
    spmv = [r for r in doc["results"] if r["kernel"] == "spmv"]
    assert spmv and all(r["rows"] == 3000 and r["nnz"] <= 24000 and r["best_flops_per_second"] > 0 for r in spmv)


def test_device_to_device_between_two_devices(tmp_path, cli):
    """PoCL lists two devices with POCL_DEVICES: both paths run and every byte arrives."""
    code, out, err = cli("measure", "kernels", "--kernels", "copy", "--memory", "device", "--size", "1Mi",
                         "--iterations", "3", "--peer", "1", "--json", env={"POCL_DEVICES": "pthread pthread"}, check=0)
    d2d = {r["path"]: r for r in json.loads(out)["d2d"]}
    assert set(d2d) == {"staged", "runtime"} and all(r["count"] == 3 and r["median_bytes_per_second"] > 0
                                                     for r in d2d.values())
    code, out, err = cli("measure", "kernels", "--peer", "0", "--size", "64Ki")
    assert code == 2 and "--peer 0 is --device itself" in err
    past = len(FOUND)  # one past the last device of every platform here (PoCL's one, Intel's where installed)
    code, out, err = cli("measure", "kernels", "--peer", str(past), "--size", "64Ki")
    assert code == 2 and f"--device {past} does not exist" in err


def test_scaling_table_speedups():
    summary = [{"kernel": "triad", "memory": "device", "type": "float", "width": 1, "groups": g, "instances": n,
                "best_bytes_per_second": b} for g, n, b in ((1, 1, 1e9), (2, 1, 1.9e9), (4, 1, 3.5e9), (1, 2, 1.8e9))]
    table = {(r["groups"], r["instances"]): r for r in scaling(summary)}
    assert table[(4, 1)]["speedup_vs_fewest_groups"] == pytest.approx(3.5)
    assert table[(1, 2)]["speedup_vs_one_instance"] == pytest.approx(1.8)
    assert table[(1, 2)]["speedup_vs_fewest_groups"] is None  # only one instance is set against the fewest groups


def test_scaling_sweep_runs_and_is_summarized(cli, platform):
    code, out, err = cli("measure", "kernels", "--platform", platform, "--kernels", "triad", "--memory", "device",
                         "--size", "256Ki", "--iterations", "2", "--scaling", "--json", check=0)
    doc = json.loads(out)
    assert doc["device"]["platform"] == platform  # run on the platform asked for, every result checked
    assert doc["failures"] == [] and doc["unvalidated_samples"] == 0 and doc["results"]
    groups = sorted({r["groups"] for r in doc["scaling"]})
    instances = sorted({r["instances"] for r in doc["scaling"]})
    assert groups[0] == 1 and len(groups) >= 4 and instances == [1, 2, 4]


def test_matrix_market_file_is_read_and_checked(tmp_path, cli):
    matrix = scipy.sparse.random(400, 300, density=0.05, format="coo", random_state=1)
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(str(path), matrix)
    code, out, err = cli("measure", "kernels", "--kernels", "copy", "--memory", "device", "--size", "64Ki",
                         "--iterations", "2", "--spmv", path, "--spmv-type", "float", "--json", check=0)
    spmv = [r for r in json.loads(out)["results"] if r["kernel"] == "spmv"]
    assert spmv[0]["rows"] == 400 and spmv[0]["nnz"] == matrix.nnz and spmv[0]["type"] == "float"


def test_a_wrong_result_is_caught():
    """Rows of a point whose check failed are kept unvalidated and fail the step (the probe's check
    itself is exercised by every run above)."""
    step = Step("stream", "stream", [], {"node": None}, 1.0)
    sample = {"record": "sample", "kernel": "triad", "memory": "device", "type": "float", "width": 1, "groups": 4,
              "local": 64, "instances": 1, "grid_stride": True, "size_bytes": 1024, "iteration": 0,
              "host_seconds": 1e-5, "device_seconds": 9e-6, "bytes": 3072}
    bad = {"record": "validation", "kernel": "triad", "memory": "device", "type": "float", "width": 1, "groups": 4,
           "instances": 1, "ok": False, "what": "instance 0: element 7 is 0.5, expected 0.4"}
    rows, failure = rows_of(step, ProbeRun([], [sample, bad], 0))
    assert failure.startswith("validation failed at 1 point(s)") and "element 7" in failure
    assert len(rows) == 1 and not rows[0]["validated"] and stream_summary(rows) == []


def test_generated_matrices():
    banded = load_matrix("100", "banded", 5)
    assert banded.shape == (100, 100) and banded.nnz == 500
    rows, cols = banded.nonzero()
    assert all(min(abs(r - c), 100 - abs(r - c)) <= 2 for r, c in zip(rows, cols))  # a band of 5 around the diagonal
    rnd = load_matrix("1000", "random", 8)
    assert rnd.shape == (1000, 1000) and 0 < rnd.nnz <= 8000


@pytest.mark.parametrize("args, fragment", [
    (["--widths", "3"], "--widths 3 is not a vector width; allowed: 1, 2, 4, 8, 16"),
    (["--size", "1Ti"], "--size 1 TiB is above the device's largest allocation"),
    (["--align", "--offsets", "2Mi"], "--align offset 2097152: bytes from a page boundary, in 0..1 MiB"),
    (["--memory", "gpu"], "--memory 'gpu' is not allowed; allowed: device, pinned, host, svm-coarse, svm-fine"),
    (["--backend", "cuda"], "the cuda backend is not available"),
    (["--backend", "cuda", "--align"], "--align: OpenCL devices only for now"),
    (["--spmv", "missing.mtx"], "--spmv 'missing.mtx' is not a readable file"),
    (["--spmv", "bad.mtx"], "--spmv 'bad.mtx' is not a Matrix Market file"),
    (["--spmv", "ten"], "--spmv 'ten' is neither a .mtx file nor a row count"),
    (["--spmv", "inf"], "--spmv 'inf': rows are a whole number in 1..2^26"),
    (["--spmv", ".1"], "--spmv '.1': rows are a whole number in 1..2^26"),
    (["--spmv", "nan.mtx"], "--spmv 'nan.mtx' holds entries that are not finite numbers"),
    (["--instances", "65"], "--instances 65: concurrent kernel instances in 1..64"),
])
def test_bad_input_is_one_line(args, fragment, tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n9 9\n")
    (tmp_path / "nan.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n2 2 nan\n")
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "kernels", *args, "--store", store)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and fragment in lines[0], (code, err)
    assert not store.exists()


def test_a_probe_that_crashes_keeps_what_it_measured(tmp_path, cli):
    store = tmp_path / "c.duckdb"
    code, out, err = cli("measure", "kernels", "--kernels", "copy,triad", "--memory", "device", "--size", "64Ki",
                         "--iterations", "3", "--store", store, env={"XFERLAB_PROBE_FAULT": "crash=SIGSEGV@4"})
    assert code == 1 and "killed by SIGSEGV" in err
    with open_store(store, read_only=True) as db:
        run = db.runs()[0]
        samples = db.samples(run["run_id"])
    assert len(samples) == 4 and sum(s["validated"] for s in samples) == 3  # copy checked; triad's first, not


# -- array-size classes: STREAM's rule (measure/sizeclass.py) and the lab's sizing for it -----------
KiB, MiB, GiB = 2**10, 2**20, 2**30


def test_size_class_follows_streams_rule():
    from xferlab.measure.sizeclass import size_class

    llc = 256 * MiB
    assert size_class(4 * llc, llc) == "memory" and size_class(4 * llc - 1, llc) == "mixed"
    assert size_class(llc // 3, llc, 3) == "cache-resident" and size_class(llc // 3 + 1, llc, 3) == "mixed"
    assert size_class(llc // 2, llc, 2) == "cache-resident"
    assert size_class(16 * MiB, 0) is None and size_class(None, llc) is None


def test_a_cpu_device_is_judged_by_the_hosts_llc_a_gpu_by_its_l2():
    from xferlab.measure.sizeclass import device_llc

    host = 256 * MiB
    assert device_llc({"type": "cpu", "global_mem_cache_bytes": 512 * KiB}, host)[0] == host
    assert device_llc({"type": "gpu", "global_mem_cache_bytes": 4 * MiB}, host)[0] == 4 * MiB
    assert device_llc({"l2_cache_bytes": 50 * MiB}, host)[0] == 50 * MiB  # CUDA's attribute
    assert device_llc({"type": "gpu"}, host)[0] == 0
    assert FOUND[0]["type"] in ("cpu", "gpu", "accelerator", "other") and FOUND[0]["global_mem_cache_bytes"] >= 0


@pytest.fixture
def fake_llc(monkeypatch):
    """Make this machine report a last-level cache of the given size (the inventory's own functions)."""
    from xferlab.system import inventory as inv

    def fake(size):
        monkeypatch.setattr(inv, "last_level_cache_bytes", lambda: size)
        monkeypatch.setattr(inv, "caches", lambda cpu=0: [{"level": 3, "type": "Unified", "size_bytes": size,
                                                             "line_bytes": 64, "shared_cpus": "0-1"}])
    return fake


def _lab_kernels(tmp_path, share, rate):
    from xferlab.lab.devices import kernels_stage
    from xferlab.measure.device import DevicePlan, find_device

    plan = DevicePlan(backend="opencl", device=0, info=find_device("opencl", 0))
    store = tmp_path / "k.duckdb"
    done, run_id, failures = kernels_stage(plan, share, store, 60.0, rate)
    with open_store(store, read_only=True) as db:
        return done, db.samples(run_id), db.run(run_id), failures


def test_measure_kernels_defaults_to_rule_sized_arrays(fake_llc):
    fake_llc(32 * MiB)
    plan = KernelPlan(kernels=["triad"], memories=["device"])
    plan.check()
    if FOUND[0]["type"] == "cpu":
        assert plan.llc_bytes == 32 * MiB and plan.size == 128 * MiB  # 4x the host's LLC: a CPU device
    fake_llc(64 * GiB)  # 256 GiB by the rule: above any largest allocation, which caps it
    plan = KernelPlan(kernels=["triad"], memories=["device"])
    plan.check()
    assert plan.size == int(FOUND[0]["max_allocation_bytes"]) or FOUND[0]["type"] != "cpu"


def test_the_lab_sizes_device_stream_for_the_rule_when_its_share_allows(tmp_path, fake_llc):
    """A faked 1 MiB last-level cache: STREAM's rule wants 4 MiB arrays, which a 60 s share affords;
    every figure is of class memory, in the rows stored and in the overview."""
    if FOUND[0]["type"] != "cpu":
        pytest.skip("the faked cache is the host's: it decides a CPU device's class only")
    fake_llc(1 * MiB)
    done, samples, run, failures = _lab_kernels(tmp_path, 60.0, 5e9)
    assert done["sizing"]["size_bytes"] == 4 * MiB and done["sizing"]["array_size_class"] == "memory"
    assert "STREAM's rule: 4 MiB per array" in done["sizing"]["reason"]
    stream = [s for s in samples if s["test"] in ("copy", "triad", "dot")]
    assert stream and {s["size_bytes"] for s in stream} == {4 * MiB}
    assert {(s["params"]["array_size_class"], s["params"]["llc_bytes"]) for s in stream} == {("memory", 1 * MiB)}
    assert done["overview"] and all(o["array_size_class"] == "memory" for o in done["overview"])
    assert run["params"]["sizing"]["array_size_class"] == "memory" and failures == []


@pytest.mark.parametrize("llc, size, why", [
    (64 * MiB, 8 * MiB, "about {} s with triad alone at width 1, the share is 3 s"),   # the time: 256 MiB arrays
    (1 * GiB, 16 * MiB, "held, over half the memory available"),                     # the memory: 4 GiB arrays
])
def test_the_lab_labels_device_stream_cache_resident_when_its_share_cannot_hold_the_rule(tmp_path, fake_llc, llc, size,
                                                                                       why):
    """A faked large last-level cache (260 MiB is real on some VMs): the rule's arrays (4x it) do not fit
    a 3 s share at 1 GB/s, or the memory, so the lab measures small arrays and labels every figure
    cache-resident, saying why."""
    if FOUND[0]["type"] != "cpu":
        pytest.skip("the faked cache is the host's: it decides a CPU device's class only")
    fake_llc(llc)
    done, samples, run, _ = _lab_kernels(tmp_path, 3.0, 1e9)
    sizing = done["sizing"]
    assert sizing["size_bytes"] == size and sizing["array_size_class"] == "cache-resident"
    assert sizing["rule_bytes"] == 4 * llc and f"STREAM's rule wants {format_size(4 * llc)} per array" in sizing["reason"]
    assert why.format(f"{sizing['needed_seconds']:.0f}") in sizing["reason"]
    stream = [s for s in samples if s["test"] in ("copy", "triad", "dot")]
    assert stream and {s["params"]["array_size_class"] for s in stream} == {"cache-resident"}
    assert {s["size_bytes"] for s in stream} == {size}
    assert all(o["array_size_class"] == "cache-resident" for o in done["overview"])
    from xferlab.store.rows import flat
    from xferlab.report.kernels_section import kernels_section

    section, _ = kernels_section(run, [flat(s) for s in samples], tmp_path)  # the report says it, and why
    assert f"array size chosen by the lab: {sizing['reason']}" in section.intro
    assert f"arrays: {format_size(size)} per array, {size / llc:.2g}x the {format_size(llc)} LLC: cache-resident" in " ".join(
        section.intro)


def test_the_rule_is_not_chosen_past_the_memory_or_the_largest_allocation(fake_llc):
    """However long the share: 256 MiB arrays (a faked 64 MiB cache) are not planned where 7 of them are
    over half the memory available, or where the device cannot allocate one."""
    from xferlab.measure.kernel_sizing import size_for_rule

    fake_llc(64 * MiB)
    plan = KernelPlan(kernels=["triad"], memories=["device"])
    plan.check()
    sizing = size_for_rule(plan, 1e6, 1e12, 3 * GiB)
    assert sizing["array_size_class"] == "cache-resident" and plan.size == 8 * MiB
    assert "7 x 256 MiB held, over half the memory available (3 GiB)" in sizing["reason"]
    plan.info = {**plan.info, "max_allocation_bytes": 128 * MiB}
    sizing = size_for_rule(plan, 1e6, 1e12, 64 * GiB)
    assert sizing["array_size_class"] == "cache-resident" and "above the device's largest allocation (128 MiB)" in sizing["reason"]
    plan.info = {**plan.info, "max_allocation_bytes": 4 * GiB}
    assert size_for_rule(plan, 1e6, 1e12, 64 * GiB)["array_size_class"] == "memory" and plan.size == 256 * MiB

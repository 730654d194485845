"""The offload runtime (native/runtime, xferlab.runtime, `xferlab runtime bench`).

The C++ self-tests are built here with g++ under AddressSanitizer and UndefinedBehaviorSanitizer (the
issue's "test build"): handles copied, moved and destroyed while pending, a ring of one slot, a device
error surfacing as an exception; the OpenCL backend against the host interpreter on PoCL. The Python
tests drive the installed extension. Bad input tried: an unknown operation set (workload), mode and
backend, a window and a ring of 0, an emulated latency below 0, an OpenCL device that does not exist."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "native" / "runtime"
KERNEL_HEADERS = ("xf_portable.h", "posit32.h", "enc64.h", "interp.h")


def _compiler() -> str:
    cxx = shutil.which("g++")
    if not cxx:
        if os.environ.get("CI"):
            pytest.fail("CI must build the runtime self-tests: g++ is missing")
        pytest.skip("no g++")
    return cxx


def _kernel_inc(folder: Path) -> Path:
    """kernel_source.inc as CMakeLists.txt generates it."""
    text = "".join((RUNTIME / "ops" / h).read_text() + "\n" for h in KERNEL_HEADERS)
    (folder / "kernel_source.inc").write_text(f'static const char kKernelSource[] = R"XFSRC({text})XFSRC";\n')
    return folder


ASAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
TSAN = ["-fsanitize=thread"]


def _build(tmp_path: Path, sources: list[Path], name: str, sanitizer: list[str] = ASAN) -> Path:
    exe = tmp_path / name
    cmd = [_compiler(), "-std=c++17", "-g", "-O1", *sanitizer, "-fno-omit-frame-pointer", "-I", str(RUNTIME), "-I", str(RUNTIME / "ops"),
           "-I", str(ROOT / "native" / "loaders"), "-I", str(_kernel_inc(tmp_path)), *map(str, sources),
           "-pthread", "-ldl", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return exe


def test_core_under_address_sanitizer(tmp_path):
    exe = _build(tmp_path, [ROOT / "tests" / "runtime_selftest.cpp", RUNTIME / "runtime.cpp",
                            RUNTIME / "emulated_backend.cpp"], "selftest")
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"})
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1].startswith("ok"), done.stdout + done.stderr


def test_core_under_thread_sanitizer(tmp_path):
    """The host thread and the emulated device thread share the queue, the counters and the error
    state: ThreadSanitizer runs the self-test and fails it on any data race (the device's error text,
    written by one thread and read by the other, is now under a lock)."""
    exe = _build(tmp_path, [ROOT / "tests" / "runtime_selftest.cpp", RUNTIME / "runtime.cpp",
                            RUNTIME / "emulated_backend.cpp"], "tsan_selftest", TSAN)
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TSAN_OPTIONS": "halt_on_error=1 second_deadlock_stack=1"})
    assert done.returncode == 0 and "ThreadSanitizer" not in done.stderr, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ok")


def test_opencl_backend_against_the_host_interpreter(tmp_path):
    exe = _build(tmp_path, [ROOT / "tests" / "runtime_opencl_selftest.cpp", RUNTIME / "opencl_backend.cpp",
                            ROOT / "native" / "loaders" / "opencl_loader.cpp"], "oclselftest")
    done = subprocess.run([str(exe), "--no-timing"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"})
    if done.returncode == 77 and not os.environ.get("CI"):
        pytest.skip(done.stdout.strip() or "no OpenCL")
    assert done.returncode == 0 and "ok" in done.stdout.splitlines()[-1], done.stdout[-3000:] + done.stderr[-3000:]


# -- Python: the installed extension ----------------------------------------------------------------

from xferlab.runtime import open_runtime, workload_names  # noqa: E402
from xferlab.errors import BadValue  # noqa: E402


def _opencl() -> bool:
    from xferlab.measure.device import devices

    return bool(devices("opencl")[0])


def _chain(rt, steps=60):
    """x <- x * 1.5 + 0.25, reading every 9th value and the last, as bits."""
    x, h, y = rt.posit(1.0), rt.posit(1.5), rt.posit(0.25)
    seen = []
    for k in range(steps):
        x = x * h + y
        if k % 9 == 0:
            seen.append(x.bits)
    return seen + [x.bits]


@pytest.mark.parametrize("mode", ["sync", "parallel", "forward"])
@pytest.mark.parametrize("ring", [1, 3, 64])
def test_modes_and_rings_give_the_same_bits(mode, ring):
    seen = _chain(open_runtime("emulated", mode, ring=ring, window=8, latency=100e-9))
    assert seen == _chain(open_runtime("emulated", "sync", ring=1, window=1, latency=0))


def test_pending_handles_survive_deletion_and_closing():
    rt = open_runtime("emulated", "forward", ring=2, window=4, latency=0)
    a = rt.posit(3.0)
    kept = [a * rt.posit(float(i)) for i in range(20)]
    assert kept[-1].pending
    for i in range(20):
        tmp = kept[i] + a
        del tmp  # dropped while pending
    assert [float(k) for k in kept] == [3.0 * i for i in range(20)]
    pending = a * a
    rt.close()
    with pytest.raises(RuntimeError):
        float(pending + a)  # a closed runtime takes no new request
    with pytest.raises(RuntimeError, match="closed"):
        float(pending)      # nor reads a value it never brought back
    assert float(kept[3]) == 9.0  # values read before closing stay readable


def test_forwarding_counts():
    rt = open_runtime("emulated", "forward", latency=0)
    x = rt.posit(2.0)
    y = (x * x + x) * x          # three requests, one window, operands forwarded on the device
    assert y.pending and float(y) == 12.0
    c = rt.counters
    assert c["requests"] == 3 and c["forwarded"] == 2 and c["result_reads"] == 1 and c["windows"] == 1
    # by hand: 3 records of 40 bytes = 120 bytes = 2 lines written (the second carries parts of requests 2
    # and 3: coalesced, and so is the first), one doorbell, one 8-byte result read = 1 line: 4 transactions
    assert (c["lines_written"], c["coalesced_lines"], c["doorbells"], c["lines_read"]) == (2, 2, 1, 1)
    assert c["bus_transactions"] == 4
    # The device thread's own count: the same 3 records in 2 lines and 1 doorbell, 2 operands it took from its
    # slots, 3 results kept there; 1 read asked for and 1 line sent back: 5 messages, the read's request one
    # the runtime's formula leaves out.
    b = rt.bus_counters
    assert (b["records"], b["lines_received"], b["doorbells"], b["forwarded"], b["kept"]) == (3, 2, 1, 2, 3)
    assert (b["read_requests"], b["lines_sent"], b["values_sent"], b["status_reads"]) == (1, 1, 1, 0)
    assert b["transactions"] == 5


@pytest.mark.parametrize("backend", ["emulated", "opencl"])
def test_the_bus_counts_what_crossed_it(backend):
    """Two accounts of every workload's traffic: the runtime's bookkeeping and the bus's own count (the
    emulated device thread; the OpenCL backend's commands). They agree on what must be the same (records,
    lines, doorbells, forwarded operands, results read) and differ by what the runtime's formula leaves
    out: a read's request, and on OpenCL the status word read with every read."""
    if backend == "opencl" and not _opencl() and not os.environ.get("CI"):
        pytest.skip("no OpenCL device (CI installs PoCL)")
    from xferlab.runtime.bench import disagreements

    for name in workload_names():
        for mode in ("sync", "forward"):
            rt = open_runtime(backend, mode, latency=0)
            assert rt.run_workload(name, 0, 3)["ok"]
            c, b = rt.counters, rt.bus_counters
            rt.close()
            assert disagreements(c, b) == [], (name, mode)
            assert b["forwarded"] == (0 if mode == "sync" else c["forwarded"]) and (mode == "sync" or b["forwarded"] > 0)
            assert b["kept"] == (0 if mode == "sync" else c["requests"])  # forward asks for no result with a window
            status = b["status_reads"]
            if backend == "emulated":
                assert status == 0  # the status word is memory both sides share: no read of it crosses
            else:
                assert status >= c["result_reads"] > 0  # one rides with every read of a result
            # one more message per read (its request), one more request and line per status read
            assert b["transactions"] == c["bus_transactions"] + c["result_reads"] + 2 * status, (name, mode)
    # corrupted, the check says where: a forwarded operand the device never took from a slot
    assert disagreements(c, {**b, "forwarded": b["forwarded"] - 1}) == [
        f"forwarded {c['forwarded']} but the bus counted forwarded {b['forwarded'] - 1}"]


def test_enc64_values_and_comparisons():
    rt = open_runtime("emulated", "forward", latency=0)
    a, b = rt.enc(-7), rt.enc(5)
    assert (a * b + b).decrypt() == -30 and a.lt(b).decrypt() == 1 and a.max(b).decrypt() == 5
    assert a.lt(b).select(a, b).decrypt() == -7
    assert a.ciphertext != rt.enc(-7 + 1).ciphertext


@pytest.mark.parametrize("backend", ["emulated", "opencl"])
def test_a_device_error_surfaces_instead_of_hanging(backend):
    if backend == "opencl" and not _opencl() and not os.environ.get("CI"):
        pytest.skip("no OpenCL device")
    from xferlab._runtime import OP_FAIL

    rt = open_runtime(backend, "forward", latency=0)
    bad = rt.submit_raw(OP_FAIL, 1)
    with pytest.raises(RuntimeError, match="failed on purpose"):
        bad.bits


@pytest.mark.parametrize("backend", ["emulated", "opencl"])
@pytest.mark.parametrize("mode", ["sync", "parallel", "forward"])
def test_every_workload_validates(backend, mode):
    if backend == "opencl" and not _opencl() and not os.environ.get("CI"):
        pytest.skip("no OpenCL device (CI installs PoCL)")
    for name in workload_names():
        rt = open_runtime(backend, mode, latency=200e-9)
        result = rt.run_workload(name, 0, 7)
        assert result["ok"], (name, mode, backend, result["detail"])
        rt.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "eager"}, "mode 'eager'"),          # an unknown mode
    ({"backend": "fpga"}, "backend 'fpga'"),      # an unknown backend
    ({"window": 0}, "--window 0"),                # a window of 0
    ({"ring": 0}, "--ring 0"),                    # a ring of 0
    ({"latency": -1e-9}, "--latency"),            # an emulated latency below 0
    ({"key": (1, 2, 3)}, "key"),                  # a SPECK key of three words
])
def test_bad_options(kwargs, message):
    with pytest.raises(BadValue, match=message):
        open_runtime(**kwargs)


@pytest.mark.parametrize("args, message", [
    (["--workload", "lu"], "--workload 'lu'"),     # an unknown workload (its operation set is unknown too)
    (["--opset", "bfloat16"], "--opset 'bfloat16'"),  # an unknown operation set
    (["--mode", "eager"], "--mode 'eager'"),
    (["--window", "0"], "--window 0"),
    (["--ring", "0"], "--ring 0"),
    (["--latency", "-5ns"], "--latency"),
    (["--backend", "fpga"], "--backend 'fpga'"),
    (["--backend", "opencl", "--device", "99"], "device 99"),
    (["--workload", "bubble", "--problem-size", "5000"], "out of range"),  # a size the workload cannot take
    (["--workload", "mg", "--problem-size", "12"], "power of two"),
    (["--problem-size", "-1"], "--problem-size '-1'"),            # a negative size
    (["--ring", str(2**32)], "--ring"),                            # a ring past what fits
    (["--latency", "2s"], "--latency"),                            # an emulated leg past 1 s
    (["--latency", "1us", "--plot", "p.png"], "two latencies"),    # a speedup-vs-latency plot of one latency
    (["--latency", "1us,2us", "--plot", "p.txt"], "must end in"),  # a plot format we cannot write
])
def test_bench_bad_input(cli, tmp_path, args, message):
    code, out, err = cli("runtime", "bench", *args, "--repeats", "1", "--store", tmp_path / "s.duckdb")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (code, err)
    assert not (tmp_path / "s.duckdb").exists()


def test_bench_records_and_reports(cli, tmp_path):
    store = tmp_path / "s.duckdb"
    data = cli.json("runtime", "bench", "--workload", "cg,bubble", "--latency", "1us,2us", "--repeats", "1",
                    "--plot", tmp_path / "speedup.png", "--store", store)
    rows = {(r["workload"], r["mode"], r["latency_seconds"]): r for r in data["results"]}
    assert set(rows) == {(w, m, t) for w in ("cg", "bubble") for m in ("sync", "parallel", "forward") for t in (1e-6, 2e-6)}
    for w in ("cg", "bubble"):
        for t in (1e-6, 2e-6):
            sync, fwd = rows[(w, "sync", t)], rows[(w, "forward", t)]
            # What crossed the bus is counted, not timed (speedups are benchmarks/bench_runtime.py's). The
            # runtime's formula: 3 a request in sync, so its saving is an identity of the counts.
            assert sync["bus_transactions"] == 3 * sync["requests"] and sync["transactions_saved"] == 0
            assert fwd["transactions_saved"] == pytest.approx(1 - fwd["bus_transactions"] / (3 * sync["requests"]))
            assert fwd["requests"] == sync["requests"] and fwd["result_reads"] < sync["result_reads"]
            # The bus's count beside it: 4 messages a request in sync (the read's request too), and in forward
            # the formula's figure plus one request per read; each row carries both and both savings.
            assert sync["counted_transactions"] == 4 * sync["requests"]
            assert fwd["counted_transactions"] == fwd["bus_transactions"] + fwd["result_reads"]
            assert fwd["counted_saved"] == pytest.approx(1 - fwd["counted_transactions"] / (4 * sync["requests"]))
            assert fwd["counted_forwarded"] == fwd["forwarded"] > 0 and fwd["counted_lines_received"] == fwd["lines_written"]
    assert (tmp_path / "speedup.png").stat().st_size > 10_000
    from xferlab.store import open_store

    with open_store(store, read_only=True) as db:
        samples = db.samples(data["run_id"])
    assert len(samples) == 12 and {s["suite"] for s in samples} == {"runtime"}
    out = tmp_path / "report.html"
    cli("report", data["run_id"], "-o", out, "--store", store, check=0)
    html = out.read_text()
    assert "Offload runtime on emulated" in html and "posit32" in html and "enc64" in html


# -- Programs from binaries (issue 26): the runtime's kernel from `xferlab kernels build`'s DIR ----------------

BINARY = {"made": "binary", "source_builds": 0, "binary_loads": 1, "il_loads": 0}


@pytest.fixture(scope="module")
def programs_dir(tmp_path_factory):
    """Every program for OpenCL device 0, the runtime's included, as `xferlab kernels build` writes them."""
    import json
    import sys

    if not _opencl() and not os.environ.get("CI"):
        pytest.skip("no OpenCL device here (CI installs pocl-opencl-icd)")
    out = tmp_path_factory.mktemp("programs") / "device0"
    done = subprocess.run([sys.executable, "-m", "xferlab", "kernels", "build", "--device", "0", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    runtime = [p for p in json.loads((out / "manifest.json").read_text())["programs"] if p["program"] == "runtime"]
    assert len(runtime) == 1 and runtime[0]["options"] in ("-cl-std=CL1.2", "")  # the first the device takes
    return out


def test_the_runtime_from_the_binary_builds_nothing_and_gives_the_same_bits(programs_dir):
    """The OpenCL backend's interpreter kernel loaded from the DIR (make_program, the probe's code): no source
    build, the same posit bits as from source, and every workload's result validated against the host."""
    source = open_runtime("opencl", "forward", window=8)
    binary = open_runtime("opencl", "forward", window=8, program=programs_dir)
    assert source.programs == {"made": "source", "source_builds": 1, "binary_loads": 0, "il_loads": 0}
    assert binary.programs == BINARY
    assert _chain(binary) == _chain(source)
    for name in ("gcd", "cg"):
        assert binary.run_workload(name, 0, 1)["ok"]
    assert open_runtime("emulated").programs == {"made": "none", "source_builds": 0, "binary_loads": 0, "il_loads": 0}


def test_bench_from_binaries_records_the_program(cli, tmp_path, programs_dir):
    store = tmp_path / "s.duckdb"
    data = cli.json("runtime", "bench", "--backend", "opencl", "--workload", "gcd", "--mode", "sync,forward",
                    "--repeats", "1", "--program", programs_dir, "--store", store)
    assert all(r["ok"] for r in data["results"]) and len(data["results"]) == 2
    assert "program: made binary in each run (0 source builds, 1 binary loads, 0 IL loads)" in data["notes"]
    from xferlab.store import open_store

    with open_store(store, read_only=True) as db:
        run, samples = db.run(data["run_id"]), db.samples(data["run_id"])
    assert run["params"]["program"] == str(programs_dir)
    assert [s["params"]["program"] for s in samples] == [BINARY, BINARY]


def test_runtime_programs_that_do_not_serve_are_refused_in_one_line(cli, tmp_path, programs_dir):
    """Bad input tried: a path that does not exist, a folder without a manifest, a manifest naming another
    device, a folder without the runtime's binary, a file that is no program (CL_INVALID_BINARY), --program
    with the emulated backend. Each: one line, exit 2, nothing stored; the library: BadValue."""
    other, partial, lone = tmp_path / "other", tmp_path / "partial", tmp_path / "lone"
    for folder in (other, partial, lone):
        folder.mkdir()
    for f in programs_dir.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
        if not f.name.startswith("runtime-"):
            (partial / f.name).write_bytes(f.read_bytes())
    manifest = other / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"device_name":"', '"device_name":"Another Device 9000 '))
    (lone / "x.bin").write_bytes(b"not a program binary" * 10)
    for path, fragment in ((tmp_path / "nowhere", "does not exist"), (tmp_path, "has no manifest.json"),
                           (other, "was built for another device"),
                           (partial, "has no runtime program that builds for this device"),
                           (lone / "x.bin", "is not a program for this device")):
        with pytest.raises(BadValue, match=fragment):
            open_runtime("opencl", program=path)
        code, out, err = cli("runtime", "bench", "--backend", "opencl", "--workload", "gcd", "--repeats", "1",
                             "--program", path, "--store", tmp_path / "s.duckdb")
        assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, (path, err)
        assert err.startswith("error: --program ") or "--program" in err, err
    code, out, err = cli("runtime", "bench", "--program", programs_dir, "--store", tmp_path / "s.duckdb")
    assert code == 2 and "--program applies only with --backend opencl" in err, err
    with pytest.raises(BadValue, match="--backend emulated builds none"):
        open_runtime("emulated", program=programs_dir)
    assert not (tmp_path / "s.duckdb").exists()

"""The offload study (`xferlab study run offload`, studies/offload.py, runtime/stream.py): seed 002's
request-stream statistics from the runtime's trace, checked on streams small enough to count by
hand, then the modes over a latency sweep, stored as one study group and reused. Bad input tried: an
unknown workload, a latency above the emulator's 1 s, a negative latency, a trace whose lengths do
not match."""

import json

import pytest

from xferlab.errors import BadValue
from xferlab.runtime import open_runtime
from xferlab.runtime.stream import statistics
from xferlab.store import open_store


def _traced(program):
    rt = open_runtime("emulated", "forward", latency=0.0)
    rt.trace()
    program(rt)
    traced = rt.traced
    rt.close()
    return traced


def test_a_chain_of_three_requests():
    def chain(rt):
        x = rt.posit(1.5)  # a host value: no request
        y = x * x          # request 1
        z = y + x          # request 2: y from request 1
        w = z * y          # request 3: z from 2, y from 1
        assert float(w) == 8.4375  # the host reads request 3's result after 3 requests

    t = _traced(chain)
    assert {k: t[k] for k in ("producers", "read_at")} == {"producers": [0, 0, 0, 1, 0, 0, 2, 1, 0], "read_at": [0, 0, 3]}
    s = statistics(t["producers"], t["read_at"])
    assert s["requests"] == 3 and s["operands_from_requests"] == 3
    assert s["recent_operand_share"] == 1.0
    assert statistics(t["producers"], t["read_at"], recent=1)["recent_operand_share"] == pytest.approx(2 / 3)
    assert s["level_width_mean"] == 1.0 and s["ideal_parallelism"] == 1.0  # each request waits for the one before
    assert s["host_read_share"] == pytest.approx(1 / 3) and s["unused_share"] == 0.0
    # first uses: 1 by request 2 (distance 1), 2 by request 3 (1), 3 by the host right away (0)
    assert (s["use_distance_median"], s["use_distance_max"]) == (1.0, 1)


def test_independent_requests_share_a_level():
    def fan(rt):
        x = rt.posit(2.0)
        a = x * x      # 1
        b = x + x      # 2: independent of 1
        c = a * b      # 3
        d = x - x      # 4: independent, never used
        float(c)

    t = _traced(fan)
    s = statistics(t["producers"], t["read_at"])
    assert s["level_width_mean"] == 2.0 and s["level_width_max"] == 3  # levels {1, 2, 4} and {3}
    assert s["ideal_parallelism"] == 2.0 and s["unused_share"] == 0.25
    # windows of two requests: {1, 2} one level, {3, 4} one level (3's inputs came before the window)
    assert statistics(t["producers"], t["read_at"], window=2)["level_width_mean"] == 2.0
    with pytest.raises(BadValue, match="3 per request"):
        statistics([0, 0], [0])


def test_the_study_measures_stores_and_reuses(tmp_path, cli):
    store = tmp_path / "o.duckdb"
    args = ["study", "run", "offload", "--workloads", "kadane,gcd", "--latencies", "0,1us", "--repeats", "1",
            "--store", store, "--json"]
    code, out, err = cli(*args, check=0)
    doc = json.loads(out)
    assert {(r["workload"], r["latency_seconds"]) for r in doc["results"]} == {
        (w, x) for w in ("kadane", "gcd") for x in (0.0, 1e-6)}
    with open_store(store, read_only=True) as db:
        bus = [s for run in db.runs() for s in db.samples(run["run_id"]) if s["suite"] == "runtime"]
    assert len(bus) == 2 * 2 * 3  # every workload, latency and mode ran (a missing one leaves a speedup empty)
    for r in doc["results"]:
        assert None not in (r["sync_seconds"], r["parallel_speedup"], r["forward_speedup"]), r
        # the trace's requests are the runtime's own count in every mode of the bus step (two counters)
        assert {s["params"]["requests"] for s in bus if s["test"] == r["workload"]} == {r["requests"]}
        # forward's saving in both accounts: the formula's is the same at every latency (an identity of the
        # counts), the bus's own count charges each read its request and so differs from it
        same = [x for x in doc["results"] if x["workload"] == r["workload"]]
        assert {x["forward_transactions_saved"] for x in same} == {r["forward_transactions_saved"]}
        assert r["forward_counted_saved"] != r["forward_transactions_saved"]
    # kadane's running sums take each operand from the request just before
    assert next(r for r in doc["results"] if r["workload"] == "kadane")["recent_operand_share"] == 1.0
    again = json.loads(cli(*args, check=0)[1])
    assert [s["status"] for s in again["steps"]] == ["reused", "reused"] and again["results"] == doc["results"]
    with open_store(store, read_only=True) as db:
        assert len(db.runs()) == 2
    report = tmp_path / "report.html"
    cli("report", "--store", store, "--output", report, check=0)
    assert "Study offload (seed 002)" in report.read_text()


def test_p_over_o_passes_1_only_above_the_break_even_speed(tmp_path, cli):
    """Seed 002's "more forgiving trade-offs": the study at a device speed below the model's break-even
    speed (0.25x the host) and one far above it (16x). P/O > 1 is the offloaded run beating the host
    (``{mode}_pays``, which also answers where forward hid the bus and P/O is empty): no mode pays at
    0.25x, forward pays at 16x, and every P/O given says the same as its mode's ``pays``."""
    doc = cli.json("study", "run", "offload", "--workloads", "gcd", "--latencies", "2us", "--device-speeds", "0.25,16",
                   "--work", "8192", "--repeats", "1", "--store", tmp_path / "p.duckdb")
    rows = {r["device_speed"]: r for r in doc["results"]}
    assert sorted(rows) == [0.25, 16.0]
    for speed, r in rows.items():
        assert 0.25 < r["forward_break_even_speed"] < 16, r  # the model's break-even lies between the two
        for mode in ("sync", "parallel", "forward"):
            if r[f"{mode}_p_over_o"] is not None:
                assert (r[f"{mode}_p_over_o"] > 1) == r[f"{mode}_pays"], (speed, mode, r)
    below, above = rows[0.25], rows[16.0]
    assert [below[f"{m}_pays"] for m in ("sync", "parallel", "forward")] == [False, False, False], below
    assert not any((below[f"{m}_p_over_o"] or 0) > 1 for m in ("sync", "parallel", "forward")), below
    assert above["forward_pays"] is True and (above["forward_p_over_o"] is None or above["forward_p_over_o"] > 1), above


def test_bad_input_is_refused_with_one_line(cli, tmp_path):
    code, out, err = cli("study", "run", "offload", "--workloads", "nope", check=None)
    assert code == 2 and "--workload 'nope' is not known" in err
    code, out, err = cli("study", "run", "offload", "--latencies", "2s", check=None)
    assert code == 2 and "--latencies 2 s" in err
    code, out, err = cli("study", "run", "offload", "--latencies", "-1us", check=None)
    assert code == 2 and "--latencies" in err
    code, out, err = cli("study", "run", "deceval", "--workloads", "cg", check=None)
    assert code == 2 and "--workloads does not apply to the deceval study" in err
    code, out, err = cli("study", "run", "offload", "--workloads", ",", check=None)
    assert code == 2 and err.strip() == "error: --workloads is empty; allowed: cg, mg, bubble, gcd, kadane"
    code, out, err = cli("study", "run", "offload", "--workloads", "gcd", "--latencies", "1s", "--budget", "10m", "--json",
                         "--store", tmp_path / "b.duckdb", check=None)  # ~10^5 s of sync at 1 s a leg: not started
    bus = json.loads(out)["steps"][1]
    assert code == 0 and bus["status"] == "skipped" and "its first part needs about" in bus["failure"]


def test_the_bus_step_starts_no_run_past_its_time_limit():
    """The step's limit reaches the runtime's bench (it ran on past --timeout before): no run starts
    after the deadline, the rows before are kept, and the step's failure says what was not run."""
    import time

    from xferlab.runtime import bench
    from xferlab.studies.offload import _call

    rows = []
    with pytest.raises(TimeoutError, match="before gcd forward at 0 s of bus latency"):
        bench.bench("emulated", [0.0], ["gcd"], ["sync"], repeats=1, on_row=rows.append,
                    deadline=time.monotonic() - 1)
    assert rows == []

    def work(records, deadline):
        records.append({"record": "bench"})
        raise TimeoutError("the time limit ran out before gcd parallel")

    run = _call(work)(5.0)
    assert run.records == [{"record": "bench"}] and run.failure == "the time limit ran out before gcd parallel"


def test_an_interrupted_study_keeps_its_finished_steps_and_goes_on(tmp_path):
    """SIGINT as the bus step's run starts (the store's fault hook sends it inside that run's first
    transaction; it takes effect right after the commit): the trace step's run stays in the store (ok),
    the bus step's run is finished as interrupted, exit 130; run again, the trace is reused and the bus
    step measured. (A SIGINT timed by a sleep landed, on a loaded machine, while the bus step was still
    opening the store, inside a DuckDB query: exit 1 with "Query interrupted" then; see the next test.)"""
    import os
    import subprocess
    import sys

    store = tmp_path / "i.duckdb"
    args = [sys.executable, "-m", "xferlab", "study", "run", "offload", "--workloads", "gcd", "--latencies", "0,100us",
            "--repeats", "1", "--store", str(store)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "XFERLAB_SIGNAL_AT": "SIGINT@start:2"})  # the 2nd run: the bus step's
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted by SIGINT: run ")
    with open_store(store, read_only=True) as db:
        statuses = sorted(r["status"] for r in db.runs())
    assert statuses == ["interrupted", "ok"]
    done = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=300, env=os.environ)
    doc = json.loads(done.stdout)
    assert [s["status"] for s in doc["steps"]] == ["reused", "measured"]


def test_a_query_cut_short_by_a_signal_is_that_signal():
    """DuckDB turns the handler's KeyboardInterrupt inside a query into RuntimeError("Query interrupted"):
    the store gives the signal back (exit 130 or 143, the run finished as interrupted), any other
    RuntimeError as it was."""
    from xferlab import signals
    from xferlab.store.connect import interrupted_query

    assert isinstance(interrupted_query(RuntimeError("Query interrupted")), signals.Interrupted)
    other = RuntimeError("something else")
    assert interrupted_query(other) is other

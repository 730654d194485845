"""Seed 002's opportunity analysis (Chen, Zhang and Austin, "Zipper: Latency-Tolerant Optimizations for
High-Performance Buses"): for each of the runtime's workloads, first the request stream's statistics
the paper argues from (:mod:`xferlab.runtime.stream`, within the seed's 8-request window, ``--window``:
operands from the last 7 requests, independent requests per level, results the host reads, issue-to-use
distance in requests and in seconds), then the three modes measured on the emulated bus over a latency
sweep (``runtime bench``'s code), at each emulated device speed asked for (``--device-speeds``, with
``--work``): so a user sees why forwarding pays for a stream, from what latency on, and where P/O > 1.

Both steps run in this process (the runtime is a Python extension), as steps with a ``call`` in place
of a probe run: recorded, budgeted and reused like any other study step."""

from __future__ import annotations

import time
from typing import Any

from ..errors import BadValue
from ..measure.probe import ProbeRun
from ..measure.steps import Step, step_failure
from ..runtime import LATENCY_PRESETS, MAX_LATENCY, MODES, bench, device_work, workload_names
from ..runtime.stream import RECENT, WINDOW, check_window, trace_workload
from .base import Plan, Study, StudyStep

STATS = ("requests", "window", "recent_operand_share", "level_width_mean", "level_width_median", "level_width_p90",
         "level_width_max", "ideal_parallelism", "host_read_share", "unused_share", "use_distance_median",
         "use_distance_p90", "use_distance_max", "use_distance_mean_seconds", "use_distance_median_seconds",
         "use_distance_p90_seconds", "use_distance_max_seconds")


def _call(work) -> Any:
    """A step's call: its records, or the error that stopped it as the failure (records before kept);
    ``work`` starts nothing past the step's time limit (like a probe killed at its timeout)."""
    def call(limit: float) -> ProbeRun:
        run = ProbeRun(["python"])
        try:
            work(run.records, time.monotonic() + limit)
        except (RuntimeError, ValueError, TimeoutError) as error:  # a wrong result, a device error, the limit
            run.failure = str(error)
        return run
    return call


def _trace_rows(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], str | None]:
    rows = [{"suite": "stream", "test": r["workload"], "metric": "requests", "value": r["requests"], "mode": "trace", "size_bytes": None, "validated": True,
             "params": {k: v for k, v in r.items() if k not in ("workload", "record")}} for r in run.records]
    return rows, step_failure(rows, run.failure, [], "workloads")


def _bench_rows(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], str | None]:
    rows = [{**bench.sample_of({k: v for k, v in r.items() if k != "record"}), "validated": True} for r in run.records]
    return rows, step_failure(rows, run.failure, [], "runs")


def plan(options: dict[str, Any]) -> Plan:
    workloads, latencies, repeats = list(options["workloads"]), [float(x) for x in options["latencies"]], options["repeats"]
    if not workloads:
        raise BadValue(f"--workloads is empty; allowed: {', '.join(workload_names())}")
    if not latencies:
        raise BadValue("--latencies is empty; give one bus latency or more, such as 0,cxl,ccip")
    for x in latencies:
        if not 0 <= x <= MAX_LATENCY:
            raise BadValue(f"--latencies {x:g} s: one-way bus latencies from 0 s to {MAX_LATENCY:g} s")
    if not 1 <= repeats <= 1000:
        raise BadValue(f"--repeats {repeats}: runs per workload, mode and latency, 1 to 1000")
    bench.check("emulated", workloads, list(MODES))
    window, speeds, work = check_window(options["window"]), list(options["device_speeds"]), options["work"]
    if not speeds:
        raise BadValue("--device-speeds is empty; give one speed or more relative to the host, such as 0.5,1,2,4")
    for speed in speeds:
        device_work(work, speed)

    def trace(records: list[dict[str, Any]], deadline: float) -> None:
        for w in workloads:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the time limit ran out before the trace of {w}")
            records.append({"record": "stream", **trace_workload(w, recent=options["recent"], window=window)})

    def sweep(records: list[dict[str, Any]], deadline: float) -> None:
        bench.bench("emulated", latencies, workloads, list(MODES), repeats=repeats, checked=True,
                    on_row=lambda r: records.append({"record": "bench", **r}), deadline=deadline,
                    speeds=speeds, work=work)

    # ~10,000 requests a run; sync waits two legs a request, the others about a window's worth
    compute = 1e4 * 2e-9 * (work or (0 if speeds == [None] else 1024)) * (1 + sum(1 / (s or 1) for s in speeds))
    bus_estimate = sum(repeats * (0.05 + compute + 2.2 * 1e4 * x) for x in latencies) * len(workloads) * len(MODES) * len(speeds)
    steps = [
        StudyStep("trace", f"request streams of {', '.join(workloads)} (forward, latency 0, windows of {window})",
                  "stream", [Step("trace", "trace", [], {}, 0.2 * len(workloads) + 1, call=_call(trace))], _trace_rows,
                  {"backend": "emulated", "window": window}),
        StudyStep("bus", f"sync, parallel and forward on the emulated bus at {len(latencies)} latencies"
                  + (f" and {len(speeds)} device speeds" if speeds != [None] else ""), "runtime",
                  [Step("bus", "bench", [], {}, bus_estimate + 1, call=_call(sweep))], _bench_rows,
                  {"backend": "emulated", "latencies": latencies,
                   **({"device_speeds": speeds, "work": work} if speeds != [None] else {})}),
    ]
    return Plan(steps, [])


def _value(row: dict[str, Any], key: str) -> Any:
    return row.get(key, (row.get("params") or {}).get(key))


def table(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per workload and latency: the stream's figures beside sync's time and the speedups of parallel
    and forward over it, and forward's share of transactions saved in both accounts: the runtime's formula
    (an identity of it: about 78 % whatever the stream) and what the bus counted (it charges every read its
    request, so the host's reads show)."""
    streams = {r["test"]: {k: _value(r, k) for k in STATS} for r in rows.get("trace", [])}
    runs: dict[tuple, dict[str, float]] = {}
    saved: dict[tuple, dict[str, Any]] = {}
    for r in rows.get("bus", []):
        key = (r["test"], _value(r, "latency_seconds"), _value(r, "device_speed"))
        runs.setdefault(key, {})[r["mode"]] = r["value"]
        saved.setdefault(key, {})[f"{r['mode']}_p_over_o"] = _value(r, "p_over_o")
        saved[key][f"{r['mode']}_pays"] = _value(r, "pays")  # says it where P/O is empty (forward hid the bus)
        if r["mode"] == "forward":
            saved[key].update({f"forward_{k}": _value(r, k) for k in ("transactions_saved", "counted_saved",
                                                                      "break_even_speed")})
    out = []
    for (workload, latency, speed), modes in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][2] or 0, kv[0][1] or 0)):
        sync = modes.get("sync")
        out.append({"workload": workload, **streams.get(workload, {}), "device_speed": speed, "latency_seconds": latency,
                    "sync_seconds": sync,
                    **{f"{m}_speedup": sync / modes[m] if sync and modes.get(m) else None for m in ("parallel", "forward")},
                    **saved.get((workload, latency, speed), {})})
    out += [{"workload": w, **s} for w, s in streams.items() if not any(k[0] == w for k in runs)]
    return out


OFFLOAD = Study(
    name="offload", seed="seed 002",
    experiment="the request streams' statistics in 8-request windows (operands from the last 7 requests, level "
               "width, host reads, issue-to-use distance in requests and seconds), then sync, parallel and forward "
               "over a bus-latency sweep, at emulated device speeds (P/O)",
    description="Seed 002's opportunity analysis: why forwarding and windows pay for each workload's request "
                "stream, and the three modes measured on the emulated bus at each latency.",
    plan=plan, table=table,
    columns=[("workload", "workload"), ("recent_operand_share", "from last 7"), ("level_width_mean", "width"),
             ("host_read_share", "host reads"), ("use_distance_median", "use dist."),
             ("use_distance_mean_seconds", "use dist. (mean)"), ("device_speed", "device x"),
             ("latency_seconds", "latency"), ("sync_seconds", "sync"), ("parallel_speedup", "parallel x"),
             ("forward_speedup", "forward x"), ("forward_transactions_saved", "saved (formula)"),
             ("forward_counted_saved", "saved (bus-counted)"), ("sync_p_over_o", "P/O sync"),
             ("forward_p_over_o", "P/O forward"), ("forward_pays", "forward pays"),
             ("forward_break_even_speed", "break-even x (model)")],
    options={"workloads": ["cg", "mg", "bubble", "gcd", "kadane"],
             "latencies": [0.0, LATENCY_PRESETS["cxl"], LATENCY_PRESETS["ccip"], 2e-6], "repeats": 3,
             "recent": RECENT, "window": WINDOW, "device_speeds": [None], "work": None})

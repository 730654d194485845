"""`xferlab runtime bench`: what the runtime buys. Every workload runs in every mode on a backend (and,
emulated, at every bus latency asked for), validated against its plain host computation; the rows give
the wall time, the speedup over ``sync``, the bus transactions and the share saved, and seed 002's P/O.

Two accounts of the bus. ``bus_transactions`` is the runtime's bookkeeping (lines written + lines read +
doorbells): it follows from the mode and the window alone, 3 a request in ``sync`` against 0.625 line +
1/32 doorbell a request (plus the host's reads) in ``forward``, so its share saved (about 78 %) is an
identity of that formula, not a measurement. The ``counted_*`` figures are what the bus itself counted
(:data:`BUS_COUNTERS`: the emulated device thread, from the messages it handled; the OpenCL backend, from
the commands it enqueued). :func:`disagreements` checks the two where they must agree; they differ where
the formula leaves a message out (every read's request; on OpenCL the status word read with each read).

P/O (seed 002: (T_cpu - T_acc) / T_lat) per run: T_cpu is the plain host computation's time, T_acc the
same workload offloaded over a free bus (emulated, latency 0, forward mode, the same device speed: the
device's compute and the runtime's own cost), and T_lat = T_run - T_acc, what the bus cost this run. So
P/O > 1 exactly when the offloaded run beats the host. Emulated only: on a real device there is no free
bus to measure T_acc with.

The emulated device's compute speed (``--device-speed``, ``--work``; :func:`xferlab.runtime.device_work`):
with a list of speeds every workload runs at each, and :func:`break_even` sets the smallest speed at which
the measured P/O passes 1 beside the one seed 002's model gives (:func:`xferlab.advise.offload.break_even_speed`
with T_lat from the emulated bus as a link: a round trip per wait, the bytes at its bandwidth).
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Optional

from ..advise.offload import break_even_speed
from ..errors import BadValue
from ..links.simple import SimpleLink
from ..units import format_time
from . import BACKENDS, MODES, device_work, open_runtime, workload_names

COUNTERS = ("requests", "windows", "bus_transactions", "lines_written", "coalesced_lines", "lines_read", "result_reads",
            "waits", "forwarded", "drains", "flushes_for_dependency", "bytes_to_device", "bytes_from_device")
#: A counter's row field where its C++ name does not end in its unit (docs/cli.md, 'Renamed fields').
ROW_FIELD = {"bytes_to_device": "to_device_bytes", "bytes_from_device": "from_device_bytes"}

#: What the bus counted, as row fields (``counted_`` + the name in ``Runtime.bus_counters``).
BUS_COUNTERS = ("records", "doorbells", "lines_received", "read_requests", "lines_sent", "values_sent", "status_reads",
                "forwarded", "kept", "transactions")
#: Runtime counter -> bus counter that must be equal: what was sent arrived, operands named slots on the device.
MUST_AGREE = {"requests": "records", "doorbells": "doorbells", "lines_written": "lines_received",
              "forwarded": "forwarded"}


def disagreements(runtime: dict[str, int], counted: dict[str, int]) -> list[str]:
    """Where the runtime's bookkeeping and the bus's count differ though they must not: every record,
    line and doorbell the runtime sent arrived, every operand it forwarded the device took from a slot,
    and every result the runtime read (result_reads, bytes_from_device) the bus answered."""
    wrong = [f"{a} {runtime[a]} but the bus counted {b} {counted[b]}" for a, b in MUST_AGREE.items()
             if runtime[a] != counted[b]]
    if counted["read_requests"] - counted["status_reads"] != runtime["result_reads"]:
        wrong.append(f"result_reads {runtime['result_reads']} but the bus answered "
                     f"{counted['read_requests'] - counted['status_reads']} reads of results")
    if 8 * counted["values_sent"] != runtime["bytes_from_device"]:
        wrong.append(f"bytes_from_device {runtime['bytes_from_device']} but the bus sent {counted['values_sent']} values")
    return wrong


def check(backend: str, workloads: list[str], modes: list[str], size: int = 0) -> None:
    if backend not in BACKENDS:
        raise BadValue(f"--backend '{backend}' is not known; allowed: {', '.join(BACKENDS)}")
    known = workload_names()
    for w in workloads:
        if w not in known:
            raise BadValue(f"--workload '{w}' is not known; allowed: {', '.join(known)}")
    for m in modes:
        if m not in MODES:
            raise BadValue(f"--mode '{m}' is not known; allowed: {', '.join(MODES)}")
    from .. import _runtime

    if not 0 <= size < 2**63:
        raise BadValue(f"--size {size} is not allowed: 0 (each workload's default) or a positive size")
    for w in workloads:
        try:
            _runtime.check_workload_size(w, size)
        except (ValueError, TypeError) as error:
            raise BadValue(f"--size: {error}") from None


def one(backend: str, mode: str, workload: str, latency: float, size: int, seed: int, ring: int, window: int,
        bandwidth: float, device: int, program: Optional[Path] = None, work: Optional[int] = None,
        speed: Optional[float] = None) -> dict[str, Any]:
    rt = open_runtime(backend, mode, ring, window, latency, bandwidth, device, program=program, work=work,
                      device_speed=speed)
    try:
        result = rt.run_workload(workload, size, seed)
        counters, counted = dict(rt.counters), dict(rt.bus_counters)
        name, made = rt.backend, dict(rt.programs)
    finally:
        rt.close()
    if not result["ok"]:
        raise RuntimeError(f"workload {workload} ({mode}, {name}) gave a wrong result: {result['detail']}")
    wrong = disagreements(counters, counted)
    if wrong:
        raise RuntimeError(f"workload {workload} ({mode}, {name}): the runtime's and the bus's counts differ: "
                           + "; ".join(wrong))
    return {**result, "counters": counters, "counted": counted, "backend_name": name, "program": made}


def model_communication(row: dict[str, Any], bandwidth: float) -> Optional[float]:
    """T_lat of seed 002's model for one run on the emulated bus, as a link (latency L, the bus's bandwidth):
    every time the host waits, a round trip (the request's leg, the answer's leg with its 8 bytes), and the
    records pushed at the bandwidth. None off the emulated bus (no latency to model it with)."""
    if row.get("latency_seconds") is None:
        return None
    link = SimpleLink(bandwidth=bandwidth, latency=row["latency_seconds"])
    return row["waits"] * (link.latency + float(link.time(8, "read"))) + row["to_device_bytes"] / link.bandwidth


def break_even(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload, mode and latency swept over two device speeds or more: the smallest speed at which the
    offload pays as measured (P/O > 1, that is the offloaded run faster than the host: ``pays``;
    ``measured_break_even_speed``: the geometric mean of the last speed that did not pay and the first that
    did, None if no swept speed pays, the lowest swept if every one does) beside the model's
    (``break_even_speed``: the median over the speeds of the rows' model figure)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("device_speed") is not None and r.get("latency_seconds") is not None:
            groups.setdefault((r["workload"], r["mode"], r["latency_seconds"]), []).append(r)
    out = []
    for (workload, mode, latency), group in groups.items():
        if len({r["device_speed"] for r in group}) < 2:
            continue
        group.sort(key=lambda r: r["device_speed"])
        above = [bool(r["pays"]) for r in group]
        measured = None
        if any(above):
            k = max((i for i, a in enumerate(above) if not a), default=-1) + 1  # past the last speed that did not pay
            if k < len(group):
                measured = group[0]["device_speed"] if k == 0 else (group[k - 1]["device_speed"] * group[k]["device_speed"]) ** 0.5
        models = [r["break_even_speed"] for r in group if r.get("break_even_speed") is not None]
        out.append({"workload": workload, "mode": mode, "latency_seconds": latency,
                    "speeds": [r["device_speed"] for r in group], "p_over_o": [r["p_over_o"] for r in group],
                    "measured_break_even_speed": measured,
                    "break_even_speed": statistics.median(models) if models else None})
    return out


def bench(backend: str, latencies: list[Optional[float]], workloads: list[str], modes: list[str], size: int = 0,
          repeats: int = 3, ring: int = 256, window: int = 32, bandwidth: float = 16e9, device: int = 0, seed: int = 1,
          progress: Callable[[str], None] = lambda s: None,
          on_row: Callable[[dict[str, Any]], None] = lambda r: None, checked: bool = False,
          deadline: Optional[float] = None, program: Optional[Path] = None,
          speeds: Optional[list[Optional[float]]] = None, work: Optional[int] = None) -> list[dict[str, Any]]:
    """Rows, one per (device speed, latency, workload, mode): medians over ``repeats`` runs, counters of the last, and
    ``program``, how the last run's device program was made (the probe's program record: made,
    source_builds, binary_loads, il_loads; ``program``: the OpenCL backend's --program FILE|DIR);
    ``on_row`` gets each row as soon as it is measured; ``checked``: :func:`prepare` was called already;
    past ``deadline`` (time.monotonic()) no run starts: TimeoutError, the rows before kept by on_row."""
    def run(mode: str, workload: str, latency: float, speed: Optional[float]) -> dict[str, Any]:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"the time limit ran out before {workload} {mode} at {format_time(latency)} of bus latency")
        return one(backend, mode, workload, latency, size, seed, ring, window, bandwidth, device, program, work, speed)

    speeds = speeds or [None]
    if not checked:
        prepare(backend, latencies, workloads, modes, size, repeats, ring, window, bandwidth, device, program,
                speeds, work)
    rows = []
    for speed in speeds:
        rows += _at_speed(run, backend, latencies, workloads, modes, repeats, speed, work, bandwidth, progress, on_row)
    return rows


def _at_speed(run: Callable[..., dict[str, Any]], backend: str, latencies: list[Optional[float]], workloads: list[str],
              modes: list[str], repeats: int, speed: Optional[float], work: Optional[int], bandwidth: float,
              progress: Callable[[str], None], on_row: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """:func:`bench`'s rows at one device speed."""
    host_rounds, device_rounds = device_work(work, speed) if backend == "emulated" else (0, 0)
    at = f" at device speed {speed:g}" if speed is not None else ""
    rows = []
    free: dict[str, float] = {}
    for workload in workloads:
        if backend == "emulated":
            progress(f"{workload}: free bus (latency 0) for T_acc{at}")
            free[workload] = statistics.median(run("forward", workload, 0.0, speed)["seconds"] for _ in range(repeats))
        for latency in latencies:
            base: Optional[dict[str, Any]] = None
            for mode in sorted(modes, key=MODES.index):
                progress(f"{workload} {mode}" + (f" at {latency * 1e9:g} ns" if latency is not None else "") + at)
                runs = [run(mode, workload, latency or 0.0, speed) for _ in range(repeats)]
                last = runs[-1]
                seconds = statistics.median(r["seconds"] for r in runs)
                host = statistics.median(r["host_seconds"] for r in runs)
                row = {"backend": last["backend_name"], "latency_seconds": latency, "workload": workload,
                       "opset": last["opset"], "problem_size": last["size"], "mode": mode, "seconds": seconds,
                       "host_seconds": host, "ok": all(r["ok"] for r in runs), "repeats": repeats,
                       **{ROW_FIELD.get(k, k): last["counters"][k] for k in COUNTERS},
                       **{f"counted_{k}": last["counted"][k] for k in BUS_COUNTERS}, "program": last["program"],
                       "device_speed": speed, "work_rounds": host_rounds, "device_rounds": device_rounds,
                       "device_busy_seconds": statistics.median(r["counted"]["busy_seconds"] for r in runs)
                       if backend == "emulated" else None}
                if mode == "sync":
                    base = row
                row["speedup_over_sync"] = base["seconds"] / seconds if base else None
                row["transactions_saved"] = (1 - row["bus_transactions"] / base["bus_transactions"]) if base else None
                row["counted_saved"] = (1 - row["counted_transactions"] / base["counted_transactions"]) if base else None
                t_acc = free.get(workload)
                bus = seconds - t_acc if t_acc is not None else None
                row["device_seconds"] = t_acc
                row["p_over_o"] = (host - t_acc) / bus if bus and bus > 0 else None
                # P/O > 1 is T_run < T_cpu; where forward hides the bus in the noise (T_run <= T_acc) P/O is empty
                # and this says it all the same
                row["pays"] = seconds < host if t_acc is not None else None
                busy = row["device_busy_seconds"]
                row["measured_device_speed"] = host / busy if speed is not None and busy else None
                o = model_communication(row, bandwidth)
                row["model_communication_seconds"] = o
                row["break_even_speed"] = break_even_speed(host, o) if o is not None else None
                rows.append(row)
                on_row(row)
    return rows


def prepare(backend: str, latencies: list[Optional[float]], workloads: list[str], modes: list[str], size: int,
            repeats: int, ring: int, window: int, bandwidth: float, device: int, program: Optional[Path] = None,
            speeds: Optional[list[Optional[float]]] = None, work: Optional[int] = None) -> None:
    """Check every option, and open the device once (its program made as the runs will make it), before
    anything runs, prints or is recorded."""
    check(backend, workloads, modes, size)
    if repeats < 1:
        raise BadValue(f"--repeats {repeats} is not allowed: at least 1")
    for speed in speeds or [None]:
        device_work(work, speed)
    open_runtime(backend, modes[0], ring, window, max(x or 0.0 for x in latencies), bandwidth, device,
                 program=program, work=work, device_speed=(speeds or [None])[0]).close()


def program_note(rows: list[dict[str, Any]]) -> str:
    """One line: how the device's program was made in each run (the probe's program record's words)."""
    made = {(r["program"]["made"], r["program"]["source_builds"], r["program"]["binary_loads"], r["program"]["il_loads"])
            for r in rows if r.get("program")}
    return "; ".join(f"program: made {m} in each run ({s} source builds, {b} binary loads, {i} IL loads)"
                     for m, s, b, i in sorted(made) if m != "none")


def sample_of(row: dict[str, Any]) -> dict[str, Any]:
    """A bench row as the store keeps it: suite 'runtime', its wall time, the rest in params."""
    return {"suite": "runtime", "test": row["workload"], "metric": "seconds", "value": row["seconds"], "mode": row["mode"],
            "size_bytes": None, "seconds": row["seconds"],
            "params": {k: v for k, v in row.items() if k not in ("workload", "mode", "seconds")}}


@contextmanager
def recording(params: dict[str, Any], store_path: Optional[Path], argv: Optional[list[str]] = None):
    """A `runtime bench` run in the store, open while the bench runs: yields (run id, store path, add),
    ``add(row)`` writing one row as a sample (suite 'runtime', its wall time) at once, so that a run
    stopped midway (a wrong result, a device error, Ctrl-C) keeps every finished row. ``argv``: the command
    that reproduces the rows (default: this process's)."""
    from ..measure.run import versions
    from ..store import open_store
    from ..system.inventory import inventory
    from ..system.state import with_state

    with open_store(store_path) as store:
        run_id = store.start_run("runtime bench", sys.argv[1:] if argv is None else argv,
                                 with_state(inventory(), "runtime bench", params), versions(), params)
        added = []

        def add(r: dict[str, Any]) -> None:
            store.add_samples(run_id, [sample_of(r)])
            added.append(r)

        try:
            yield run_id, store.path, add
        except BaseException as error:
            store.stop_run(run_id, error, {"rows": len(added)})  # interrupted (a signal behind it) or failed
            raise
        store.finish_run(run_id, "ok", {"rows": len(added)})

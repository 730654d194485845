"""`xferlab runtime bench`: the offload runtime's modes compared on real and emulated buses."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import BadValue
from ..units import COUNT_HELP, LIST_HELP, format_time, parse_count, parse_list, parse_rate, parse_time
from .common import CSV, DEVICE, JSON, PLATFORM, PLOT, PROGRAM, RUNTIME_BACKEND, STORE, only_with, renamed
from .output import Column, emit, or_dash, output_format, stderr, stdout

app = typer.Typer(no_args_is_help=True, help="The latency-tolerant offload runtime (Zipper-style, seed 002).")


def parse_latencies(text: str, option: str = "--latency") -> list[float]:
    """Latencies as a LIST of times, ranges or the presets' names (cxl, ccip, pcie3)."""
    from ..runtime import LATENCY_PRESETS

    out = []
    for item in text.split(","):
        item = item.strip()
        if item in LATENCY_PRESETS:
            out.append(LATENCY_PRESETS[item])
        else:
            out += parse_list(item, lambda t, w: parse_time(t, w, allow_zero=True), option)
    return out


def parse_speeds(text: str, option: str = "--device-speed") -> list[float]:
    """Device speeds relative to the host: a comma-separated LIST of numbers above 0 (4: 4x the host)."""
    from ..runtime import device_work

    out = []
    for item in text.split(","):
        try:
            speed = float(item.strip())
        except ValueError:
            raise BadValue(f"{option} '{item.strip()}' is not a number; give speeds relative to the host, such as "
                           "0.5,1,2,4") from None
        try:
            device_work(None, speed)
        except BadValue as error:
            raise BadValue(str(error).replace("--device-speed", option, 1)) from None
        out.append(speed)
    return out


@app.command("bench")
def bench_cmd(ctx: typer.Context, backend: str = RUNTIME_BACKEND,
              latency: Optional[str] = typer.Option(None, "--latency", metavar="LIST",
                                          help=f"Emulated one-way bus latency: {LIST_HELP.replace('64B', '40ns').replace('4KiB', '1us').replace('1GiB', '10us')}, "
                                               "or cxl (40 ns), ccip (500 ns), pcie3 (738.77 ns); default 1us (emulated only)."),
              workload: Optional[str] = typer.Option(None, "--workload", metavar="LIST",
                                                     help="Workloads: cg, mg (posit32, NPB CG and MG), bubble, gcd, kadane (enc64, VIP-Bench); default: all."),
              opset: Optional[str] = typer.Option(None, "--opset", metavar="LIST",
                                                  help="Only the workloads of these operation sets: posit32, enc64."),
              mode: str = typer.Option("sync,parallel,forward", "--mode", metavar="LIST", help="Modes: sync, parallel, forward."),
              problem_size: Optional[str] = typer.Option(None, "--problem-size", metavar="COUNT",
                                                         help=f"Workload size: CG rows, MG grid side, array length ({COUNT_HELP}; "
                                                              "default: each workload's own)."),
              _old_size: Optional[str] = renamed("--size", "--problem-size COUNT", "rows, grid side or array length, not bytes"),
              repeats: int = typer.Option(3, "--repeats", help="Runs per point (the median is reported)."),
              ring: int = typer.Option(256, "--ring", help="Result slots on the device."),
              window: int = typer.Option(32, "--window", help="Requests per launch, at most."),
              bandwidth: Optional[str] = typer.Option(None, "--bandwidth", metavar="RATE",
                                                      help="Emulated bus bandwidth (default 16GB/s; emulated only)."),
              device_speed: Optional[str] = typer.Option(None, "--device-speed", metavar="LIST",
                                                         help="The emulated device's compute speed relative to the host, "
                                                              "one or more (4: it computes a request 4x faster): the host "
                                                              "spends --work rounds on every operation, the device "
                                                              "work / speed rounds on every request, besides its "
                                                              "interpreter. Default: neither, the emulator's own pace "
                                                              "(this CPU running the interpreter). Emulated only."),
              work: Optional[int] = typer.Option(None, "--work", metavar="N",
                                                 help="Rounds of work (SPECK-64's round function) a request on the "
                                                      "host (default 1024 with --device-speed; alone: speed 1)."),
              device: int = DEVICE, platform: Optional[str] = PLATFORM, program: Optional[Path] = PROGRAM,
              plot: Optional[Path] = PLOT, store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Speedup of forward and parallel over sync, bus transactions saved, P/O; validated workloads.

    --device picks the OpenCL device of --backend opencl; --program loads its interpreter kernel from a binary
    (the runtime's program in a DIR from `xferlab kernels build`); --plot draws the speedup over sync against the
    latency."""
    from ..runtime import workload_names
    from ..runtime.bench import bench, break_even, prepare, program_note, recording

    fmt = output_format(json_, csv_)
    only_with(ctx, [("device", backend == "opencl", "with --backend opencl (the emulated bus has no device)"),
                    ("platform", backend == "opencl", "with --backend opencl (the emulated bus has no device)"),
                    ("program", backend == "opencl", "with --backend opencl (the emulated bus builds no program)")])
    if backend != "emulated":
        for opt, given in (("--latency", latency), ("--bandwidth", bandwidth), ("--device-speed", device_speed),
                           ("--work", work)):
            if given is not None:
                raise BadValue(f"{opt} sets the emulated bus; --backend {backend} runs over the real device's bus")
    lats: list[Optional[float]] = parse_latencies(latency or "1us") if backend == "emulated" else [None]
    size = parse_count(problem_size, "--problem-size") if problem_size is not None else 0
    names = [w.strip() for w in workload.split(",")] if workload else workload_names()
    if opset:
        from ..runtime import OPSETS, workload_opset

        sets = [o.strip() for o in opset.split(",")]
        for o in sets:
            if o not in OPSETS:
                raise BadValue(f"--opset '{o}' is not known; allowed: {', '.join(OPSETS)}")
        unknown = [n for n in names if n not in workload_names()]
        if unknown:
            raise BadValue(f"--workload '{unknown[0]}' is not known; allowed: {', '.join(workload_names())}")
        names = [n for n in names if workload_opset(n) in sets]
        if not names:
            raise BadValue(f"no workload of --opset {opset} among the workloads asked for")
    modes = [m.strip() for m in mode.split(",")]
    rate = parse_rate(bandwidth or "16GB/s", "--bandwidth")
    speeds: list[Optional[float]] = parse_speeds(device_speed) if device_speed is not None else [None]
    if plot and len(lats) < 2 and len(speeds) < 2:  # (the path itself is checked as the option is read)
        raise BadValue("--plot draws speedup against latency (or P/O against device speed): give the emulated backend "
                       "two latencies or more (e.g. --latency 40ns..10us) or two device speeds or more")
    where: dict = {}
    if backend == "opencl":  # the probe's device number of --device N of --platform, and the platform recorded
        from ..measure.device import find_device, platform_device

        device = platform_device(backend, platform, device)
        info = find_device(backend, device)
        where = {"device": device, "platform": info.get("platform")}
        if program is not None:
            from ..measure.programs import check_program

            where["program"] = str(check_program(program, backend, info))
    prepare(backend, lats, names, modes, size, repeats, ring, window, rate, device, program, speeds, work)
    speed_params = {"device_speeds": speeds, "work": work} if device_speed is not None or work is not None else {}
    with recording({"backend": backend, **where, "latencies_seconds": lats, "workloads": names, "modes": modes, "ring": ring,
                    "window": window, "repeats": repeats, **speed_params}, store) as (run_id, path, add):
        rows = bench(backend, lats, names, modes, size, repeats, ring, window, rate, device,
                     progress=lambda s: stderr.print(s, highlight=False), on_row=add, checked=True, program=program,
                     speeds=speeds, work=work)
    from ..store import open_store

    with open_store(path, read_only=True) as db:  # the machine's state as the run recorded it, with its warnings
        state = (db.run(run_id).get("inventory") or {}).get("machine_state") or {}
    notes = [f"every run validated against the plain host computation; run {run_id} recorded in {path}",
             "transactions: the runtime's accounting, 64-byte lines written and read plus doorbells; its saving "
             "against sync is an identity of that formula (3 a request in sync, 0.625 line + 1/32 doorbell a request "
             "plus the reads in forward: at most 78.1 %)",
             "counted: what the bus itself counted (lines both ways, doorbells, read requests; OpenCL: status-word "
             "reads too); saved: against sync at the same latency",
             "P/O = (T_host - T_acc) / (T_run - T_acc), T_acc: the same workload over a free bus (emulated only); "
             "P/O > 1 exactly where the offloaded run beats the host",
             program_note(rows)]
    if rows and rows[0].get("device_speed") is not None:
        notes.append(f"device: the host spends {rows[0]['work_rounds']} rounds of work on every operation, the device "
                     "work / speed on every request besides its interpreter; break-even x (model): seed 002's P/O = 1 "
                     "for a device taking T_host / speed, T_lat a round trip per wait on the bus as a link")
    even = break_even(rows)
    notes += [f"break-even device speed, {b['workload']} {b['mode']} at {format_time(b['latency_seconds'])}: measured "
              + (f"{b['measured_break_even_speed']:.3g}x" if b["measured_break_even_speed"] is not None else "none swept")
              + ", model " + (f"{b['break_even_speed']:.3g}x" if b["break_even_speed"] is not None else "none")
              for b in even]
    if plot:
        from ..plots.measured import plot_runtime_speedup, plot_p_over_o

        notes.append(f"plot: {plot_p_over_o(rows, even, plot) if len(speeds) > 1 else plot_runtime_speedup(rows, plot)}")
    emit("runtime bench", [{k: v for k, v in r.items() if k != "program"} for r in rows], [  # (kept in the store)
        Column("workload", "workload", justify="left"), Column("mode", "mode", justify="left"),
        Column("latency_seconds", "latency", format_time, no_wrap=True),
        Column("seconds", "time", format_time, no_wrap=True),
        Column("speedup_over_sync", "vs sync", lambda v: f"{v:.2f}x"),
        Column("requests", "requests"), Column("bus_transactions", "transactions"),
        Column("transactions_saved", "saved", lambda v: f"{v:.0%}"),
        Column("counted_transactions", "counted", or_dash(str)),
        Column("counted_saved", "counted saved", or_dash(lambda v: f"{v:.1%}")),
        Column("result_reads", "reads"), Column("forwarded", "forwarded"),
        Column("p_over_o", "P/O", lambda v: "–" if v is None else f"{v:.3g}"),
        *([Column("device_speed", "device x", or_dash(lambda v: f"{v:g}")),
           Column("break_even_speed", "break-even x", or_dash(lambda v: f"{v:.3g}"))]
          if speeds != [None] else []),
    ], fmt, title=f"Offload runtime on {rows[0]['backend'] if rows else backend}", notes=notes,
        extra={"run_id": run_id, "store": str(path), "machine_state": state,
               **({"break_even": [{k: v for k, v in b.items() if k not in ("speeds", "p_over_o")} for b in even]}
                  if even else {})})
    from ..system.state import warning_lines

    for line in warning_lines(state):  # under the table, as measure commands say them (stderr with --json/--csv)
        (stdout if fmt == "table" else stderr).print(line, highlight=False, markup=False, soft_wrap=True)

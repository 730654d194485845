"""`xferlab study run NAME` and `xferlab study list`: the seeds' experiments as one command each, on
this machine; the work is in src/xferlab/studies/."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import BadValue
from ..report.collect import fmt_value
from .common import (CSV, JSON, STORE, STUDY_BACKEND, STUDY_BUDGET, STUDY_CPUS, STUDY_DEVICE, STUDY_MPI, STUDY_PLATFORM,
                     STUDY_PLOTS, STUDY_PROGRAM, TIMEOUT, budget_seconds, timeout_seconds, verb)
from .output import Column, emit, output_format, stderr

app = verb("study", "The seeds' experiments on this machine, one command each: budgeted, resumable, recorded.")


@app.command("list")
def list_(json_: bool = JSON, csv_: bool = CSV) -> None:
    """The studies: name, seed and the experiment each reproduces."""
    from ..studies import STUDIES

    emit("study list", [{"study": s.name, "seed_document": s.seed, "experiment": s.experiment} for s in STUDIES.values()],
         [Column("study", "study", justify="left"), Column("seed_document", "seed", justify="left"),
          Column("experiment", "experiment", justify="left")], output_format(json_, csv_),
         title="Studies (`xferlab study run NAME`)")


@app.command("run")
def run(name: str = typer.Argument(..., help="A study (`xferlab study list` lists them).", metavar="NAME"),
        budget: str = STUDY_BUDGET,
        pmem: Optional[list[str]] = typer.Option(None, "--pmem", help="tiers: App-Direct targets, each a directory, a "
                                                 "new file or a device-DAX device: PATH (the local one) or "
                                                 "local=PATH,remote=PATH,cxl=PATH (or --pmem repeated); STREAM-PMem "
                                                 "runs on them (PMDK's libpmemobj).", metavar="PATH|NAME=PATH,…"),
        pmem_node: Optional[int] = typer.Option(None, "--pmem-node", help="tiers: the NUMA node the --pmem belongs "
                                                "to (default: the local one); its CPUs are local App-Direct, another "
                                                "node's remote.", metavar="N"),
        iterations: Optional[int] = typer.Option(None, "--iterations", help="tiers: timed STREAM iterations per kernel.",
                                                 metavar="N"),
        threads: Optional[str] = typer.Option(None, "--threads", help="tiers: the thread counts each class runs, at most "
                                              "the CPUs of its placement (default 1, 2, 4, … and all of them).",
                                              metavar="LIST"),
        plots: Optional[Path] = STUDY_PLOTS,
        backend: Optional[str] = STUDY_BACKEND, device_: Optional[int] = STUDY_DEVICE, cpus: Optional[str] = STUDY_CPUS,
        platform: Optional[str] = STUDY_PLATFORM,
        count: Optional[int] = typer.Option(None, "--count", help="launch: launches per CPU and argument count.",
                                            metavar="N"),
        total: Optional[str] = typer.Option(None, "--total", help="granularity: bytes moved in all (default 256 MiB; "
                                            "the seed moved 8 GB); deceval: bytes the data inflate to (default 64 MiB; "
                                            "the seed's 1.6GB on request).", metavar="SIZE"),
        depth: Optional[int] = typer.Option(None, "--depth", help="deceval: buffers between the pipelined stages "
                                            "(default 2).", metavar="N"),
        repeats: Optional[int] = typer.Option(None, "--repeats", help="granularity, deceval, offload: timed repeats "
                                              "(after a warm-up; deceval: rounds of a stages run and a flows run; "
                                              "offload: runs per mode and latency).", metavar="N"),
        workloads: Optional[str] = typer.Option(None, "--workloads", help="offload: the runtime's workloads (default "
                                                "all: cg, mg, bubble, gcd, kadane).", metavar="LIST"),
        latencies: Optional[str] = typer.Option(None, "--latencies", help="offload: emulated one-way bus latencies, "
                                                "times or presets (cxl, ccip, pcie3; default 0, cxl, ccip, 2us).",
                                                metavar="LIST"),
        window: Optional[int] = typer.Option(None, "--window", help="offload: requests per window of the opportunity "
                                             "statistics (default 8, the seed's).", metavar="N"),
        device_speeds: Optional[str] = typer.Option(None, "--device-speeds", help="offload: the emulated device's "
                                                    "compute speeds relative to the host (e.g. 0.5,1,2,4); each runs "
                                                    "the bus step with P/O per point (default: the emulator's own "
                                                    "pace, no work).", metavar="LIST"),
        work: Optional[int] = typer.Option(None, "--work", help="offload: rounds of work a request on the host "
                                           "(the device does work / speed; default 1024 with --device-speeds).",
                                           metavar="N"),
        chunks: Optional[str] = typer.Option(None, "--chunks", help="granularity, deceval: chunk sizes (granularity: "
                                             "default the seed's 80 kB and 8 MB; deceval: the sizes the stages are "
                                             "measured and fitted at, default 256 KiB, 4 MiB).", metavar="LIST"),
        held_out: Optional[str] = typer.Option(None, "--held-out", help="deceval: chunk sizes the pipelined flow runs "
                                               "at and no stage is measured at (default 128 KiB, 1 MiB).",
                                               metavar="LIST"),
        evaluations: Optional[str] = typer.Option(None, "--evaluations", help="deceval: the integrand's evaluations "
                                                  "per element on the device, a configuration each (default 1,16: "
                                                  "decompress-bound and device-bound on a one-thread PoCL CPU device).",
                                                  metavar="LIST"),
        program: Optional[Path] = STUDY_PROGRAM, mpi: Optional[str] = STUDY_MPI,
        timeout: str = TIMEOUT,
        store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Run one of the seeds' experiments on this machine: its table, what was skipped and why.

    --backend applies to launch, granularity and characterize, --device to those and deceval, --cpus to launch and
    granularity, --mpi to characterize; the other options name theirs.
    An option given to a study that does not take it is refused, naming the studies that do."""
    from ..studies import STUDIES, find
    from ..studies.base import option

    fmt = output_format(json_, csv_)
    chosen = find(name)
    from ..units import parse_count, parse_list, parse_size
    from ..system.locality import cpu_text, parse_cpus
    from .runtime import parse_latencies, parse_speeds

    given = {"pmem": ",".join(pmem) if pmem else None, "pmem_node": pmem_node, "iterations": iterations,
             "threads": parse_list(threads, parse_count, "--threads") if threads is not None else None, "backend": backend, "device": device_,
             "count": count, "cpus": cpu_text(parse_cpus(cpus)) if cpus is not None else None, "depth": depth, "repeats": repeats, "total": parse_size(total, "--total") if total is not None else None,
             "chunks": [int(c) for c in parse_list(chunks, parse_size, "--chunks")] if chunks is not None else None,
             "held_out": [int(c) for c in parse_list(held_out, parse_size, "--held-out")] if held_out is not None else None,
             "evaluations": parse_list(evaluations, parse_count, "--evaluations") if evaluations is not None else None,
             "workloads": [w.strip() for w in workloads.split(",") if w.strip()] if workloads is not None else None,
             "latencies": parse_latencies(latencies, "--latencies") if latencies is not None else None,
             "window": window, "work": work,
             "device_speeds": parse_speeds(device_speeds, "--device-speeds") if device_speeds is not None else None,
             "program": str(program) if program is not None else None, "mpi": mpi}
    for key, value in given.items():
        if value is not None and key not in chosen.options:
            takers = sorted(s.name for s in STUDIES.values() if key in s.options)
            raise BadValue(f"{option(key)} does not apply to the {name} study; it applies to: {', '.join(takers)}")
    options: dict[str, Any] = {**chosen.options, **{k: v for k, v in given.items() if v is not None}}
    if mpi is not None:  # refused before anything runs (the study would only skip its network step)
        from ..measure.mpi_site import choose

        choose(mpi)
    if platform is not None:  # the probe's device number of --device N of that platform (measure.device.platform_device)
        if "device" not in chosen.options:
            takers = sorted(s.name for s in STUDIES.values() if "device" in s.options)
            raise BadValue(f"--platform does not apply to the {name} study; it applies to: {', '.join(takers)}")
        from ..measure.device import find_device, platform_device

        chosen_backend = options.get("backend", "opencl")
        options["device"] = platform_device(chosen_backend, platform, device_ or 0)
        # recorded in each step's params (study.options) and part of the study's group: a device number alone
        # could name another platform's device where the loader lists the platforms in another order
        options["platform"] = find_device(chosen_backend, options["device"]).get("platform")
    budget_s, timeout_s = budget_seconds(budget), timeout_seconds(timeout)
    if plots is not None:
        if chosen.plot is None:
            takers = sorted(s.name for s in STUDIES.values() if s.plot)
            raise BadValue(f"--plots does not apply to the {name} study; it applies to: {', '.join(takers)}")
        from ..measure.checks import plot_dir

        plot_dir(plots)
    from ..store import check_store
    from ..studies.run import run_study

    check_store(store)  # before the plan's budget check: a store that cannot be written is the first thing said
    result = run_study(chosen, options, store, budget_s, timeout_s)
    notes = [f"{chosen.seed}: {chosen.experiment}; group {result.group}"]
    notes += [f"skipped: {s['class']}: {s['reason']}" for s in result.skipped]
    notes += result.notes
    for s in result.steps:
        what = {"reused": f"reused run {s['run_id']} (already in the store)", "measured": f"measured, run {s['run_id']}",
                "failed": f"failed, run {s['run_id']}: {s['failure']}", "skipped": f"not run: {s['failure']}",
                "partial": f"partly measured, run {s['run_id']} ({s['failure']}); run the study again to finish it"
                }[s["status"]]
        notes.append(f"step {s['key']} ({s['label']}): {what}")
    notes += chosen.notes(result.table) if chosen.notes else []
    if plots is not None and result.table:
        notes += [f"plot: {p}" for p in chosen.plot(result.table, plots)]
    columns = [Column(key, header, lambda v, key=key: fmt_value(key, v),
                      justify="left" if key in ("class", "kernel", "where", "configuration", "part", "what", "direction", "host_kind", "workload", "flow",
                                                         "governor") else "right")
               for key, header in chosen.columns]
    emit(f"study run {name}", result.table, columns, fmt, title=f"Study {name} ({chosen.seed}): {chosen.description}",
         notes=notes, extra={"group": result.group, "skipped": result.skipped, "steps": result.steps, "options": options})
    if result.failed:
        stderr.print(f"error: {len(result.failed)} of {len(result.steps)} steps failed (first: {result.failed[0]['key']}: "
                     f"{result.failed[0]['failure']}); what was measured is kept", highlight=False, markup=False)
        raise typer.Exit(3 if len(result.failed) < len(result.steps) else 1)

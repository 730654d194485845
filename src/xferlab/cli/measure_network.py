"""`xferlab measure network`: MPI point-to-point and collectives with the OSU Micro-Benchmarks'
definitions, between ranks xferlab starts on this machine or ranks the site's launcher started
(srun, mpiexec). Registered on the `measure` verb by cli/measure.py; the work is in
measure/network.py and the probe's network.cpp."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import BadValue
from ..measure.conventions import footer, metadata
from ..measure import checks
from ..measure.network import (BANDWIDTH, BANDWIDTH_COUNTS, COLLECTIVE_COUNTS, COLLECTIVES, COLLECTIVE_SIZES, LARGE_FROM,
                               LATENCY_COUNTS, POINT_TO_POINT, SIZES, TESTS, WINDOW, NetworkPlan, launched_rank, rows_of, run_summary, step, write_inventory)
from ..measure.network_results import overview, summary
from ..measure.mpi_site import ABIS
from ..measure.device import platform_device
from ..measure.probe import run_probe
from ..measure.results import failures as failed_steps, notes as failure_notes, unvalidated_total
from ..measure.run import measure
from ..units import format_rate, format_size, format_time, parse_size
from .common import BACKEND, BUDGET, CSV, DEVICE, JSON, MPI, PLATFORM, PLOTS, STORE, TIMEOUT, budget_seconds, only_with, timeout_seconds
from .measure_outcome import conclude
from .output import Column, emit, or_dash, output_format, stderr, stdout
from .precision_options import interval_column, with_interval


def _counts(timed: Optional[int], warm: Optional[int], default: tuple, share: int, where: str) -> tuple:
    """(small, large) (timed, warm-up) counts: OSU's, or the given small-message count with OSU's
    share of it above the large-message size (1/10 for latency and collectives, 1/5 for bandwidth)."""
    (t, w), (tl, wl) = default
    if timed is not None:
        if timed < 1:
            raise BadValue(f"{where} {timed}: at least 1")
        t, tl = timed, max(1, timed // share)
    if warm is not None:
        if warm < 0:
            raise BadValue(f"{where.replace('iterations', 'warmup')} {warm}: at least 0")
        w, wl = warm, warm // share
    return (t, w), (tl, wl)


def network(ctx: typer.Context,
            ranks: int = typer.Option(2, "--ranks", help="Ranks xferlab starts on this machine (ignored under a launcher, "
                                      "which decides).", metavar="N"),
            tests: str = typer.Option(",".join(TESTS), "--tests", metavar="LIST",
                                      help="Point-to-point: latency, bw, bibw, mbw_mr, multi_lat; collectives: allreduce, "
                                           "alltoall, bcast, allgather, reduce, barrier."),
            sizes: str = typer.Option(SIZES, "--sizes", help="Message sizes of the point-to-point tests (OSU's: 0 and 1 B "
                                      "to 4 MiB; bandwidth tests start at 1 B).", metavar="LIST"),
            collective_sizes: str = typer.Option(COLLECTIVE_SIZES, "--collective-sizes", metavar="LIST",
                                                 help="Message sizes of the collectives (per rank; reductions from 4 B)."),
            iterations: Optional[int] = typer.Option(None, "--iterations", metavar="N",
                                                     help=f"Timed iterations of latency and multi_lat up to --large-from "
                                                          f"(OSU: {LATENCY_COUNTS[0][0]:,}; {LATENCY_COUNTS[1][0]:,} above; "
                                                          "a tenth of N above when given)."),
            warmup: Optional[int] = typer.Option(None, "--warmup", metavar="N",
                                                 help=f"Warm-up iterations of the latency tests (OSU: {LATENCY_COUNTS[0][1]}; "
                                                      f"{LATENCY_COUNTS[1][1]} above --large-from)."),
            bw_iterations: Optional[int] = typer.Option(None, "--bw-iterations", metavar="N",
                                                        help=f"Timed windows of bw, bibw, mbw_mr (OSU: {BANDWIDTH_COUNTS[0][0]}; "
                                                             f"{BANDWIDTH_COUNTS[1][0]} above --large-from; a fifth of N when given)."),
            bw_warmup: Optional[int] = typer.Option(None, "--bw-warmup", metavar="N",
                                                    help=f"Warm-up windows (OSU: {BANDWIDTH_COUNTS[0][1]}; {BANDWIDTH_COUNTS[1][1]} above)."),
            collective_iterations: Optional[int] = typer.Option(None, "--collective-iterations", metavar="N",
                                                                help=f"Timed calls of each collective (OSU: {COLLECTIVE_COUNTS[0][0]:,}; "
                                                                     f"{COLLECTIVE_COUNTS[1][0]} above --large-from)."),
            collective_warmup: Optional[int] = typer.Option(None, "--collective-warmup", metavar="N",
                                                            help=f"Warm-up calls (OSU: {COLLECTIVE_COUNTS[0][1]}; "
                                                                 f"{COLLECTIVE_COUNTS[1][1]} above)."),
            large_from: str = typer.Option(str(LARGE_FROM), "--large-from", metavar="SIZE",
                                           help="Messages above this take the large-message counts (OSU: 8 KiB)."),
            window: int = typer.Option(WINDOW, "--window", help="Messages in flight per bandwidth iteration (OSU: 64).",
                                       metavar="N"),
            buffers: str = typer.Option("host", "--buffers", metavar="LIST",
                                        help="host (page-aligned host memory), device (the backend's device memory: "
                                             "given to a GPU-aware MPI, else staged through pinned host memory)."),
            backend: str = BACKEND, device_: int = DEVICE, platform: Optional[str] = PLATFORM,
            path: str = typer.Option("auto", "--path", metavar="auto|staged|direct",
                                     help="Device buffers: auto runs staged, and direct too where the MPI moves device "
                                          "memory itself."),
            node: Optional[int] = typer.Option(None, "--node", help="Memory node of the host buffers (a memory-only node "
                                               "too).", metavar="N"),
            bind: Optional[str] = typer.Option(None, "--bind", metavar="core|none",
                                               help="core: each rank pinned to its own CPU (default when xferlab starts "
                                                    "the ranks); none: as the launcher placed it (default under one)."),
            mpi: str = MPI, budget: Optional[str] = BUDGET, timeout: str = TIMEOUT,
            plot: Optional[Path] = PLOTS, store: Optional[Path] = STORE,
            json_: bool = JSON, csv_: bool = CSV) -> None:
    """MPI latency, bandwidth, message rate and collectives (OSU's definitions), host or device buffers.

    On one machine xferlab starts --ranks ranks with the MPI it found; under srun or mpiexec every
    rank runs this command and rank 0 writes the store. Exit code 0 when the run succeeded, 1 when
    it failed (samples before a failure are kept)."""
    fmt = output_format(json_, csv_)
    inside = launched_rank()
    device_buffers = "device" in [b.strip() for b in buffers.split(",")]
    plan = NetworkPlan(tests=NetworkPlan.parse_tests(tests), sizes=NetworkPlan.parse_sizes(sizes, "--sizes"),
                       collective_sizes=NetworkPlan.parse_sizes(collective_sizes, "--collective-sizes"), ranks=ranks,
                       latency_counts=_counts(iterations, warmup, LATENCY_COUNTS, 10, "--iterations"),
                       bandwidth_counts=_counts(bw_iterations, bw_warmup, BANDWIDTH_COUNTS, 5, "--bw-iterations"),
                       collective_counts=_counts(collective_iterations, collective_warmup, COLLECTIVE_COUNTS, 10,
                                                 "--collective-iterations"),
                       large_from=parse_size(large_from, "--large-from", allow_zero=True), window=window,
                       buffers=[b.strip() for b in buffers.split(",") if b.strip()], backend=backend,
                       device=platform_device(backend, platform, device_) if device_buffers else device_, path=path, node=node, bind=bind, inside=inside, mpi=mpi)
    only_with(ctx, network_ties(plan.tests, plan.buffers))
    timeout_s, plan.budget = timeout_seconds(timeout), budget_seconds(budget)
    plan.check(len(os.sched_getaffinity(0)))
    checks.plot_dir(plot)
    if inside and inside[0] != 0:
        raise typer.Exit(_other_rank(plan, timeout_s))
    inventory_file = write_inventory() if inside else None
    try:
        outcome = measure("measure network", [step(plan, inventory_file)], rows_of, "network", params=plan.params(),
                          store_path=store, timeout=timeout_s, budget=None,
                          extra_inventory={"accelerator": plan.device_info} if plan.device_info else None,
                          extra_summary=run_summary)
    finally:
        if inventory_file:
            os.unlink(inventory_file)
    report(outcome, plan, fmt, plot)
    conclude(outcome, fmt)


def network_ties(tests: list[str], buffers: list[str]) -> list[tuple[str, bool, str]]:
    """The options that apply only to some of --tests or with device --buffers (cli.common.only_with)."""
    p2p, latency = any(t in POINT_TO_POINT for t in tests), any(t in ("latency", "multi_lat") for t in tests)
    bandwidth, collective = any(t in BANDWIDTH for t in tests), any(t in COLLECTIVES for t in tests)
    sized = any(t in COLLECTIVES and t != "barrier" for t in tests)
    bw_words = f"with {', '.join(BANDWIDTH[:-1])} or {BANDWIDTH[-1]} in --tests"
    return [("sizes", p2p, f"with a point-to-point test in --tests ({', '.join(POINT_TO_POINT)})"),
            ("iterations", latency, "with latency or multi_lat in --tests"),
            ("warmup", latency, "with latency or multi_lat in --tests"),
            ("bw_iterations", bandwidth, bw_words), ("bw_warmup", bandwidth, bw_words), ("window", bandwidth, bw_words),
            ("collective_sizes", sized, "with a collective that moves data in --tests (barrier moves none)"),
            ("collective_iterations", collective, "with a collective in --tests"),
            ("collective_warmup", collective, "with a collective in --tests"),
            ("backend", "device" in buffers, "with --buffers device"), ("device_", "device" in buffers, "with --buffers device"),
            ("platform", "device" in buffers, "with --buffers device"),
            ("path", "device" in buffers, "with --buffers device")]


def _other_rank(plan: NetworkPlan, timeout: float) -> int:
    """A rank other than 0 under a site launcher: run the probe (it sends everything to rank 0), store nothing."""
    inventory_file = write_inventory()
    try:
        s = step(plan, inventory_file)
        run = run_probe(s.args, timeout, launcher=s.launcher, env=s.env, pass_fds=s.pass_fds)
    finally:
        os.unlink(inventory_file)
    if run.failure:
        stderr.print(f"error: rank {plan.inside[0] if plan.inside else '?'}: {run.failure}", highlight=False, markup=False)
    return 0 if run.ok else 1


_time, _rate = or_dash(format_time), or_dash(format_rate)
_messages = or_dash(lambda v: f"{v / 1e6:.3g} M/s")


_HEAD = [Column("test", "test", justify="left"), Column("size_bytes", "size", format_size, no_wrap=True),
         Column("pair", "pair", justify="left"), Column("path", "path", justify="left")]
#: One table per kind of test, with OSU's figure first.
TABLES = [
    (("latency", "multi_lat"), "Point-to-point latency, one way (OSU: osu_latency, osu_multi_lat): mean (OSU) = the "
     "timer / iterations / 2", _HEAD + [
        Column("mean_seconds", "mean (OSU)", _time, no_wrap=True), Column("median_seconds", "median", _time, no_wrap=True),
        interval_column("median_ci"), Column("min_seconds", "min", _time, no_wrap=True), Column("count", "n")]),
    (("bw", "bibw", "mbw_mr"), "Bandwidth (OSU: osu_bw, osu_bibw, osu_mbw_mr): bandwidth (OSU) = bytes / total time; "
     "median and best (the fastest window) of the windows", _HEAD + [
        Column("mean_bytes_per_second", "bandwidth (OSU)", _rate, no_wrap=True),
        Column("direction_mean_bytes_per_second", "each way", _rate, no_wrap=True),
        Column("median_bytes_per_second", "median", _rate, no_wrap=True),
        Column("best_bytes_per_second", "best", _rate, no_wrap=True),
        Column("messages_per_second", "messages", _messages, no_wrap=True), Column("count", "n")]),
    (COLLECTIVES, "Collectives, per call (OSU: osu_allreduce …): mean (OSU) = the mean over ranks of each rank's mean; "
     "min/max rank = OSU's Min and Max", _HEAD + [
        Column("mean_seconds", "mean (OSU)", _time, no_wrap=True),
        Column("rank_min_mean_seconds", "min rank", _time, no_wrap=True),
        Column("rank_max_mean_seconds", "max rank", _time, no_wrap=True),
        Column("median_seconds", "median", _time, no_wrap=True), Column("count", "n")]),
]


def setup_notes(setup: dict[str, Any]) -> list[str]:
    """The MPI that ran and where the ranks were."""
    if not setup:
        return []
    mpi = setup.get("mpi") or {}
    hosts = setup.get("hosts") or []
    where: dict[str, list[str]] = {}
    for h in hosts:
        where.setdefault(h.get("host", "?"), []).append(f"{h.get('rank')} (CPUs {h.get('cpus')})")
    placed = "; ".join(f"{host}: ranks {', '.join(r)}" for host, r in where.items())
    skipped = setup.get("points_skipped")
    notes = [f"budget: {skipped} point(s) not started"] if skipped else []
    abi = (f"standard ABI {mpi.get('abi_version')}" if mpi.get("abi") in (None, "standard")
           else f"{ABIS.get(mpi.get('abi'), mpi.get('abi'))} through xferlab's shim")
    notes += [f"MPI: {mpi.get('library')} (MPI {mpi.get('mpi_version')}, {abi}, {mpi.get('mpi_library') or mpi.get('library_path')}"
              f"{', launcher ' + mpi['launcher'] if mpi.get('launcher') else ''}); {len(hosts)} ranks on {len(where)} host(s): {placed}"]
    node = setup.get("buffer_node") or {}
    if node.get("node") is not None and node["node"] >= 0:
        notes.append(f"host buffers bound to node {node['node']}: " + (f"binding failed: {node['binding_error']}"
                     if node.get("binding_error") else f"pages found on node(s) {node.get('pages')}"))
    if setup.get("device"):
        notes.append(f"device buffers: {setup['device'].get('name')}; paths {', '.join(mpi.get('paths') or [])}; "
                     f"GPU-aware MPI: {mpi.get('gpu_aware')}")
    return notes


def report(outcome, plan: NetworkPlan, fmt: str, plot: Optional[Path]) -> None:
    table = summary(outcome.rows)
    setup = run_summary(outcome.results)
    if plan.site is not None:
        setup["mpi"] = {**(setup.get("mpi") or {}), **plan.site.params()}
    plots = []
    if plot and table:
        from ..plots import plot_network

        plots = plot_network(table, Path(plot))
    notes = setup_notes(setup)
    if any(t.get("counting") for t in table):  # what the bandwidths count, and the peak each is held against
        notes += footer("network", [t["test"] for t in table])
        notes += [f"peak: {p}" for p in dict.fromkeys(t["peak_source"] for t in table if t.get("peak_source"))]
    notes.append(f"run {outcome.run_id} recorded in {outcome.store_path} (`xferlab results show {outcome.run_id}`; "
                 f"`xferlab fit {outcome.run_id}` gives link profiles)")
    notes += failure_notes(failed_steps(outcome))
    notes += [f"plot: {p}" for p in plots]
    if fmt != "table":
        emit("measure network", table, [Column(k, k) for k in dict.fromkeys(k for r in table for k in r)], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                    "machine_state": outcome.machine_state, "overview": overview(table), **setup,
                    "conventions": metadata("network", [t["test"] for t in table]),
                    "failures": failed_steps(outcome),
                    "unvalidated_samples": unvalidated_total(outcome), "plots": [str(p) for p in plots]})
        return
    for tests, title, columns in TABLES:
        mine = [t for t in table if t["test"] in tests]
        if mine:
            emit("measure network", with_interval(mine, "median_ci", "median_ci_low_seconds", "median_ci_high_seconds"),
                 columns, "table", title=title)
    for note in notes:
        (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False, markup=False)

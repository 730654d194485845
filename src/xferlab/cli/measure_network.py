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
                               LATENCY_COUNTS, NO_DATA, NONBLOCKING, POINT_TO_POINT, SIZES, TESTS, WINDOW, NetworkPlan, launched_rank, rows_of, run_summary, step, write_inventory)
from ..measure.network_results import overview, summary
from ..measure.network_rma import ONE_SIDED, ONE_SIDED_BANDWIDTH, SYNCS, WINDOWS
from ..measure.mpi_site import ABIS
from ..measure.mpi_hosts import agent_path, check_hosts, network_links, pair_hosts, parse_hosts, slots
from ..measure.device import platform_device
from ..measure.probe import run_probe
from ..measure.results import failures as failed_steps, notes as failure_notes, unvalidated_total
from ..measure.run import measure
from ..units import format_rate, format_size, format_time, parse_size, shown
from .common import (BACKEND, BUDGET, CSV, DEVICE, JSON, MPI, PLATFORM, PLOTS, STORE, TIMEOUT, budget_seconds, given,
                     only_with, timeout_seconds)
from .measure_outcome import conclude
from .network_osu import FORMATS, OSU_VERSION, osu_text
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
                                           "alltoall, bcast, allgather, reduce, barrier, gather, scatter, reduce_scatter, "
                                           "alltoallv, allgatherv; non-blocking, with overlap: " + ", ".join(NONBLOCKING) + "; "
                                           "one-sided (host memory, not in the default set): put_latency, get_latency, "
                                           "put_bw, get_bw, put_bibw."),
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
                                                        help=f"Timed windows of bw, bibw, mbw_mr, put_bw, get_bw, put_bibw (OSU: {BANDWIDTH_COUNTS[0][0]}; "
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
                                             "given to a GPU-aware MPI, else staged through pinned host memory); "
                                             "host,device: the point-to-point tests on every ordered pair of kinds "
                                             "(OSU's H D, D H), collectives on each kind."),
            backend: str = BACKEND, device_: int = DEVICE, platform: Optional[str] = PLATFORM,
            path: str = typer.Option("auto", "--path", metavar="auto|staged|direct",
                                     help="Device buffers: auto runs staged, and direct too where the MPI moves device "
                                          "memory itself."),
            node: Optional[int] = typer.Option(None, "--node", help="Memory node of the host buffers (a memory-only node "
                                               "too).", metavar="N"),
            bind: Optional[str] = typer.Option(None, "--bind", metavar="core|none",
                                               help="core: each rank pinned to its own CPU (default when xferlab starts "
                                                    "the ranks); none: as the launcher placed it (default under one)."),
            rma_sync: Optional[str] = typer.Option(None, "--rma-sync", metavar="|".join(SYNCS),
                                                   help="One-sided tests: the synchronization (OSU's -s): lock/unlock, "
                                                        "one lock and a flush or flush_local per iteration, lock_all, "
                                                        "fence, post-start-complete-wait. Default OSU's: flush; pscw for "
                                                        "put_bibw (which takes fence or pscw)."),
            rma_window: str = typer.Option("allocate", "--rma-window", metavar="|".join(WINDOWS),
                                           help="One-sided tests: the window (OSU's -w): allocate (MPI_Win_allocate, "
                                                "OSU's default) or create (MPI_Win_create over xferlab's host buffer)."),
            hosts: Optional[str] = typer.Option(None, "--hosts", metavar="LIST",
                                                help="Start the ranks on these hosts, as mpiexec -hosts: NAME:SLOTS,… "
                                                     "(ranks fill each host's slots in turn; --ranks defaults to all the "
                                                     "slots). Each other host is checked first: reached, same MPI."),
            launch_agent: Optional[str] = typer.Option(None, "--launch-agent", metavar="PATH",
                                                       help="What the MPI's launcher reaches other hosts with, in "
                                                            "ssh's place: called as ssh is (AGENT [options] HOST "
                                                            "COMMAND…); scripts/netns-agent enters network namespaces."),
            mpi: str = MPI, budget: Optional[str] = BUDGET, timeout: str = TIMEOUT,
            plot: Optional[Path] = PLOTS, store: Optional[Path] = STORE,
            json_: bool = JSON, csv_: bool = CSV,
            format_: Optional[str] = typer.Option(None, "--format", metavar="osu",
                                                  help=f"osu: print each test as the OSU Micro-Benchmarks {OSU_VERSION} "
                                                       "print it (their headers, columns and units: µs, MB/s), for "
                                                       "scripts that parse OSU's output; notes go to stderr.")) -> None:
    """MPI latency, bandwidth, message rate and collectives (OSU's definitions), host or device buffers.

    On one machine xferlab starts --ranks ranks with the MPI it found; under srun or mpiexec every
    rank runs this command and rank 0 writes the store. Exit code 0 when the run succeeded, 1 when
    it failed (samples before a failure are kept)."""
    fmt = output_format(json_, csv_)
    if format_ is not None:
        if format_ not in FORMATS:
            raise BadValue(f"--format {shown(format_)} is not allowed; allowed: {', '.join(FORMATS)} (default: xferlab's "
                           "tables; --json, --csv)")
        if fmt != "table":
            raise BadValue(f"--format {format_} and --{fmt} were both given; choose one")
        fmt = format_
    inside = launched_rank()
    host_list = _hosts(ctx, hosts, launch_agent, inside)
    if host_list and not given(ctx, "ranks"):
        ranks = slots(host_list)
    device_buffers = "device" in [b.strip() for b in buffers.split(",")]
    plan = NetworkPlan(tests=NetworkPlan.parse_tests(tests), sizes=NetworkPlan.parse_sizes(sizes, "--sizes"),
                       collective_sizes=NetworkPlan.parse_sizes(collective_sizes, "--collective-sizes"), ranks=ranks,
                       latency_counts=_counts(iterations, warmup, LATENCY_COUNTS, 10, "--iterations"),
                       bandwidth_counts=_counts(bw_iterations, bw_warmup, BANDWIDTH_COUNTS, 5, "--bw-iterations"),
                       collective_counts=_counts(collective_iterations, collective_warmup, COLLECTIVE_COUNTS, 10,
                                                 "--collective-iterations"),
                       large_from=parse_size(large_from, "--large-from", allow_zero=True), window=window,
                       buffers=[b.strip() for b in buffers.split(",") if b.strip()], backend=backend,
                       device=platform_device(backend, platform, device_) if device_buffers else device_, path=path, node=node, bind=bind, inside=inside, mpi=mpi,
                       rma_sync=rma_sync, rma_window=rma_window,
                       hosts=host_list, agent=agent_path(launch_agent) if launch_agent else None)
    only_with(ctx, network_ties(plan.tests, plan.buffers))
    timeout_s, plan.budget = timeout_seconds(timeout), budget_seconds(budget)
    plan.check(len(os.sched_getaffinity(0)))
    extra: dict[str, Any] = {"accelerator": plan.device_info} if plan.device_info else {}
    if plan.hosts:
        site = plan.chosen_mpi()
        check_hosts(plan.hosts, plan.agent, str(site.launcher), str(site.library))
        # what the bandwidths between hosts are held against: the link each sending host's route leaves by
        extra["peaks"] = {"network": network_links(plan.hosts, plan.agent, plan.world, plan.tests)}
    checks.plot_dir(plot)
    if inside and inside[0] != 0:
        raise typer.Exit(_other_rank(plan, timeout_s))
    inventory_file = write_inventory() if inside else None
    try:
        outcome = measure("measure network", [step(plan, inventory_file)], rows_of, "network", params=plan.params(),
                          store_path=store, timeout=timeout_s, budget=None,
                          extra_inventory=extra or None,
                          extra_summary=run_summary)
    finally:
        if inventory_file:
            os.unlink(inventory_file)
    report(outcome, plan, fmt, plot)
    conclude(outcome, fmt)


def _hosts(ctx: typer.Context, text: Optional[str], agent: Optional[str], inside) -> list[tuple[str, int]]:
    """--hosts as [(name, slots)]; refused under a site launcher (it placed the ranks) and --launch-agent without it."""
    if text is None:
        if agent is not None:
            raise BadValue("--launch-agent applies only with --hosts (the agent starts ranks on other hosts)")
        return []
    if inside:
        raise BadValue("--hosts applies only when xferlab starts the ranks; under a launcher (srun, mpiexec) the "
                       "launcher placed them")
    return parse_hosts(text)


def network_ties(tests: list[str], buffers: list[str]) -> list[tuple[str, bool, str]]:
    """The options that apply only to some of --tests or with device --buffers (cli.common.only_with)."""
    one_sided = any(t in ONE_SIDED for t in tests)
    p2p = any(t in POINT_TO_POINT for t in tests) or one_sided
    latency = any(t in ("latency", "multi_lat", "put_latency", "get_latency") for t in tests)
    bandwidth = any(t in BANDWIDTH or t in ONE_SIDED_BANDWIDTH for t in tests)
    collective = any(t in COLLECTIVES for t in tests)
    sized = any(t in COLLECTIVES and t not in NO_DATA for t in tests)
    bw_words = (f"with {', '.join(BANDWIDTH[:-1])} or {BANDWIDTH[-1]} in --tests (one-sided: "
                f"{', '.join(ONE_SIDED_BANDWIDTH)})")
    lat_words = "with latency or multi_lat in --tests (one-sided: put_latency, get_latency)"
    rma_words = f"with a one-sided test in --tests ({', '.join(ONE_SIDED)})"
    return [("sizes", p2p, f"with a point-to-point test in --tests ({', '.join(POINT_TO_POINT)}) or a one-sided one"),
            ("iterations", latency, lat_words),
            ("warmup", latency, lat_words),
            ("bw_iterations", bandwidth, bw_words), ("bw_warmup", bandwidth, bw_words), ("window", bandwidth, bw_words),
            ("collective_sizes", sized, "with a collective that moves data in --tests (barrier moves none)"),
            ("collective_iterations", collective, "with a collective in --tests"),
            ("collective_warmup", collective, "with a collective in --tests"),
            ("backend", "device" in buffers, "with --buffers device"), ("device_", "device" in buffers, "with --buffers device"),
            ("platform", "device" in buffers, "with --buffers device"),
            ("path", "device" in buffers, "with --buffers device"),
            ("rma_sync", one_sided, rma_words), ("rma_window", one_sided, rma_words)]


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
_percent = or_dash(lambda v: f"{100 * v:.1f} %")


_HEAD = [Column("test", "test", justify="left"), Column("size_bytes", "size", format_size, no_wrap=True),
         Column("pair", "pair", justify="left"), Column("pair_hosts", "ranks, hosts", lambda v: v or "–", justify="left"),
         Column("path", "path", justify="left")]
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
        Column("messages_per_second", "messages", _messages, no_wrap=True),
        Column("fraction_of_peak", "% of peak", _percent, no_wrap=True), Column("count", "n")]),
    (tuple(t for t in COLLECTIVES if t not in NONBLOCKING), "Collectives, per call (OSU: osu_allreduce …): mean (OSU) = "
     "the mean over ranks of each rank's mean; min/max rank = OSU's Min and Max; algbw, busbw = nccl-tests' algorithm "
     "and bus bandwidth of the mean", _HEAD + [
        Column("mean_seconds", "mean (OSU)", _time, no_wrap=True),
        Column("rank_min_mean_seconds", "min rank", _time, no_wrap=True),
        Column("rank_max_mean_seconds", "max rank", _time, no_wrap=True),
        Column("median_seconds", "median", _time, no_wrap=True),
        Column("algorithm_mean_bytes_per_second", "algbw", _rate, no_wrap=True),
        Column("bus_mean_bytes_per_second", "busbw", _rate, no_wrap=True), Column("count", "n")]),
    (NONBLOCKING, "Non-blocking collectives (OSU: osu_iallreduce …): overall = start + compute + wait, compute sized to "
     "the pure communication (start + wait); overlap = max(0, 1 - (overall - compute) / pure); means over ranks; "
     "busbw of the pure communication", _HEAD + [
        Column("mean_seconds", "overall (OSU)", _time, no_wrap=True),
        Column("compute_mean_seconds", "compute", _time, no_wrap=True),
        Column("pure_mean_seconds", "pure comm.", _time, no_wrap=True),
        Column("overlap", "overlap", _percent, no_wrap=True),
        Column("bus_mean_bytes_per_second", "busbw", _rate, no_wrap=True), Column("count", "n")]),
    (("put_latency", "get_latency"), "One-sided latency (OSU: osu_put_latency, osu_get_latency): mean (OSU) = the "
     "timer / iterations (/ 2 for fence and pscw, a ping-pong)", _HEAD + [
        Column("rma_sync", "sync", justify="left"), Column("rma_window", "window", justify="left"),
        Column("mean_seconds", "mean (OSU)", _time, no_wrap=True), Column("median_seconds", "median", _time, no_wrap=True),
        interval_column("median_ci"), Column("min_seconds", "min", _time, no_wrap=True), Column("count", "n")]),
    (ONE_SIDED_BANDWIDTH, "One-sided bandwidth (OSU: osu_put_bw, osu_get_bw, osu_put_bibw): bandwidth (OSU) = "
     "bytes / total time; median and best of the windows", _HEAD + [
        Column("rma_sync", "sync", justify="left"), Column("rma_window", "window", justify="left"),
        Column("mean_bytes_per_second", "bandwidth (OSU)", _rate, no_wrap=True),
        Column("median_bytes_per_second", "median", _rate, no_wrap=True),
        Column("best_bytes_per_second", "best", _rate, no_wrap=True), Column("count", "n")]),
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
    setup = run_summary(outcome.results)
    peaks = (outcome.inventory or {}).get("peaks") or {}
    table = summary(outcome.rows, peaks, setup.get("hosts"))
    pair_hosts(table, outcome.rows, setup.get("hosts"))
    if plan.site is not None:
        setup["mpi"] = {**(setup.get("mpi") or {}), **plan.site.params()}
    plots = []
    if plot and table:
        from ..plots.measured import plot_network

        plots = plot_network(table, Path(plot))
    notes = setup_notes(setup)
    if any(t.get("counting") for t in table):  # what the bandwidths count, and the peak each is held against
        notes += footer("network", [t["test"] for t in table])
        notes += [f"peak: {p}" for p in dict.fromkeys(t["peak_source"] for t in table if t.get("peak_source"))]
    notes.append(f"run {outcome.run_id} recorded in {outcome.store_path} (`xferlab results show {outcome.run_id}`; "
                 f"`xferlab fit {outcome.run_id}` gives link profiles)")
    notes += failure_notes(failed_steps(outcome))
    notes += [f"plot: {p}" for p in plots]
    if fmt == "osu":
        typer.echo(osu_text(table, plan.backend if "device" in plan.buffers else None, plan.window, plan.world // 2,
                            [f"xferlab measure network, run {outcome.run_id}: the OSU Micro-Benchmarks {OSU_VERSION} "
                             "output format"]), nl=False)
        for note in notes:
            stderr.print(note, highlight=False, markup=False)
        return
    if fmt != "table":
        emit("measure network", table, [Column(k, k) for k in dict.fromkeys(k for r in table for k in r)], fmt, notes=notes,
             extra={"run_id": outcome.run_id, "store": str(outcome.store_path),
                    "machine_state": outcome.machine_state, "overview": overview(table), **setup,
                    "conventions": metadata("network", [t["test"] for t in table]), "peaks": peaks,
                    "failures": failed_steps(outcome),
                    "unvalidated_samples": unvalidated_total(outcome), "plots": [str(p) for p in plots]})
        return
    for tests, title, columns in TABLES:
        mine = [t for t in table if t["test"] in tests]
        if mine:
            if not any(t.get("pair_hosts") for t in mine):  # the rank-to-host column only where ranks span hosts
                columns = [c for c in columns if c.key != "pair_hosts"]
            emit("measure network", with_interval(mine, "median_ci", "median_ci_low_seconds", "median_ci_high_seconds"),
                 columns, "table", title=title)
    for note in notes:
        (stderr if note.startswith(("failed", "skipped")) else stdout).print(note, highlight=False, markup=False)

"""`xferlab campaign run|node`: the same measurement on every node of an allocation, one store, the
nodes compared (src/xferlab/campaign.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import CSV, JSON, STORE
from .output import Column, emit, output_format

app = typer.Typer(no_args_is_help=True, help="Measurement campaigns across a cluster's nodes, merged into one store.")
EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}


@app.command("run", context_settings=EXTRA)
def run(ctx: typer.Context,
        nodes: Optional[int] = typer.Option(None, "--nodes", help="N local processes as nodes, one after another "
                                            "(to try a campaign on one machine).", metavar="N"),
        launcher: Optional[str] = typer.Option(None, "--launcher", help="The site's launcher, one task per node: "
                                               "\"srun --ntasks-per-node=1\", \"mpiexec -f hosts -ppn 1\".",
                                               metavar="COMMAND"),
        hosts: Optional[str] = typer.Option(None, "--hosts", help="Host names, one node each, reached one after "
                                            "another through --launch-agent (ssh by default).", metavar="LIST"),
        launch_agent: Optional[str] = typer.Option(None, "--launch-agent", help="What reaches each of --hosts, "
                                                   "called as ssh is (AGENT [options] HOST COMMAND…).",
                                                   metavar="PATH"),
        shards: Path = typer.Option(Path("shards"), "--shards", help="Where the nodes write their shards (a folder "
                                    "every node sees).", metavar="DIR"),
        mads: float = typer.Option(3.0, "--mads", help="Flag a node this many median absolute deviations from the "
                                   "median over nodes …", metavar="K"),
        min_deviation: str = typer.Option("5%", "--min-deviation", help="… and this far from it (a fraction or a "
                                          "percentage).", metavar="FRACTION"),
        store: Optional[Path] = STORE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Run `xferlab ARGS` (after --) on every node; merge the shards into --store; compare the nodes."""
    from ..campaign import STATISTIC, compare_nodes, run_campaign
    from ..errors import BadValue
    from ..store import open_store
    from ..units import format_size

    fmt = output_format(json_, csv_)
    if not 0 < mads < float("inf"):
        raise BadValue(f"--mads {mads}: a finite distance above 0, such as 3")
    from ..measure.precision import parse_fraction

    floor = parse_fraction(min_deviation, "--min-deviation", "relative deviation", upper=1.0, zero=True)
    names = agent = None
    if hosts is not None:
        from ..measure.mpi_hosts import parse_hosts

        names = [name for name, _ in parse_hosts(hosts)]
    if launch_agent is not None:
        from ..measure.mpi_hosts import agent_path

        agent = agent_path(launch_agent)
    done = run_campaign(list(ctx.args), shards, store, nodes, launcher, hosts=names, agent=agent)
    with open_store(store, read_only=True) as db:
        split: list[str] = []
        rows = compare_nodes(db, done["runs"], mads, floor, split)
    from .results import show_value

    for r in rows:  # the figures in their unit, as `results show` prints them
        r["median"], r["median_over_nodes"] = (show_value(r["metric"], r["median"]) or f"{r['median']:.4g}",
                                               show_value(r["metric"], r["median_over_nodes"]) or
                                               f"{r['median_over_nodes']:.4g}") if fmt == "table" else (
            r["median"], r["median_over_nodes"])
    flagged = [r for r in rows if r["outlier"]]
    notes = [f"{len(done['runs'])} runs from {len({r['node'] for r in rows}) or len(done['runs'])} nodes in the store; "
             f"{sum(r['imported'] for r in done['imported'])} newly imported",
             f"each figure: the {STATISTIC} of a node's samples, compared with the other nodes' of the same test, metric, "
             "size, threads, placement and size class (arrays against each node's last-level cache)"]
    notes += split
    notes += [f"outlier: {r['node']}: {r['test']} {r['metric']} {r['median']} against {r['median_over_nodes']} "
              f"over nodes ({r['mads']:.1f} MADs)" for r in flagged]
    emit("campaign run", rows, [Column("test", "test", justify="left"), Column("metric", "metric", justify="left"),
                                Column("size_bytes", "size", lambda v: format_size(v) if v else "–"),
                                Column("threads", "threads", lambda v: "–" if v is None else str(v)),
                                Column("placement", "placement", justify="left"),
                                Column("array_size_class", "size class", lambda v: v or "–", justify="left"),
                                Column("node", "node", justify="left"), Column("median", "median"),
                                Column("median_over_nodes", "over nodes"),
                                Column("mads", "MADs", lambda v: f"{v:.1f}"),
                                Column("relative_error", "off by", lambda v: f"{v:.1%}"),
                                Column("outlier", "outlier", lambda v: "OUTLIER" if v else "")],
         fmt, title=f"Nodes compared, figure by figure ({STATISTIC}s)", notes=notes,
         extra={"runs": done["runs"], "imports": done["imported"], "failed_nodes": done["failed"]})
    if done["failed"]:
        from .output import stderr

        stderr.print(f"error: {len(done['failed'])} node step(s) failed ({'; '.join(done['failed'])}); the shards "
                     f"written are in the store, runs {', '.join(done['runs'])}", highlight=False, markup=False)
        raise typer.Exit(3)


@app.command("node", context_settings=EXTRA, hidden=True)
def node(ctx: typer.Context, shards: Path = typer.Option(..., "--shards", metavar="DIR")) -> None:
    """One node's part (started by `campaign run` or the launcher): run `xferlab ARGS`, write its shards."""
    from ..campaign import run_node

    written, code = run_node(shards, list(ctx.args))
    for path in written:
        print(path)
    if code:  # the node's command failed: its launcher (or `campaign run`) learns it from this exit code
        raise typer.Exit(code)

"""The report's node comparison: runs of the same command on two nodes or more (a campaign's, merged
with `results import`), compared figure by figure, a node more than 3 MADs and 5 % from the median over
nodes flagged (src/xferlab/campaign.py)."""

from __future__ import annotations

import shlex

from .collect import Section, Table, fmt_value

MADS = 3.0


def _without_store(argv: list[str]) -> tuple[str, ...]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--store":
            skip = True
        elif not a.startswith("--store="):
            out.append(a)
    return tuple(out)


def node_groups(db) -> list[list[str]]:
    """Run ids of the same command (its arguments but the store) recorded on two nodes or more: the
    newest run of each node."""
    groups: dict[tuple, dict[str, str]] = {}
    for summary in db.runs():  # newest first
        if summary["status"] != "ok" or not summary["samples"]:
            continue
        run = db.run(summary["run_id"])
        node = (run.get("inventory") or {}).get("node")
        if node:
            groups.setdefault((run["command"], _without_store(run.get("argv") or [])), {}).setdefault(node, run["run_id"])
    return [sorted(nodes.values()) for nodes in groups.values() if len(nodes) >= 2]


def nodes_section(db, run_ids: list[str]) -> Section:
    from ..campaign import MIN_DEVIATION, compare_nodes

    split: list[str] = []
    rows = compare_nodes(db, run_ids, MADS, split=split)
    command = db.run(run_ids[0])["command"]
    shown = [{**r, "median": fmt_value(r["metric"], r["median"]),
              "median_over_nodes": fmt_value(r["metric"], r["median_over_nodes"]), "mads": f"{r['mads']:.1f}",
              "relative_error": f"{r['relative_error']:.1%}",
              "outlier": "OUTLIER" if r["outlier"] else ""} for r in rows]
    flagged = sorted({r["node"] for r in rows if r["outlier"]})
    intro = [f"{command} on {len(run_ids)} nodes: runs {', '.join(run_ids)}",
             f"outliers (more than {MADS:g} MADs and {MIN_DEVIATION:.0%} from the median over nodes): "
             + (", ".join(flagged) or "none")]
    section = Section(f"Nodes compared: {command}", f"nodes-{run_ids[0]}", intro,
                      [Table("Each node's median of a figure against the median over nodes, figures of the same test, "
                             "metric, size, threads, placement and size class (arrays against each node's last-level "
                             "cache) only",
                             [("test", "test"), ("metric", "metric"), ("size_bytes", "size"), ("threads", "threads"),
                              ("placement", "placement"), ("array_size_class", "size class"),
                              ("node", "node"), ("median", "median"), ("median_over_nodes", "over nodes"),
                              ("mads", "MADs"), ("relative_error", "off by"), ("outlier", "outlier")], shown, split)])
    argv = _without_store(db.run(run_ids[0]).get("argv") or []) or tuple(command.split())
    section.commands.append(f"xferlab campaign run --nodes {len(run_ids)} -- {shlex.join(argv)}")
    return section

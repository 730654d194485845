"""The report's fits and advice sections: calibrated links from the device runs, and what they mean
for offloading, link choice, chunk size and the distance from a link model's limit. Each table says
the `xferlab` command that gives the same figures."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..links import resolve
from ..links.base import Link
from ..units import format_size, format_time
from .collect import Figure, Section, Table

#: Links the measured machine is set beside in the advice: the seed's PCIe Gen3 testbed, a current
#: PCIe generation, CXL 2.0 and NVLink-C2C.
COMPARED = ("pcie3x16", "pcie5x16", "cxl2x16", "c2c")
OFFLOAD_SIZES = (4096, 65536, 2**20, 16 * 2**20, 256 * 2**20)


class Fitted:
    """One fitted direction of one device run: its row (as `xferlab fit --json` gives it), the Link,
    and the LINK string that names it (a saved profile, or the plain model's parameters)."""

    def __init__(self, row: dict[str, Any], link: Link, spec: str, launch_seconds: Optional[float]) -> None:
        self.row, self.link, self.spec, self.launch_seconds = row, link, spec, launch_seconds


def fits_section(run: dict[str, Any], rows: list[dict[str, Any]], folder: Path, against: str,
                 profile_prefix: Optional[str]) -> tuple[Section, list[Fitted]]:
    from ..fit.device import fit_device, skip_note
    from ..measure.launches import launch_summary

    rid = run["run_id"]
    fit_rows, links, figures, notes, skipped = fit_device(rows, against, folder / rid / "fits", profile_prefix, rid)
    launch = [r for r in launch_summary(rows) if r["kernel_args"] == 0 and r["pinned_cpu"] is None]
    launch_s = launch[0]["median_seconds"] if launch else None
    section = Section(f"Fits of run {rid}: transfer time against size", f"fits-{rid}",
                      ["candidates t_s + n/b, per-packet overhead and piecewise rates, each by robust relative least "
                       "squares on the per-size medians; the simplest within 1.5 points of the best held-out error is "
                       "kept; quality on held-out sizes (leave one size out); 95 % bootstrap intervals; a poor fit says "
                       "why: noise (its error is within 2x the medians' 95 % interval where it is largest: repeat with "
                       "--precision) or model (the sizes it misses are named)",
                       f"the preset drawn beside each fit, and the model limit, is {against}"])
    shown = [{**r, "verdict": "poor" if r["poor"] else "good", "cause": r["poor_cause"] or "–"} for r in fit_rows]
    for s in skipped:  # a group that cannot be fitted: the reason in place of its fit
        direction, _, kind = s["group"].partition(", ")
        shown.append({"direction": direction, "host_kind": kind.removesuffix(" host memory"), "verdict": "not fitted",
                      "cause": s["reason"]})
    section.tables.append(Table("Fitted models and their quality", [
        ("direction", "direction"), ("host_kind", "host memory"), ("model", "model"), ("latency_seconds", "t_s"),
        ("bandwidth_bytes_per_second", "b"), ("bandwidth_ci_low_bytes_per_second", "b 95% low"),
        ("bandwidth_ci_high_bytes_per_second", "b 95% high"), ("r2_log", "R² (log)"),
        ("median_relative_error", "median err"), ("worst_relative_error", "worst err"),
        ("cv_relative_error", "held-out err"), ("verdict", "verdict"), ("cause", "cause")],
        shown, notes + [skip_note(s) for s in skipped]))
    command = f"xferlab fit {rid} --against {against}" + (f" --name {profile_prefix}" if profile_prefix else "")
    for path in figures:
        section.figures.append(Figure(f"measured vs fitted vs {against}: {path.stem}", path, command + " --plots DIR"))
    section.commands.append(command)
    fitted = [Fitted(r, links[i], r.get("profile") or links[i].name, launch_s) for i, r in enumerate(fit_rows)]
    return section, fitted


def advice_section(fitted: list[Fitted], against: str, folder: Path) -> Section:
    from ..advise.chunk import best_chunk, with_overhead
    from ..advise.links import fastest, ranking_changes
    from ..advise.offload import offload
    from ..advise.whatif import replace_link
    from ..scenarios.packaged import load_named
    from ..sim import flows
    from ..system.models import System, Workflow
    from ..plots import plot_times

    section = Section("Advice", "advice")
    primary = next((f for f in fitted if f.row["direction"] == "h2d"), fitted[0] if fitted else None)
    compared = [resolve(name) for name in COMPARED]
    links = ([primary.link] if primary else []) + compared
    label = primary.link.label if primary else None
    if primary:
        section.intro.append(f"this machine's link below is the fitted {primary.row['direction']} copy over "
                             f"{primary.row['host_kind']} host memory ({label}, {primary.row['model']} model)")
    else:
        section.intro.append("no device run with copies was given: the advice uses the link presets only")

    rows = [{"size_bytes": n, "link": link.label, "communication_seconds": offload(link, n, n, 0.0, 0.0).communication_seconds}
            for n in OFFLOAD_SIZES for link in links]
    section.tables.append(Table("Offloading pays when the task saves more than 2d: the smallest saving t - t' per input size "
                                "(seed 000: t - t' > 2d; seed 002: P/O > 1)",
                                [("size_bytes", "data in (= out)"), ("link", "link"), ("communication_seconds", "2d")], rows))
    example = shlex.quote(links[0].label)  # a fitted piecewise LINK has ';' in it
    section.commands.append(f"xferlab advise offload {example} --bytes 1MiB --host-time 5ms --device-time 1ms")

    sizes = np.asarray([2.0**k for k in range(6, 31, 2)])
    changes = ranking_changes(links)
    section.tables.append(Table("Fastest link by transfer size", [
        ("size_bytes", "size"), ("fastest", "fastest"), ("seconds", "time"), ("runner_up", "runner-up"),
        ("runner_up_ratio", "runner-up takes")], fastest(links, sizes),
        [f"{c['faster_below']} is faster below {format_size(c['size_bytes'])}, {c['faster_above']} from there on" for c in changes]))
    names = " ".join(shlex.quote(link.label) for link in links)
    section.figures.append(Figure("transfer time by size", plot_times(links, sizes, "write", folder / "advice" / "links.png",
                                                                       "This machine's fitted link and the presets"),
                                  f"xferlab model time {names} --sizes 64B..1GiB --plot FILE"))
    section.commands.append(f"xferlab advise links {names}")

    system = load_named("seed-testbed", System, "system")
    workflow = load_named("deceval", Workflow, "workflow")
    launch = primary.launch_seconds if primary else None
    chunk_rows = []
    cost = f"{launch * 1e6:.1f}us" if launch else None  # for the command line only
    wf = with_overhead(workflow, launch)
    variants = [("seed-testbed", system)]
    if primary:
        variants.append((f"seed-testbed, pcie3x16 -> {label}", replace_link(system, "pcie3x16", primary.spec)))
    for name, sys_model in variants:
        best = best_chunk(sys_model, wf)
        staged = flows.run(sys_model, wf, "staged")
        chunk_rows.append({"system": name, "staged_seconds": staged.timeline.makespan,
                           "one_piece_seconds": best["one_piece_seconds"], "chunk_bytes": best["chunk_bytes"],
                           "chunks": best["chunks"], "makespan_seconds": best["makespan_seconds"]})
    section.tables.append(Table("DecEval (seed 000) pipelined: the chunk size that minimizes the makespan",
                                [("system", "system"), ("staged_seconds", "staged"), ("one_piece_seconds", "direct, one piece"),
                                 ("chunk_bytes", "best chunk"), ("chunks", "chunks"), ("makespan_seconds", "pipelined")],
                                chunk_rows,
                                [f"every task pays {format_time(launch)} per chunk: this machine's median kernel launch "
                                 "latency" if launch else "tasks pay no per-chunk cost (no launch latency measured): "
                                 "the smallest chunk wins"]))
    section.commands.append("xferlab advise chunk seed-testbed deceval" + (f" --overhead {cost}" if cost else ""))
    if primary:
        section.commands.append(f"xferlab advise whatif seed-testbed deceval --replace {shlex.quote('pcie3x16=' + primary.spec)}")

    limit_rows = [{k: f.row[k] for k in ("direction", "host_kind", "measured_peak_bytes_per_second", "model_limit_bytes_per_second",
                                         "fraction_of_model_limit")} for f in fitted]
    if limit_rows:
        section.tables.append(Table(f"How far the measured copies are from the {against} model's limit (payload rate; "
                                    "bidir: both directions at once)",
                                    [("direction", "direction"), ("host_kind", "host memory"),
                                     ("measured_peak_bytes_per_second", "measured peak"),
                                     ("model_limit_bytes_per_second", "model limit"),
                                     ("fraction_of_model_limit", "fraction")], limit_rows))
    return section

"""`xferlab report`: one self-contained HTML file (plots embedded as data: URIs, no network needed)
with the machine's inventory, every run's statistics with their placement, the fits with their
quality, the seeds' scenarios, the advice, and the command that reproduces each figure.

The page is rendered by jinja2 from ``report.html.j2`` beside this module; what it shows is gathered
by :mod:`xferlab.report.collect`.
"""

from __future__ import annotations

import base64
import tempfile
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Optional

import jinja2

from .. import __version__
from . import collect, kernels_section, matrix_section, memory_section, network_section
from .collect import Section, Table

TEXT_KEYS = {"test", "kind", "host_kind", "direction", "mode", "cpus", "scenario", "figure", "section", "seed", "xferlab", "link", "what",
             "reason", "suite", "run_id", "model", "pattern", "version", "fact", "value", "advice", "fastest",
             "runner_up", "faster_below", "faster_above", "profile", "verdict", "replaced", "by", "strategy", "command",
             "tier", "kernel", "system", "opset", "workload", "cause", "median_ci", "latency_ci", "bandwidth_ci", "status", "why",
             "numa_balancing", "governor", "turbo", "thp", "smt", "virtual", "clock_source"}


def machine_table(inventory: dict[str, Any]) -> Table:
    """The inventory facts a reader needs first; the whole inventory is in the store."""
    caches = ", ".join(f"L{c['level']}{c['type'][0].lower() if c['type'] != 'Unified' else ''} "
                       f"{collect.format_size(c['size_bytes'])}" for c in inventory.get("caches", []))
    nodes = ", ".join(f"node {n['node']}: {collect.format_size(n.get('memory_total_bytes', 0))}, CPUs {n.get('cpus', '')}"
                      for n in inventory.get("numa_nodes", []))
    accel = inventory.get("accelerator") or {}
    facts = [("CPU", inventory.get("cpu_model")), ("cores / threads", f"{inventory.get('cores')} / {inventory.get('threads')}"),
             ("CPUs allowed", ",".join(map(str, inventory.get("cpus_allowed", [])))), ("caches", caches),
             ("memory", collect.format_size(inventory.get("memory_total_bytes", 0))), ("NUMA nodes", nodes),
             ("persistent memory devices", ", ".join(inventory.get("pmem_devices", [])) or "none"),
             ("hypervisor", "yes" if inventory.get("hypervisor") else "no"),
             ("frequency governor", inventory.get("frequency_governor")),
             ("OS / kernel", f"{inventory.get('os', '')} / {inventory.get('kernel', '')}"),
             ("host name", inventory.get("hostname"))]
    if accel:
        facts.append(("accelerator", f"{accel.get('backend', '')} #{accel.get('index', '')}: {accel.get('name', '')} "
                                     f"({accel.get('platform', '')}, driver {accel.get('driver', '')})"))
    return Table("Inventory (recorded with the runs)", [("fact", "fact"), ("value", "value")],
                 [{"fact": k, "value": "" if v is None else str(v)} for k, v in facts])


def versions_table(versions: dict[str, Any]) -> Optional[Table]:
    if not versions:
        return None
    rows = [{"fact": k, "value": v if isinstance(v, str) else ", ".join(f"{a}={b}" for a, b in v.items())
             if isinstance(v, dict) else str(v)} for k, v in versions.items()]
    return Table("Software versions", [("fact", "software"), ("value", "version")], rows)


def guarded(title: str, anchor: str, make: Callable[[], Any], fallback: Any = None) -> tuple[Any, Optional[Section]]:
    """``make()``, or (when it raises) ``fallback`` and a Section whose note says what failed: one
    part of the report that cannot be built never stops the others."""
    try:
        return make(), None
    except Exception as error:  # noqa: BLE001 - any failure of one part becomes a visible note
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return fallback, Section(title, anchor, [f"this part could not be made: {reason} ({type(error).__name__})"])


def build(db, refs: Optional[list[str]], *, profile_prefix: Optional[str] = None, against: str = "pcie3x16",
          title: str = "xferlab report") -> dict[str, Any]:
    """Everything the template shows, with plots written to a temporary folder and read back as
    base64. Returns the template's context. Only the runs named (or picked) must be readable; each
    section that cannot be made (a group that cannot be fitted, a plot that fails) becomes a note in
    its place. Samples the probe did not validate are left out everywhere, and counted."""
    from ..measure.samples import kept, unvalidated_count
    from ..store.rows import flat
    from .advice import advice_section, fits_section

    run_ids = collect.pick_runs(db, refs)
    runs = [db.run(rid) for rid in run_ids]
    sections: list[Section] = []
    headlines = []
    notes: list[str] = []
    if not runs:
        notes.append(f"{db.where} has no finished run with samples: only the seeds' scenarios and the link presets' advice "
                     "follow (record runs with `xferlab lab` or `xferlab measure …`)")

    def add(title: str, anchor: str, make: Callable[[], tuple[Section, Any]], empty: Any = None) -> Any:
        """Append the section ``make()`` builds and return what came with it (``empty`` if it failed)."""
        made, failed = guarded(title, anchor, make)
        if failed is not None:
            sections.append(failed)
            return empty
        sections.append(made[0])
        return made[1]

    with tempfile.TemporaryDirectory(prefix="xferlab-report-") as tmp:
        folder = Path(tmp)
        device_samples = []
        memory_runs: list = []  # (run, rows) pairs: the glance judges each figure's size class by its run's inventory
        kernel_runs: list = []
        for run in runs:
            rid = run["run_id"]
            stored = db.samples(rid)
            rows = [flat(s) for s in kept(stored)]
            unchecked = unvalidated_count(stored)
            if unchecked:
                notes.append(f"run {rid}: {unchecked} unvalidated sample{'s' * (unchecked > 1)} (the probe ended before "
                             "validating them) left out of every table, plot, fit and headline")
            if not rows:
                sections.append(Section(f"Run {rid} ({run['command']}, {run['status']})", f"run-{rid}",
                                        [f"run {rid} has no {'validated ' if stored else ''}samples to show; its failures, "
                                         "if any, are listed under Failures"], commands=[collect.command_of(run)]))
                continue
            kinds = collect.kinds_of(rows)
            if matrix_section.is_matrix(run):  # its grids, not the tables of a plain run of its suite
                add(f"Matrix (run {rid})", f"run-{rid}-matrix",
                    lambda run=run, rows=rows: (matrix_section.matrix_section(run, rows, folder), None))
                continue
            if "memory" in kinds:
                headlines += add(f"Memory tiers (run {rid})", f"run-{rid}", lambda run=run, rows=rows:
                                 collect.memory_section(db, run, rows, folder, profile_prefix,
                                                        memory_section.loaded_tables), [])
            if kinds & {"transfers", "chunks", "launch"}:
                headlines += add(f"Accelerator (run {rid})", f"run-{rid}-device", lambda run=run, rows=rows:
                                 collect.device_section(db, run, rows, folder), [])
                if "transfers" in kinds:
                    device_samples.append((run, rows))
            if "collab" in kinds:
                add(f"CPU–device collaboration (run {rid})", f"run-{rid}-collab",
                    lambda run=run, rows=rows: (collect.collab_section(run, rows, folder), None))
            if "kernels" in kinds:
                headlines += add(f"Kernels (run {rid})", f"run-{rid}-kernels", lambda run=run, rows=rows:
                                 kernels_section.kernels_section(run, rows, folder), [])
                kernel_runs.append((run, rows))
            if "memory" in kinds:
                memory_runs.append((run, rows))
            if "network" in kinds:
                headlines += add(f"Network (run {rid})", f"run-{rid}-network", lambda run=run, rows=rows:
                                 network_section.network_section(run, rows, folder), [])
            if "runtime" in kinds:
                add(f"Offload runtime (run {rid})", f"run-{rid}-runtime",
                    lambda run=run, rows=rows: (collect.runtime_section(run, rows, folder), None))
        from .study_section import study_groups, study_section

        for group, params in study_groups(runs).items():
            add(f"Study {params['name']}", f"study-{group}", lambda group=group, params=params: (
                study_section(db, group, params), None))
        from .nodes_section import node_groups, nodes_section

        for ids in node_groups(db):
            add(f"Nodes compared ({ids[0]})", f"nodes-{ids[0]}", lambda ids=ids: (nodes_section(db, ids), None))
        if runs:
            from .state_section import state_section

            add("Machine state", "machine-state", lambda: (state_section(runs), None))
        glance, failed_glance = guarded("At a glance", "glance", lambda: kernels_section.glance(
            memory_runs, device_samples, kernel_runs))
        if failed_glance is not None:
            sections.insert(0, failed_glance)
        elif glance:
            sections.insert(0, Section("At a glance: where the bottleneck is", "glance",
                                       ["each table compares one statistic (best: the fastest iteration) over arrays of "
                                        "one size class against the last-level cache (STREAM's rule: each array at least "
                                        "4x it), never a cache figure with a memory figure"], tables=glance))
        fitted = []
        for run, rows in device_samples:
            fitted += add(f"Fits of run {run['run_id']}", f"fits-{run['run_id']}", lambda run=run, rows=rows:
                          fits_section(run, rows, folder, against, profile_prefix), [])
        add("The seeds' figures, recomputed by xferlab's models", "scenarios", lambda: (collect.scenario_section(folder), None))
        add("Advice", "advice", lambda: (advice_section(fitted, against, folder), None))
        failures, failed = guarded("Failures", "failures", lambda: collect.failures_table(db, run_ids))
        if failed is not None:
            sections.append(failed)
        elif failures:
            sections.append(Section("Failures", "failures", tables=[failures]))
        images = {}
        for s in sections:
            for f in list(s.figures):
                try:
                    images[f.path] = base64.b64encode(Path(f.path).read_bytes()).decode("ascii")
                except OSError as error:
                    s.figures.remove(f)
                    s.intro.append(f"plot '{f.title}' could not be read back: {error.strerror or error}")
    inventory = next((r["inventory"] for r in runs if r.get("inventory")), None)
    if inventory is None:  # no run given: the machine the report is made on
        from ..system.inventory import inventory as this_machine

        inventory = this_machine()
    accel = next(((r.get("inventory") or {}).get("accelerator") for r in runs
                  if (r.get("inventory") or {}).get("accelerator")), None)
    return {"title": title, "version": __version__, "store": str(db.path),
            "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "runs": runs, "headlines": headlines, "sections": sections, "images": images, "notes": notes,
            "machine": machine_table({**inventory, "accelerator": accel}),
            "versions": versions_table(next((r["versions"] for r in runs if r.get("versions")), {}))}


def render(context: dict[str, Any]) -> str:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(resources.files("xferlab.report").joinpath("report.html.j2").read_text())
    return template.render(**context, text_keys=TEXT_KEYS, cell=collect.fmt_value)


def check_writable(path: Path, option: str = "report path") -> None:
    """Refuse, before any work, a report path that is a folder or that cannot be written (``option``
    names it in the message: the option the user gave, such as --output)."""
    from ..outputs import check_file

    check_file(Path(path), option)


def write(html: str, path: Path, option: str = "report path") -> Path:
    """Write the report whole or not at all (a temporary file beside it, renamed when complete); a
    path that cannot be written is the user's to fix (exit 2), named with the reason."""
    from ..outputs import write_text

    check_writable(path, option)
    return write_text(Path(path), html, option)


def write_report(runs: Optional[list[str]], output: Path, against: str, name: Optional[str], store: Optional[Path],
                 title: str = "xferlab report", option: str = "report path") -> tuple[Path, str]:
    """Build the report of ``runs`` (None: the newest of each kind) from ``store``, write it to
    ``output``; returns the path and a one-line summary. A bad ``against`` link or profile prefix
    ``name``, or an unwritable ``output`` (named as ``option``), fails before any work."""
    from ..links import resolve
    from ..links.presets import check_profile_name
    from ..store import open_store

    resolve(against)
    if name is not None:
        check_profile_name(name)
    check_writable(output, option)
    with open_store(store, read_only=True) as db:
        context = build(db, runs, profile_prefix=name, against=against, title=title)
    path = write(render(context), output, option)
    return path, (f"report: {len(context['runs'])} runs, {len(context['headlines'])} headline figures, "
                  f"{len(context['images'])} plots")

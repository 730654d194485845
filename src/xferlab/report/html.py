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
from typing import Any, Optional

import jinja2

from .. import __version__
from ..errors import BadFile
from . import collect
from .collect import Section, Table

TEXT_KEYS = {"test", "kind", "direction", "mode", "cpus", "scenario", "figure", "seed", "xferlab", "link", "what",
             "reason", "suite", "run_id", "model", "pattern", "version", "fact", "value", "advice", "fastest",
             "runner_up", "faster_below", "faster_from", "profile", "verdict", "replaced", "by", "strategy", "command",
             "tier", "kernel", "system", "opset", "workload"}


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


def build(db, refs: Optional[list[str]], *, profile_prefix: Optional[str] = None, against: str = "pcie3x16",
          title: str = "xferlab report") -> dict[str, Any]:
    """Everything the template shows, with plots written to a temporary folder and read back as
    base64. Returns the template's context."""
    from .advice import advice_section, fits_section

    run_ids = collect.pick_runs(db, refs)
    runs = [db.run(rid) for rid in run_ids]
    sections: list[Section] = []
    headlines = []
    with tempfile.TemporaryDirectory(prefix="xferlab-report-") as tmp:
        folder = Path(tmp)
        device_samples = []
        for run in runs:
            rows = [collect.flat(s) for s in db.samples(run["run_id"])]
            kinds = collect.kinds_of(rows)
            if "memory" in kinds:
                section, heads = collect.memory_section(db, run, rows, folder, profile_prefix)
                sections.append(section)
                headlines += heads
            if kinds & {"transfers", "chunks", "launch"}:
                section, heads = collect.device_section(db, run, rows, folder)
                sections.append(section)
                headlines += heads
                if "transfers" in kinds:
                    device_samples.append((run, rows))
            if "collab" in kinds:
                sections.append(collect.collab_section(run, rows, folder))
            if "runtime" in kinds:
                sections.append(collect.runtime_section(run, rows, folder))
        fitted = []
        for run, rows in device_samples:
            section, links = fits_section(run, rows, folder, against, profile_prefix)
            sections.append(section)
            fitted += links
        sections.append(collect.scenario_section(folder))
        sections.append(advice_section(fitted, against, folder))
        failures = collect.failures_table(db, run_ids)
        if failures:
            sections.append(Section("Failures", "failures", tables=[failures]))
        images = {f.path: base64.b64encode(Path(f.path).read_bytes()).decode("ascii")
                  for s in sections for f in s.figures}
    inventory = next((r["inventory"] for r in runs if r.get("inventory")), None)
    if inventory is None:  # no run given: the machine the report is made on
        from ..system.inventory import inventory as this_machine

        inventory = this_machine()
    accel = next(((r.get("inventory") or {}).get("accelerator") for r in runs
                  if (r.get("inventory") or {}).get("accelerator")), None)
    return {"title": title, "version": __version__, "store": str(db.path),
            "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "runs": runs, "headlines": headlines, "sections": sections, "images": images,
            "machine": machine_table({**inventory, "accelerator": accel}),
            "versions": versions_table(next((r["versions"] for r in runs if r.get("versions")), {}))}


def render(context: dict[str, Any]) -> str:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(resources.files("xferlab.report").joinpath("report.html.j2").read_text())
    return template.render(**context, text_keys=TEXT_KEYS, cell=collect.fmt_value)


def check_writable(path: Path) -> None:
    """Refuse, before any work, a report path that is a folder or whose folder cannot be made or written."""
    path = Path(path)
    if path.is_dir():
        raise BadFile(f"report path '{path}' is a folder; give a file name such as {path / 'report.html'}")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    import os

    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise BadFile(f"report path '{path}' cannot be written: no write permission in '{parent}'")


def write(html: str, path: Path) -> Path:
    """Write the report; a path that cannot be written is the user's to fix (exit 2), named."""
    path = Path(path)
    if path.is_dir():
        raise BadFile(f"report path '{path}' is a folder; give a file name such as {path / 'report.html'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(html, encoding="utf-8")
        partial.replace(path)
    except OSError as error:
        raise BadFile(f"report path '{path}' cannot be written: {error.strerror or error}") from None
    return path

"""From a `System` and a `Workflow` to the simulator's ops, by data-movement strategy.

For each edge (producer task → consumer task, bytes) of the workflow:

* ``staged``: producer → host memory → consumer, two transfers on the two links through the host
  (one when either end is the host);
* ``direct``: one peer-to-peer transfer on the link between the two devices;
* ``coherent``: no transfer op; the consumer reads the producer's memory over the link while it
  computes (in cache lines: the link's read rate), so it lasts max(its time, bytes / read rate);
* ``pipelined``: the chain of tasks joined by pipelined edges is cut into ``chunk``-byte pieces that
  flow through producer, transfer(s) and consumer stages: a linear pipeline, simulated by the
  discrete-event engine and by the max-plus fast path, which must agree.

Resources are the devices (by name, with their concurrency) and each direction of each link
(``a->b``). A transfer's stand-alone time comes from the link model, ``link.time(bytes, "write")``:
the sender's DMA engine pushes the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import BadValue
from ..system.models import System, Workflow
from .engine import simulate
from .fastpath import pipeline_makespan
from .model import Op, Resource, Timeline, ops_for_pipeline


@dataclass
class FlowResult:
    strategy: str
    timeline: Timeline
    fast_path_seconds: Optional[float] = None  # pipelined: the max-plus makespan, for comparison
    chunks: Optional[int] = None


def _hops(system: System, a: str, b: str, staged: bool) -> list[tuple[str, str]]:
    if staged and system.host not in (a, b):
        return [(a, system.host), (system.host, b)]
    if system.link(a, b) is None:
        raise BadValue(f"system '{system.name}' has no link between '{a}' and '{b}'; give one, or use the staged "
                       "strategy through the host")
    return [(a, b)]


def _resources(system: System) -> list[Resource]:
    out = [Resource(d.name, d.concurrency) for d in system.devices]
    for ref in system.links:
        a, b = ref.between
        out += [Resource(f"{a}->{b}"), Resource(f"{b}->{a}")]
    return out


def build(system: System, workflow: Workflow, strategy: Optional[str] = None) -> tuple[list[Resource], list[Op]]:
    """The DAG of ``workflow`` on ``system``; ``strategy`` overrides every edge's."""
    workflow.check_against(system)
    tasks = {t.name: t for t in workflow.tasks}
    inbound: dict[str, list] = {t.name: [] for t in workflow.tasks}  # one pass: linear in tasks + edges
    for edge in workflow.edges:
        inbound[edge.target].append(edge)
    ops: list[Op] = []
    waits: dict[str, list[str]] = {name: [] for name in tasks}
    slow: dict[str, float] = {}
    for i, edge in enumerate(workflow.edges):
        how = strategy or edge.strategy or workflow.strategy
        src, dst = tasks[edge.source].device, tasks[edge.target].device
        if how == "coherent":
            hops = _hops(system, src, dst, staged=False) if system.link(src, dst) else _hops(system, src, dst, True)
            rate = min(system.link(a, b).peak_rate("read") for a, b in hops)
            slow[edge.target] = max(slow.get(edge.target, 0.0), edge.bytes / rate)
            waits[edge.target].append(edge.source)
            continue
        previous = edge.source
        for k, (a, b) in enumerate(_hops(system, src, dst, staged=how == "staged") if src != dst else []):
            name = f"{edge.source}->{edge.target}#{k}"
            ops.append(Op(name, f"{a}->{b}", float(system.link(a, b).time(edge.bytes, "write")), (previous,),
                          float(edge.bytes), "transfer"))
            previous = name
        waits[edge.target].append(previous)
    for name, task in tasks.items():
        data = sum(e.bytes for e in inbound[name])
        seconds = max(task.duration(data), slow.get(name, 0.0))
        ops.append(Op(name, task.device, seconds, tuple(waits[name])))
    return _resources(system), ops


#: Up to this many chunks the pipelined strategy runs on the discrete-event engine; above, the
#: max-plus fast path (the same makespan, without a timeline of every chunk).
ENGINE_CHUNKS = 200_000


def _pipeline_chunk(workflow: Workflow, chunk: Optional[int]) -> int:
    """The chunk size a pipelined run uses; refused when there is none or no edge to pipeline."""
    chunk = chunk or workflow.chunk
    if chunk is None:
        raise BadValue(f"workflow '{workflow.name}' has no chunk: the pipelined strategy needs --chunk SIZE "
                       "or the workflow's `chunk`")
    if not workflow.edges:
        raise BadValue(f"workflow '{workflow.name}' has no edges: the pipelined strategy moves an edge's bytes in "
                       "chunks; give a workflow whose tasks exchange data, or another --strategy")
    return chunk


def pipelined(system: System, workflow: Workflow, chunk: Optional[int] = None,
              engine: bool = True) -> FlowResult:
    """The workflow as one linear pipeline in chunks: every edge pipelined, the tasks a chain."""
    chunk = _pipeline_chunk(workflow, chunk)
    workflow.check_against(system)
    order = _chain(workflow)
    tasks = {t.name: t for t in workflow.tasks}
    total = workflow.edges[0].bytes
    if any(e.bytes != total for e in workflow.edges):
        raise BadValue("pipelined: every edge of the chain must carry the same bytes")
    if chunk > total:
        raise BadValue(f"--chunk {chunk} bytes is larger than the {total} bytes the workflow moves")
    n = math.ceil(total / chunk)
    names, seconds = [], []
    used: set[str] = set()  # the devices named so far (a set: linear in the tasks)
    for k, name in enumerate(order):
        task = tasks[name]
        names.append(task.device if task.device not in used else f"{task.device}:{name}")
        used.add(task.device)
        seconds.append(task.duration(total, n) / n)  # work split, overhead per chunk
        if k + 1 < len(order):
            src, dst = task.device, tasks[order[k + 1]].device
            for a, b in _hops(system, src, dst, staged=False) if system.link(src, dst) else _hops(system, src, dst, True):
                names.append(f"{a}->{b}")
                seconds.append(float(system.link(a, b).time(chunk, "write")))
    stage = np.asarray(seconds)
    fast = pipeline_makespan(stage, n)
    if not engine:
        return FlowResult("pipelined", None, fast, n)  # type: ignore[arg-type]
    resources, ops = ops_for_pipeline(names, np.repeat(stage[:, None], n, axis=1))
    return FlowResult("pipelined", simulate(resources, ops), fast, n)


def _chain(workflow: Workflow) -> list[str]:
    nxt = {e.source: e.target for e in workflow.edges}
    targets = {e.target for e in workflow.edges}
    starts = [t.name for t in workflow.tasks if t.name not in targets]
    if len(starts) != 1 or len(nxt) != len(workflow.edges) or len(workflow.edges) != len(workflow.tasks) - 1:
        raise BadValue(f"workflow '{workflow.name}': the pipelined strategy needs the tasks to form one chain")
    order = [starts[0]]
    while order[-1] in nxt:
        order.append(nxt[order[-1]])
    return order


def run(system: System, workflow: Workflow, strategy: Optional[str] = None, chunk: Optional[int] = None) -> FlowResult:
    how = strategy or workflow.strategy
    if how == "pipelined":
        chunk = _pipeline_chunk(workflow, chunk)
        return pipelined(system, workflow, chunk, engine=math.ceil(workflow.edges[0].bytes / chunk) <= ENGINE_CHUNKS)
    resources, ops = build(system, workflow, strategy)
    return FlowResult(how, simulate(resources, ops))


def chunk_sweep(system: System, workflow: Workflow, sizes) -> list[dict]:
    """The pipelined workflow's makespan at each chunk size (the max-plus fast path): rows of
    ``chunk_bytes``, ``chunks`` and ``makespan_seconds``. ``simulate sweep`` prints them and
    ``advise chunk`` searches them; both call this one function."""
    rows = []
    for size in sizes:
        result = pipelined(system, workflow, int(size), engine=False)
        rows.append({"chunk_bytes": int(size), "chunks": result.chunks, "makespan_seconds": result.fast_path_seconds})
    return rows

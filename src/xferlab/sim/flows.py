"""From a `System` and a `Workflow` to the simulator's ops, by data-movement strategy.

For each edge (producer task → consumer task, bytes) of the workflow:

* ``staged``: producer → host memory → consumer, two transfers on the two links through the host
  (one when either end is the host);
* ``direct``: one peer-to-peer transfer on the link between the two devices (or the route below);
* ``coherent``: no transfer op; the consumer reads the producer's memory over the link while it
  computes (in cache lines: the link's read rate), so it lasts max(its time, bytes / read rate);
* ``pipelined``: the chain of tasks joined by pipelined edges is cut into ``chunk``-byte pieces that
  flow through producer, transfer(s) and consumer stages: a linear pipeline, simulated by the
  discrete-event engine and by the max-plus fast path, which must agree.

Devices not joined by a link are reached over a route (:meth:`System.route`: the fewest links, through
devices marked ``forwards``, such as the sockets and NICs of ``ac922-8335gtw``): a transfer then crosses
each link in turn, one op per link after the last (store and forward of the whole edge; the pipelined
strategy overlaps the links chunk by chunk).

Resources are the devices (by name, with their concurrency) and each direction of each link
(``a->b``). A transfer's stand-alone time comes from the link model, ``link.time(bytes, "write")``:
the sender's DMA engine pushes the data. A transfer to or from a device with ``copy_engines: 0``
runs on that device instead, between its tasks (one in-order queue does both, as in xferlab's own
DecEval); a pipelined chain then merges the transfer with the device's task into one stage.

CXL device types and a Type 2 device's bias (:mod:`.coherence`): a coherent edge its devices' types
cannot carry is refused; in host bias a Type 2 device's tasks last at least their own memory's bytes
over the link's request rate; in device bias a coherent edge out of one waits for its pages' flips.

Pipelined workflows keep ``depth`` buffers between neighbouring stages, a freed buffer reaching its
producer ``handoff`` seconds later (the fast path's and the engine's finite-buffer rule,
:mod:`.fastpath`); a workflow that is not a chain (fan-out, fan-in) is
pipelined on the discrete-event engine: every task and transfer once per chunk, each on its resource.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import BadValue
from ..system.models import System, Workflow
from . import coherence
from .engine import simulate
from .fastpath import pipeline_makespan
from .model import Op, Resource, Timeline, ops_for_pipeline


@dataclass
class FlowResult:
    strategy: str
    timeline: Timeline
    fast_path_seconds: Optional[float] = None  # pipelined: the max-plus makespan, for comparison
    chunks: Optional[int] = None
    flips: int = 0  # device bias: the bias flips (regions) the workflow implies


def _hops(system: System, a: str, b: str, staged: bool) -> list[tuple[str, str]]:
    """The links a transfer a -> b crosses (:meth:`System.route`), through the host's memory when ``staged``."""
    if staged and system.host not in (a, b):
        ends = [(a, system.host), (system.host, b)]
    else:
        ends = [(a, b)]
    hops = []
    for x, y in ends:
        found = system.route(x, y)
        if not found:
            raise BadValue(f"system '{system.name}' has no link between '{x}' and '{y}' nor a route through devices "
                           "that forward; give one" + ("" if staged else ", or use the staged strategy through the host"))
        hops += found
    return hops


def _carrier(system: System, a: str, b: str) -> tuple[str, str]:
    """The resource and op kind of a transfer a -> b: the link direction, or the receiving (else the
    sending) device when it has no copy engine and its queue moves the data."""
    for end in (b, a):
        device = system.device(end)
        if device is not None and device.copy_engines == 0:
            return end, "task"
    return f"{a}->{b}", "transfer"


def _resources(system: System) -> list[Resource]:
    out = [Resource(d.name, d.concurrency) for d in system.devices]
    for ref in system.links:
        a, b = ref.between
        out += [Resource(f"{a}->{b}"), Resource(f"{b}->{a}")]
    return out


def build(system: System, workflow: Workflow, strategy: Optional[str] = None) -> tuple[list[Resource], list[Op]]:
    """The DAG of ``workflow`` on ``system``; ``strategy`` overrides every edge's."""
    workflow.check_against(system)
    coherence.check_edges(system, workflow, strategy)
    bias = coherence.plan(system, workflow, strategy)
    tasks = {t.name: t for t in workflow.tasks}
    inbound: dict[str, list] = {t.name: [] for t in workflow.tasks}  # one pass: linear in tasks + edges
    for edge in workflow.edges:
        inbound[edge.target].append(edge)
    ops: list[Op] = []
    waits: dict[str, list[str]] = {name: [] for name in tasks}
    slow: dict[str, float] = dict(bias.floor)
    for i, edge in enumerate(workflow.edges):
        how = strategy or edge.strategy or workflow.strategy
        src, dst = tasks[edge.source].device, tasks[edge.target].device
        if how == "coherent":
            hops = _hops(system, src, dst, staged=False) if system.link(src, dst) else _hops(system, src, dst, True)
            rate = min(system.link(a, b).peak_rate("read") for a, b in hops)
            slow[edge.target] = max(slow.get(edge.target, 0.0), edge.bytes / rate)
            flip = bias.flips.get(i)
            if flip is not None:  # device bias: the pages flip to host bias (the host's driver) before the reader
                ops.append(Op(f"{edge.source}->{edge.target}#flip", system.host, flip.seconds, (edge.source,)))
            waits[edge.target].append(f"{edge.source}->{edge.target}#flip" if flip is not None else edge.source)
            continue
        previous = edge.source
        for k, (a, b) in enumerate(_hops(system, src, dst, staged=how == "staged") if src != dst else []):
            name = f"{edge.source}->{edge.target}#{k}"
            resource, kind = _carrier(system, a, b)
            ops.append(Op(name, resource, float(system.link(a, b).time(edge.bytes, "write")), (previous,),
                          float(edge.bytes), kind))
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
    """The workflow in chunks: a chain as one linear pipeline (the fast path, and the engine when
    ``engine``), any other DAG on the engine, every edge pipelined, ``workflow.depth`` buffers deep."""
    chunk = _pipeline_chunk(workflow, chunk)
    workflow.check_against(system)
    coherence.plan(system, workflow, "pipelined")  # refuses a bias: not modelled pipelined
    order = chain(workflow)
    if order is None:
        return _pipelined_dag(system, workflow, chunk)
    tasks = {t.name: t for t in workflow.tasks}
    total = workflow.edges[0].bytes
    if any(e.bytes != total for e in workflow.edges):
        raise BadValue("pipelined: every edge of the chain must carry the same bytes")
    if chunk > total:
        raise BadValue(f"--chunk {chunk} bytes is larger than the {total} bytes the workflow moves")
    n = math.ceil(total / chunk)
    names: list[str] = []
    seconds: list[float] = []
    release: list[float] = []  # when into each chunk a stage frees its input buffer

    def stage(name: str, time: float) -> None:
        if names and names[-1] == name:  # a transfer in the device's own queue, then its task: one stage,
            seconds[-1] += time          # whose input buffer is free once the transfer is done
        else:
            names.append(name)
            seconds.append(time)
            release.append(time)

    used: set[str] = set()  # the devices named so far (a set: linear in the tasks)
    for k, name in enumerate(order):
        task = tasks[name]
        carried = bool(names) and names[-1] == task.device  # its input came through its own queue
        stage(task.device if task.device not in used or carried else f"{task.device}:{name}",
              task.duration(total, n) / n)  # work split, overhead per chunk
        used.add(task.device)
        if k + 1 < len(order):
            src, dst = task.device, tasks[order[k + 1]].device
            for a, b in _hops(system, src, dst, staged=False) if system.link(src, dst) else _hops(system, src, dst, True):
                resource, _ = _carrier(system, a, b)
                stage(resource if resource not in used or resource == dst else f"{resource}:{a}->{b}",
                      float(system.link(a, b).time(chunk, "write")))
    stage_seconds = np.asarray(seconds)
    fast = pipeline_makespan(stage_seconds, n, workflow.depth, release, workflow.handoff)
    if not engine:
        return FlowResult("pipelined", None, fast, n)  # type: ignore[arg-type]
    resources, ops = ops_for_pipeline(names, np.repeat(stage_seconds[:, None], n, axis=1), depth=workflow.depth,
                                      release=release, handoff=workflow.handoff)
    return FlowResult("pipelined", simulate(resources, ops), fast, n)


#: A pipelined workflow that is not a chain runs on the engine: at most this many ops (tasks and
#: transfers, all chunks).
DAG_OPS = 2_000_000


def _pipelined_dag(system: System, workflow: Workflow, chunk: int) -> FlowResult:
    """Any DAG in chunks: each edge's bytes cut into n pieces (n from the largest edge and ``chunk``),
    every task run once per chunk on its share of its input, each chunk's ops after the same chunk's
    inputs; a producer's chunk i also waits until its consumers took chunk i - depth."""
    largest = max(e.bytes for e in workflow.edges)
    if chunk > largest:
        raise BadValue(f"--chunk {chunk} bytes is larger than the {largest} bytes of the workflow's largest edge")
    n = math.ceil(largest / chunk)
    tasks = {t.name: t for t in workflow.tasks}
    inbound: dict[str, list] = {name: [] for name in tasks}
    for edge in workflow.edges:
        inbound[edge.target].append(edge)
    per_chunk = len(tasks) + sum(len(_hops(system, tasks[e.source].device, tasks[e.target].device, False)
                                      if system.link(tasks[e.source].device, tasks[e.target].device) else [1, 1])
                                 for e in workflow.edges)
    if per_chunk * n > DAG_OPS:
        raise BadValue(f"--chunk {chunk} bytes cuts the workflow into {n:,} chunks of {per_chunk} ops each; a workflow "
                       f"that is not a chain is simulated op by op, at most {DAG_OPS:,} ops: give a larger chunk")
    order = _topological(workflow)
    ops: list[Op] = []
    first_reader: dict[str, list[str]] = {name: [] for name in tasks}  # producer -> the ops that take its output
    for i in range(n):
        done: dict[str, list[str]] = {name: [] for name in tasks}  # task -> what it waits for in this chunk
        for name in order:
            task = tasks[name]
            after = list(done[name])
            if i >= workflow.depth:
                after += [f"{op}#{i - workflow.depth}" for op in first_reader[name]]
            data = sum(e.bytes for e in inbound[name])
            ops.append(Op(f"{name}#{i}", task.device, task.duration(data, n) / n, tuple(after)))
            for edge in (e for e in workflow.edges if e.source == name):
                dst = tasks[edge.target].device
                previous = f"{name}#{i}"
                hops = _hops(system, task.device, dst, staged=False) if system.link(task.device, dst) else \
                    _hops(system, task.device, dst, True)
                for k, (a, b) in enumerate(hops if task.device != dst else []):
                    op = f"{edge.source}->{edge.target}#{k}"
                    resource, kind = _carrier(system, a, b)
                    piece = edge.bytes / n
                    ops.append(Op(f"{op}#{i}", resource, float(system.link(a, b).time(piece, "write")), (previous,),
                                  float(piece), kind))
                    if i == 0 and k == 0:
                        first_reader[name].append(op)
                    previous = f"{op}#{i}"
                if i == 0 and task.device == dst:
                    first_reader[name].append(edge.target)
                done[edge.target].append(previous)
    return FlowResult("pipelined", simulate(_resources(system), ops), None, n)


def _topological(workflow: Workflow) -> list[str]:
    waiting = {t.name: 0 for t in workflow.tasks}
    for e in workflow.edges:
        waiting[e.target] += 1
    ready = [name for name, w in waiting.items() if not w]
    order = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for e in workflow.edges:
            if e.source == name:
                waiting[e.target] -= 1
                if not waiting[e.target]:
                    ready.append(e.target)
    return order


def chain(workflow: Workflow) -> Optional[list[str]]:
    """The tasks in order if they form one chain, else None."""
    nxt = {e.source: e.target for e in workflow.edges}
    targets = {e.target for e in workflow.edges}
    starts = [t.name for t in workflow.tasks if t.name not in targets]
    if len(starts) != 1 or len(nxt) != len(workflow.edges) or len(workflow.edges) != len(workflow.tasks) - 1 \
            or len(targets) != len(workflow.edges):
        return None
    order = [starts[0]]
    while order[-1] in nxt:
        order.append(nxt[order[-1]])
    return order


def run(system: System, workflow: Workflow, strategy: Optional[str] = None, chunk: Optional[int] = None) -> FlowResult:
    how = strategy or workflow.strategy
    if how == "pipelined":
        chunk = _pipeline_chunk(workflow, chunk)
        return pipelined(system, workflow, chunk,
                         engine=math.ceil(max(e.bytes for e in workflow.edges) / chunk) <= ENGINE_CHUNKS)
    resources, ops = build(system, workflow, strategy)
    return FlowResult(how, simulate(resources, ops), flips=coherence.plan(system, workflow, strategy).flip_count)


def makespan(system: System, workflow: Workflow, strategy: Optional[str] = None, chunk: Optional[int] = None) -> float:
    """One point's makespan, as sweeps and what-ifs ask for it: the max-plus fast path for a pipelined
    chain (no timeline), the discrete-event engine otherwise."""
    if (strategy or workflow.strategy) == "pipelined" and chain(workflow) is not None:
        return float(pipelined(system, workflow, chunk, engine=False).fast_path_seconds)
    return float(run(system, workflow, strategy, chunk).timeline.makespan)


def chunk_sweep(system: System, workflow: Workflow, sizes) -> list[dict]:
    """The pipelined workflow's makespan at each chunk size (the max-plus fast path): rows of
    ``chunk_bytes``, ``chunks`` and ``makespan_seconds``. ``simulate sweep`` prints them and
    ``advise chunk`` searches them; both call this one function."""
    rows = []
    if chain(workflow) is None:
        raise BadValue(f"workflow '{workflow.name}' is not a chain: a chunk sweep runs the fast path of a linear "
                       "pipeline; simulate a chunk size at a time with `xferlab simulate run --strategy pipelined --chunk`")
    for size in sizes:
        result = pipelined(system, workflow, int(size), engine=False)
        rows.append({"chunk_bytes": int(size), "chunks": result.chunks, "makespan_seconds": result.fast_path_seconds})
    return rows

"""What CXL device types and a Type 2 device's bias do to a workflow (the models: :mod:`xferlab.links.coherence`).

* **Device types**: a ``coherent`` edge has its consumer read the producer's memory. Where either end is a
  typed CXL device (``cxl_type`` in the system), the reader must run CXL.cache (Type 1 or 2) unless it is
  the host, and the owner must run CXL.mem (Type 2 or 3) unless it is the host; an edge that asks for a
  sub-protocol its device lacks is refused. ``staged`` and ``direct`` edges are DMA over CXL.io, which every
  type runs. A Type 3 device runs no tasks (:meth:`xferlab.system.models.Workflow.check_against`).
* **Host bias** (``bias: host``): a task on a Type 2 device reaches its own memory through the host's
  coherence, a CXL.cache request per line, so it lasts at least (bytes it touches there) / the request rate of
  its link to the host. The bytes it touches there: the task's ``memory_bytes`` (a kernel that sweeps its data
  ten times touches ten times its bytes), else every edge out of it (its output, written to its memory) and
  every edge into it whose data sits in its memory (copied there by a ``staged`` or ``direct`` edge, or
  produced on the same device).
* **Device bias** (``bias: device``): those accesses stay on the device and cost nothing extra; but a
  ``coherent`` edge out of a Type 2 device lets another agent read its memory, so the pages the edge's bytes
  span flip to host bias first: one op ``P->C#flip`` on the host (the driver runs the flip), after the
  producer and before the consumer, lasting flips x the device's ``bias_flip`` (or the cost derived from
  its link). ``staged`` and ``direct`` edges out of it are the device's own DMA reads: no flip.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BadValue
from ..links.coherence import flip_seconds, flips, refusal, request_rate
from ..system.models import System, Workflow


@dataclass
class Flip:
    """The flips a coherent edge implies: how many, and their time together."""

    edge: int
    count: int
    seconds: float


@dataclass
class BiasPlan:
    floor: dict[str, float] = field(default_factory=dict)  #: task -> its least time in host bias
    flips: dict[int, Flip] = field(default_factory=dict)  #: edge index -> its flips in device bias

    @property
    def flip_count(self) -> int:
        return sum(f.count for f in self.flips.values())


def check_edges(system: System, workflow: Workflow, strategy: str | None) -> None:
    """Refuse a coherent edge whose devices' CXL types cannot carry it (one line, naming the edge)."""
    tasks = {t.name: t for t in workflow.tasks}
    for i, edge in enumerate(workflow.edges):
        if (strategy or edge.strategy or workflow.strategy) != "coherent":
            continue
        owner, reader = system.device(tasks[edge.source].device), system.device(tasks[edge.target].device)
        if owner is None or reader is None or owner.name == reader.name:
            continue
        why = refusal(reader.name, reader.cxl_type, owner.name, owner.cxl_type, system.host)
        if why:
            raise BadValue(f"workflow '{workflow.name}' edges[{i}] ({edge.source} -> {edge.target}, coherent): {why}; "
                           "use the staged or direct strategy (DMA over CXL.io), or another device type")


def plan(system: System, workflow: Workflow, strategy: str | None) -> BiasPlan:
    """The costs ``workflow.bias`` puts on the Type 2 devices' tasks (host bias) or edges (device bias)."""
    out = BiasPlan()
    if workflow.bias is None:
        return out
    if (strategy or workflow.strategy) == "pipelined":
        raise BadValue(f"workflow '{workflow.name}' bias: {workflow.bias}: the bias is modelled for the staged, direct "
                       "and coherent strategies; leave bias unset to run it pipelined")
    tasks = {t.name: t for t in workflow.tasks}
    typed = {d.name: d for d in system.devices if d.cxl_type == 2}
    for i, edge in enumerate(workflow.edges):
        how = strategy or edge.strategy or workflow.strategy
        src, dst = tasks[edge.source].device, tasks[edge.target].device
        if workflow.bias == "host":
            if src in typed:  # its output, written to its own memory
                out.floor[edge.source] = out.floor.get(edge.source, 0.0) + edge.bytes
            if dst in typed and (how != "coherent" or src == dst):  # input sitting in its own memory
                out.floor[edge.target] = out.floor.get(edge.target, 0.0) + edge.bytes
        elif how == "coherent" and src in typed and src != dst:
            device = typed[src]
            count = flips(edge.bytes, device.bias_page)
            each = device.bias_flip if device.bias_flip is not None else \
                flip_seconds(system.link(src, system.host), device.bias_page)
            out.flips[i] = Flip(i, count, count * each)
    if workflow.bias == "host":
        out.floor.update({t.name: float(t.memory_bytes) for t in workflow.tasks if t.memory_bytes is not None})
    for name, touched in out.floor.items():
        out.floor[name] = touched / request_rate(system.link(tasks[name].device, system.host))
    return out

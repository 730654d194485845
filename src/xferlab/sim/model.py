"""The flow simulator's inputs and output: plain dataclasses, independent of YAML and pydantic.

A flow is a DAG of :class:`Op` s, each bound to one :class:`Resource`:

* a *device* (CPU, FPGA kernel, GPU kernel, a DMA engine) runs ``task`` ops, ``capacity`` at a time;
  the others wait their turn, first come first served;
* one *direction of a link* carries ``transfer`` ops; concurrent transfers share its bandwidth
  fairly (processor sharing), ``capacity`` > 1 meaning that many independent channels.

An op's ``seconds`` is its duration when it runs alone: for a transfer, the caller computes it from a
:class:`xferlab.links.Link` (``link.time(n_bytes, op)``, latency included). Everything is SI: seconds
and bytes. :func:`xferlab.sim.engine.simulate` turns ``(resources, ops)`` into a :class:`Timeline`;
:func:`ops_for_pipeline` builds the DAG of a linear pipeline so that the discrete-event engine can be
checked against the vectorized fast path (:mod:`xferlab.sim.fastpath`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..errors import BadValue

KINDS: tuple[str, ...] = ("task", "transfer")


@dataclass(frozen=True)
class Resource:
    """A device (runs tasks) or one direction of a link (carries transfers)."""

    name: str
    #: devices: tasks that run at once; links: independent channels (1 = one shared channel)
    capacity: int = 1


@dataclass(frozen=True)
class Op:
    """One activity of the DAG."""

    name: str
    resource: str  #: the :attr:`Resource.name` it runs on
    seconds: float  #: its duration when it runs alone (transfers: from a Link model, latency included)
    after: tuple[str, ...] = ()  #: names of the ops that must finish before it starts
    bytes: float = 0.0  #: bytes moved (transfers), for accounting
    kind: str = "task"  #: "task" | "transfer"


class Span(NamedTuple):
    """When one op ran: it held its resource (or shared its link) from ``start`` to ``end``."""

    resource: str
    start: float
    end: float
    kind: str
    bytes: float


@dataclass(frozen=True)
class Usage:
    """What one resource did during the simulated flow."""

    resource: str
    capacity: int
    busy_seconds: float  #: time during which it ran (or carried) at least one op
    work_seconds: float  #: sum of its ops' stand-alone durations (= busy_seconds on a serial resource)
    utilization: float  #: busy_seconds / makespan (0 when the makespan is 0)
    bytes: float  #: bytes of its ops, added up
    ops: int  #: how many ops it ran


@dataclass(eq=False)
class Timeline:
    """The result of a simulation (seconds from the start of the flow).

    Per op, in the input's op order: ``ops`` (the input), ``start`` and ``end`` (numpy arrays, handy
    for plots); :attr:`spans` gives the same by op name.
    """

    ops: list[Op]
    start: np.ndarray
    end: np.ndarray
    resources: dict[str, Usage]  #: per resource name, in the input's order
    makespan: float  #: when the last op finished
    #: the chain of ops whose finish determined the makespan, first to last: from the last op to
    #: finish, each step goes to the resource predecessor if the op waited for its resource, else to
    #: its latest-finishing predecessor
    critical_path: list[str] = field(default_factory=list)

    @cached_property
    def spans(self) -> dict[str, Span]:
        """Per op name: its resource, start, end, kind and bytes (built on first use)."""
        return {op.name: Span(op.resource, s, e, op.kind, op.bytes)
                for op, s, e in zip(self.ops, self.start.tolist(), self.end.tolist())}

    def rows(self) -> list[dict[str, Any]]:
        """One dict per op, snake_case keys with their unit, for ``--json`` and ``--csv`` output."""
        return [
            {"op": name, "resource": s.resource, "kind": s.kind, "start_seconds": s.start,
             "end_seconds": s.end, "size_bytes": s.bytes}
            for name, s in self.spans.items()
        ]


def ops_for_pipeline(
    stage_resources: Sequence[str],
    stage_seconds: Any,
    stage_bytes: Any = None,
    depth: int | None = None,
    release: Any = None,
    handoff: float = 0.0,
) -> tuple[list[Resource], list[Op]]:
    """The DAG of a linear pipeline, for :func:`xferlab.sim.engine.simulate`.

    ``stage_seconds`` has shape ``(stages, chunks)``: the duration of stage ``s`` on chunk ``i``.
    Stage ``s`` runs on its own resource ``stage_resources[s]`` (capacity 1, so the resource
    serializes the chunks, in chunk order since they become ready in that order); chunk ``i`` of stage
    ``s`` comes after chunk ``i`` of stage ``s - 1``. Ops are named ``"<resource>#<chunk>"`` and are
    all tasks: a link stage here is a DMA engine moving one chunk at a time, which is what the
    fast path's recurrence assumes. ``stage_bytes`` (optional, same shape or broadcastable) is kept
    for accounting. ``depth``: buffers between neighbouring stages; chunk ``i`` of stage ``s`` then
    also waits for chunk ``i - depth`` of stage ``s + 1`` (the buffer it writes is free again).
    ``release[s]`` (seconds, per stage): stage ``s`` frees its input that far into each chunk; such a
    stage is two ops per chunk on its resource, ``"<resource>#<chunk>:in"`` (up to the release, what
    the depth rule waits for) and ``"<resource>#<chunk>"`` (the rest), each chunk's first after the
    previous chunk's second (one in-order queue). ``handoff`` (seconds) delays each such wait: an op
    ``"<resource>#<chunk>~handoff"`` on a resource of its own (one slot per chunk, so they never queue).
    """
    names = [str(r) for r in stage_resources]
    seconds = np.asarray(stage_seconds, dtype=np.float64)
    if seconds.ndim != 2 or seconds.shape[0] != len(names):
        raise BadValue(f"pipeline stage_seconds: shape {seconds.shape} is not (stages={len(names)}, chunks)")
    seen: set[str] = set()
    for s, name in enumerate(names):
        if name in seen:
            raise BadValue(f"pipeline stage {s + 1} of {len(names)} uses '{name}' again: each stage needs its own "
                           "resource (a pipelined chain may cross each link once in each direction)")
        seen.add(name)
    sizes = np.broadcast_to(np.asarray(0.0 if stage_bytes is None else stage_bytes, dtype=np.float64),
                            seconds.shape)
    resources = [Resource(name) for name in names]
    if handoff and depth:
        resources += [Resource(f"{name}~handoff", max(1, seconds.shape[1])) for name in names]
    ops: list[Op] = []
    free = None if release is None else np.asarray(release, dtype=np.float64)
    split = [free is not None and bool((free[s] < seconds[s]).any()) for s in range(len(names))]
    for i in range(seconds.shape[1]):
        for s, name in enumerate(names):
            after = (f"{names[s - 1]}#{i}",) if s else ()
            if depth and i >= depth and s + 1 < len(names):
                freed = f"{names[s + 1]}#{i - depth}" + (":in" if split[s + 1] else "")
                if handoff:
                    ops.append(Op(f"{name}#{i}~handoff", f"{name}~handoff", float(handoff), (freed,)))
                    freed = f"{name}#{i}~handoff"
                after += (freed,)
            if split[s]:
                first = min(float(free[s]), float(seconds[s, i]))
                ops.append(Op(f"{name}#{i}:in", name, first, after + ((f"{name}#{i - 1}",) if i else ()), 0.0))
                ops.append(Op(f"{name}#{i}", name, float(seconds[s, i]) - first, (f"{name}#{i}:in",), float(sizes[s, i])))
            else:
                ops.append(Op(f"{name}#{i}", name, float(seconds[s, i]), after, float(sizes[s, i])))
    return resources, ops

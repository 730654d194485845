"""The discrete-event engine: a DAG of ops on devices and links, simulated with SimPy.

SimPy (https://simpy.readthedocs.io, "SimPy: discrete-event simulation in Python") is the event
core: :func:`simulate` creates a ``simpy.Environment`` and only ever schedules SimPy events
(``Request``/``Release`` of a ``simpy.Resource``, ``Timeout``, plain ``Event``) with callbacks, then
runs ``env.run()``. Ops are driven by event callbacks rather than one generator process each, which
keeps this modeling layer as fast as a hand-written SimPy model (``benchmarks/bench_sim.py``).

Semantics
---------
* An op becomes *ready* when all of its ``after`` ops have finished. Ops that become ready in the
  same instant are collected and started together, in the input's op order: so a resource serves
  its ops first come first served in the order of readiness, ties broken by op order.
* A **device** is a ``simpy.Resource(capacity)``: a ready task requests a slot, holds it for its
  ``seconds``, releases it; the others wait in the resource's FIFO queue.
* A **link direction** carries transfers under *fair sharing* (processor sharing): with ``k``
  transfers active on a link of ``capacity`` c channels, each progresses at ``min(1, c / k)`` of its
  stand-alone speed. Two equal transfers started together thus both finish after twice the time one
  takes alone, and the link is busy for the sum of its transfers' stand-alone times, i.e. for the
  bytes it carries divided by its rate (plus the latencies). The rates are recomputed whenever a
  transfer starts or ends, using a *virtual time* V (the service one transfer has received since the
  link was created, dV/dt = min(1, c/k)): a transfer of stand-alone time w that starts at virtual
  time V0 finishes when V reaches V0 + w, so one SimPy ``Timeout`` to the earliest such finish is
  enough, re-armed at each start or end (a superseded timeout is ignored when it fires).

A resource runs either tasks or transfers, never both. Input errors (unknown names, cycles, negative
durations, ...) raise :class:`xferlab.errors.BadValue` naming the op and the field.
"""

from __future__ import annotations

import heapq
import math
import numbers
from typing import Iterable

import numpy as np
import simpy

from ..errors import BadValue, suggest
from .model import KINDS, Op, Resource, Timeline, Usage


class _Plan:
    """Validated input, as indices: what the simulation loop needs."""

    def __init__(self, resources: list[Resource], ops: list[Op]) -> None:
        self.resources = resources
        self.ops = ops
        self.res_index: dict[str, int] = {}
        for r in resources:
            if r.name in self.res_index:
                raise BadValue(f"resource {r.name!r}: name is defined twice")
            if isinstance(r.capacity, bool) or not isinstance(r.capacity, numbers.Integral) or r.capacity < 1:
                raise BadValue(f"resource {r.name!r}: capacity = {r.capacity!r}; allowed: an integer >= 1")
            self.res_index[r.name] = len(self.res_index)
        op_index = {op.name: i for i, op in enumerate(ops)}
        if len(op_index) != len(ops):
            seen: set[str] = set()
            twice = next(op.name for op in ops if op.name in seen or seen.add(op.name))
            raise BadValue(f"op {twice!r}: name is defined twice")
        self.op_index = op_index

        self.res_of: list[int] = []
        self.npreds: list[int] = []  # how many distinct ops each op waits for
        self.succs: list[list[int]] = [[] for _ in ops]
        kind_of_res: list[str | None] = [None] * len(resources)
        res_index, res_of, npreds, succs = self.res_index, self.res_of, self.npreds, self.succs
        inf = math.inf
        for i, op in enumerate(ops):  # the common case stays cheap; _reject says what is wrong
            r = res_index.get(op.resource)
            kind = op.kind
            try:
                good = 0 <= op.seconds < inf and 0 <= op.bytes < inf  # False for NaN too
            except TypeError:
                good = False
            if r is None or kind_of_res[r] != kind or not good:
                if r is not None and kind_of_res[r] is None and kind in KINDS:
                    kind_of_res[r] = kind  # the first op on a resource says what it is
                if r is None or kind_of_res[r] != kind or not good:
                    self._reject(op, kind_of_res)
            res_of.append(r)
            after = op.after
            if len(after) > 1:
                after = dict.fromkeys(after)  # each counts once
            for name in after:
                j = op_index.get(name)
                if j is None:
                    raise BadValue(f"op {op.name!r}: after = {name!r} is not an op; "
                                   f"{suggest(name, list(op_index))}")
                succs[j].append(i)
            npreds.append(len(after))
        self.is_link = [kind == "transfer" for kind in kind_of_res]
        self._check_acyclic()

    def preds(self, i: int) -> list[int]:
        """The ops that op ``i`` waits for, in its ``after`` order."""
        return [self.op_index[name] for name in dict.fromkeys(self.ops[i].after)]

    def _reject(self, op: Op, kind_of_res: list[str | None]) -> None:
        """Raise the BadValue that names what is wrong with ``op`` (its resource, kind or a number)."""
        where = f"op {op.name!r}"
        if op.resource not in self.res_index:
            raise BadValue(f"{where}: resource = {op.resource!r} is not defined; "
                           f"{suggest(op.resource, list(self.res_index))}")
        if op.kind not in KINDS:
            raise BadValue(f"{where}: kind = {op.kind!r}; allowed: {', '.join(KINDS)}")
        previous = kind_of_res[self.res_index[op.resource]]
        if previous not in (None, op.kind):
            raise BadValue(f"{where}: kind = {op.kind!r} on resource {op.resource!r}, which runs "
                           f"{previous} ops; a resource is a device (tasks) or a link (transfers)")
        for value, name in ((op.seconds, "seconds"), (op.bytes, "bytes")):
            if not _number_ok(value):
                raise BadValue(f"{where}: {name} = {value!r}; allowed: a finite number >= 0")
        raise AssertionError(f"{where}: rejected without a reason")  # unreachable

    def _check_acyclic(self) -> None:
        """Kahn's algorithm; if some ops are never freed, walk their predecessors to name a cycle."""
        waiting = self.npreds.copy()
        stack = [i for i, w in enumerate(waiting) if w == 0]
        freed = 0
        while stack:
            i = stack.pop()
            freed += 1
            for j in self.succs[i]:
                waiting[j] -= 1
                if waiting[j] == 0:
                    stack.append(j)
        if freed == len(self.ops):
            return
        # Every op left has a predecessor that is left too: following them must repeat an op.
        seen: dict[int, int] = {}
        walk: list[int] = []
        i = next(k for k, w in enumerate(waiting) if w > 0)
        while i not in seen:
            seen[i] = len(walk)
            walk.append(i)
            i = next(j for j in self.preds(i) if waiting[j] > 0)
        cycle = walk[seen[i]:][::-1]  # the walk went backwards, from op to predecessor
        names = [self.ops[k].name for k in cycle] + [self.ops[cycle[0]].name]
        raise BadValue(f"op {names[0]!r}: after = … forms a cycle: {' -> '.join(names)}")


def _number_ok(value) -> bool:
    """True for a finite number >= 0 (False for NaN, infinities, negatives and non-numbers)."""
    try:
        return 0 <= value < math.inf
    except TypeError:
        return False


class _FairShareLink:
    """One link direction: its active transfers share ``capacity`` channels of bandwidth fairly."""

    def __init__(self, env: simpy.Environment, capacity: int, on_done) -> None:
        self.env = env
        self.capacity = capacity
        self.on_done = on_done  # called with the op index when a transfer completes
        self.active: list[tuple[float, int]] = []  # heap of (virtual finish time, op index)
        self.virtual = 0.0  # V: service received by each active transfer since the start
        self.since = 0.0  # simulated time at which `virtual` was last brought up to date
        self.timer: simpy.Event | None = None

    def _rate(self) -> float:
        return min(1.0, self.capacity / len(self.active)) if self.active else 0.0

    def _advance(self) -> None:
        now = self.env.now
        self.virtual += (now - self.since) * self._rate()
        self.since = now

    def _arm(self) -> None:
        if not self.active:
            self.timer = None
            self.virtual = 0.0  # idle: restart the virtual clock (keeps it small and exact)
            return
        delay = max(0.0, (self.active[0][0] - self.virtual) / self._rate())
        self.timer = self.env.timeout(delay)
        self.timer.callbacks.append(self._fire)

    def add(self, i: int, seconds: float) -> None:
        self._advance()
        heapq.heappush(self.active, (self.virtual + seconds, i))
        self._arm()

    def _fire(self, timer: simpy.Event) -> None:
        if timer is not self.timer:
            return  # superseded by a later start or end
        self._advance()
        finish, i = heapq.heappop(self.active)  # the transfer this timer was armed for
        self.virtual = finish
        done = [i]
        tolerance = 1e-12 * abs(finish)
        while self.active and self.active[0][0] - finish <= tolerance:  # equal transfers end together
            done.append(heapq.heappop(self.active)[1])
        self._arm()
        for i in sorted(done):
            self.on_done(i)


def simulate(resources: Iterable[Resource], ops: Iterable[Op]) -> Timeline:
    """Simulate the DAG ``ops`` on ``resources`` with SimPy and return its :class:`Timeline`.

    Raises :class:`xferlab.errors.BadValue` (naming the op or resource and the field) for duplicate
    names, unknown resources or predecessors, cycles, durations or byte counts that are negative or
    not finite, unknown kinds, and a resource given both tasks and transfers.
    """
    plan = _Plan(list(resources), list(ops))
    n = len(plan.ops)
    env = simpy.Environment()
    seconds = [op.seconds for op in plan.ops]
    res_of, succs = plan.res_of, plan.succs
    waiting = plan.npreds.copy()
    ready_at = [0.0] * n
    start = [0.0] * n
    end = [0.0] * n
    waited_for = [-1] * n  # the op whose release let this one in (if it waited for its resource)
    last_done = [-1] * len(plan.resources)
    pending: list[int] = []  # ops that became ready in this instant, not yet started
    flush_armed = False

    def finished(i: int, release: simpy.Event | None = None) -> None:
        """Op ``i`` ends now; its successors that become ready start once every op ending in this
        instant is processed: ``flush`` runs as a callback of an event scheduled now, after the
        ones already due (the device's Release event if there is one, else a new event)."""
        nonlocal flush_armed
        end[i] = env.now
        last_done[res_of[i]] = i
        for j in succs[i]:
            waiting[j] -= 1
            if not waiting[j]:
                pending.append(j)
        if pending and not flush_armed:
            flush_armed = True
            if release is None:
                release = env.event()
                release.succeed()
            release.callbacks.append(flush)

    def flush(_event: simpy.Event | None = None) -> None:
        nonlocal flush_armed
        flush_armed = False
        now = env.now
        batch = sorted(pending)  # ties in readiness: op order
        pending.clear()
        for i in batch:
            ready_at[i] = now
            r = res_of[i]
            if r in links:
                start[i] = now
                links[r].add(i, seconds[i])
            else:
                request = devices[r].request()
                request.op = i
                request.callbacks.append(granted)

    def granted(request: simpy.Event) -> None:
        i = request.op
        now = start[i] = env.now
        if now > ready_at[i]:
            waited_for[i] = last_done[res_of[i]]
        timeout = env.timeout(seconds[i])
        timeout.request = request
        timeout.callbacks.append(task_done)

    def task_done(timeout: simpy.Event) -> None:
        request = timeout.request
        finished(request.op, request.resource.release(request))

    devices: dict[int, simpy.Resource] = {}
    links: dict[int, _FairShareLink] = {}
    for r, res in enumerate(plan.resources):
        if plan.is_link[r]:
            links[r] = _FairShareLink(env, int(res.capacity), finished)
        else:
            devices[r] = simpy.Resource(env, capacity=int(res.capacity))

    pending.extend(i for i in range(n) if not waiting[i])
    flush()
    env.run()
    return _timeline(plan, start, end, waited_for)


def _timeline(plan: _Plan, start: list[float], end: list[float], waited_for: list[int]) -> Timeline:
    ops, resources, n = plan.ops, plan.resources, len(plan.ops)
    starts, ends = np.array(start, dtype=np.float64), np.array(end, dtype=np.float64)
    if not n:
        usage = {res.name: Usage(res.name, res.capacity, 0.0, 0.0, 0.0, 0.0, 0) for res in resources}
        return Timeline(ops, starts, ends, resources=usage, makespan=0.0, critical_path=[])

    res_of = np.array(plan.res_of)
    makespan = float(ends.max())
    count = np.bincount(res_of, minlength=len(resources))
    work = np.bincount(res_of, weights=[op.seconds for op in ops], minlength=len(resources))
    size = np.bincount(res_of, weights=[op.bytes for op in ops], minlength=len(resources))
    # Busy time: the length of the union of [start, end] per resource. Sorted by (resource, start),
    # an interval adds what reaches past the latest end of those before it on the same resource.
    order = np.lexsort((starts, res_of))
    s, e, r = starts[order], ends[order], res_of[order]
    first = np.r_[True, r[1:] != r[:-1]]
    reach = np.empty_like(e)
    for a, b in zip(np.flatnonzero(first), np.r_[np.flatnonzero(first)[1:], len(e)]):
        reach[a:b] = np.maximum.accumulate(e[a:b])
    before = np.where(first, -np.inf, np.r_[-np.inf, reach[:-1]])
    busy = np.bincount(r, weights=np.maximum(0.0, e - np.maximum(s, before)), minlength=len(resources))
    usage = {
        res.name: Usage(resource=res.name, capacity=res.capacity, busy_seconds=float(busy[k]),
                        work_seconds=float(work[k]), utilization=float(busy[k] / makespan) if makespan else 0.0,
                        bytes=float(size[k]), ops=int(count[k]))
        for k, res in enumerate(resources)
    }

    # Critical path: back from the last op to finish (the first listed, if several).
    path: list[str] = []
    i, seen = int(np.argmax(ends)), set()
    while i >= 0 and i not in seen:
        seen.add(i)
        path.append(ops[i].name)
        if waited_for[i] >= 0:
            i = waited_for[i]  # it waited for its resource: the op whose release let it in
        elif plan.npreds[i]:
            i = max(plan.preds(i), key=end.__getitem__)  # its latest-finishing predecessor
        else:
            i = -1
    path.reverse()
    return Timeline(ops, starts, ends, resources=usage, makespan=makespan, critical_path=path)

"""`System` (devices and the links between them) and `Workflow` (tasks and the data they exchange),
as YAML files describe them, validated by pydantic. `xferlab schema system|workflow` prints their
JSON Schema; :mod:`xferlab.system.yamlfile` reads them with errors that name file, line and field.

A system::

    kind: system
    name: seed-testbed
    host: host                      # the device whose memory staged transfers bounce through
    devices:
      - {name: host, kind: cpu}
      - {name: fpga, kind: fpga}
      - {name: gpu, kind: gpu}
    links:                          # a LINK as `xferlab model` takes it: preset[:overrides]
      - {between: [host, fpga], link: pcie3x16}
      - {between: [host, gpu], link: pcie3x16}
      - {between: [fpga, gpu], link: pcie3x16}

A workflow::

    kind: workflow
    name: deceval
    tasks:
      - {name: decompress, device: fpga, seconds: 7.70}
      - {name: integrate, device: gpu, seconds: 0.36}
    edges:
      - {from: decompress, to: integrate, bytes: 1.6GB}
    strategy: staged                # staged | direct | coherent | pipelined
    chunk: 16MB                     # pipelined: bytes per chunk
    bias: host                      # a CXL Type 2 device's memory: host or device bias (unset: not modelled)

A device on a CXL link may give its CXL device type (``cxl_type: 1|2|3``, the sub-protocols it runs:
:mod:`xferlab.links.coherence`): a coherent edge its type cannot carry is refused, and a Type 2 device's
own accesses follow the workflow's ``bias`` (``bias_flip``/``bias_page``: a flip's cost and size).
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..links import Link, resolve
from ..links.base import Bytes, Rate, Seconds
from ..links.coherence import PAGE_BYTES, described, is_cxl

MAX_NAME = 120  # characters in the name of a system, workflow, device or task


def _name(value: str) -> str:
    if not 0 < len(value) <= MAX_NAME or not value.isprintable():
        shown = repr(value[:40]) + (f"… ({len(value)} characters)" if len(value) > 40 else "")
        raise ValueError(f"name {shown} is not 1 to {MAX_NAME} printable characters (no newline or control "
                         "character)")
    return value


#: A name people give (a device, a task): 1 to 120 printable characters, so messages stay one short line.
Name = Annotated[str, AfterValidator(_name)]
Strategy = Literal["staged", "direct", "coherent", "pipelined"]


class Device(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    kind: Literal["cpu", "gpu", "fpga", "memory", "other"] = "other"
    concurrency: int = Field(1, ge=1, description="tasks the device runs at once")
    copy_engines: int = Field(1, ge=0, description="engines that carry the device's transfers beside its tasks; 0: its "
                                                   "transfers run in its one in-order queue, between its tasks (a "
                                                   "GPU without copy engines, an OpenCL CPU device, one queue for all)")
    cxl_type: Optional[Literal[1, 2, 3]] = Field(None, description="its CXL device type: 1 (CXL.io + CXL.cache), 2 "
                                                 "(+ CXL.mem: an accelerator with memory) or 3 (CXL.io + CXL.mem: "
                                                 "memory); unset: not a typed CXL device")
    bias_flip: Optional[Seconds] = Field(None, gt=0, description="Type 2: the time to flip one region's bias "
                                         "(unset: derived from its CXL link, docs/models.md)")
    bias_page: Bytes = Field(PAGE_BYTES, gt=0, description="Type 2: the bytes one bias flip covers (a 4 KiB page)")
    forwards: bool = Field(False, description="transfers between other devices may pass through it without being staged "
                                              "in its memory (a CPU socket's NVLink and PCIe bridges, a NIC): routes of "
                                              "several links go through such devices only")


class LinkRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    between: tuple[Name, Name]
    link: str = Field(description="a LINK: preset[:key=value,…] (see `xferlab model presets`)")


class System(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["system"] = "system"
    name: Name
    description: str = ""
    host: Name = Field(description="the device whose memory staged transfers go through")
    devices: list[Device]
    links: list[LinkRef]
    _pairs: dict = PrivateAttr(default_factory=dict)  # frozenset({a, b}) -> its resolved Link
    _next: dict = PrivateAttr(default_factory=dict)  # device -> the devices one link away, in the links' order

    @model_validator(mode="after")
    def _check(self) -> "System":
        names = [d.name for d in self.devices]
        known: set[str] = set()
        for i, d in enumerate(names):
            if d in known:
                raise ValueError(f"devices[{i}].name: '{d}' is defined twice")
            known.add(d)
        shown = ", ".join(names[:8]) + (f", … ({len(names)} in all)" if len(names) > 8 else "")
        if self.host not in known:
            raise ValueError(f"host: '{self.host}' is not a device (devices: {shown})")
        pairs: dict = {}
        for i, ref in enumerate(self.links):
            for j, end in enumerate(ref.between):
                if end not in known:
                    raise ValueError(f"links[{i}].between: '{end}' is not a device (devices: {shown})")
            if ref.between[0] == ref.between[1]:
                raise ValueError(f"links[{i}].between: a link joins two different devices, not '{ref.between[0]}' to itself")
            try:
                link = resolve(ref.link)
            except Exception as error:  # XferlabError: name the place
                raise ValueError(f"links[{i}].link: {error}") from None
            pairs.setdefault(frozenset(ref.between), link)  # the first wins, as the scan it replaces did
        self._pairs = pairs
        for i, d in enumerate(self.devices):
            if d.cxl_type is None:
                if d.bias_flip is not None or d.bias_page != PAGE_BYTES:
                    raise ValueError(f"devices[{i}]: bias_flip and bias_page are a CXL Type 2 device's; '{d.name}' "
                                     "has no cxl_type")
                continue
            if d.name == self.host:
                raise ValueError(f"devices[{i}].cxl_type: '{d.name}' is the host; a CXL device type is a device's "
                                 "on a link to the host")
            if not is_cxl(pairs.get(frozenset((d.name, self.host)))):
                raise ValueError(f"devices[{i}].cxl_type: '{d.name}' is a CXL {described(d.cxl_type)} device, but "
                                 f"its link to the host '{self.host}' is {'missing' if frozenset((d.name, self.host)) not in pairs else 'not a CXL link'}; "
                                 "give it a CXL link (cxl2x16, cxl-seed …)")
            if d.cxl_type != 2 and (d.bias_flip is not None or d.bias_page != PAGE_BYTES):
                raise ValueError(f"devices[{i}]: bias_flip and bias_page are a Type 2 device's (its memory's bias); "
                                 f"'{d.name}' is Type {d.cxl_type}")
        self._next = {d: [] for d in names}
        for pair in pairs:
            a, b = sorted(pair, key=names.index)
            self._next[a].append(b)
            self._next[b].append(a)
        return self

    def link(self, a: str, b: str) -> Optional[Link]:
        """The link between devices ``a`` and ``b`` (either order), or None: a dictionary look-up, the
        LINK resolved once when the system was validated."""
        return self._pairs.get(frozenset((a, b)))

    def route(self, a: str, b: str) -> list[tuple[str, str]]:
        """The hops (device pairs, each joined by a link) from ``a`` to ``b``: their link if they have one,
        else the fewest links through devices that forward (``forwards: true``), the widest (largest
        smallest peak rate) of equally short routes; [] if there is none (or ``a`` is ``b``)."""
        if a == b:
            return []
        if self.link(a, b) is not None:
            return [(a, b)]
        forwarding = {d.name for d in self.devices if d.forwards}
        best: dict[str, tuple[float, str]] = {a: (float("inf"), a)}  # device -> (route's bottleneck, previous)
        layer = [a]
        while layer and b not in best:  # breadth first: the routes of k links before those of k + 1
            reached: dict[str, tuple[float, str]] = {}
            for u in layer:
                if u != a and u not in forwarding:
                    continue
                for v in self._next.get(u, []):
                    if v not in best:
                        width = min(best[u][0], self._pairs[frozenset((u, v))].peak_rate("write"))
                        if v not in reached or width > reached[v][0]:
                            reached[v] = (width, u)
            best.update(reached)
            layer = list(reached)
        if b not in best:
            return []
        path = [b]
        while path[-1] != a:
            path.append(best[path[-1]][1])
        path.reverse()
        return list(zip(path, path[1:]))

    def device(self, name: str) -> Optional[Device]:
        return next((d for d in self.devices if d.name == name), None)

    def link_name(self, a: str, b: str) -> str:
        return f"{a}<->{b}"


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: Name
    device: Name
    seconds: Optional[Seconds] = Field(None, description="the task's time, all its data at once")
    throughput: Optional[Rate] = Field(None, description="or: bytes of input per second")
    overhead: Seconds = Field(0.0, ge=0, description="fixed cost of each run of the task (a kernel launch, a "
                                                     "driver call): paid once, or once per chunk when pipelined")
    memory_bytes: Optional[Bytes] = Field(None, gt=0, description="on a CXL Type 2 device: the bytes the task reads "
                                          "and writes in its device's memory, each pass counted (host bias: a "
                                          "request to the host per line); unset: its edges' bytes there")

    @model_validator(mode="after")
    def _one_duration(self) -> "Task":
        if (self.seconds is None) == (self.throughput is None):
            raise ValueError(f"task '{self.name}' needs exactly one of seconds or throughput")
        return self

    def duration(self, input_bytes: float, runs: int = 1) -> float:
        """Time to process ``input_bytes`` in ``runs`` runs (chunks), overhead included."""
        work = self.seconds if self.seconds is not None else input_bytes / self.throughput
        return work + runs * self.overhead


class Edge(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    source: Name = Field(alias="from")
    target: Name = Field(alias="to")
    bytes: Bytes
    strategy: Optional[Strategy] = None


class Workflow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["workflow"] = "workflow"
    name: Name
    description: str = ""
    tasks: list[Task]
    edges: list[Edge] = []
    strategy: Strategy = "staged"
    chunk: Optional[Bytes] = None
    depth: int = Field(2, ge=1, description="pipelined: buffers between stages")
    handoff: Seconds = Field(0.0, ge=0, description="pipelined: from a buffer freed to its producer knowing it (a "
                                                    "host thread woken by a device's completion event)")
    bias: Optional[Literal["host", "device"]] = Field(
        None, description="the bias of CXL Type 2 devices' memory: host (their own accesses go through the host's "
                          "coherence) or device (the host's accesses flip it first); unset: not modelled")

    @model_validator(mode="after")
    def _check(self) -> "Workflow":
        names = [t.name for t in self.tasks]
        known: set[str] = set()
        for i, name in enumerate(names):
            if name in known:
                raise ValueError(f"tasks[{i}].name: '{name}' is defined twice")
            known.add(name)
        for i, e in enumerate(self.edges):
            for field, end in (("from", e.source), ("to", e.target)):
                if end not in known:
                    shown = ", ".join(names[:8]) + (f", … ({len(names)} in all)" if len(names) > 8 else "")
                    raise ValueError(f"edges[{i}].{field}: '{end}' is not a task (tasks: {shown})")
            if self.chunk is not None and self.chunk > e.bytes:
                raise ValueError(f"chunk: {self.chunk} bytes is larger than the {e.bytes} bytes of edges[{i}]")
        cycle = _cycle(names, [(e.source, e.target) for e in self.edges])
        if cycle:
            shown = cycle if len(cycle) <= 9 else [*cycle[:4], f"… ({len(cycle) - 1} tasks) …", *cycle[-4:]]
            raise ValueError(f"edges: the workflow has a cycle: {' -> '.join(shown)}")
        if self.strategy == "pipelined" and self.chunk is None:
            raise ValueError("chunk: the pipelined strategy needs a chunk size")
        return self

    def check_against(self, system: System) -> None:
        from ..errors import BadValue

        devices = {d.name: d for d in system.devices}
        for i, t in enumerate(self.tasks):
            if t.device not in devices:
                raise BadValue(f"workflow '{self.name}' tasks[{i}].device: '{t.device}' is not a device of system "
                               f"'{system.name}' (devices: {', '.join(sorted(devices))})")
            if t.memory_bytes is not None and devices[t.device].cxl_type != 2:
                raise BadValue(f"workflow '{self.name}' tasks[{i}].memory_bytes: '{t.device}' is not a CXL Type 2 "
                               "device; memory_bytes counts a Type 2 device's accesses to its own memory")
            if devices[t.device].cxl_type == 3:
                raise BadValue(f"workflow '{self.name}' tasks[{i}].device: '{t.device}' is a CXL {described(3)} "
                               "device, memory without a compute engine; it runs no tasks")
        if self.bias is not None and not any(d.cxl_type == 2 for d in system.devices):
            raise BadValue(f"workflow '{self.name}' bias: {self.bias} is the bias of a CXL Type 2 device's memory, and "
                           f"system '{system.name}' has none; give a device cxl_type: 2, or leave bias unset")


def _cycle(nodes: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """A cycle of the directed graph as a list of names (first repeated at the end), or [].
    Iterative depth-first search: linear in nodes + edges, no recursion limit (100,000 chained tasks)."""
    after: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        after[a].append(b)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in nodes:
        if root in state:
            continue
        state[root] = 1
        path, todo = [root], [iter(after[root])]
        while todo:
            m = next(todo[-1], None)
            if m is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(m) == 1:
                return path[path.index(m):] + [m]
            elif m not in state:
                state[m] = 1
                path.append(m)
                todo.append(iter(after[m]))
    return []

"""`measure device --matrix`: nvbandwidth's matrices. Host to device, device to host and device to device
for every pair of devices of a backend (of one OpenCL platform with --platform), one copy size and one host
memory kind; each cell is a copy's median and best bandwidth (counted once), or N/A with the reason; each
direction's sum, min and max over its measured cells. Beside every device's own device-to-device copy
(the runtime's clEnqueueCopyBuffer or cuMemcpyDtoD, nvbandwidth's "copy engine"), BabelStream's copy kernel on the same
device memory and size (nvbandwidth's "SM copy"), counted once as well.

Steps, all existing probe modes: ``transfer`` per device (h2d, d2h, d2d in one buffer pair), ``kernels
--mode d2d --peer`` per ordered pair of different devices (OpenCL: one context holding both devices,
clEnqueueCopyBuffer on the destination's queue; across platforms no context holds both, and the copy is
staged through pinned host memory. CUDA, as nvbandwidth's device_to_device_memcpy_read_ce:
cuMemcpyPeerAsync on the destination's stream, peer to peer where cuDeviceCanAccessPeer let the probe
enable peer access, else staged by the driver through the host; the cell's ``path`` says which),
``kernels --mode stream --kernels copy`` per device (OpenCL: float4 elements; CUDA: its scalar PTX copy
of doubles).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import BadValue
from ..stats import summarize
from ..units import format_size, shown
from . import checks, device as dev, sizeclass
from . import kernels
from .precision import ci_fields
from .probe import ProbeRun
from .samples import kept, value_of
from .steps import Step

MATRIX_DIRECTIONS = ("h2d", "d2h", "d2d")
DEFAULT_SIZE = 32 * 2**20
PATHS = {"transfer": "runtime copy (one device)", "runtime": "runtime copy (one context holding both devices)",
         "staged": "staged through pinned host memory (no context holds both devices)",
         "peer": "peer to peer (cuMemcpyPeerAsync, peer access enabled: cuDeviceCanAccessPeer 1)"}
#: a path whose meaning differs by backend: CUDA's "staged" is the driver's own staging, not the probe's
BACKEND_PATHS = {("cuda", "staged"): "staged by the driver through host memory (cuMemcpyPeerAsync, "
                                     "cuDeviceCanAccessPeer 0: no peer access)"}
#: the backends with a copy between two devices (kernels --mode d2d --peer)
PAIR_BACKENDS = ("opencl", "cuda")


def path_text(backend: str, path: str) -> str:
    """What a cell's path (a probe sample's "path", or "transfer") means on ``backend``."""
    return BACKEND_PATHS.get((backend, path), PATHS[path])


@dataclass
class MatrixPlan:
    backend: str = "opencl"
    platform: Optional[str] = None
    kind: Optional[str] = None            # default: pinned where the devices have it (nvbandwidth's), else pageable
    size: Optional[int] = None            # default: STREAM's rule over the devices' caches (check), at least DEFAULT_SIZE
    size_rule: str = "given (--sizes)"
    iterations: int = 5
    min_time: float = 0.02
    kernel_copy: bool = True              # the copy kernel beside each device's own runtime copy
    devices: list[dict[str, Any]] = field(default_factory=list)  # the inventories of the matrix's devices

    def check(self) -> None:
        """The devices of the backend (of --platform's platform), and the kind and size every one of them takes."""
        if self.backend not in dev.BACKENDS:
            raise BadValue(f"--backend {shown(self.backend)} is not allowed; allowed: {', '.join(dev.BACKENDS)}")
        found, why = dev.devices(self.backend)
        if why is not None:
            from ..errors import Unavailable

            raise Unavailable(f"the {self.backend} backend is not available: {why}")
        if self.platform is not None:
            first = dev.platform_device(self.backend, self.platform, 0)
            name = next(d.get("platform") for d in found if d["index"] == first)
            found = [d for d in found if d.get("platform") == name]
        self.devices = found
        if not found:
            raise BadValue(f"--matrix: the {self.backend} backend shows no device")
        common = [k for k in dev.KINDS if all(k in dev.supported_kinds(self.backend, d) for d in found)]
        if self.kind is None:
            self.kind = "pinned" if "pinned" in common else common[0]
        elif self.kind not in common:
            raise BadValue(f"--kinds {shown(self.kind)}: the matrix takes one host memory kind every device has; "
                           f"allowed: {', '.join(common)}")
        limit = min(int(d.get("max_allocation_bytes") or 2**62) for d in found)
        if self.size is None:
            self.size, self.size_rule = default_size(found, limit)
        if not 1 <= self.size <= limit:
            raise BadValue(f"--sizes {self.size} B: the matrix takes one size, 1 B..{format_size(limit)} "
                           f"(the devices' largest allocation)")
        checks.in_range(self.iterations, "--iterations", *checks.TRANSFER_ITERATIONS,
                        what="a whole number of timed copies per cell")
        if not 0 <= self.min_time <= checks.TRANSFER_MIN_TIME:
            raise BadValue(f"--min-time {self.min_time:g} s is out of range; allowed: 0 s..1 h per cell")

    def indices(self) -> list[int]:
        return [int(d["index"]) for d in self.devices]

    def pair_reason(self, src: int, dst: int) -> Optional[str]:
        """Why no copy from device ``src`` to device ``dst`` is measured (None: it is)."""
        if self.backend not in PAIR_BACKENDS:
            return (f"device to device between two devices is measured on {' and '.join(PAIR_BACKENDS)} only, "
                    f"not {self.backend}")
        lacking = [d for d in self.devices if int(d["index"]) in (src, dst) and d.get("peer_copies") is False]
        if lacking:  # the inventory's word (cuda_backend.cpp): the driver lacks the peer calls
            return (f"the CUDA driver ({lacking[0].get('library') or 'libcuda.so.1'}) does not export the peer calls "
                    "(cuCtxEnablePeerAccess, cuMemcpyPeerAsync …) that a copy between two devices needs")
        return None


def default_size(devices: list[dict[str, Any]], limit: int) -> tuple[int, str]:
    """The copy size when none is given, and the rule that gave it: STREAM's, 4x the largest cache a copy must
    outgrow on any of the devices (a GPU's L2 as its driver reports it, the host's LLC for a CPU device:
    sizeclass.device_llc), in whole MiB, at least 32 MiB, at most the devices' largest allocation. A 32 MiB copy
    on an H200 (60 MiB of L2) ran at 1.2 TB/s where 1 GiB ran at 2.1 TB/s (docs/gpu.md)."""
    host = sizeclass.host_llc()
    largest, what = max((sizeclass.device_llc(d, host) for d in devices), key=lambda found: found[0])
    size = sizeclass.rule_size(largest, limit, DEFAULT_SIZE)
    if not largest:
        return size, f"{format_size(DEFAULT_SIZE)}: no device reports a cache (STREAM's rule needs one)"
    return size, (f"4x the largest cache, {format_size(largest)} ({what}), at least {format_size(DEFAULT_SIZE)}, "
                  f"at most the devices' largest allocation")


def steps(plan: MatrixPlan) -> list[Step]:
    out = []
    size, it = str(plan.size), str(plan.iterations)
    for i in plan.indices():
        out.append(Step(f"{plan.backend} #{i}: host to device, device to host, device to device ({plan.kind})", "transfer",
                        ["transfer", "--backend", plan.backend, "--device", str(i), "--kinds", plan.kind, "--sizes", size,
                         "--directions", ",".join(MATRIX_DIRECTIONS), "--iterations", it,
                         "--max-iterations", str(max(plan.iterations, 200)), "--min-time", str(plan.min_time)],
                        {"node": "default", "host_kind": plan.kind}, 1.0 + 3 * (plan.min_time + plan.iterations * plan.size / 5e9)))
    for i in plan.indices():
        for j in plan.indices():
            if i != j and plan.pair_reason(i, j) is None:
                out.append(Step(f"{plan.backend} #{i} to #{j}, device to device", "d2d",
                                ["kernels", "--backend", plan.backend, "--device", str(i), "--mode", "d2d", "--peer", str(j),
                                 "--size", size, "--iterations", it], {"node": None},
                                2.0 + 2 * plan.iterations * plan.size * 3 / 5e9))
    if plan.kernel_copy and plan.backend in RUNTIME_COPY:  # the backends with a copy kernel beside their own copy
        # the widest element each backend's copy kernel moves: OpenCL's float4 (16 B); CUDA's PTX kernels are scalar,
        # so a double (8 B). On an H200 the scalar float copy ran at 1.23 TB/s beside cuMemcpyDtoD's 1.92 (240 MiB);
        # the double copy of `measure kernels` at 1.90 TB/s counted once (docs/gpu.md)
        element, width = ("float", "4") if plan.backend == "opencl" else ("double", "1")
        for i in plan.indices():
            out.append(Step(f"{plan.backend} #{i}: copy kernel on device memory", "stream",
                            ["kernels", "--backend", plan.backend, "--device", str(i), "--mode", "stream", "--kernels", "copy",
                             "--memory", "device", "--types", element, "--widths", width, "--size", size, "--groups", "0",
                             "--instances", "1", "--iterations", it], {"node": None, "memory": "device"},
                            2.0 + plan.iterations * plan.size * 3 / 5e9))
    return out


def rows_of(step: Step, run: ProbeRun) -> tuple[list[dict[str, Any]], Optional[str]]:
    """The device suite's rows for a transfer step, the kernels suite's for a pair's or a copy kernel's."""
    return (dev.rows_of if step.test == "transfer" else kernels.rows_of)(step, run)


def _stats(members: list[dict[str, Any]], size: int) -> dict[str, Any]:
    secs = [m["seconds"] for m in members]
    s = summarize(secs)
    return {"count": s["count"], "headline": "median", "median_seconds": s["median"],
            "median_bytes_per_second": size / s["median"], "best_bytes_per_second": size / s["min"],
            **ci_fields(secs, "bytes_per_second", size)}


def cells(plan: MatrixPlan, rows: list[dict[str, Any]], failures: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every cell of the three matrices, measured or N/A with its reason. A device's copy kernel (counted once:
    one array's bytes per copy, not BabelStream's read plus write) sits beside its own device-to-device cell."""
    rows = kept(rows)
    out = []
    base = {"host_kind": plan.kind, "size_bytes": plan.size}

    def cell(direction: str, src: Optional[int], dst: Optional[int], members: list[dict[str, Any]], path: str,
             reason: str) -> dict[str, Any]:
        c = {"direction": direction, "src": "host" if src is None else f"#{src}", "dst": "host" if dst is None else f"#{dst}",
             "src_device": src, "dst_device": dst, **base, "path": path if members else None}
        if members:
            return {**c, "status": "measured", **_stats(members, plan.size)}
        return {**c, "status": "n/a", "reason": reason}

    for i in plan.indices():
        mine = [r for r in rows if r.get("suite") == "device" and r.get("device_index") == i]
        why = (failures or {}).get(f"transfer #{i}", "the device's copies did not run")
        for direction, src, dst in (("h2d", None, i), ("d2h", i, None)):
            out.append(cell(direction, src, dst, [r for r in mine if r["test"] == direction],
                            path_text(plan.backend, "transfer"), why))
    for i in plan.indices():
        for j in plan.indices():
            if i == j:
                mine = [r for r in rows if r.get("suite") == "device" and r.get("device_index") == i and r["test"] == "d2d"]
                c = cell("d2d", i, j, mine, path_text(plan.backend, "transfer"),
                         (failures or {}).get(f"transfer #{i}", "the copies did not run"))
                copies = [r for r in rows if r.get("suite") == "kernels" and r.get("device_index") == i and r["test"] == "copy"]
                if copies:
                    k = _stats(copies, plan.size)
                    c.update(kernel_median_bytes_per_second=k["median_bytes_per_second"],
                             kernel_best_bytes_per_second=k["best_bytes_per_second"])
                out.append(c)
                continue
            reason = plan.pair_reason(i, j)
            pair = [r for r in rows if r.get("suite") == "kernels" and r["test"] == "d2d-devices"
                    and r.get("device_index") == i and value_of(r, "peer_index") == j]
            # OpenCL measures both its paths and the cell is the runtime's; CUDA's one path is peer or staged
            found = {value_of(r, "path") for r in pair}
            path = next((p for p in ("runtime", "peer") if p in found), "staged")
            out.append(cell("d2d", i, j, [r for r in pair if value_of(r, "path") == path], path_text(plan.backend, path),
                            reason or (failures or {}).get(f"d2d #{i} #{j}", "the copy did not run")))
    return out


def totals(all_cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per direction, nvbandwidth's SUM, MIN and MAX over the measured cells' medians (absent where none was)."""
    out = []
    for direction in MATRIX_DIRECTIONS:
        values = [c["median_bytes_per_second"] for c in all_cells if c["direction"] == direction and c["status"] == "measured"]
        na = sum(1 for c in all_cells if c["direction"] == direction and c["status"] != "measured")
        figures = {"sum_bytes_per_second": sum(values), "min_bytes_per_second": min(values),
                   "max_bytes_per_second": max(values)} if values else {}
        out.append({"direction": direction, **figures, "measured_cells": len(values), "na_cells": na})
    return out


def with_peaks(all_cells: list[dict[str, Any]], peaks: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells (changed in place and returned) with the peak of the path each crossed, the fields every copy
    row carries (measure/peak.py): a host copy against its device's recorded link for the matrix's size, a
    device's own copy has no link, a copy between two devices "peak unknown" (which path joins them is not
    recorded). A device matrix run records each device's link (``links``, by index), an older run its first."""
    from . import peak

    links = peaks.get("links") or {}
    for c in all_cells:
        device = c["dst_device"] if c["direction"] == "h2d" else c["src_device"]
        if c["direction"] == "d2d" and c["src_device"] != c["dst_device"]:
            top, source = None, peak.BETWEEN_DEVICES
        else:
            link = links.get(str(device)) or (peaks.get("link") if not links else None) or {}
            top, source = peak.link_peak(link, c["direction"], c["size_bytes"])
        c.update(peak.peak_fields(c.get("median_bytes_per_second"), top, source))
    return all_cells


def failure_keys(results) -> dict[str, str]:
    """Each failed step's reason under the key cells() looks for: 'transfer #i' or 'd2d #i #j'."""
    out = {}
    for r in results:
        if r.failure:
            a = r.step.args
            i = a[a.index("--device") + 1]
            key = f"transfer #{i}" if r.step.test == "transfer" else f"d2d #{i} #{a[a.index('--peer') + 1]}" \
                if r.step.test == "d2d" else None
            if key:
                out[key] = f"it failed: {r.failure}"
    return out


def grid(all_cells: list[dict[str, Any]], direction: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The matrix of ``direction`` as table rows: one per source, one column per destination (a cell's median or N/A)."""
    mine = [c for c in all_cells if c["direction"] == direction]
    columns = list(dict.fromkeys(c["dst"] for c in mine))
    rows = []
    for src in dict.fromkeys(c["src"] for c in mine):
        row: dict[str, Any] = {"src": src}
        for c in mine:
            if c["src"] == src:
                row[c["dst"]] = c["median_bytes_per_second"] if c["status"] == "measured" else "N/A"
        rows.append(row)
    return columns, rows


def shown_grid(all_cells: list[dict[str, Any]], direction: str) -> tuple[list[str], list[dict[str, str]]]:
    """The matrix of ``direction`` as the terminal and the report show it: :func:`grid`'s rows with each measured
    cell's median and its % of the peak of the link it crossed beside (measure/peak.py's cell), where one is known."""
    from .peak import cell

    columns, rows = grid(all_cells, direction)
    fraction = {(c["src"], c["dst"]): c.get("fraction_of_peak") for c in all_cells if c["direction"] == direction}
    return columns, [{"src": r["src"], **{d: cell(r.get(d), "bytes_per_second", fraction.get((r["src"], d)))
                                          for d in columns}} for r in rows]


TITLES = {"h2d": "host to device", "d2h": "device to host", "d2d": "device to device"}
RUNTIME_COPY = {"opencl": "clEnqueueCopyBuffer", "cuda": "cuMemcpyDtoD"}


def kernel_title(backend: str) -> str:
    """The copy-engine-against-kernel table's title, naming the backend's runtime copy."""
    return (f"Copy engine against kernel copy (nvbandwidth's CE vs SM): {RUNTIME_COPY.get(backend, 'the runtime copy')} "
            "beside BabelStream's copy kernel, device memory to device memory, the same size, counted once")


def title(direction: str, plan: MatrixPlan) -> str:
    """A direction's table title: what each cell is (nvbandwidth's matrix heading)."""
    return (f"{TITLES[direction]}: median of {format_size(plan.size)} copies"
            f"{'' if direction == 'd2d' else f', {plan.kind} host memory'}")


def totals_text(total: dict[str, Any]) -> str:
    """``sum …, min …, max …`` of one direction (nvbandwidth's SUM line, with the extremes); – where none was measured."""
    from ..units import format_rate

    return ", ".join(f"{k} {format_rate(total[f'{k}_bytes_per_second']) if f'{k}_bytes_per_second' in total else '–'}"
                     for k in ("sum", "min", "max"))


def stored_plan(run: dict[str, Any]) -> MatrixPlan:
    """The plan of a stored `measure device --matrix` run, from its params and its inventory's devices (not
    checked again: the devices need not be on this machine)."""
    params, machine = run.get("params") or {}, run.get("inventory") or {}
    devices = machine.get("accelerators") or [{"index": i} for i in params.get("devices") or []]
    return MatrixPlan(backend=params.get("backend", "opencl"), platform=params.get("platform"),
                      kind=(params.get("kinds") or [None])[0], size=int((params.get("sizes") or [DEFAULT_SIZE])[0]),
                      devices=devices)

"""Seed 001's figures (S. Roberts, P. Ramanna and J. Walthour, IBM, "AC922 Data Movement for CORAL"):
what xferlab's link models, the packaged AC922 systems (``ac922-8335gtw``, the node the seed
measured, and ``ac922``, the 4-GPU configuration) and their routes say of each. The ``ac922``
scenario's rows name these functions; each takes a system by name and devices of it, so a figure is
always computed on the links the system declares (never a constant: the seed's figures are in the
scenario file, beside the reasons).

Route figures run the flow simulator (:func:`xferlab.sim.flows.makespan`) on a workflow of one edge
between two empty tasks, so they are what ``xferlab simulate run`` would say of that transfer: the
router's hops, each link's start-up and size-dependent time, store and forward.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..sim import flows
from ..system.models import System, Workflow
from .figures import figure
from .packaged import load_named

GB = 1e9
US = 1e-6


@lru_cache(maxsize=8)
def _system(name: str) -> System:
    return load_named(name, System, "system")


def _link(system: str, a: str, b: str):
    found = _system(system).link(a, b)
    if found is None:
        raise ValueError(f"system '{system}' has no link between '{a}' and '{b}'")
    return found


def _route(system: str, src: str, dst: str) -> list:
    hops = [_link(system, a, b) for a, b in _system(system).route(src, dst)]
    if not hops:
        raise ValueError(f"system '{system}' has no route from '{src}' to '{dst}'")
    return hops


@figure("ac922_link_rate")
def link_rate(system: str, a: str, b: str) -> float:
    """GB/s each way that the link between ``a`` and ``b`` is quoted at (its raw rate, headers included)."""
    return _link(system, a, b).raw_rate / GB


@figure("ac922_link_peak")
def link_peak(system: str, a: str, b: str, op: str = "write") -> float:
    """GB/s of payload the link between ``a`` and ``b`` carries for a very large ``op`` (its model's ceiling)."""
    return _link(system, a, b).peak_rate(op) / GB


@figure("ac922_percent_of_link_peak")
def percent_of_link_peak(measured_gbs: float, system: str, a: str, b: str, op: str = "write") -> float:
    """``measured_gbs`` (the seed's measurement) as a percentage of the link's payload ceiling."""
    return 100 * measured_gbs / link_peak(system, a, b, op)


@figure("ac922_route_peak")
def route_peak(system: str, src: str, dst: str, op: str = "write") -> float:
    """GB/s: the payload ceiling of the route from ``src`` to ``dst``, its slowest link's."""
    return min(link.peak_rate(op) for link in _route(system, src, dst)) / GB


@figure("ac922_kernel_over_link")
def kernel_over_link(system: str, a: str, b: str, reads: int = 2, writes: int = 1, word: int = 8,
                     line: int = 128) -> float:
    """GB/s of a GPU kernel on ``b`` streaming arrays in ``a``'s memory over their link, counted as STREAM
    counts (every word read and written per element: daxpy 2 + 1): reads come one way and writes go the
    other, each direction on its own wires, in packets of one ``line``-byte cache line; the busier
    direction sets the pace."""
    link = _link(system, a, b)
    per_line = float(link.data_rate(np.asarray([float(line)]), "read")[0])  # payload rate, one line a packet
    elements = min(per_line / (reads * word) if reads else np.inf, per_line / (writes * word) if writes else np.inf)
    return elements * (reads + writes) * word / GB


def _transfer_seconds(system: str, src: str, dst: str, size: int) -> float:
    """The simulator's makespan of ``size`` bytes from ``src`` to ``dst`` (two empty tasks, one direct edge)."""
    workflow = Workflow.model_validate({
        "name": f"{src} to {dst}", "strategy": "direct",
        "tasks": [{"name": "send", "device": src, "seconds": 0}, {"name": "receive", "device": dst, "seconds": 0}],
        "edges": [{"from": "send", "to": "receive", "bytes": size}]})
    return flows.makespan(_system(system), workflow)


@figure("ac922_transfer_time")
def transfer_time(system: str, src: str, dst: str, size: int) -> float:
    """Microseconds the simulator gives ``size`` bytes from ``src`` to ``dst`` over the system's route."""
    return _transfer_seconds(system, src, dst, size) / US


@figure("ac922_transfer_time_ratio")
def transfer_time_ratio(system: str, src: str, dst: str, ref_src: str, ref_dst: str, size: int) -> float:
    """The simulator's time of ``size`` bytes ``src`` -> ``dst`` over that of ``ref_src`` -> ``ref_dst``."""
    return _transfer_seconds(system, src, dst, size) / _transfer_seconds(system, ref_src, ref_dst, size)

"""Seed 004's figures (Lane, Siefert, Olivier, Hughes, Voskuilen, Pedretti, Elliott, "Data Transfers and
Host/Device Communication using OneAPI for FPGA", IXPUG 2022), recomputed by xferlab's models (scenario
``oneapi-fpga``):

* **HBM2 ports**: the board's 32 ports are HBM2 pseudo-channels (JESD235A: 2 stacks x 8 channels x 2
  pseudo-channels, each 64 bits; :mod:`xferlab.system.memory_channels`), independent and not interleaved
  (the seed: "Data is not interleaved across ports"), so their peak adds up port by port.
* **Transfers**: n bytes count times over a link model (``pcie3x16``) whose start-up time is a
  per-transfer overhead o: count x (o + n / b_n). :func:`transfer_overhead` solves o from one of the
  seed's figures (that row is *fitted*); the others are checked with it.
* **SpMV over ports**: a memory-bound CSR product whose arrays cannot be split across ports (no
  interleaving) runs as fast as its busiest port: arrays are placed on ports longest first on the least
  loaded port (Graham's LPT rule, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 1969),
  and the speedup over one port is the bytes in all / the busiest port's bytes; a kernel copy with its own
  ports and its share of the rows multiplies it.
"""

from __future__ import annotations

import heapq
from typing import Any

from ..errors import BadValue
from ..links import resolve
from ..links.base import Op
from ..system.memory_channels import channel
from .figures import figure


@figure("hbm_ports_bandwidth")
def hbm_ports_bandwidth(ports: int, memory: str = "hbm2-2000", mt_per_second: float | None = None) -> float:
    """The peak of ``ports`` independent HBM2 pseudo-channels, GB/s (at ``mt_per_second`` where given)."""
    return channel(memory).peak(ports, mt_per_second) / 1e9


@figure("hbm_ports_scaling")
def hbm_ports_scaling(ports: int, memory: str = "hbm2-2000") -> float:
    """How many times one port's peak ``ports`` independent ports carry (x)."""
    return channel(memory).peak(ports) / channel(memory).peak(1)


@figure("fraction_of_hbm_peak")
def fraction_of_hbm_peak(measured: float, ports: int, memory: str = "hbm2-2000",
                         mt_per_second: float | None = None) -> float:
    """``measured`` GB/s as a % of the ports' peak."""
    return 100 * measured / hbm_ports_bandwidth(ports, memory, mt_per_second)


def transfer_overhead(link: str, size: float, count: int, seconds: float, op: Op = "read") -> float:
    """The per-transfer overhead o (seconds) with which ``count`` transfers of ``size`` bytes over
    ``link`` take ``seconds``: seconds / count - size / b_n(size), b_n the link model's payload rate."""
    carrier = resolve(link)
    overhead = seconds / count - size / float(carrier.data_rate(size, op))
    if overhead < 0:
        raise BadValue(f"{count} x {size:g} B in {seconds:g} s is faster than link '{link}' carries them; "
                       "no per-transfer overhead can give it")
    return overhead


@figure("transfers_seconds")
def transfers_seconds(link: str, size: float, count: int, fit: dict[str, Any], op: Op = "read") -> float:
    """Seconds for ``count`` transfers of ``size`` bytes over ``link``, its start-up time the per-transfer
    overhead solved from ``fit`` (``size``, ``count``, ``seconds``: one of the seed's figures)."""
    overhead = transfer_overhead(link, fit["size"], fit["count"], fit["seconds"], op)
    carrier = resolve(link).model_copy(update={"latency": overhead})
    return count * float(carrier.time(size, op))


@figure("link_payload_rate")
def link_payload_rate(link: str, size: float, op: Op = "read") -> float:
    """The link model's payload rate b_n for transfers of ``size`` bytes, GB/s (back to back, start-up
    time overlapped)."""
    return float(resolve(link).streaming_rate(size, op)) / 1e9


@figure("link_transfer_us")
def link_transfer_us(link: str, size: float, op: Op = "read") -> float:
    """One transfer of ``size`` bytes over ``link``, start-up time included, in microseconds."""
    return float(resolve(link).time(size, op)) * 1e6


def csr_arrays(per_row: float, value_bytes: int = 8, index_bytes: int = 4) -> dict[str, float]:
    """Bytes per matrix row that y = A x moves, array by array (CSR, each array read once, x read once per
    entry as the product gathers it)."""
    return {"values": value_bytes * per_row, "x": value_bytes * per_row, "column indices": index_bytes * per_row,
            "row pointers": index_bytes, "y": value_bytes}


def busiest_port(arrays: dict[str, float], ports: int) -> float:
    """The bytes on the busiest of ``ports`` ports when whole arrays go longest first to the least loaded one."""
    if ports < 1:
        raise BadValue(f"ports {ports}: a kernel needs at least 1 memory port")
    loads = [0.0] * ports
    for size in sorted(arrays.values(), reverse=True):
        heapq.heapreplace(loads, loads[0] + size)  # loads is a heap: loads[0] the least loaded port
    return max(loads)


@figure("spmv_port_speedup")
def spmv_port_speedup(ports_per_kernel: int, kernels: int = 1, per_row: float = 27, value_bytes: int = 8,
                      index_bytes: int = 4) -> float:
    """Memory-bound SpMV's speedup over one kernel on one port (x): ``kernels`` copies, each with its share
    of the rows and ``ports_per_kernel`` ports of its own, as fast as each copy's busiest port."""
    if kernels < 1:
        raise BadValue(f"kernels {kernels}: at least 1 kernel")
    arrays = csr_arrays(per_row, value_bytes, index_bytes)
    return kernels * sum(arrays.values()) / busiest_port(arrays, ports_per_kernel)

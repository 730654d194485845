"""Does offloading a task pay? Seed 000's rule and seed 002's P/O ratio, which are one test.

Seed 000 ("Minimum application speedup for acceleration"): offload when t - t' > 2d, where t is
the task's time on the current device, t' its time on the other device, and d the time to move
the data the task needs. Seed 002 (Zipper): P/O = (T_cpu - T_acc) / T_lat, the raw time saved
over the communication latency; offloading is beneficial when P/O > 1. With T_lat = 2d (data
there and results back) the two agree. xferlab takes the way out and the way back separately
(``bytes_in``, ``bytes_out``; the seed's 2d is the case bytes_out = bytes_in) and computes d from a
link model.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadValue
from ..links.base import Link, Op


@dataclass(frozen=True)
class OffloadVerdict:
    host_seconds: float
    device_seconds: float
    transfer_in_seconds: float
    transfer_out_seconds: float

    @property
    def saved_seconds(self) -> float:
        """P: the raw time saved, t - t'."""
        return self.host_seconds - self.device_seconds

    @property
    def communication_seconds(self) -> float:
        """O: the time spent moving data, 2d in the seed's form."""
        return self.transfer_in_seconds + self.transfer_out_seconds

    @property
    def p_over_o(self) -> float:
        return self.saved_seconds / self.communication_seconds if self.communication_seconds else float("inf")

    @property
    def pays(self) -> bool:
        """t - t' > 2d."""
        return self.saved_seconds > self.communication_seconds

    @property
    def speedup(self) -> float:
        """Time on the host over time offloaded, transfers included."""
        return self.host_seconds / (self.device_seconds + self.communication_seconds)


def offload(link: Link, bytes_in: float, bytes_out: float, host_seconds: float, device_seconds: float,
            op_in: Op = "write", op_out: Op = "write") -> OffloadVerdict:
    """The verdict for one task whose data crosses ``link``."""
    if host_seconds < 0 or device_seconds < 0:
        raise BadValue(f"task times must be non-negative: host {host_seconds:g} s, device {device_seconds:g} s")
    d_in = float(link.time(bytes_in, op_in)) if bytes_in > 0 else 0.0
    d_out = float(link.time(bytes_out, op_out)) if bytes_out > 0 else 0.0
    return OffloadVerdict(host_seconds, device_seconds, d_in, d_out)


def break_even_bytes(link: Link, saved_seconds: float, out_per_in: float = 1.0, op: Op = "write") -> int:
    """The largest input size n whose round trip d(n) + d(out_per_in x n) stays below the time saved.

    Returns 0 when even one byte costs more than ``saved_seconds``.
    """
    def cost(n: float) -> float:
        out = out_per_in * n
        return float(link.time(n, op)) + (float(link.time(out, op)) if out > 0 else 0.0)

    if saved_seconds <= 0 or cost(1) >= saved_seconds:
        return 0
    lo, hi = 1, 2
    while cost(hi) < saved_seconds:
        lo, hi = hi, hi * 2
        if hi > 2**62:
            return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cost(mid) < saved_seconds else (lo, mid)
    return lo


def smallest_bytes_that_pay(link: Link, host_rate: float, device_rate: float, out_per_in: float = 1.0,
                            op: Op = "write") -> int | None:
    """For a task given by throughputs (bytes of input per second on the host and on the device):
    the smallest input size n whose time saved, n/host_rate - n/device_rate, exceeds the round trip
    d(n) + d(out_per_in x n). None when no size pays (the device is not faster, or the link's
    per-byte cost exceeds the per-byte saving)."""
    if host_rate <= 0 or device_rate <= 0:
        raise BadValue(f"throughputs must be positive: host {host_rate:g} B/s, device {device_rate:g} B/s")

    def pays(n: int) -> bool:
        v = offload(link, n, out_per_in * n, n / host_rate, n / device_rate, op, op)
        return v.pays

    if device_rate <= host_rate:
        return None
    hi = 1
    while not pays(hi):
        hi *= 2
        if hi > 2**62:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if pays(mid) else (mid, hi)
    return hi


def break_even_speed(host_seconds: float, communication_seconds: float) -> float | None:
    """Seed 002's P/O = 1 solved for the device's speed s relative to the host (issue 29), the device taking
    T_cpu / s for what the host does in T_cpu: P/O = (T_cpu - T_cpu / s) / T_lat exceeds 1 exactly when
    s > T_cpu / (T_cpu - T_lat) (seed 000's t - t' > 2d with t' = t / s). None when T_lat >= T_cpu: no
    device speed pays, the bus alone costs more than the whole task on the host."""
    if host_seconds < 0 or communication_seconds < 0:
        raise BadValue(f"times must be non-negative: host {host_seconds:g} s, communication {communication_seconds:g} s")
    if communication_seconds >= host_seconds:
        return None
    return host_seconds / (host_seconds - communication_seconds)

"""The pyopencl reference for benchmarks/bench_device.py: the loop a Python programmer writes with
pyopencl (the project's `bench` extra) to time an empty kernel's launch and a host-to-device copy,
run as a process of its own like the C reference (benchmarks/reference/launch.c) and the probe.

    python launch_pyopencl.py LAUNCHES WARMUP COPY_BYTES COPIES

(LAUNCHES 0 skips the launches, COPIES 0 the copies) prints, as launch.c does, each the median over the timed repetitions after WARMUP launches (2 copies):
``launch_median_seconds S`` (enqueue one work item, then ``queue.finish()``; perf_counter around both,
on a queue without profiling) and ``copy_median_seconds S`` (a blocking ``enqueue_copy`` of
COPY_BYTES into a READ_WRITE buffer from the host buffer xferlab-probe's pageable kind uses: aligned
at 2 MiB with MADV_HUGEPAGE from 2 MiB up, else at 4 KiB).
"""

from __future__ import annotations

import mmap
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

HUGE = 2 << 20


def host_buffer(size: int) -> tuple[mmap.mmap, np.ndarray]:
    """``size`` bytes at the probe's alignment, from an anonymous mapping (page-aligned), advised for
    transparent huge pages from 2 MiB up, as the probe's aligned_alloc + madvise."""
    align = HUGE if size >= HUGE else mmap.PAGESIZE
    length = -(-size // align) * align
    mapping = mmap.mmap(-1, length + align)
    base = np.frombuffer(mapping, dtype=np.uint8)
    offset = -base.ctypes.data % align
    if length >= HUGE and hasattr(mmap, "MADV_HUGEPAGE"):
        mapping.madvise(mmap.MADV_HUGEPAGE, offset, length)
    return mapping, base[offset:offset + size]


def main() -> int:
    if len(sys.argv) != 5:
        print("usage: launch_pyopencl.py LAUNCHES WARMUP COPY_BYTES COPIES", file=sys.stderr)
        return 2
    launches, warmup, size, copies = (int(a) for a in sys.argv[1:])
    device = cl.get_platforms()[0].get_devices()[0]  # the first device, as launch.c takes it
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    kernel = cl.Program(context, "__kernel void empty(void) {}").build().empty
    times = []
    for i in range(warmup + launches if launches else 0):
        t0 = time.perf_counter()
        cl.enqueue_nd_range_kernel(queue, kernel, (1,), None)
        queue.finish()
        t1 = time.perf_counter()
        if i >= warmup:
            times.append(t1 - t0)
    if launches:
        print(f"launch_median_seconds {statistics.median(times):.9e}")
    if not copies:
        return 0

    mapping, host = host_buffer(size)
    host[:] = 1
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, size)
    times = []
    for i in range(copies + 2):
        t0 = time.perf_counter()
        cl.enqueue_copy(queue, buffer, host, is_blocking=True)
        t1 = time.perf_counter()
        if i >= 2:
            times.append(t1 - t0)
    print(f"copy_median_seconds {statistics.median(times):.9e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A design-space sweep of 10,000 simulation points in this process and on a local Dask cluster of 2
worker processes: the same points, and the cluster at least 1.6x faster on this 2-core machine.

The grid: seed 000's DecEval with a second consumer (a checksum on the host: a fan-out, not a chain)
on the seed's testbed, its PCIe 3.0 x16 links replaced by 100 links (PCIe 3.0-5.0 at x1-x16 with
three payload sizes, and simple links of 55 bandwidths), staged, direct and coherent, and pipelined
at 97 chunk sizes (4 to 48 chunks), all on the SimPy engine: 100 x (3 + 97) = 10,000 points. Timed: from the first batch sent to the last one stored (the cluster's
start, about 2 s, is printed apart); points/s for both, and their ratio.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_sweep.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from xferlab.sweep.run import run_sweep
from xferlab.sweep.spec import Sweep

TARGET = 1.6


#: DecEval with a second consumer of the decompressed data (a checksum on the host): not a chain, so
#: every pipelined point runs on the SimPy engine, chunk by chunk
FAN_OUT = """kind: workflow
name: deceval-fan-out
tasks:
  - {name: decompress, device: fpga, seconds: 7.70}
  - {name: integrate, device: gpu, seconds: 0.36}
  - {name: checksum, device: host, throughput: 4GB/s}
edges:
  - {from: decompress, to: integrate, bytes: 1.6GB}
  - {from: decompress, to: checksum, bytes: 1.6GB}
"""


def grid(workflow: Path) -> Sweep:
    links = [f"pcie{g}x{w}:mps={m}" for g in (3, 4, 5) for w in (1, 2, 4, 8, 16) for m in (128, 256, 512)]
    links += [f"simple:bandwidth={b}GB/s,latency=1us" for b in range(1, 56)]
    chunks = [2**20 * (32 + 4 * k) for k in range(97)]  # 32 MiB to 416 MiB: 48 to 4 chunks of 1.6 GB
    return Sweep.model_validate({"name": "bench", "systems": ["seed-testbed"], "replace": "pcie3x16", "links": links,
                                 "workflows": [str(workflow)], "strategies": ["staged", "direct", "coherent", "pipelined"],
                                 "chunks": chunks})


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workflow = Path(tmp) / "fan-out.yaml"
        workflow.write_text(FAN_OUT)
        spec = grid(workflow)
        print(f"{spec.size():,} points: {len(spec.links)} links x (3 strategies + pipelined at {len(spec.chunks)} "
              "chunk sizes) of DecEval with a fan-out, on the seed's testbed")
        t0 = time.perf_counter()
        alone = run_sweep(spec, Path(tmp) / "a.duckdb", argv=["bench"])
        t1 = time.perf_counter()
        dask = run_sweep(spec, Path(tmp) / "b.duckdb", workers=2, argv=["bench"])
        t2 = time.perf_counter()
    same = [(r["key"] if "key" in r else None, r["makespan_seconds"]) for r in alone["rows"]] == \
           [(r["key"] if "key" in r else None, r["makespan_seconds"]) for r in dask["rows"]]
    rate_alone = spec.size() / alone["evaluation_seconds"]
    rate_dask = spec.size() / dask["evaluation_seconds"]
    print(f"in this process: {alone['evaluation_seconds']:.2f} s, {rate_alone:,.0f} points/s ({t1 - t0:.2f} s in all)")
    print(f"local Dask, 2 workers: {dask['evaluation_seconds']:.2f} s, {rate_dask:,.0f} points/s "
          f"({t2 - t1:.2f} s in all, the cluster's start and stop included)")
    ratio = rate_dask / rate_alone
    print(f"ratio {ratio:.2f} (target >= {TARGET}); identical results: {same}")
    ok = ratio >= TARGET and same and alone["failed"] == dask["failed"] == 0
    print("OK" if ok else "BELOW TARGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

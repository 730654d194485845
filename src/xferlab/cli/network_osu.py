"""`measure network --format osu`: each test printed as the OSU Micro-Benchmarks print it, so that the
scripts that parse OSU's output (ReFrame's OSU checks, site health checks) read xferlab's.

The format followed is OSU Micro-Benchmarks 7.3's (osu_util.c's print_header, print_preamble,
print_only_header and print_stats; the benchmarks' BENCHMARK names; FIELD_WIDTH 18 and
FLOAT_PRECISION 2 from its configure.ac): a header line ``# OSU MPI Latency Test v7.3``, for device
buffers ``# Send Buffer on HOST (H) and Receive Buffer on DEVICE (D)``, the column line, the
datatype line, then one line per size: the size left-aligned in 10 characters and each figure
right-aligned in 18 with 2 decimals; latencies in µs, bandwidths in MB/s (10^6 bytes per second).
Only the figures differ: OSU's own definitions (measure/network_results.py's ``mean_seconds``,
``mean_bytes_per_second``, ``messages_per_second``). What is xferlab's own (the run, the MPI) is
in ``#`` lines and on stderr."""

from __future__ import annotations

from typing import Any, Iterable

OSU_VERSION = "7.3"
FIELD_WIDTH = 18   # OSU's configure.ac: AC_DEFINE([FIELD_WIDTH], [18])
PRECISION = 2      # AC_DEFINE([FLOAT_PRECISION], [2])
SIZE_WIDTH = 10    # "%-*d" with 10, in every print function

#: test -> (OSU's BENCHMARK name, with %s where OSU puts its accelerator's name, and its kind)
BENCHMARKS = {
    "latency": ("OSU MPI%s Latency Test", "latency"),
    "multi_lat": ("OSU MPI Multi Latency Test", "latency"),
    "bw": ("OSU MPI%s Bandwidth Test", "bandwidth"),
    "bibw": ("OSU MPI%s Bi-Directional Bandwidth Test", "bandwidth"),
    "mbw_mr": ("OSU MPI%s Multiple Bandwidth / Message Rate Test", "rate"),
    "allreduce": ("OSU MPI%s Allreduce Latency Test", "collective"),
    "reduce": ("OSU MPI%s Reduce Latency Test", "collective"),
    "bcast": ("OSU MPI%s Broadcast Latency Test", "collective"),
    "alltoall": ("OSU MPI%s All-to-All Personalized Exchange Latency Test", "collective"),
    "allgather": ("OSU MPI%s Allgather Latency Test", "collective"),
    "barrier": ("OSU MPI%s Barrier Latency Test", "barrier"),
    "gather": ("OSU MPI%s Gather Latency Test", "collective"),
    "scatter": ("OSU MPI%s Scatter Latency Test", "collective"),
    "reduce_scatter": ("OSU MPI%s Reduce_scatter Latency Test", "collective"),
    "alltoallv": ("OSU MPI%s All-to-Allv Personalized Exchange Latency Test", "collective"),
    "allgatherv": ("OSU MPI%s Allgatherv Latency Test", "collective"),
    # the non-blocking ones (osu_iallreduce …): print_preamble_nbc's header and columns
    "iallreduce": ("OSU MPI%s Non-blocking Allreduce Latency Test", "nbc"),
    "ialltoall": ("OSU MPI%s Non-blocking All-to-All Latency Test", "nbc"),
    "ibcast": ("OSU MPI%s Non-blocking Broadcast Latency Test", "nbc"),
    "iallgather": ("OSU MPI%s Non-blocking Allgather Latency Test", "nbc"),
    "ireduce": ("OSU MPI%s Non-blocking Reduce Latency Test", "nbc"),
    "igather": ("OSU MPI%s Non-blocking Gather Latency Test", "nbc"),
    "iscatter": ("OSU MPI%s Non-blocking Scatter Latency Test", "nbc"),
    "ibarrier": ("OSU MPI%s Non-blocking Barrier Latency Test", "nbc"),
    # one-sided (mpi/one-sided/): the window's creation and synchronization under the header
    "put_latency": ("OSU MPI_Put%s Latency Test", "rma-latency"),
    "get_latency": ("OSU MPI_Get%s latency Test", "rma-latency"),
    "put_bw": ("OSU MPI_Put%s Bandwidth Test", "rma-bandwidth"),
    "get_bw": ("OSU MPI_Get%s Bandwidth Test", "rma-bandwidth"),
    "put_bibw": ("OSU MPI_Put%s Bi-directional Bandwidth Test", "rma-bandwidth"),
}
#: --rma-sync and --rma-window as OSU's one-sided tests name them ("# Synchronization: …").
RMA_SYNC = {"lock": "MPI_Win_lock/unlock", "flush": "MPI_Win_flush", "flush_local": "MPI_Win_flush_local",
            "lock_all": "MPI_Win_lock_all/unlock_all", "fence": "MPI_Win_fence",
            "pscw": "MPI_Win_post/start/complete/wait"}
RMA_WINDOW = {"allocate": "MPI_Win_allocate", "create": "MPI_Win_create"}
_REDUCTIONS = ("allreduce", "reduce", "reduce_scatter", "iallreduce", "ireduce")
_SIDE = {"H": "HOST (H)", "D": "DEVICE (D)"}
FORMATS = ("osu",)


def _header(test: str, backend: str | None, buffers: str) -> str:
    name, _ = BENCHMARKS[test]
    device = "D" in buffers.split()
    accel = "-CUDA" if device and backend == "cuda" else ""  # OSU names CUDA, OpenACC, ROCm and SYCL only
    return f"# {name.replace('%s', accel)} v{OSU_VERSION}"


def _column(label: str) -> str:
    return f"{'# Size':<{SIZE_WIDTH}}{label:>{FIELD_WIDTH}}"


def _line(size: int, *values: float) -> str:
    return f"{size:<{SIZE_WIDTH}d}" + "".join(f"{v:>{FIELD_WIDTH}.{PRECISION}f}" for v in values)


def block(test: str, rows: list[dict[str, Any]], backend: str | None = None, window: int = 64, pairs: int = 1
          ) -> list[str]:
    """One OSU benchmark's output: its rows (one per size, of one pair kind, path and buffers)."""
    rows = sorted(rows, key=lambda r: r["size_bytes"])
    buffers = rows[0].get("buffers") or "H H"
    kind = BENCHMARKS[test][1]
    out = [_header(test, backend, buffers)]
    sides = buffers.split()
    if kind in ("latency", "bandwidth", "rate") and "D" in sides and len(sides) == 2:
        out.append(f"# Send Buffer on {_SIDE[sides[0]]} and Receive Buffer on {_SIDE[sides[1]]}")
    if kind == "latency":
        out += [_column("Latency (us)"), "# Datatype: MPI_CHAR."]
        out += [_line(r["size_bytes"], r["mean_seconds"] * 1e6) for r in rows]
    elif kind == "bandwidth":
        out += [_column("Bandwidth (MB/s)"), "# Datatype: MPI_CHAR."]
        out += [_line(r["size_bytes"], r["mean_bytes_per_second"] / 1e6) for r in rows]
    elif kind == "rate":
        out += [f"# [ pairs: {pairs} ] [ window size: {window} ]", "# Datatype: MPI_CHAR.",
                f"{'# Size':<{SIZE_WIDTH}}{'MB/s':>{FIELD_WIDTH}}{'Messages/s':>{FIELD_WIDTH}}"]
        out += [_line(r["size_bytes"], r["mean_bytes_per_second"] / 1e6, r.get("messages_per_second") or 0.0)
                for r in rows]
    elif kind in ("rma-latency", "rma-bandwidth"):
        out += [f"# Window creation: {RMA_WINDOW.get(rows[0].get('rma_window'), rows[0].get('rma_window'))}",
                f"# Synchronization: {RMA_SYNC.get(rows[0].get('rma_sync'), rows[0].get('rma_sync'))}",
                "# Datatype: MPI_CHAR."]
        if kind == "rma-latency":
            out += [_column("Latency (us)")] + [_line(r["size_bytes"], r["mean_seconds"] * 1e6) for r in rows]
        else:
            out += [_column("Bandwidth (MB/s)")] + [_line(r["size_bytes"], r["mean_bytes_per_second"] / 1e6) for r in rows]
    elif kind == "nbc":  # Overall, Compute, Pure Comm. in µs and Overlap in % (ibarrier: no size column)
        datatype = "MPI_FLOAT" if test in _REDUCTIONS else "MPI_CHAR"
        labels = ("Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)")
        columns = "".join(f"{label:>{FIELD_WIDTH}}" for label in labels)
        out = ["", *out, "# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait", ""]
        out += ([] if test == "ibarrier" else [f"# Datatype: {datatype}."])
        out += [columns if test == "ibarrier" else f"{'# Size':<{SIZE_WIDTH}}" + columns]
        for r in rows:
            figures = (r["mean_seconds"] * 1e6, (r.get("compute_mean_seconds") or 0.0) * 1e6,
                       (r.get("pure_mean_seconds") or 0.0) * 1e6, (r.get("overlap") or 0.0) * 100)
            text = "".join(f"{v:>{FIELD_WIDTH}.{PRECISION}f}" for v in figures)
            out.append(text if test == "ibarrier" else f"{r['size_bytes']:<{SIZE_WIDTH}d}" + text)
    elif kind == "collective":
        datatype = "MPI_FLOAT" if test in _REDUCTIONS else "MPI_CHAR"
        out = ["", *out, f"# Datatype: {datatype}.", _column("Avg Latency(us)")]
        out += [_line(r["size_bytes"], r["mean_seconds"] * 1e6) for r in rows]
    else:  # barrier: no size column (OSU's show_size is off), the figure in 17 characters
        out = ["", *out, "# Avg Latency(us)"]
        out += [f"{r['mean_seconds'] * 1e6:>17.{PRECISION}f}" for r in rows]
    return out


def osu_text(table: list[dict[str, Any]], backend: str | None = None, window: int = 64, pairs: int = 1,
             first: Iterable[str] = ()) -> str:
    """Every test of a run, one OSU block per (test, pair kind, path, buffers), in the run's order;
    ``first``: xferlab's own lines, printed first as ``#`` comments."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in table:
        if r["test"] in BENCHMARKS:
            groups.setdefault((r["test"], r.get("pair"), r.get("path"), r.get("buffers"), r.get("rma_sync"),
                               r.get("rma_window")), []).append(r)
    lines = [f"# {line}" for line in first]
    for (test, pair, path, *_), rows in groups.items():
        if len(lines) > 1 and BENCHMARKS[test][1] not in ("collective", "barrier", "nbc"):  # those start with OSU's blank line
            lines.append("")
        if pair not in ("intra-node", None) or path not in ("host", None):  # which of several blocks of one test
            lines.append(f"# xferlab: {pair} pair, {path} path")
        lines += block(test, rows, backend, window, pairs)
    return "\n".join(lines) + "\n"

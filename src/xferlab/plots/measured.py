"""Plots of measurements: memory bandwidth and latency (with the cache sizes marked), loaded latency,
host–device copies, MPI point-to-point, device kernels and their scaling, launch latency, the chunk study,
CPU–device collaboration and the offload runtime's speedups."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..units import format_size
from . import LINESTYLES, _axes, _size_axis, _write, plot_lines


def plot_bandwidth(summaries: Sequence[dict], path: Path) -> Path:
    """Best and median bandwidth per kernel, one bar group per placement (node, mode, threads)."""
    rows = [s for s in summaries if s["metric"] == "bandwidth_bytes_per_second"]
    kernels = list(dict.fromkeys(s["test"] for s in rows))
    places = list(dict.fromkeys((s["node"], s["mode"], s["threads"]) for s in rows))
    plt, fig, ax = _axes()
    width = 0.8 / max(1, len(places))
    for j, place in enumerate(places):
        best = [next((s["max"] for s in rows if s["test"] == k and (s["node"], s["mode"], s["threads"]) == place), 0) / 1e9
                for k in kernels]
        median = [next((s["median"] for s in rows if s["test"] == k and (s["node"], s["mode"], s["threads"]) == place), 0) / 1e9
                  for k in kernels]
        xs = [i + j * width for i in range(len(kernels))]
        bars = ax.bar(xs, best, width, label=f"node {place[0]}, {place[1]}, {place[2]} thr (best)")
        ax.scatter(xs, median, color="black", marker="_", s=200, zorder=3, label="median" if j == 0 else None)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks([i + width * (len(places) - 1) / 2 for i in range(len(kernels))], kernels)
    ax.set_ylabel("bandwidth (GB/s, STREAM counting)")
    ax.set_title("Memory bandwidth by kernel and placement")
    ax.legend(fontsize=7)
    return _write(plt, fig, path)


def plot_latency(summaries: Sequence[dict], caches: Sequence[tuple[int, int]], path: Path) -> Path:
    """Median load latency against working-set size, per node, with the cache sizes marked."""
    rows = sorted((s for s in summaries if s["test"] == "latency"), key=lambda s: s["size_bytes"])
    curves = [(f"node {node}", np.asarray([s["size_bytes"] for s in rows if s["node"] == node], dtype=float),
               np.asarray([s["median"] * 1e9 for s in rows if s["node"] == node]))
              for node in dict.fromkeys(s["node"] for s in rows)]
    plt, fig, ax = _axes()
    for label, x, y in curves:
        ax.plot(x, y, marker=".", label=label)
    for level, size in caches:
        ax.axvline(size, color="grey", lw=0.8, ls="--")
        ax.annotate(f"L{level} {format_size(size)}", (size, ax.get_ylim()[1]), rotation=90, va="top", ha="right", fontsize=7)
    _size_axis(ax, np.concatenate([x for _, x, _ in curves]), "working set")
    ax.set_yscale("log")
    ax.set_ylabel("load-to-use latency (ns, median)")
    ax.set_title("Pointer-chase latency")
    ax.legend()
    return _write(plt, fig, path)


def plot_loaded(family: dict, title: Callable[[str], str], folder: Path) -> list[Path]:
    """The loaded-latency family of each memory node (measure/loaded.py's ``curves``: node -> mix -> points
    by bandwidth; ``title`` names a mix): the chase's median latency against the generators' median
    bandwidth, one curve per read/write mix, from idle to saturation, each point's 95 % intervals as
    error bars (Mess's and MLC's bandwidth-latency curves).
    One file per node: ``loaded-latency.png``, or ``loaded-latency-node<N>.png`` with several nodes."""
    written = []
    for node, mixes in family.items():
        plt, fig, ax = _axes()
        for mix, mine in mixes.items():
            x = np.asarray([p["median_bytes_per_second"] / 1e9 for p in mine])
            y = np.asarray([p["median_seconds"] * 1e9 for p in mine])
            xerr = _spread(mine, "bytes_per_second", 1e-9)
            yerr = _spread(mine, "seconds", 1e9)
            ax.errorbar(x, y, xerr=xerr, yerr=yerr, marker="o", ms=4, capsize=2, label=title(mix))
        ax.set_xlabel("generators' bandwidth (GB/s, median; each line read or written counted once)")
        ax.set_ylabel("chase latency (ns, median)")
        ax.set_title(f"Loaded latency, memory node {node}: one curve per read/write mix")
        ax.legend(fontsize=7)
        name = "loaded-latency.png" if len(family) == 1 else f"loaded-latency-node{node}.png"
        written.append(_write(plt, fig, Path(folder) / name))
    return written


def _spread(points: Sequence[dict], unit: str, scale: float) -> np.ndarray:
    """Error bars from each point's median and its 95 % interval (0 where a point has none)."""
    lows, highs = [], []
    for p in points:
        median, low, high = p[f"median_{unit}"], p.get(f"median_ci_low_{unit}"), p.get(f"median_ci_high_{unit}")
        lows.append((median - low) * scale if low is not None else 0.0)
        highs.append((high - median) * scale if high is not None else 0.0)
    return np.asarray([lows, highs])


def plot_device_transfers(summary: Sequence[dict], folder: Path) -> list[Path]:
    """Bandwidth and latency against copy size, one line per (host memory kind, direction)."""
    written = []
    for metric, ylabel, name, scale in (("median_bytes_per_second", "bandwidth (GB/s, median)", "device-bandwidth.png", 1e-9),
                                        ("median_seconds", "copy time (µs, median)", "device-latency.png", 1e6)):
        curves, groups = [], []
        keys = list(dict.fromkeys((s["host_kind"], s["direction"]) for s in summary))
        kinds, directions = list(dict.fromkeys(k for k, _ in keys)), list(dict.fromkeys(d for _, d in keys))
        for key in keys:  # one colour per direction, one line style per host memory kind
            points = sorted((s for s in summary if (s["host_kind"], s["direction"]) == key), key=lambda s: s["size_bytes"])
            curves.append((f"{key[0]} {key[1]}", np.asarray([p["size_bytes"] for p in points], dtype=float),
                           np.asarray([p[metric] * scale for p in points])))
            groups.append((directions.index(key[1]), kinds.index(key[0])))
        written.append(plot_lines(curves, ylabel, f"Host–device copies: {ylabel.split(' (')[0]}", Path(folder) / name,
                                  xlabel="copy size", groups=groups))
    return written


def plot_network(table: Sequence[dict], folder: Path) -> list[Path]:
    """MPI latency and bandwidth against message size (measure network's summary), one line per
    (test, pair kind, path): seed 001's host-to-host against GPU-to-GPU comparison."""
    written = []
    for tests, metric, ylabel, name, scale in (
            (("latency", "multi_lat"), "mean_seconds", "latency (µs, OSU mean)", "network-latency.png", 1e6),
            (("bw", "bibw", "mbw_mr"), "mean_bytes_per_second", "bandwidth (GB/s, OSU)", "network-bandwidth.png", 1e-9)):
        curves = []
        for key in dict.fromkeys((t["test"], t["pair"], t["path"]) for t in table if t["test"] in tests):
            points = sorted((t for t in table if (t["test"], t["pair"], t["path"]) == key and t["size_bytes"] > 0),
                            key=lambda t: t["size_bytes"])
            if points:
                curves.append((" ".join(key), np.asarray([p["size_bytes"] for p in points], dtype=float),
                               np.asarray([p[metric] * scale for p in points])))
        if curves:
            written.append(plot_lines(curves, ylabel, f"MPI point-to-point: {ylabel.split(' (')[0]}", Path(folder) / name,
                                      xlabel="message size"))
    return written


def plot_kernels(summary: Sequence[dict], scaling: Sequence[dict], folder: Path) -> list[Path]:
    """Device STREAM: each kernel's best bandwidth per memory kind (one instance, its best point), as
    grouped bars; and the scaling curves: best bandwidth against work-groups, a line per kernel,
    memory and instance count (seed 004's scaling table as a plot)."""
    written = []
    kernels = list(dict.fromkeys(s["kernel"] for s in summary))
    memories = list(dict.fromkeys(s["memory"] for s in summary))
    if kernels and memories:
        plt, fig, ax = _axes()
        step = 0.8 / len(memories)
        for j, memory in enumerate(memories):
            best = []
            for kernel in kernels:
                mine = [s["best_bytes_per_second"] for s in summary
                        if s["kernel"] == kernel and s["memory"] == memory and s["instances"] == 1]
                best.append(max(mine) / 1e9 if mine else 0.0)
            ax.bar(np.arange(len(kernels)) + j * step, best, step, label=memory)
        ax.set_xticks(np.arange(len(kernels)) + 0.4 - step / 2, kernels)
        ax.set_ylabel("best bandwidth (GB/s)")
        ax.set_title("Device STREAM by memory kind (BabelStream's byte counts)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend()
        written.append(_write(plt, fig, Path(folder) / "kernels-stream.png"))
    curves = []
    for key in dict.fromkeys((s["kernel"], s["memory"], s["width"], s["instances"]) for s in scaling if s["groups"]):
        points = sorted((s for s in scaling if (s["kernel"], s["memory"], s["width"], s["instances"]) == key and s["groups"]),
                        key=lambda s: s["groups"])
        if len(points) > 1:
            curves.append((f"{key[0]} {key[1]} x{key[2]}, {key[3]} inst.", np.asarray([p["groups"] for p in points], float),
                           np.asarray([p["best_bytes_per_second"] / 1e9 for p in points])))
    if curves:
        plt, fig, ax = _axes()
        for label, x, y in curves:
            ax.plot(x, y, marker=".", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("work-groups")
        ax.set_ylabel("best bandwidth (GB/s)")
        ax.set_title("Scaling over work-groups and instances")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        written.append(_write(plt, fig, Path(folder) / "kernels-scaling.png"))
    return written


def plot_launch(rows: Sequence[dict], path: Path) -> Path:
    """The distribution of launch latency (empirical CDF, log time), one line per argument count (and
    per API where a run has several: SYCL's beside OpenCL's)."""
    plt, fig, ax = _axes()
    keys = list(dict.fromkeys((r.get("backend"), r["kernel_args"], r.get("cpus")) for r in rows if r["test"] == "launch"))
    several = len({k[0] for k in keys}) > 1
    for key in keys:
        values = np.sort([r["seconds"] * 1e6 for r in rows
                          if r["test"] == "launch" and (r.get("backend"), r["kernel_args"], r.get("cpus")) == key])
        ax.plot(values, np.arange(1, len(values) + 1) / len(values),
                label=(f"{key[0]}, " if several else "") + f"{key[1]} args"
                + (f", pinned to CPU {key[2]}" if key[2] is not None else ""))
    ax.set_xscale("log")
    ax.set_xlabel("launch + wait (µs, host clock)")
    ax.set_ylabel("fraction of launches")
    ax.set_title("Kernel launch latency")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _write(plt, fig, path)


def plot_chunk_study(summary: Sequence[dict], path: Path) -> Path:
    """Effective bandwidth of the same total moved in chunks of each size (seed 004's study)."""
    plt, fig, ax = _axes()
    labels = [f"{s['host_kind']}\n{format_size(s['chunk_bytes'], 10)} x {s['transfers']}" for s in summary]
    bars = ax.bar(range(len(summary)), [s["median_bytes_per_second"] / 1e9 for s in summary])
    ax.bar_label(bars, fmt="%.2f", fontsize=8)
    ax.set_xticks(range(len(summary)), labels, fontsize=8)
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.set_title("Same total, small or large transfers")
    return _write(plt, fig, path)


def plot_collab(summary: Sequence[dict], path: Path) -> Path:
    """Seed 001's Figure 4: per pattern, a D and a U bar stacked from allocation, copy and kernel
    (medians), each normalized to D's median total, so D's bar reaches 1."""
    plt, fig, ax = _axes()
    patterns = list(dict.fromkeys(s["pattern"] for s in summary))
    phases = (("allocation", "#8da0cb"), ("copy", "#fc8d62"), ("kernel", "#66c2a5"))
    x, labels, width = 0.0, [], 0.38
    ticks, top = [], 1.0
    for pattern in patterns:
        for version in ("D", "U"):
            entry = next((s for s in summary if s["pattern"] == pattern and s["version"] == version), None)
            if entry is None:
                continue
            bottom = 0.0
            for phase, colour in phases:
                value = entry.get(f"{phase}_normalized")
                if value is None:  # no D for this pattern: fall back to seconds
                    value = entry[f"{phase}_seconds"]
                ax.bar(x, value, width, bottom=bottom, color=colour, edgecolor="black", linewidth=0.5,
                       label=phase if not labels else None)
                bottom += value
            ax.text(x, bottom, f"{bottom:.2f}", ha="center", va="bottom", fontsize=8)
            top = max(top, bottom)
            ticks.append(x)
            labels.append(f"{pattern}\n{version}")
            x += width + 0.05
        x += 0.35
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.6, linestyle=":")
    ax.set_ylabel("time normalized to D's total (median)")
    ax.set_title("CPU–device collaboration: D (copies) vs U (shared memory + atomics)")
    ax.set_ylim(0, top * 1.2)  # room for the legend above the bars
    handles, names = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, names, loc="upper center", ncol=3)
    return _write(plt, fig, path)


def plot_runtime_speedup(rows: Sequence[dict], path: Path) -> Path:
    """Speedup of forward and parallel over sync against the bus's one-way latency, per workload
    (`xferlab runtime bench --latency LIST --plot FILE`)."""
    plt, fig, ax = _axes()
    for workload in dict.fromkeys(r["workload"] for r in rows):
        for mode, style in (("forward", "-"), ("parallel", "--")):
            points = sorted((r["latency_seconds"], r["speedup_over_sync"]) for r in rows
                            if r["workload"] == workload and r["mode"] == mode and r["latency_seconds"]
                            and r["speedup_over_sync"])
            if points:
                x, y = zip(*points)
                ax.plot(np.asarray(x) * 1e9, y, style, marker=".", label=f"{workload} {mode}")
    ax.set_xscale("log")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("one-way bus latency (ns)")
    ax.set_ylabel("speedup over sync")
    ax.set_title("What the runtime buys as the bus gets slower")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _write(plt, fig, path)


def plot_p_over_o(rows: Sequence[dict], even: Sequence[dict], path: Path) -> Path:
    """Seed 002's "more forgiving trade-offs": the measured P/O against the emulated device's speed, one line
    per workload, mode and bus latency, with P/O = 1 and each line's break-even speeds, the model's (a
    triangle on the axis) and the measured one (a circle) (`xferlab runtime bench --device-speed LIST --plot FILE`)."""
    plt, fig, ax = _axes()
    for b in even:
        points = [(s, p) for s, p in zip(b["speeds"], b["p_over_o"]) if p is not None]
        if not points:
            continue
        x, y = zip(*points)
        label = f"{b['workload']} {b['mode']} {b['latency_seconds'] * 1e9:g} ns"
        line, = ax.plot(x, y, "-" if b["mode"] == "forward" else "--", marker=".", label=label)
        if b["break_even_speed"] is not None:
            ax.plot([b["break_even_speed"]], [1.0], "v", color=line.get_color(), ms=7)
        if b["measured_break_even_speed"] is not None:
            ax.plot([b["measured_break_even_speed"]], [1.0], "o", mfc="none", color=line.get_color(), ms=8)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("emulated device speed (x the host)")
    ax.set_ylabel("P/O = (T_cpu - T_acc) / T_lat")
    ax.set_title("Where offloading pays: P/O > 1 (triangle: the model's break-even, circle: measured)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _write(plt, fig, path)


def plot_thread_sweep(rows: Sequence[dict], kernel: str, path: Path) -> Path:
    """A study's best bandwidth against threads, one line per class (the tiers study's sweep, seed 003's plots)."""
    plt, fig, ax = _axes()
    for i, key in enumerate(dict.fromkeys(r["class"] for r in rows)):
        mine = sorted((r["threads"], r["best_bytes_per_second"] / 1e9) for r in rows if r["class"] == key)
        ax.plot([t for t, _ in mine], [b for _, b in mine], marker="o", label=key, color=f"C{i % 10}",
                linestyle=LINESTYLES[(i // 10) % len(LINESTYLES)])
    ax.set_xlabel("threads")
    ax.set_ylabel(f"{kernel}: best bandwidth (GB/s, STREAM counting)")
    ax.set_xticks(sorted({r["threads"] for r in rows}))
    ax.set_ylim(bottom=0)
    ax.set_title(f"{kernel}: bandwidth against threads per class")
    ax.legend(fontsize=7)
    return _write(plt, fig, path)

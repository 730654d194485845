"""`xferlab model …`: analytic transfer-time models of links (no hardware needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from ..advise.offload import break_even_bytes, offload, smallest_bytes_that_pay
from ..errors import BadValue
from ..links import PRESETS, resolve
from ..links.analysis import chunked_time, crossovers, ratio
from .. import plots
from ..units import (LIST_HELP, format_rate, format_size, format_time, parse_rate, parse_size, parse_sizes,
                     parse_time)
from .common import CSV, JSON, LINKS_FILE, OP, PLOT, REQUEST_OP, check_op, links_from
from .output import Column, emit, output_format

app = typer.Typer(no_args_is_help=True, help="Transfer-time models of PCIe, CXL, NVLink and networks.")

LINK_HELP = ("A preset (see `xferlab model presets`) with optional overrides, e.g. pcie3x16, "
             "pcie3x16:mps=128, cxl-seed:penalty=0.9, or a name from --links.")
SIZES = typer.Option(..., "--sizes", help=f"Transfer sizes: {LIST_HELP}.", metavar="LIST")

def described(*models) -> dict:
    """The links' full parameters, for the JSON output: every figure traceable to its model."""
    return {"links": {m.label: {**m.parameters(), "source": m.source} for m in models}}


size_col = lambda key="size_bytes", header="size": Column(key, header, lambda v: format_size(v))
time_col = lambda key="seconds", header="time": Column(key, header, format_time)
rate_col = lambda key="bandwidth_bytes_per_second", header="bandwidth": Column(key, header, format_rate)


@app.command("presets")
def presets(json_: bool = JSON, csv_: bool = CSV) -> None:
    """List the preset links, their peak write rate and start-up latency."""
    rows = []
    for name in PRESETS:
        link = resolve(name)
        rows.append({"name": name, "kind": link.kind, "peak_write_bytes_per_second": link.peak_rate("write"),
                     "peak_read_bytes_per_second": link.peak_rate("read"), "latency_seconds": link.startup,
                     "description": link.summary(), "source": link.source})
    emit("model presets", rows, [
        Column("name", "preset", justify="left"),
        rate_col("peak_write_bytes_per_second", "write peak"), rate_col("peak_read_bytes_per_second", "read peak"),
        time_col("latency_seconds", "t_s"), Column("description", "configuration", justify="left"),
    ], output_format(json_, csv_), title="Preset links",
        notes=["Every family takes other parameters too: pcie<gen>x<lanes>, cxl<1-3>x<lanes>[-lopt], nvlink<1-5>, "
               "ib-<speed>, eth<Gb/s>, roce<Gb/s>; any field can be overridden: NAME:key=value,…",
               "`xferlab model show NAME` lists a link's fields and derived figures."])


@app.command("show")
def show(link: str = typer.Argument(..., help=LINK_HELP), links: Optional[list[Path]] = LINKS_FILE,
         json_: bool = JSON, csv_: bool = CSV) -> None:
    """Show a link's parameters, derived figures and the source of its model."""
    model = links_from([link], links)[0]
    rows = [{"field": k, "value": v, "what": "parameter"} for k, v in model.parameters().items()]
    rows += [{"field": k, "value": v, "what": "derived"} for k, v in model.derived().items()]
    rows += [{"field": f"peak_{op}_bytes_per_second", "value": model.peak_rate(op), "what": "derived"}
             for op in ("write", "read", "readwrite")]
    emit("model show", rows, [Column("field", "field", justify="left"), Column("value", "value", lambda v: f"{v:.6g}" if isinstance(v, float) else str(v)),
                              Column("what", "", justify="left")],
         output_format(json_, csv_), title=f"{model.label}: {model.summary()}",
         notes=[f"source: {model.source}"], extra={"link": model.label, "source": model.source})


@app.command("time")
def time(links_: list[str] = typer.Argument(..., metavar="LINK...", help=LINK_HELP), sizes: str = SIZES,
         op: str = OP, links: Optional[list[Path]] = LINKS_FILE, plot: Optional[Path] = PLOT,
         json_: bool = JSON, csv_: bool = CSV) -> None:
    """Transfer time, bandwidth with the latency (n / t) and streaming throughput without it (back-to-back
    transfers of that size, n / (t - latency): what protocol and per-message overheads leave) over a size sweep."""
    fmt, op = output_format(json_, csv_), check_op(op)
    models = links_from(links_, links)
    n = parse_sizes(sizes)
    rows = []
    for model in models:
        seconds = np.asarray(model.time(n, op))
        streaming = np.asarray(model.streaming_rate(n, op))
        for size, t, rate in zip(n, seconds, streaming):
            rows.append({"link": model.label, "op": op, "size_bytes": int(size), "seconds": float(t),
                         "bandwidth_bytes_per_second": float(size / t), "streaming_bytes_per_second": float(rate)})
    notes = []
    if plot:
        notes.append(f"plot: {plots.plot_times(models, n, op, plot)}")
    emit("model time", rows, [Column("link", "link", justify="left"), size_col(), time_col(), rate_col(),
                              rate_col("streaming_bytes_per_second", "streaming")], fmt,
         title=f"Transfer time ({op}; t = t_s + n / b_n; bandwidth n / t; streaming n / (t - latency))", notes=notes, extra={"op": op, **described(*models)})


@app.command("compare")
def compare(link_a: str = typer.Argument(..., help=LINK_HELP), link_b: str = typer.Argument(..., help=LINK_HELP),
            sizes: str = SIZES, op: str = OP, links: Optional[list[Path]] = LINKS_FILE,
            plot: Optional[Path] = PLOT, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Ratio of two links' transfer times, t_A / t_B: how many times faster B is than A."""
    fmt, op = output_format(json_, csv_), check_op(op)
    a, b = links_from([link_a, link_b], links)
    n = parse_sizes(sizes)
    ta, tb, r = np.asarray(a.time(n, op)), np.asarray(b.time(n, op)), ratio(a, b, n, op)
    rows = [{"size_bytes": int(s), "link_a_seconds": float(x), "link_b_seconds": float(y), "time_ratio": float(q),
             "faster": b.label if q > 1 else a.label if q < 1 else "tie"} for s, x, y, q in zip(n, ta, tb, r)]
    notes = []
    if plot:
        notes.append(f"plot: {plots.plot_ratio(a, [b], n, op, plot)}")
    emit("model compare", rows, [size_col(), time_col("link_a_seconds", f"A: {a.label}"),
                                 time_col("link_b_seconds", f"B: {b.label}"),
                                 Column("time_ratio", "t_A / t_B", lambda v: f"{v:.3f}"),
                                 Column("faster", "faster", justify="left")],
         fmt, title=f"{a.label} vs {b.label} ({op})", notes=notes, extra={"link_a": a.label, "link_b": b.label, "op": op, **described(a, b)})


@app.command("crossover")
def crossover(link_a: str = typer.Argument(..., help=LINK_HELP), link_b: str = typer.Argument(..., help=LINK_HELP),
              op: str = OP, low: str = typer.Option("1B", "--min", help="Smallest size searched.", metavar="SIZE"),
              high: str = typer.Option("1PiB", "--max", help="Largest size searched.", metavar="SIZE"),
              links: Optional[list[Path]] = LINKS_FILE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """The transfer sizes where the faster of two links changes, exact to the byte."""
    fmt, op = output_format(json_, csv_), check_op(op)
    a, b = links_from([link_a, link_b], links)
    lo, hi = parse_size(low, "--min"), parse_size(high, "--max")
    if hi <= lo:
        raise BadValue(f"--max {high} must be larger than --min {low}")
    found = crossovers(a, b, op, lo, hi)
    rows = [{"size_bytes": c.size_bytes, "faster_below": c.faster_below, "faster_above": c.faster_above,
             "seconds": c.seconds} for c in found]
    if found:
        notes = [f"{c.faster_below} is faster below {format_size(c.size_bytes)} ({c.size_bytes} B); "
                 f"{c.faster_above} from there on" for c in found]
    else:
        t = lambda link: float(link.time(float(lo), op))
        faster = a if t(a) < t(b) else b
        notes = [f"no crossover between {format_size(lo)} and {format_size(hi)}: {faster.label} is faster throughout"]
    emit("model crossover", rows, [size_col(), Column("faster_below", "faster below", justify="left"),
                                   Column("faster_above", "faster from", justify="left"), time_col("seconds", "time there")],
         fmt, title=f"Crossover of {a.label} and {b.label} ({op})", notes=notes,
         extra={"link_a": a.label, "link_b": b.label, "op": op, "min_bytes": lo, "max_bytes": hi, **described(a, b)})


@app.command("chunks")
def chunks(link: list[str] = typer.Argument(..., metavar="LINK...", help=LINK_HELP),
           total: str = typer.Option(..., "--total", help="Bytes to move in all, e.g. 1.6GB.", metavar="SIZE"),
           chunk_sizes: str = typer.Option(..., "--chunks", help=f"Chunk sizes: {LIST_HELP}.", metavar="LIST"),
           op: str = OP, links: Optional[list[Path]] = LINKS_FILE, plot: Optional[Path] = PLOT,
           json_: bool = JSON, csv_: bool = CSV) -> None:
    """Total time to move SIZE bytes as back-to-back transfers of each chunk size (seed 000, Fig. 5)."""
    fmt, op = output_format(json_, csv_), check_op(op)
    models = links_from(link, links)
    s, c = parse_size(total, "--total"), parse_sizes(chunk_sizes, "--chunks")
    rows, notes = [], []
    for model in models:
        count, seconds = chunked_time(model, s, c, op)
        for size, k, t in zip(c, count, seconds):
            rows.append({"link": model.label, "chunk_bytes": int(min(size, s)), "transfers": int(k), "seconds": float(t),
                         "bandwidth_bytes_per_second": s / float(t)})
        best = int(np.argmin(seconds))
        notes.append(f"{model.label}: fastest of these is {format_size(min(c[best], s))} chunks, "
                     f"{format_time(seconds[best])} in all")
    if plot:
        notes.append(f"plot: {plots.plot_chunks(models, s, c, op, plot)}")
    emit("model chunks", rows, [Column("link", "link", justify="left"), size_col("chunk_bytes", "chunk"),
                                Column("transfers", "transfers"), time_col("seconds", "total time"), rate_col()],
         fmt, title=f"Moving {format_size(s, 10)} in chunks ({op})", notes=notes, extra={"total_bytes": s, "op": op, **described(*models)})


@app.command("requests")
def requests(links_: list[str] = typer.Argument(..., metavar="LINK...", help="CXL links (" + LINK_HELP[0].lower() + LINK_HELP[1:-1] + ")."),
             outstanding: str = typer.Option("1..1024", "--outstanding", help=f"Requests in flight: {LIST_HELP} (counts).",
                                             metavar="LIST"),
             op: str = REQUEST_OP,
             links: Optional[list[Path]] = LINKS_FILE, plot: Optional[Path] = PLOT,
             json_: bool = JSON, csv_: bool = CSV) -> None:
    """CXL.cache as requests: bandwidth over requests in flight, min(Little's law: k x 64 B / t_line, the flit limit)."""
    from ..links.coherence import cache_link
    from ..units import parse_count, parse_list

    fmt, op = output_format(json_, csv_), check_op(op)
    models = links_from(links_, links)
    for model in models:
        cache_link(model, "model requests takes CXL links")
    counts = [int(c) for c in parse_list(outstanding, parse_count, "--outstanding", max_items=4096)]
    rows, notes, curves = [], [], []
    for model in models:
        little, limit = np.asarray(model.request_rate(counts, op)), model.flit_limit(op)
        for k, rate in zip(counts, little):
            rows.append({"link": model.label, "op": op, "outstanding": k, "line_seconds": model.line_seconds(op),
                         "little_bytes_per_second": float(rate), "flit_limit_bytes_per_second": limit,
                         "bandwidth_bytes_per_second": float(min(rate, limit)),
                         "limited_by": "requests" if rate < limit else "flits"})
        notes.append(f"{model.label}: t_line = {format_time(model.line_seconds(op))}; Little's law meets the flit limit "
                     f"{format_rate(limit)} at {model.request_knee(op):.1f} requests in flight")
        curves.append((model.label, np.asarray(counts, dtype=float), np.minimum(little, limit)))
    if plot:
        notes.append(f"plot: {plots.plot_lines(curves, 'bandwidth (B/s)', f'CXL.cache requests ({op})', plot, xlabel='requests in flight')}")
    emit("model requests", rows, [Column("link", "link", justify="left"), Column("outstanding", "in flight"),
                                  rate_col("little_bytes_per_second", "Little"),
                                  rate_col("flit_limit_bytes_per_second", "flit limit"), rate_col(),
                                  Column("limited_by", "limited by", justify="left")],
         fmt, title=f"CXL.cache requests ({op}): bandwidth = min(k x 64 B / t_line, flit limit)", notes=notes,
         extra={"op": op, **described(*models)})


@app.command("offload", hidden=True, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def offload_moved(ctx: typer.Context) -> None:
    """Moved: `xferlab advise offload` (one command, one place)."""
    raise BadValue("`model offload` is now `xferlab advise offload` (same options); see docs/cli.md, 'Renamed options'")


def offload_cmd(link: str = typer.Argument(..., help=LINK_HELP),
                bytes_in: str = typer.Option(..., "--bytes", help="Data the task needs on the device.", metavar="SIZE"),
                bytes_out: Optional[str] = typer.Option(None, "--bytes-out", help="Results brought back (default: --bytes, the seed's 2d; 0 for none).", metavar="SIZE"),
                host_time: Optional[str] = typer.Option(None, "--host-time", help="t: the task's time where it runs now.", metavar="TIME"),
                device_time: Optional[str] = typer.Option(None, "--device-time", help="t': its time on the other device.", metavar="TIME"),
                host_rate: Optional[str] = typer.Option(None, "--host-rate", help="Or: bytes of input the host processes per second (t = bytes / rate).", metavar="RATE"),
                device_rate: Optional[str] = typer.Option(None, "--device-rate", help="Or: bytes of input the device processes per second.", metavar="RATE"),
                op: str = OP, links: Optional[list[Path]] = LINKS_FILE, json_: bool = JSON, csv_: bool = CSV) -> None:
    """Does offloading pay? t - t' > 2d (seed 000), i.e. P/O > 1 (seed 002)."""
    fmt, op = output_format(json_, csv_), check_op(op)
    model = links_from([link], links)[0]
    n_in = parse_size(bytes_in, "--bytes")
    n_out = n_in if bytes_out is None else parse_size(bytes_out, "--bytes-out", allow_zero=True)
    t, t_dev, rates = _task_times(n_in, host_time, device_time, host_rate, device_rate)
    v = offload(model, n_in, n_out, t, t_dev, op, op)
    row = {"link": model.label, "in_bytes": n_in, "out_bytes": n_out, "host_seconds": t, "device_seconds": t_dev,
           "saved_seconds": v.saved_seconds, "communication_seconds": v.communication_seconds,
           "p_over_o": v.p_over_o, "pays": v.pays, "speedup": v.speedup,
           "break_even_device_seconds": t - v.communication_seconds}
    verdict = "offloading pays" if v.pays else "offloading does not pay"
    notes = [f"{verdict}: t - t' = {format_time(v.saved_seconds)} {'>' if v.pays else '<='} d_in + d_out = "
             f"{format_time(v.communication_seconds)}"]
    if t - v.communication_seconds > 0:
        notes.append(f"for this data it pays while the device takes less than {format_time(t - v.communication_seconds)} "
                     "(t - 2d)")
    else:
        notes.append("for this data it never pays: moving it costs more than the whole host time")
    if rates:
        least = smallest_bytes_that_pay(model, rates[0], rates[1], n_out / n_in, op)
        row["break_even_bytes"] = least
        notes.append(f"at these throughputs offloading pays for inputs from {format_size(least)} ({least} B) over {model.label}"
                     if least is not None else "at these throughputs no input size pays over " + model.label)
        size_note = "smallest input that pays"
    else:
        limit = break_even_bytes(model, v.saved_seconds, n_out / n_in, op)
        row["break_even_bytes"] = limit
        notes.append(f"with the same times, offloading pays for inputs up to {format_size(limit)} ({limit} B) over {model.label}"
                     if limit else "no input size is small enough: the task saves less time than one round trip costs")
        size_note = "break-even input"
    emit("advise offload", [row], [
        Column("link", "link", justify="left"), time_col("saved_seconds", "P = t - t'"),
        time_col("communication_seconds", "O = d_in + d_out"), Column("p_over_o", "P/O", lambda x: f"{x:.3g}"),
        Column("speedup", "speedup", lambda x: f"{x:.3g}x"), Column("pays", "pays", lambda x: "yes" if x else "no"),
        Column("break_even_bytes", size_note, lambda v: "none" if v is None else format_size(v)),
    ], fmt, title="Offload decision", extra={"op": op, **described(model)}, notes=notes)


def _task_times(n_in: int, host_time, device_time, host_rate, device_rate):
    """(t, t', rates or None) from either times or throughputs, one of each side."""
    for given, other, name in ((host_time, host_rate, "host"), (device_time, device_rate, "device")):
        if (given is None) == (other is None):
            raise BadValue(f"give exactly one of --{name}-time and --{name}-rate")
    if (host_time is None) != (device_time is None):
        raise BadValue("give both sides as times (--host-time, --device-time) or both as throughputs (--host-rate, --device-rate)")
    if host_time is not None:
        return parse_time(host_time, "--host-time"), parse_time(device_time, "--device-time"), None
    rh, rd = parse_rate(host_rate, "--host-rate"), parse_rate(device_rate, "--device-rate")
    return n_in / rh, n_in / rd, (rh, rd)

"""Issue 27's OSU conventions in `xferlab measure network`: buffers per side (OSU's `H D` / `D H`: with
--buffers host,device every ordered pair of kinds, device memory on PoCL through the staged path;
collectives one kind), the ping-pong timed in batches as OSU times its loop (one clock read per batch, the
samples' mean its figure), `--format osu` (OSU 7.3's headers, columns and units, read back by an OSU-style
parser and held to the stored samples), and `--mpi` on `study run characterize` and on `lab`.

Bad input tried: --format xml, --format osu with --json, --mpi zzz on study run and on lab, --mpi given to a
study that has no network step (tiers). Iteration counts are small: 2 cores, other tests beside."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from xferlab.measure.device import devices
from xferlab.measure.network_results import summary
from xferlab.store import open_store
from mpis import require_wheel

require_wheel()

OPENCL, _ = devices("opencl")
SMALL = ["--iterations", "200", "--warmup", "10", "--bw-iterations", "5", "--bw-warmup", "1"]


def _xferlab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xferlab", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (CI installs PoCL)")
def test_buffers_per_side_run_every_ordered_pair_of_kinds(tmp_path):
    store = tmp_path / "b.duckdb"
    done = _xferlab("measure", "network", "--mpi", "wheel", "--buffers", "host,device", "--tests", "latency,bw,allreduce",
                    "--sizes", "8,64Ki", "--collective-sizes", "4Ki", *SMALL, "--collective-iterations", "20",
                    "--collective-warmup", "2", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    seen = {(r["test"], r["path"], r["buffers"], r["buffer"]) for r in doc["results"]}
    for test in ("latency", "bw"):  # OSU's H H, H D, D H, D D: the sender's kind first
        assert {(test, "host", "H H", "host"), (test, "staged", "H D", "mixed"), (test, "staged", "D H", "mixed"),
                (test, "staged", "D D", "device")} <= seen, seen
    # collectives keep one kind per run of them
    assert {(t, p, b) for t, p, b, _ in seen if t == "allreduce"} == {("allreduce", "host", "H"), ("allreduce", "staged", "D")}
    assert doc["unvalidated_samples"] == 0 and not doc["failures"]  # every receiver checked, each pair of kinds
    lat = {r["buffers"]: r for r in doc["results"] if r["test"] == "latency" and r["size_bytes"] == 8}
    # one staging copy per message on a mixed pair, two on D D (PoCL's copies dwarf an 8 B message)
    assert lat["D D"]["median_seconds"] > lat["H H"]["median_seconds"]
    assert lat["H D"]["median_seconds"] > lat["H H"]["median_seconds"]
    with open_store(store, read_only=True) as db:
        rows = db.samples(doc["run_id"])
    sides = {(r["params"]["buffers"], r["params"]["buffer"]) for r in rows if r["test"] == "bw"}
    assert sides == {("H H", "host"), ("H D", "mixed"), ("D H", "mixed"), ("D D", "device")}


def test_the_ping_pong_is_timed_in_batches_whose_mean_is_osus_figure(tmp_path):
    """200 timed iterations: 100 batches of 2 round trips, one sample each (a clock read per batch, not per
    iteration); 7 iterations: 7 batches of 1; the large messages' 20: 20 of 1."""
    store = tmp_path / "p.duckdb"
    done = _xferlab("measure", "network", "--mpi", "wheel", "--tests", "latency,multi_lat", "--sizes", "8,16Ki",
                    "--iterations", "200", "--warmup", "5", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    counts = {(r["test"], r["size_bytes"]): r["count"] for r in doc["results"]}
    assert counts == {("latency", 8): 100, ("latency", 16384): 20, ("multi_lat", 8): 100, ("multi_lat", 16384): 20}
    with open_store(store, read_only=True) as db:
        rows = db.samples(doc["run_id"])
    per = {(r["test"], r["size_bytes"], r["params"]["per_sample"]) for r in rows}
    assert per == {("latency", 8, 2), ("latency", 16384, 1), ("multi_lat", 8, 2), ("multi_lat", 16384, 1)}
    done = _xferlab("measure", "network", "--mpi", "wheel", "--tests", "latency", "--sizes", "8", "--iterations", "7",
                    "--warmup", "0", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    assert [r["count"] for r in json.loads(done.stdout)["results"]] == [7]


# An OSU-style parser (as ReFrame's OSU checks and site scripts read osu_latency's output): the header names
# the benchmark, '#' lines are comments, a data line is a size and figures.
HEADER = re.compile(r"^# OSU MPI(?:-CUDA)? (.+) Test v(\d+\.\d+)$")
DATA = re.compile(r"^(\d+)\s+(\d+\.\d\d)(?:\s+(\d+\.\d\d))?$")


def _parse_osu(text: str) -> dict[str, dict[int, tuple[float, ...]]]:
    out: dict[str, dict[int, tuple[float, ...]]] = {}
    current = None
    for line in text.splitlines():
        if m := HEADER.match(line):
            current = out.setdefault(m.group(1), {})
            assert m.group(2) == "7.3"
        elif m := DATA.match(line):
            current[int(m.group(1))] = tuple(float(g) for g in m.groups()[1:] if g is not None)
        elif re.match(r"^\s+\d+\.\d\d$", line):  # osu_barrier: no size column
            current[0] = (float(line),)
    return out


def test_format_osu_prints_each_test_as_osu_does(tmp_path):
    store = tmp_path / "o.duckdb"
    done = _xferlab("measure", "network", "--mpi", "wheel", "--tests", "latency,bw,mbw_mr,allreduce,barrier", "--sizes",
                    "1,8,256Ki", "--collective-sizes", "4,4Ki", *SMALL, "--collective-iterations", "20",
                    "--collective-warmup", "2", "--store", str(store), "--format", "osu")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    lines = text.splitlines()
    assert lines[0].startswith("# xferlab measure network, run ") and "OSU Micro-Benchmarks 7.3 output format" in lines[0]
    # OSU 7.3's own lines, to the space (FIELD_WIDTH 18 after a 10-wide size)
    assert lines[1:4] == ["# OSU MPI Latency Test v7.3", "# Size          Latency (us)", "# Datatype: MPI_CHAR."]
    assert "# Size      Bandwidth (MB/s)" in lines and "# [ pairs: 1 ] [ window size: 64 ]" in lines
    assert "# Size                  MB/s        Messages/s" in lines
    at = lines.index("# OSU MPI Allreduce Latency Test v7.3")
    assert lines[at - 1] == "" and lines[at + 1:at + 3] == ["# Datatype: MPI_FLOAT.", "# Size       Avg Latency(us)"]
    assert "# OSU MPI Barrier Latency Test v7.3" in lines and "# Avg Latency(us)" in lines
    assert re.search(r"^1 {9} +\d+\.\d\d$", text, re.M)  # "%-10d%18.2f"
    assert "run " in done.stderr and "recorded in" in done.stderr  # xferlab's notes: stderr only
    parsed = _parse_osu(text)
    assert set(parsed) == {"Latency", "Bandwidth", "Multiple Bandwidth / Message Rate", "Allreduce Latency",
                           "Barrier Latency"}
    # the figures are the stored samples' OSU figures: µs, MB/s = 10^6 B/s, messages/s
    run_id = lines[0].split("run ")[1].split(":")[0]
    with open_store(store, read_only=True) as db:
        table = {(r["test"], r["size_bytes"]): r for r in summary(db.samples(run_id))}
    for size, (us,) in parsed["Latency"].items():
        assert us == pytest.approx(table[("latency", size)]["mean_seconds"] * 1e6, abs=0.006)
    for size, (mbs,) in parsed["Bandwidth"].items():
        assert mbs == pytest.approx(table[("bw", size)]["mean_bytes_per_second"] / 1e6, abs=0.006)
    for size, (mbs, rate) in parsed["Multiple Bandwidth / Message Rate"].items():
        assert rate == pytest.approx(table[("mbw_mr", size)]["messages_per_second"], abs=0.006)
        assert mbs == pytest.approx(rate * size / 1e6, rel=1e-3, abs=0.006)  # OSU's rate = 10^6 x MB/s / size
    assert sorted(parsed["Allreduce Latency"]) == [4, 4096] and list(parsed["Barrier Latency"]) == [0]


def test_format_osu_blocks_of_the_new_collectives_and_one_sided_tests():
    # OSU's print_preamble_nbc (Overall, Compute, Pure Comm., Overlap) and its one-sided headers (the window's
    # creation and synchronization): the figures come from the summary's fields, in µs, MB/s and %.
    from xferlab.cli.network_osu import block

    nbc = block("iallreduce", [{"size_bytes": 16, "mean_seconds": 12e-6, "compute_mean_seconds": 8e-6,
                                "pure_mean_seconds": 7.5e-6, "overlap": 0.4611, "buffers": "H"}])
    assert nbc[1:6] == ["# OSU MPI Non-blocking Allreduce Latency Test v7.3",
                        "# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait", "", "# Datatype: MPI_FLOAT.",
                        "# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)"]
    assert nbc[6] == "16" + " " * 8 + f"{12.0:>18.2f}{8.0:>18.2f}{7.5:>18.2f}{46.11:>18.2f}"
    barrier = block("ibarrier", [{"size_bytes": 0, "mean_seconds": 6e-6, "compute_mean_seconds": 2e-6,
                                  "pure_mean_seconds": 2e-6, "overlap": 0.0, "buffers": "H"}])
    assert "# Datatype: MPI_FLOAT." not in barrier and barrier[-1] == f"{6.0:>18.2f}{2.0:>18.2f}{2.0:>18.2f}{0.0:>18.2f}"
    put = block("put_latency", [{"size_bytes": 8, "mean_seconds": 2.7e-7, "rma_sync": "lock", "rma_window": "create",
                                 "buffers": "H H"}])
    assert put == ["# OSU MPI_Put Latency Test v7.3", "# Window creation: MPI_Win_create",
                   "# Synchronization: MPI_Win_lock/unlock", "# Datatype: MPI_CHAR.", "# Size          Latency (us)",
                   "8" + " " * 9 + f"{0.27:>18.2f}"]
    get = block("get_bw", [{"size_bytes": 1024, "mean_bytes_per_second": 6.5e9, "rma_sync": "flush",
                            "rma_window": "allocate", "buffers": "H H"}])
    assert get[0] == "# OSU MPI_Get Bandwidth Test v7.3" and get[4] == "# Size      Bandwidth (MB/s)"
    assert get[5].endswith("6500.00")
    gather = block("gather", [{"size_bytes": 16, "mean_seconds": 1.5e-6, "buffers": "H"}])
    assert gather[1:4] == ["# OSU MPI Gather Latency Test v7.3", "# Datatype: MPI_CHAR.", "# Size       Avg Latency(us)"]


@pytest.mark.parametrize("args, fragment", [
    (["--format", "xml"], "--format 'xml' is not allowed; allowed: osu"),
    (["--format", "osu", "--json"], "--format osu and --json were both given; choose one"),
])
def test_bad_format_is_one_line_and_nothing_runs(args, fragment, tmp_path):
    done = _xferlab("measure", "network", "--tests", "latency", "--sizes", "8", "--store", str(tmp_path / "n.duckdb"), *args)
    assert done.returncode == 2 and fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "n.duckdb").exists()


@pytest.mark.parametrize("args, fragment", [
    (["study", "run", "characterize", "--mpi", "zzz"], "--mpi 'zzz' is not allowed"),
    (["study", "run", "tiers", "--mpi", "wheel"], "--mpi does not apply to the tiers study; it applies to: characterize"),
    (["lab", "--mpi", "zzz", "--budget", "10s"], "--mpi 'zzz' is not allowed"),
])
def test_bad_mpi_on_study_and_lab_is_refused_before_anything_runs(args, fragment, tmp_path):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if args[0] == "lab" else []
    done = _xferlab(*args, *extra, "--store", str(tmp_path / "s.duckdb"), timeout=120)
    assert done.returncode == 2 and fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "s.duckdb").exists() and not out.exists()


def test_characterize_and_the_lab_take_the_mpi_they_are_given(tmp_path):
    """The study's network step and the lab's network stage run the MPI --mpi names and record it."""
    from xferlab.lab.steps import network_stage
    from xferlab.studies.characterize import CHARACTERIZE

    plan = CHARACTERIZE.plan({**CHARACTERIZE.options, "mpi": "wheel"})
    network_step = next(s for s in plan.steps if s.key == "network")
    assert network_step.params["network"]["mpi"]["choice"] == "wheel"
    assert network_step.params["network"]["mpi"]["source"] == "wheel"
    store = tmp_path / "lab.duckdb"
    run_id, failure = network_stage(8.0, store, "wheel")
    assert run_id and failure is None
    with open_store(store, read_only=True) as db:
        params = db.run(run_id)["params"]
    assert params["network"]["mpi"]["choice"] == "wheel"

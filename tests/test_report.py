"""`xferlab report`: a self-contained HTML file, opened in headless Chromium.

One memory run and one PoCL device run are recorded once for the module; the report of both is
checked in a real browser (no console errors, every plot loads, nothing fetched from the network)
and its headline numbers against the store's own statistics. Bad input tried: a run id that does not
exist, a report path that is a folder and one under a regular file, an unknown --against link, a
profile prefix that is a preset's name."""

from __future__ import annotations

import json
import os
import re

import pytest

from browser import browser  # noqa: F401  (module-scoped fixture)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from conftest import Cli
    from xferlab.measure.device import devices

    if not devices("opencl")[0] and not os.environ.get("CI"):
        pytest.skip("no OpenCL device (CI installs PoCL)")
    folder = tmp_path_factory.mktemp("report")
    store = folder / "s.duckdb"
    env = {"XFERLAB_PROFILES": str(folder / "profiles")}
    cli = Cli()
    cli("measure", "memory", "--kernels", "copy,triad", "--iterations", "3", "--latency", "--store", store, check=0, env=env)
    cli("measure", "device", "--kinds", "pageable", "--sizes", "1B..16MiB", "--min-time", "2ms", "--chunks", "64KiB,4MiB",
        "--total", "16MiB", "--store", store, check=0, env=env)
    cli("measure", "kernels", "--kernels", "triad", "--memory", "device", "--widths", "1", "--size", "1Mi",
        "--iterations", "3", "--store", store, check=0, env=env)
    report = folder / "out" / "report.html"
    code, out, err = cli("report", "-o", report, "--name", "rt", "--store", store, check=0, env=env)
    assert out.strip() == str(report)
    return {"store": store, "report": report, "env": env, "folder": folder, "stderr": err}


def test_report_renders_in_a_browser_without_errors(recorded, browser, tmp_path):  # noqa: F811
    page = browser.open(recorded["report"], screenshot=tmp_path / "report.png")
    assert page.problems == [], page.problems
    assert page.foreign_requests == [] and page.blocked == []
    assert len(page.images) >= 10 and all(i.loaded for i in page.images)
    assert all(i.src.startswith("data:image/png;base64,") for i in page.images)
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_headline_numbers_equal_the_stores_statistics(recorded, browser):  # noqa: F811
    from xferlab.store import open_store
    from xferlab.units import format_rate, format_time

    page = browser.open(recorded["report"])
    heads = page.all_headlines
    keys = {h.key.split("-")[0] for h in heads}
    assert {"triad", "latency", "h2d", "d2h", "launch"} <= keys
    with open_store(recorded["store"], read_only=True) as db:
        for h in heads:
            group = json.loads(h.data["group"])
            stats = db.stats(h.data["run"])
            match = [g for g in stats if all(g.get(k) == v for k, v in group.items())]
            assert len(match) == 1, (h.key, group)
            value = match[0][h.data["stat"]]
            assert json.loads(h.value) == value
            shown = format_rate(value) if group["metric"].endswith("bytes_per_second") else format_time(value)
            assert h.text == shown


def test_report_states_fits_tiers_advice_and_commands(recorded):
    html = recorded["report"].read_text()
    # the fits' quality, on held-out sizes, for the h2d and d2h copies
    assert "held-out err" in html and re.search(r"<td class=\"text\">h2d</td>", html) and ">d2h<" in html
    assert "Tier profiles" in html and "Advice" in html and "Offloading pays when" in html
    assert "xferlab scenario run cxl-vs-pcie" in html and "xferlab measure device" in html
    assert "xferlab advise chunk seed-testbed deceval --overhead" in html  # the launch latency as the per-chunk cost
    # profiles were saved under the prefix and resolve as links
    names = sorted(p.stem for p in (recorded["folder"] / "profiles").glob("*.yaml"))
    assert "rt-h2d-pageable" in names and "rt-d2h-pageable" in names and any(n.startswith("rt-node") or n == "rt-default"
                                                                            for n in names)


def test_every_scenario_is_in_the_seeds_section_with_its_rows_sections(recorded):
    """The seeds section holds every packaged scenario (seeds 000-004), each figure as a row with the
    seed's section it is from, its status and the command that reruns it."""
    import html as markup

    from xferlab import scenarios

    page = recorded["report"].read_text()
    section = re.search(r'<section id="scenarios">(.*?)</section>', page, re.S).group(1)
    head = [markup.unescape(h) for h in re.findall(r"<th(?: [^>]*)?>(.*?)</th>", section)]
    shown = set()
    for row in re.findall(r"<tr>(.*?)</tr>", section, re.S):
        cells = dict(zip(head, (markup.unescape(c) for c in re.findall(r"<td(?: [^>]*)?>(.*?)</td>", row, re.S))))
        if cells:
            shown.add((cells["scenario"], cells["figure"], cells["seed's section"]))
            assert cells["status"] in scenarios.STATUSES, cells  # (zipper's measured rows may differ run to run)
    wanted = {(name, c["figure"], c["section"]) for name in scenarios.names() for c in scenarios.load(name).run()["checks"]}
    assert shown == wanted and all(s for _, _, s in wanted)  # every row names its section
    assert {s.split()[1] for s in map(scenarios.seed_document, map(scenarios.load, scenarios.names()))} == {
        "000", "001", "002", "003", "004"}
    for name in scenarios.names():
        assert f"xferlab scenario run {name}" in section


def test_the_glance_compares_like_with_like(recorded):
    """Host STREAM (arrays of 4x the last-level cache by default: memory) and device STREAM on 1 MiB
    arrays (they fit the cache) are never in one table: each table holds one size class and one
    statistic, says which, and sets each figure against the slowest of its own class only."""
    from xferlab.measure.samples import kept
    from xferlab.store.rows import flat
    from xferlab.report.kernels_section import glance
    from xferlab.store import open_store

    runs: dict = {}
    with open_store(recorded["store"], read_only=True) as db:
        for summary in db.runs():
            run = db.run(summary["run_id"])
            runs.setdefault(run["command"], []).append((run, [flat(s) for s in kept(db.samples(run["run_id"]))]))
    tables = glance(runs["measure memory"], runs["measure device"], runs["measure kernels"])
    figures = [r for t in tables for r in t.rows]
    host = next(f for f in figures if f["path"].startswith("host memory"))
    kernel = next(f for f in figures if f["path"].startswith("device kernel"))
    assert host["array_size_class"] == "memory" and kernel["array_size_class"] == "cache-resident"
    assert kernel["size_bytes"] == 2**20 and kernel["placement"] == "device memory"
    assert host["placement"].startswith("memory node ") and " thread" in host["placement"]
    assert not any(host in t.rows and kernel in t.rows for t in tables)
    for t in tables:
        (cls,) = {r["array_size_class"] for r in t.rows}
        assert {r["statistic"] for r in t.rows} == {"best"}
        assert t.title.startswith("Best bandwidth (the fastest iteration), ") and f"{cls or 'unknown'} figures" in t.title
        slowest = min(r["best_bytes_per_second"] for r in t.rows)
        for r in t.rows:
            assert r["times_the_slowest"] == (pytest.approx(r["best_bytes_per_second"] / slowest) if len(t.rows) > 1
                                              else None)
    html = recorded["report"].read_text()
    assert "At a glance: where the bottleneck is" in html and "never a cache figure with a memory figure" in html
    assert "memory figures (each array at least 4x the last-level cache" in html and "cache-resident figures" in html


def test_report_without_device_runs_still_advises(cli, recorded, tmp_path):
    from xferlab.store import open_store

    with open_store(recorded["store"], read_only=True) as db:
        memory_run = next(r["run_id"] for r in db.runs() if r["command"] == "measure memory")
    out = tmp_path / "mem.html"
    cli("report", memory_run, "-o", out, "--store", recorded["store"], check=0, env=recorded["env"])
    html = out.read_text()
    assert "the advice uses the link presets only" in html and "Fits of run" not in html


@pytest.mark.parametrize("args, message", [
    (["nosuchrun"], "is not in"),                                    # a run id that does not exist
    (["--against", "warp9"], "warp9"),                               # an unknown link to compare with
    (["--name", "pcie3x16"], "pcie3x16"),                            # a profile prefix that is a preset's name
])
def test_report_bad_input(cli, recorded, tmp_path, args, message):
    out = tmp_path / "r.html"
    code, _, err = cli("report", *args, "-o", out, "--store", recorded["store"], env=recorded["env"])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_report_path_that_cannot_be_written(cli, recorded, tmp_path):
    # a folder given as the file, and a file under a regular file
    (tmp_path / "plain").write_text("x")
    for target in (tmp_path, tmp_path / "plain" / "report.html"):
        code, _, err = cli("report", "-o", target, "--store", recorded["store"], env=recorded["env"])
        assert code == 2 and f"--output '{target}'" in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "plain").read_text() == "x"


def test_report_of_a_failed_run_and_a_flat_run_is_still_written(cli, tmp_path):
    """Tried: a store holding a run whose probe crashed after 3 samples (failed, its samples
    unvalidated) and a run of 1 B .. 64 B copies whose times do not grow with size (no bandwidth to
    fit) and profiles that cannot be saved (XFERLAB_PROFILES under a regular file): the report is
    written (exit 0), each problem a note in its section, never an exception."""
    from xferlab.measure.device import devices

    if not devices("opencl")[0]:
        pytest.skip("no OpenCL device (CI installs PoCL)")
    store = tmp_path / "s.duckdb"
    base = ["measure", "device", "--kinds", "pinned", "--chunks", "", "--no-launch", "--min-time", "0",
            "--iterations", "6", "--store", store]
    code, _, err = cli(*base, "--sizes", "1KiB..1MiB", env={"XFERLAB_PROBE_FAULT": "crash=SIGBUS@3"})
    crashed = "fault injected" in err
    assert code == (1 if crashed else 0), err
    cli(*base, "--sizes", "1B..64B", check=0)
    (tmp_path / "plain").write_text("x")
    out = tmp_path / "r.html"
    from xferlab.store import open_store

    with open_store(store, read_only=True) as db:
        ids = [r["run_id"] for r in db.runs()]
    code, printed, err = cli("report", *ids, "-o", out, "--name", "flat", "--store", store,
                             env={"XFERLAB_PROFILES": str(tmp_path / "plain" / "profiles")})
    assert code == 0 and printed.strip() == str(out), err
    html = out.read_text()
    assert "Fits of run" in html
    assert "not fitted" in html or "could not be made" in html  # a group without a bandwidth, or the profiles
    if crashed:
        assert "3 unvalidated samples" in html and "has no validated samples to show" in html
        assert "SIGBUS" in html  # the failure, with its reason, under Failures
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob(".r-*"))


def _tiny_folder(tmp_path):
    """A 64 KiB tmpfs mounted at tmp_path/tiny (root), or None where mounting is not permitted."""
    import subprocess

    tiny = tmp_path / "tiny"
    tiny.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tiny)], capture_output=True)
    return tiny if done.returncode == 0 else None


def test_a_full_disk_leaves_no_partial_report(cli, recorded, tmp_path):
    """Tried: the report written onto a 64 KiB file system (a real tmpfs when root may mount one;
    otherwise a 64 KiB file size limit, RLIMIT_FSIZE, in the child): one line naming the path and the
    system's reason, exit 2, and no partial or temporary file left behind."""
    import resource
    import subprocess
    import sys

    tiny = _tiny_folder(tmp_path)
    try:
        if tiny is not None:
            target = tiny / "report.html"
            code, out, err = cli("report", "-o", target, "--store", recorded["store"], env=recorded["env"])
            assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
            assert f"'{target}'" in err and "No space left on device" in err
            assert list(tiny.iterdir()) == []
            return
    finally:
        if tiny is not None:
            subprocess.run(["umount", str(tiny)], check=True)
    target = tmp_path / "limited" / "report.html"
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # noqa: E731
    done = subprocess.run([sys.executable, "-m", "xferlab", "report", "-o", str(target), "--store", str(recorded["store"])],
                          capture_output=True, text=True, preexec_fn=limit, env={**os.environ, **recorded["env"]})
    assert done.returncode == 2 and "File too large" in done.stderr and f"'{target}'" in done.stderr
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("where", ["file", "under-file", "proc"])
def test_lab_out_is_checked_before_anything_runs(cli, tmp_path, where):
    """Tried: `lab --out` onto an existing file, into a folder under a regular file, and into /proc:
    one line naming --out, exit 2, and nothing measured (no store created)."""
    (tmp_path / "plain").write_text("x")
    target = {"file": tmp_path / "plain", "under-file": tmp_path / "plain" / "lab", "proc": "/proc/xferlab-lab"}[where]
    store = tmp_path / "s.duckdb"
    code, out, err = cli("lab", "--budget", "10s", "--out", target, "--store", store)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1 and "--out" in err, err
    assert not store.exists() and (tmp_path / "plain").read_text() == "x"


def test_lab_where_nothing_can_be_measured_still_writes_its_report(cli, tmp_path):
    """Tried: a lab whose probe crashes (injected SIGSEGV) before every measurement: every memory and
    device step fails; the scenarios, the report and lab.json are still written, the last line names
    the failed stages, and the exit code is 1 (nothing could be measured)."""
    out, store = tmp_path / "lab", tmp_path / "s.duckdb"
    code, _, err = cli("lab", "--budget", "20s", "--out", out, "--store", store,
                       env={"XFERLAB_PROBE_FAULT": "crash=SIGSEGV", "XFERLAB_PROFILES": str(tmp_path / "profiles")})
    if "fault injected" not in err:
        pytest.skip("this probe has no fault injection (an older build)")
    last = err.strip().splitlines()[-1]
    assert code == 1, err
    assert last.startswith("error: lab stages failed: memory") and last.endswith("; nothing could be measured (details above and in lab.json)")
    summary = json.loads((out / "lab.json").read_text())
    assert summary["exit_code"] == 1 and {"memory"} <= {f["stage"] for f in summary["failed_stages"]}
    assert all("SIGSEGV" in f["reason"] for f in summary["failed_stages"] if f["stage"] == "memory")
    assert (out / "report.html").stat().st_size > 10_000 and (out / "deceval.json").exists()
    assert not list(out.rglob("*.partial"))

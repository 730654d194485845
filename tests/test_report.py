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
        assert code == 2 and "report path" in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "plain").read_text() == "x"

"""`xferlab lab`, the main job, end to end (its own file: it is the suite's longest test, and
pytest-xdist's --dist loadfile starts files in name order, so a late name left it running alone at
the end)."""

import json
import time

from xferlab import lab


def test_lab_writes_results(cli, tmp_path):
    out, store = tmp_path / "lab", tmp_path / "store.duckdb"
    # 30 s, not the default 5 minutes: memory with latency, the device, the scenarios, fits and the
    # report run (the runtime and collaboration only if time is left), each point to --precision 2%.
    code, stdout, stderr = cli("lab", "--out", out, "--store", store, "--budget", "30s", check=0)
    assert f"results: {out}" in stdout
    for name in ("lab.json", "presets.json", "cxl-vs-pcie.json", "cxl-vs-pcie-time.png", "memory.json",
                 "bandwidth.png", "latency.png"):
        assert (out / name).exists(), name
    assert "Memory bandwidth" in stdout and "Load-to-use latency" in stdout and "status" in stdout
    summary = json.loads((out / "lab.json").read_text())
    assert summary["probe"]["ok"] and summary["probe"]["records"][0]["probe"] == "clock"
    assert summary["store"] == str(store) and not (out / lab.STORE_NAME).exists()  # --store given: used
    assert code == 0, stderr[-500:]
    # the device ran, or (on a machine busy enough that memory used the time) was skipped and said why
    assert summary["devices"] or all("budget" in s for s in summary["skipped_devices"])
    # the runtime ran, or was skipped for the budget and said so
    assert summary["runtime_runs"] or all("budget" in f for f in summary["runtime_failures"])
    # DecEval measured and simulated ran, or was skipped with the reason (30 s gives it 1.5 s: too little)
    deceval = json.loads((out / "deceval-measured.json").read_text())
    assert deceval == summary["deceval"]
    assert "skipped" in deceval or (deceval["flows"] and deceval["largest_error"] < 0.5)


def test_a_tight_budget_everything_under_out_and_earlier_profiles_kept(cli, tmp_path):
    """A 2 s budget ends with exit 0 (a memory step was killed 30 s past the budget before each
    point's timed work was sized to the stage's share), within the budget plus the model stages'
    fixed cost; everything lands under --out; a second lab into the same folder keeps the first's
    profiles."""
    out = tmp_path / "lab"
    started = time.monotonic()
    code, text, err = cli("lab", "--out", out, "--budget", "2s", "--json", check=0)
    elapsed = time.monotonic() - started
    assert code == 0, err
    assert elapsed < 2 + 40  # the scenarios, the fits and the report take ~10 s here; the rest is the budget's
    doc = json.loads(text)
    assert doc["folder"] == str(out) and doc["store"] == str(out / lab.STORE_NAME) and (out / lab.STORE_NAME).exists()
    assert doc["profiles_folder"] == str(out / "profiles") and doc["profiles"]
    assert all((out / "profiles" / f"{name}.yaml").exists() for name in doc["profiles"])
    assert all(r["status"] in ("reproduced", "consistent", "fitted", "not-reproduced") for r in doc["results"])
    assert any("budget" in f["reason"] for f in doc["memory"]["failures"])  # the steps that did not fit: skipped
    first = {name: (out / "profiles" / f"{name}.yaml").read_text() for name in doc["profiles"]}

    code, text, err = cli("lab", "--out", out, "--budget", "2s", "--json", check=0)
    again = json.loads(text)
    kept = again["previous_profiles"]
    assert code == 0 and kept and all((tmp_path / kept / f"{name}.yaml").read_text() == body for name, body in first.items())


def test_stages_share_the_budget():
    """Each point's timed work is sized so a stage's points fit its share, within the lab's bounds."""
    assert lab.per_point(100.0, 10, lab.MAX_TIME_MEMORY) == lab.MAX_TIME_MEMORY
    assert lab.per_point(0.1, 100, lab.MAX_TIME_MEMORY) == lab.MIN_TIME_PER_POINT
    assert lab.per_point(10.0, 100, lab.MAX_TIME_MEMORY) == 0.05
    plan = lab.quick_memory_plan(1.0)
    assert plan.max_time * lab.memory_points(plan) <= max(1.0, lab.MIN_TIME_PER_POINT * lab.memory_points(plan))


def test_lab_rejects_a_bad_budget(cli):
    code, _, err = cli("lab", "--budget", "0s")  # bad input: a zero budget
    assert code == 2 and "'0s'" in err

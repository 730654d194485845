"""`xferlab lab`, the main job, end to end (its own file: it is the suite's longest test, and
pytest-xdist's --dist loadfile starts files in name order, so a late name left it running alone at
the end)."""


def test_lab_writes_results(cli, tmp_path):
    out, store = tmp_path / "lab", tmp_path / "store.duckdb"
    # 60 s, not the default 5 minutes: every stage still runs (memory with latency, the devices, the
    # runtime, the scenarios, fits and the report), each point repeated to --precision 2% within it.
    code, stdout, stderr = cli("lab", "--out", out, "--store", store, "--budget", "60s", check=0)
    assert f"results: {out}" in stdout
    for name in ("lab.json", "presets.json", "cxl-vs-pcie.json", "cxl-vs-pcie-time.png", "memory.json",
                 "bandwidth.png", "latency.png"):
        assert (out / name).exists(), name
    assert "Memory bandwidth" in stdout and "Load-to-use latency" in stdout
    import json

    lab = json.loads((out / "lab.json").read_text())
    assert lab["probe"]["ok"] and lab["probe"]["records"][0]["probe"] == "clock"
    # A tight budget: the memory steps that do not fit are recorded as skipped, the rest still runs.
    # A step that starts within the budget may be killed 30 s past it (exit 3, noted in the closing note).
    code, out, _ = cli("lab", "--out", tmp_path / "again", "--store", store, "--budget", "2s", "--json")
    assert code in (0, 3)
    doc = json.loads(out)
    assert doc["folder"] == str(tmp_path / "again") and all(r["status"] in ("reproduced", "consistent", "fitted", "not-reproduced") for r in doc["results"])
    assert any("budget" in f["reason"] for f in doc["memory"]["failures"])


def test_lab_rejects_a_bad_budget(cli):
    code, _, err = cli("lab", "--budget", "0s")
    assert code == 2 and "'0s'" in err

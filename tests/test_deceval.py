"""Seed 000's DecEval flows, reproduced by the packaged scenario."""

import math

import pytest

from xferlab import scenarios


@pytest.fixture(scope="module")
def result():
    return scenarios.load("deceval").run()


def test_seed_speedups(result):
    checks = {c["figure"].split(" (")[0].split(",")[0]: c for c in result["checks"]}
    coherent = checks["CXL coherent cache speedup"]
    assert coherent["xferlab"] == pytest.approx(10.58 / (7.70 + 0.36))
    # The link term never wins: the figure follows from the seed's own times on every link.
    assert coherent["status"] == "consistent" and "10.58 / (7.7 + 0.36)" in coherent["status_reason"]
    formula = next(c for c in result["checks"] if "formula" in c["figure"])
    assert abs(formula["xferlab"] - 1.45) <= 0.03  # n = 100 chunks of 16 MB, s = T_GPU / n
    assert formula["status"] == "fitted" and "n = 100" in formula["status_reason"]  # n was solved from 1.45x
    # (d + n - 1) t_stage + s with d = 3, n = 100, t_stage = 70.9 ms, s = 3.6 ms
    assert formula["xferlab"] == pytest.approx(10.58 / ((3 + 99) * 0.0709 + 0.0036))
    simulated = next(c for c in result["checks"] if "simulation" in c["figure"])
    assert simulated["xferlab"] > formula["xferlab"]  # the short read/write stages make the real pipeline faster
    assert abs(simulated["xferlab"] - 1.45) <= 0.05 and simulated["status"] == "fitted"
    baseline = next(c for c in result["checks"] if c["figure"].startswith("baseline"))
    assert baseline["status"] == "not-reproduced" and "staging through the host runtime" in baseline["status_reason"]


def test_the_simulation_row_runs_the_simulator(monkeypatch):
    # The row named a simulation must come from xferlab.sim's engine (it was the closed form): with the
    # engine made to report a makespan twice as long, the row's speedup halves.
    from xferlab.sim import engine

    scenario = scenarios.load("deceval")
    before = next(c for c in scenario.run()["checks"] if "simulation" in c["figure"])["xferlab"]
    real = engine.simulate

    def slower(resources, ops):
        timeline = real(resources, ops)
        return type("T", (), {"makespan": 2 * timeline.makespan})()

    monkeypatch.setattr(engine, "simulate", slower)
    after = next(c for c in scenario.run()["checks"] if "simulation" in c["figure"])["xferlab"]
    assert after == pytest.approx(before / 2)


def test_chunk_sweep_like_figure_5(result):
    rows = [r for r in result["sweep"] if r["link"] == "pcie3x16"]
    assert rows[0]["chunk_bytes"] == 64 and rows[0]["chunks"] == 25_000_000 and rows[-1]["chunk_bytes"] == 1_600_000_000
    transfer = [r["transfer_seconds"] for r in rows]
    assert transfer[0] > 10 * transfer[-1]  # 25 million start-up latencies
    cxl = [r for r in result["sweep"] if r["link"] == "cxl-seed:penalty=0.6"]
    # CXL's 40 ns start-up beats PCIe's 738.77 ns at 64-byte chunks; PCIe's bandwidth wins for one big transfer.
    assert cxl[0]["transfer_seconds"] < rows[0]["transfer_seconds"] and cxl[-1]["transfer_seconds"] > rows[-1]["transfer_seconds"]
    best = min(r["pipelined_seconds"] for r in rows if not math.isnan(r["pipelined_seconds"]))
    assert best < rows[-1]["pipelined_seconds"]  # pipelining in chunks beats one transfer


def test_what_if_other_links(result):
    flows = {(f["link"], f["flow"]): f for f in result["flows"]}
    assert flows[("c2c", "direct")]["seconds"] < flows[("pcie3x16", "direct")]["seconds"]
    # DecEval is FPGA-bound: a faster link cannot speed the pipelined flow up by much.
    assert flows[("c2c", "pipelined")]["seconds"] == pytest.approx(flows[("pcie3x16", "pipelined")]["seconds"], rel=0.01)


def test_scenario_cli(cli, tmp_path):
    doc = cli.json("scenario", "run", "deceval", "--out", tmp_path)
    assert doc["scenario"] == "deceval" and len(doc["results"]) == 4 and doc["flows"] and doc["sweep"]
    assert (tmp_path / "deceval-transfer.png").exists() and (tmp_path / "deceval-pipelined.png").exists()


def test_json_rows_carry_their_status(cli):
    doc = cli.json("scenario", "run", "deceval")
    status = {r["figure"].split(",")[0].split(" (")[0]: (r["status"], r["status_reason"]) for r in doc["results"]}
    assert status["CXL coherent cache speedup"][0] == "consistent"
    assert status["pipelined CXL speedup"] == ("fitted", status["pipelined CXL speedup"][1]) and \
        "n = 100" in status["pipelined CXL speedup"][1]
    code, out, _ = cli("scenario", "run", "deceval", check=0)
    assert "status" in out and "consistent" in out and "fitted" in out and "not-reproduced" in out

"""`measure device --matrix` (nvbandwidth's matrices) on PoCL's two devices (POCL_DEVICES="pthread pthread"): every
cell measured and checked by the probe, the sums, the copy kernel beside each device's own copy; the N/A cells of a
backend with no device-to-device path between two devices; the options the matrix refuses."""

import json
import os

import pytest

from xferlab.measure.device import devices
from xferlab.measure.device_matrix import MatrixPlan, cells, grid, steps, totals

TWO = {"POCL_DEVICES": "pthread pthread"}
FOUND, WHY = devices("opencl")
if not FOUND and os.environ.get("CI") != "true":
    pytest.skip(f"no OpenCL device here: {WHY} (CI installs pocl-opencl-icd)", allow_module_level=True)


def test_two_devices_every_cell_and_the_sums(cli):
    code, out, err = cli("measure", "device", "--matrix", "--platform", "Portable", "--sizes", "1MiB", "--iterations", "3",
                         "--min-time", "0", "--json", env=TWO, check=0)
    doc = json.loads(out)
    by = {(c["direction"], c["src"], c["dst"]): c for c in doc["results"]}
    assert set(by) == {("h2d", "host", "#0"), ("h2d", "host", "#1"), ("d2h", "#0", "host"), ("d2h", "#1", "host"),
                       ("d2d", "#0", "#0"), ("d2d", "#0", "#1"), ("d2d", "#1", "#0"), ("d2d", "#1", "#1")}
    for c in by.values():
        assert c["status"] == "measured" and c["count"] >= 3 and c["size_bytes"] == 2**20 and c["host_kind"] == "pinned"
        assert c["best_bytes_per_second"] >= c["median_bytes_per_second"] > 0
    assert by[("d2d", "#0", "#1")]["path"].startswith("runtime copy (one context holding both")
    assert by[("d2d", "#1", "#0")]["src_device"] == 1 and by[("d2d", "#1", "#0")]["dst_device"] == 0
    assert by[("h2d", "host", "#1")]["src_device"] is None
    for own in ("#0", "#1"):  # the copy kernel beside the runtime's copy on the same device
        assert by[("d2d", own, own)]["kernel_median_bytes_per_second"] > 0
        assert "kernel_median_bytes_per_second" not in by[("d2d", "#0", "#1")]
    for t in doc["totals"]:
        mine = [c["median_bytes_per_second"] for (d, _, _), c in by.items() if d == t["direction"]]
        assert t["sum_bytes_per_second"] == pytest.approx(sum(mine))
        assert (t["min_bytes_per_second"], t["max_bytes_per_second"]) == (min(mine), max(mine))
        assert t["measured_cells"] == len(mine) and t["na_cells"] == 0
    code, out, err = cli("measure", "device", "--matrix", "--platform", "Portable", "--sizes", "64KiB", "--iterations",
                         "2", "--min-time", "0", env=TWO, check=0)
    for title in ("host to device", "device to host", "device to device", "Copy engine against kernel copy"):
        assert title in out
    assert "sum " in out and "min " in out and "max " in out


def test_na_cells_where_no_path_exists():
    """SYCL here has no device-to-device mode between two devices: those cells are N/A with the reason, and steps
    for them are not planned; the sums leave N/A cells out. CUDA plans its pairs (test_device_matrix_cuda.py)."""
    plan = MatrixPlan(backend="sycl", kind="pinned", size=4096, devices=[{"index": 0}, {"index": 1}])
    assert [s.test for s in steps(plan)] == ["transfer", "transfer"]  # no copy kernel on SYCL either
    cuda = MatrixPlan(backend="cuda", kind="pinned", size=4096, devices=[{"index": 0}, {"index": 1}])
    assert [s.test for s in steps(cuda)] == ["transfer", "transfer", "d2d", "d2d", "stream", "stream"]
    made = cells(plan, [], {"transfer #1": "it failed: probe crashed"})
    pair = next(c for c in made if (c["src"], c["dst"]) == ("#0", "#1"))
    assert pair["status"] == "n/a" and "opencl and cuda only, not sycl" in pair["reason"] and pair["path"] is None
    own = next(c for c in made if (c["direction"], c["src"], c["dst"]) == ("h2d", "host", "#1"))
    assert own["status"] == "n/a" and own["reason"] == "it failed: probe crashed"
    d2d = next(t for t in totals(made) if t["direction"] == "d2d")
    assert d2d["measured_cells"] == 0 and d2d["na_cells"] == 4 and "sum_bytes_per_second" not in d2d
    columns, rows = grid(made, "d2d")
    assert columns == ["#0", "#1"] and rows[0] == {"src": "#0", "#0": "N/A", "#1": "N/A"}


@pytest.mark.parametrize("bad, says", [
    (["--device", "1"], "--device applies only without --matrix"),
    (["--directions", "h2d"], "--directions applies only without --matrix"),
    (["--no-launch"], "applies only without --matrix"),
    (["--precision", "5%"], "--precision applies only without --matrix"),
    (["--kinds", "pinned,pageable"], "--matrix takes one host memory kind"),
    (["--sizes", "1MiB,2MiB"], "--matrix takes one copy size"),
    (["--kinds", "managed"], "the matrix takes one host memory kind every device has; allowed: pageable, pinned"),
    (["--sizes", "0"], "--sizes"),
    (["--iterations", "0"], "--iterations 0"),
    (["--min-time", "2h"], "--min-time 7200 s is out of range"),
    (["--platform", "nothing-like-it"], "is not one of the OpenCL platforms"),
])
def test_options_the_matrix_cannot_honour(cli, bad, says, tmp_path):
    code, out, err = cli("measure", "device", "--matrix", *bad, "--store", tmp_path / "s.duckdb", env=TWO)
    assert code == 2 and says in err, (code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert not (tmp_path / "s.duckdb").exists()

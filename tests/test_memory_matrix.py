"""`measure memory --matrix` (issue 28, "Matrices"): the plan and the grid on a given two-socket topology
with a CPU-less memory node (CXL or HBM: a column, never a row), the real 1x1 run on this machine, and
bad input. Bad input tried: --matrix with --node, --cpus, --threads, --latency, --loaded, --pmem, --persist
and --plots; an unknown kernel and an out-of-range --size with --matrix; a topology whose CPUs are none
of them allowed, and one with no memory."""

import math

import pytest

from xferlab.errors import BadValue
from xferlab.measure import memory_matrix as mx
from xferlab.measure.memory import MemoryPlan
from xferlab.system import inventory as inv

GiB = 2**30


def node(n, cpus, memory):
    return {"node": n, "cpus": cpus, "memory_total_bytes": memory, "memory_free_bytes": memory,
            "kind": "", "distances": []}


#: Two sockets (nodes 0 and 1, four CPUs each, 64 GiB each) and a CPU-less CXL expander (node 2, 128 GiB).
TWO_SOCKETS_AND_CXL = [node(0, [0, 1, 2, 3], 64 * GiB), node(1, [4, 5, 6, 7], 64 * GiB), node(2, [], 128 * GiB)]


def test_the_plan_on_two_sockets_with_a_cpu_less_node_is_2x3():
    cells, notes = mx.cells(TWO_SOCKETS_AND_CXL, set(range(8)))
    assert [(c.cpu_node, c.memory_node) for c in cells] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert {c.cpu_node: c.cpus for c in cells} == {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}
    assert notes == []


def test_the_plan_keeps_to_the_allowed_cpus_and_names_a_node_left_out():
    cells, notes = mx.cells(TWO_SOCKETS_AND_CXL, {1, 3})  # taskset 0xa: two CPUs of socket 0
    assert [(c.cpu_node, c.memory_node, c.cpus) for c in cells] == [(0, 0, (1, 3)), (0, 1, (1, 3)), (0, 2, (1, 3))]
    assert notes == ["CPU node 1 left out: none of its CPUs (4-7) is allowed to this process"]
    # a CPU-only node (CPUs, no memory) is a row, never a column
    cells, _ = mx.cells([node(0, [0, 1], 0), node(1, [], 8 * GiB)], {0, 1})
    assert [(c.cpu_node, c.memory_node) for c in cells] == [(0, 1)]


def test_a_topology_the_matrix_cannot_run_on_is_refused():
    with pytest.raises(BadValue, match="no NUMA node has a CPU this process may run on; allowed: 9"):
        mx.cells(TWO_SOCKETS_AND_CXL, {9})
    with pytest.raises(BadValue, match="no NUMA node reports memory"):
        mx.cells([node(0, [0], 0)], {0})


def test_the_steps_place_threads_on_the_row_and_memory_on_the_column():
    cells, _ = mx.cells(TWO_SOCKETS_AND_CXL, set(range(8)))
    plan = MemoryPlan(kernels=["read"], size_bytes=64 * 2**20, iterations=4)
    steps = mx.steps(plan, cells, mx.chase_bytes(32 * 2**20))
    latency, bandwidth = steps[:6], steps[6:]
    assert [s.test for s in latency] == ["latency"] * 6 and [s.test for s in bandwidth] == ["stream"] * 6
    cxl_from_socket1 = latency[5].args
    assert cxl_from_socket1[cxl_from_socket1.index("--cpu") + 1] == "4"  # the row's first CPU
    assert cxl_from_socket1[cxl_from_socket1.index("--node") + 1] == "2"
    assert cxl_from_socket1[cxl_from_socket1.index("--sizes") + 1] == str(128 * 2**20)  # 2 x 32 MiB, at least 128 MiB
    args = bandwidth[3].args  # socket 1 reading socket 0's memory
    assert args[args.index("--cpus") + 1] == "4-7" and args[args.index("--threads") + 1] == "4"
    assert args[args.index("--node") + 1] == "0" and args[args.index("--kernels") + 1] == "read"
    assert bandwidth[3].placement == {"node": "0", "mode": "matrix", "cpu_node": "1", "memory_node": "0", "threads": 4}
    assert mx.chase_bytes(256 * 2**20) == 512 * 2**20


def test_the_matrix_grid_and_its_sum_min_max_on_the_given_topology():
    cells, _ = mx.cells(TWO_SOCKETS_AND_CXL, set(range(8)))
    latency = {("0", "0"): 90e-9, ("0", "1"): 140e-9, ("0", "2"): 250e-9, ("1", "0"): 145e-9, ("1", "1"): 92e-9}
    rows = [{"test": "latency", "cpu_node": c, "memory_node": m, "median_seconds": v} for (c, m), v in latency.items()]
    rows += [{"test": "read", "cpu_node": str(c.cpu_node), "memory_node": str(c.memory_node),
              "best_bytes_per_second": 1e9 * (1 + c.cpu_node + 10 * c.memory_node)} for c in cells]
    lat, bw = mx.matrices(rows, cells)
    assert lat["cpu_nodes"] == ["0", "1"] and lat["memory_nodes"] == ["0", "1", "2"]
    assert lat["values"] == [[90e-9, 140e-9, 250e-9], [145e-9, 92e-9, None]]  # socket 1 -> CXL failed: null
    assert lat["count"] == 5 and lat["min_seconds"] == 90e-9 and lat["max_seconds"] == 250e-9
    assert math.isclose(lat["sum_seconds"], sum(latency.values()))
    assert bw["headline"] == "best" and bw["count"] == 6 and bw["min_bytes_per_second"] == 1e9
    assert bw["max_bytes_per_second"] == 22e9 and math.isclose(bw["sum_bytes_per_second"], 1e9 * (1 + 11 + 21 + 2 + 12 + 22))
    assert mx.grid_rows(lat) == [{"cpu_node": "0", "0": 90e-9, "1": 140e-9, "2": 250e-9},
                                 {"cpu_node": "1", "0": 145e-9, "1": 92e-9, "2": None}]
    assert mx.summary_line(lat) == "latency over 5 cells: sum 717 ns, min 90 ns, max 250 ns"


def test_the_1x1_matrix_here_is_measured(cli, tmp_path):
    store = tmp_path / "s.duckdb"
    out = cli.json("measure", "memory", "--matrix", "--size", "64MiB", "--iterations", "3", "--store", store)
    expected, _ = mx.cells(inv.numa_nodes(), __import__("os").sched_getaffinity(0))
    assert len(out["results"]) == 2 * len(expected)  # a latency and a bandwidth row per cell
    lat, bw = out["matrices"]
    assert (lat["test"], bw["test"]) == ("latency", "read")
    for row in out["results"]:
        assert row["mode"] == "matrix" and row["node"] == row["memory_node"]
        if row["test"] == "latency":
            assert row["size_bytes"] >= 128 * 2**20 and row["count"] == 5
            assert 20e-9 < row["median_seconds"] < 5e-6  # a load from DRAM, not from a cache nor a page fault
            assert lat["values"][lat["cpu_nodes"].index(row["cpu_node"])][lat["memory_nodes"].index(row["memory_node"])] \
                == row["median_seconds"]
        else:
            assert row["count"] == 2 and row["counting"] == "stream" and row["size_bytes"] == 64 * 2**20
            assert 1e8 < row["best_bytes_per_second"] < 1e12
            assert bw["values"][bw["cpu_nodes"].index(row["cpu_node"])][bw["memory_nodes"].index(row["memory_node"])] \
                == row["best_bytes_per_second"]
    assert lat["count"] == len(expected) and bw["sum_bytes_per_second"] >= bw["max_bytes_per_second"] > 0
    code, text, err = cli("measure", "memory", "--matrix", "--size", "64MiB", "--iterations", "3", "--store", store)
    assert code == 0 and "rows: CPU node, columns: memory node" in text and "memory node 0" in text
    assert "latency over" in text and "read over" in text


@pytest.mark.parametrize("extra, fragment", [
    (["--node", "0"], "--matrix with --node: the matrix binds memory to every memory node in turn"),
    (["--cpus", "0"], "--matrix with --cpus"),
    (["--threads", "2"], "--matrix with --threads"),
    (["--latency"], "--matrix with --latency"),
    (["--loaded"], "--matrix with --loaded"),
    (["--pmem", "."], "--matrix with --pmem"),
    (["--persist"], "--matrix with --persist"),
    (["--plots", "plots"], "--matrix with --plots: the matrix draws no plot"),
    (["--kernels", "bogus"], "kernel 'bogus' is not known"),
    (["--size", "1B"], "--size 1 B (1 B) per array is out of range"),
])
def test_what_the_matrix_cannot_honour_is_refused(cli, tmp_path, extra, fragment):
    store = tmp_path / "s.duckdb"
    code, out, err = cli("measure", "memory", "--matrix", *extra, "--store", store)
    assert code == 2 and err.startswith("error: ") and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not out and not store.exists() and not (tmp_path / "plots").exists()

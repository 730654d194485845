"""Memory-tier profiles: fitted from probe records turned into rows by the memory suite's own
converter (known figures in, the same figures out), and from a real memory run on this machine,
saved, and used as a link. Bad input tried: a profile name and a prefix of a preset's shape
(pcie3x16), a run with no memory samples, a tier without a link view used as a link, a tier file
that breaks the schema, tiers of another run."""

import json
from statistics import median

import pytest

from xferlab.errors import BadFile, BadValue
from xferlab.links.presets import save_profile
from xferlab.fit.tiers import (data_caches, fit_stored, fit_tiers, load_tier, save_tier, save_tiers,
                               tier_names, tier_rows)
from xferlab.links import resolve
from xferlab.measure.memory import latency_sizes, rows_of
from xferlab.measure.probe import ProbeRun
from xferlab.measure.steps import Step
from xferlab.store import open_store

KiB, MiB = 2**10, 2**20
CACHES = [(1, 32 * KiB), (2, 1 * MiB), (3, 32 * MiB)]
# Latency by level of the hierarchy, and the figure past the LLC; sizes between levels get the mean.
LEVEL_SECONDS = {1: 1e-9, 2: 4e-9, 3: 20e-9}
DRAM = 100e-9


def _chase_seconds(size: int, repeat: int) -> float:
    lower = 0
    for level, cache in CACHES:
        if 2 * lower <= size <= cache // 2:
            base = LEVEL_SECONDS[level]
            break
        lower = cache
    else:
        base = DRAM if size >= 2 * CACHES[-1][1] else 50e-9  # 50 ns: the LLC-to-DRAM transition
    return base * (1 + 0.01 * (repeat - 2)) * (1 + 0.02 * (size >= 2 * CACHES[-1][1]) * (size % 3))


def _stream(node, threads, rates, n=128 * MiB):
    """A stream probe run over arrays of ``n`` bytes (by default 4x CACHES' LLC: STREAM's rule):
    rates[kernel] = the per-iteration figures (iteration 0 is the warm-up)."""
    records = [{"record": "setup", "array_bytes": n, "thread_cpus": ",".join(["0"] * threads)}]
    for i in range(len(next(iter(rates.values())))):
        for kernel, values in rates.items():
            moved = (2 if kernel in ("copy", "scale") else 3) * n
            records.append({"record": "sample", "kernel": kernel, "iteration": i, "warmup": i == 0,
                            "seconds": moved / values[i], "bytes": moved, "write_allocate_bytes": n})
    records.append({"record": "validation", "ok": True})
    step = Step("stream", "stream", [], {"node": node, "mode": "memory", "threads": threads}, 1.0)
    return rows_of(step, ProbeRun([], records))[0]


def _latency(node):
    records = [{"record": "setup", "cpu": 0, "hugepages": "thp", "page_nodes": {}}]
    for size in latency_sizes(CACHES[-1][1]):
        for repeat in range(5):
            records.append({"record": "sample", "size_bytes": size, "repeat": repeat, "loads": 1000,
                            "latency_seconds": _chase_seconds(size, repeat)})
    step = Step("latency", "latency", [], {"node": node, "mode": "memory", "threads": 1}, 1.0)
    return rows_of(step, ProbeRun([], records))[0]


LOADED = [(4096, 1e9, 110e-9), (256, 8e9, 130e-9), (16, 20e9, 200e-9), (0, 18e9, 260e-9)]  # delay, bandwidth, latency


def _loaded(node):
    records = [{"record": "setup", "size_bytes": 256 * MiB, "chase_cpu": 0, "traffic": "read", "traffic_threads": 1}]
    records += [{"record": "sample", "delay": d, "seconds": 0.3, "latency_seconds": lat, "loads": 1000,
                 "traffic_bandwidth_bytes_per_second": bw} for d, bw, lat in LOADED]
    records += [{"record": "check", "delay": d, "ok": True} for d, _, _ in LOADED]  # the probe's traffic check held
    step = Step("loaded", "loaded", [], {"node": node, "mode": "memory", "threads": 2}, 1.0)
    return rows_of(step, ProbeRun([], records))[0]


COPY_1 = [50e9, 20e9, 22e9, 21e9]  # warm-up first: faster than every timed iteration, so it must be left out
COPY_2 = [30e9, 38e9, 40e9, 39e9]


@pytest.fixture
def synthetic():
    rows = (_stream("0", 1, {"copy": COPY_1, "triad": [1e9, 25e9, 24e9, 26e9]})
            + _stream("0", 2, {"copy": COPY_2, "triad": [1e9, 44e9, 45e9, 43e9]})
            + _latency("0") + _loaded("0")
            + _stream("1", 2, {"copy": [1e9, 10e9, 11e9, 12e9]})  # node 1: bandwidth only
            + _latency("2"))  # node 2: latency only
    return fit_tiers(rows, "run-x", CACHES)


def test_synthetic_run_gives_known_figures(synthetic):
    by_node = {t.node: t for t in synthetic}
    assert set(by_node) == {"0", "1", "2"}
    t = by_node["0"]
    past = [s for s in latency_sizes(32 * MiB) if s >= 64 * MiB]
    assert t.idle_latency.sizes_bytes == past
    assert t.idle_latency.latency_seconds == pytest.approx(median(_chase_seconds(s, r) for s in past for r in range(5)))
    assert t.idle_latency.latency_seconds == pytest.approx(DRAM, rel=0.05)
    assert [(p.level, p.latency_seconds) for p in t.cache_latency] == [
        ("L1", LEVEL_SECONDS[1]), ("L2", LEVEL_SECONDS[2]), ("L3", LEVEL_SECONDS[3])]
    assert [p.sizes_bytes[-1] for p in t.cache_latency] == [16 * KiB, 512 * KiB, 16 * MiB]
    bw = {(k.kernel, k.threads): k for k in t.bandwidth}
    assert [(k.kernel, k.threads) for k in t.bandwidth] == [("copy", 1), ("copy", 2), ("triad", 1), ("triad", 2)]
    assert bw["copy", 1].best_bytes_per_second == pytest.approx(22e9)  # not the warm-up's 50e9
    assert bw["copy", 1].median_bytes_per_second == pytest.approx(21e9) and bw["copy", 1].iterations == 3
    assert bw["triad", 2].best_bytes_per_second == pytest.approx(45e9)
    curve = [(p.bandwidth_bytes_per_second, p.latency_seconds, p.delay) for p in t.loaded_latency]
    assert curve == sorted(curve) and [c[2] for c in curve] == [4096, 256, 0, 16]
    # The link view: idle latency + n / (fastest copy / 2).
    assert t.link_fields() == {"kind": "simple", "bandwidth": pytest.approx(40e9 / 2),
                               "latency": t.idle_latency.latency_seconds}
    assert t.notes == [] and t.name == "node0"


def test_missing_parts_give_notes_not_a_crash(synthetic):
    by_node = {t.node: t for t in synthetic}
    only_bw, only_lat = by_node["1"], by_node["2"]
    assert only_bw.idle_latency is None and only_bw.link_fields() is None
    assert any("no pointer-chase samples" in n for n in only_bw.notes)
    assert any("no link view" in n for n in only_bw.notes)
    assert only_lat.bandwidth == [] and only_lat.idle_latency is not None
    assert any("no STREAM samples" in n for n in only_lat.notes)
    assert any("no loaded-latency samples" in n for n in only_lat.notes)


def test_a_blurred_step_is_not_reported_as_a_plateau():
    rows = [r for r in _latency("0")]
    for r in rows:  # L2's working sets now climb steadily: no plateau
        if 64 * KiB <= r["size_bytes"] <= 512 * KiB:
            r["value"] = 4e-9 * r["size_bytes"] / (64 * KiB)
    (t,) = fit_tiers(rows, "run-y", CACHES)
    assert [p.level for p in t.cache_latency] == ["L1", "L3"]
    assert any(n.startswith("no L2 plateau found") for n in t.notes)
    # Without cache sizes: idle latency from the largest sizes, said so.
    (t,) = fit_tiers(rows, "run-y")
    assert t.cache_latency == [] and t.idle_latency.sizes_bytes[0] >= max(r["size_bytes"] for r in rows) // 4
    assert any("cache sizes unknown" in n for n in t.notes)


def test_rows_and_naming(synthetic, tmp_path, monkeypatch):
    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path))
    rows = tier_rows(synthetic)
    assert len(rows) == 4 + 1 + 1  # node 0: 2 kernels x 2 thread counts; node 1: copy; node 2: no bandwidth
    node0 = [r for r in rows if r["node"] == "0"]
    assert [r["copy_rate_bytes_per_second"] for r in node0] == [pytest.approx(20e9)] * 4
    assert [r for r in rows if r["node"] == "2"][0]["kernel"] is None
    saved = save_tiers("lab", synthetic, "run-x")
    assert [n for n, _ in saved] == ["lab-node0", "lab-node1", "lab-node2"]
    assert tier_names() == ["lab-node0", "lab-node1", "lab-node2"]
    assert load_tier("lab-node0") == synthetic[0].model_copy(update={"name": "lab-node0"})
    with pytest.raises(BadValue, match="memory tier without a link view"):
        resolve("lab-node1")
    # A link profile is not a tier.
    save_profile("plain", {"kind": "simple", "bandwidth": 1e9}, "test")
    assert load_tier("plain") is None and "plain" not in tier_names() and resolve("plain").bandwidth == 1e9
    app = synthetic[1].model_copy(update={"mode": "app-direct", "node": "default", "name": "app-direct"})
    assert [n for n, _ in save_tiers("pm", [app], "run-x")] == ["pm-app-direct"]


def test_bad_names_and_files(synthetic, tmp_path, monkeypatch):
    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path))
    with pytest.raises(BadValue, match="'pcie3x16' clashes with a preset"):
        save_tier("pcie3x16", synthetic[0])
    with pytest.raises(BadValue, match="'pcie3x16' clashes with a preset"):
        save_tiers("pcie3x16", synthetic, "run-x")
    with pytest.raises(BadValue, match="not allowed"):
        save_tiers("a/b", synthetic, "run-x")
    with pytest.raises(BadValue, match="fitted on run run-x, not on run other"):
        save_tiers("lab", synthetic, "other")
    assert list(tmp_path.iterdir()) == []  # nothing written by a refused save
    path = save_tier("t", synthetic[0])
    path.write_text(path.read_text().replace("latency_seconds:", "latency_secs:", 1))
    with pytest.raises(BadFile, match="t.yaml"):
        load_tier("t")
    with pytest.raises(BadValue, match="run run-z has no memory samples"):
        fit_tiers([{"suite": "device", "test": "h2d", "metric": "seconds", "value": 1.0}], "run-z")


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """One short memory run on this machine (STREAM, latency sweep, loaded latency), in a fresh store."""
    import subprocess
    import sys

    store = tmp_path_factory.mktemp("tiers") / "s.duckdb"
    done = subprocess.run([sys.executable, "-m", "xferlab", "measure", "memory", "--latency", "--loaded",
                           "--iterations", "3", "--store", str(store), "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return store


def test_real_run_fits_saves_and_resolves_as_a_link(real_run, tmp_path, monkeypatch, cli):
    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path))
    with open_store(real_run, read_only=True) as db:
        run_id, tiers = fit_stored(db, "latest")
        samples = db.samples(run_id)
        caches = data_caches(db.run(run_id)["inventory"])
    (tier,) = tiers  # the OS's default policy, ordinary memory
    assert (tier.node, tier.mode) == ("default", "memory")
    chase = [s for s in samples if s["test"] == "latency"]
    used = tier.idle_latency.sizes_bytes
    assert used and min(used) >= 2 * caches[-1][1]
    assert tier.idle_latency.latency_seconds == pytest.approx(median(s["value"] for s in chase if s["size_bytes"] in used))
    smallest = min(s["size_bytes"] for s in chase)
    assert tier.idle_latency.latency_seconds > median(s["value"] for s in chase if s["size_bytes"] == smallest)
    copies = [s["value"] for s in samples if s["test"] == "copy" and not s["warmup"]]
    copy = tier.best_copy()
    assert copy.best_bytes_per_second == max(copies) and copy.iterations == len(copies) == 2
    curve = [p.bandwidth_bytes_per_second for p in tier.loaded_latency]
    assert curve == sorted(curve) and len(curve) == len({s["params"]["delay"] for s in samples
                                                          if s["test"] == "loaded-latency"})

    [(name, path)] = save_tiers("here", tiers, run_id)
    assert name == "here-default" and path.parent == tmp_path
    link = resolve(name)
    expected = tier.idle_latency.latency_seconds + 4096 / (copy.best_bytes_per_second / 2)
    assert link.time(4096) == pytest.approx(expected, rel=1e-12)
    assert load_tier(name).idle_latency == tier.idle_latency
    # The command line takes it wherever a preset goes.
    code, out, err = cli("model", "time", name, "--sizes", "4KiB,1MiB", "--json", env={"XFERLAB_PROFILES": str(tmp_path)})
    assert code == 0, err
    assert json.loads(out)["results"][0]["seconds"] == pytest.approx(expected, rel=1e-9)
    code, out, err = cli("advise", "links", "pcie3x16", name, "--json", env={"XFERLAB_PROFILES": str(tmp_path)})
    assert code == 0, err
    assert {r["fastest"] for r in json.loads(out)["results"]} <= {"pcie3x16", name}


def test_a_run_without_memory_samples_is_refused(tmp_path):
    store = tmp_path / "s.duckdb"
    with open_store(store) as db:
        run_id = db.start_run("measure device", [], {}, {})
        db.add_samples(run_id, [{"suite": "device", "test": "h2d", "metric": "seconds", "value": 1e-6,
                                 "size_bytes": 4096}])
        db.finish_run(run_id)
    with open_store(store, read_only=True) as db:
        with pytest.raises(BadValue, match=f"run {run_id} has no memory samples"):
            fit_stored(db, run_id)


def test_unvalidated_samples_are_left_out_of_a_tier():
    """Tried: pointer-chase and STREAM samples the probe did not validate (``validated`` false, as a
    crashed probe leaves them; once as the store's column, once in ``params`` as older stores hold
    it), with absurd values: the tier is the one fitted without them, and says how many it left out."""
    rows = _stream("0", 1, {"copy": COPY_1}) + _latency("0")
    (clean,) = fit_tiers(rows, "run-v", CACHES)
    bad = [{**rows[-1], "value": 1.0, "validated": False},
           {**{k: v for k, v in rows[1].items() if k != "validated"}, "value": 1e15, "params": {"validated": False}}]
    (t,) = fit_tiers(rows + bad, "run-v", CACHES)
    assert t.idle_latency.latency_seconds == clean.idle_latency.latency_seconds
    assert t.best_copy().best_bytes_per_second == clean.best_copy().best_bytes_per_second
    assert any(n.startswith("2 unvalidated samples of the run left out") for n in t.notes)


def test_stream_below_the_rule_is_labelled_and_noted():
    """Arrays of 8 MiB on a 32 MiB LLC: cache-resident figures, said in the tier's notes; 128 MiB: memory."""
    small = fit_tiers(_stream("0", 1, {"copy": COPY_1}, n=8 * MiB), "run-s", CACHES)[0]
    (copy,) = small.bandwidth
    assert (copy.array_size_bytes, copy.array_size_class) == (8 * MiB, "cache-resident")
    assert any("STREAM not of class memory (8 MiB arrays: cache-resident)" in n for n in small.notes)
    assert tier_rows([small])[0]["array_size_class"] == "cache-resident"
    big = fit_tiers(_stream("0", 1, {"copy": COPY_1}), "run-b", CACHES)[0]
    assert big.bandwidth[0].array_size_class == "memory" and not any("class memory" in n for n in big.notes)
    unknown = fit_tiers(_stream("0", 1, {"copy": COPY_1}), "run-u")[0]  # no inventory: the class is not known
    assert unknown.bandwidth[0].array_size_class is None


def test_the_tiers_study_sets_a_class_against_local_dram_only_within_its_size_class():
    """The study's table says its statistic, placement, arrays and size class; a class measured on
    arrays of another size class than local DRAM's gets no ratio (a cache figure is no memory figure)."""
    from xferlab.studies.tiers import TIERS, table

    def rows(node, rates, n):
        return [{**r, "llc_bytes": 32 * MiB} for r in _stream(node, 2, rates, n=n)]

    got = table({"local": rows("0", {"triad": [1e9, 20e9, 21e9]}, 128 * MiB),
                 "remote": rows("1", {"triad": [1e9, 14e9, 15e9]}, 128 * MiB),
                 "cxl": rows("2", {"triad": [1e9, 40e9, 42e9]}, 8 * MiB)})
    by = {r["class"]: r for r in got}
    assert by["remote"]["relative_to_local"] == pytest.approx(15 / 21)
    assert by["cxl"]["array_size_class"] == "cache-resident" and by["cxl"]["relative_to_local"] is None
    assert {r["statistic"] for r in got} == {"best"} and by["local"]["array_size_class"] == "memory"
    assert by["remote"]["placement"] == "memory node 1, CPUs 0,0" and by["remote"]["threads"] == 2
    assert {"placement", "size_bytes", "array_size_class", "statistic"} <= {k for k, _ in TIERS.columns}

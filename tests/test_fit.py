import math

import numpy as np
import pytest

from xferlab.errors import BadValue
from xferlab.fit.linkfit import fit, select
from xferlab.links import PiecewiseLink, resolve


def sweep(ts=20e-6, b=10e9, noise=0.03, seed=1, repeats=5):
    rng = np.random.default_rng(seed)
    sizes = np.repeat(2.0 ** np.arange(0, 28), repeats)
    times = (ts + sizes / b) * rng.lognormal(0, noise, len(sizes))
    return sizes, times


def test_recovers_known_parameters_within_its_interval():
    sizes, times = sweep()
    f = fit(sizes, times)
    assert f.latency_ci[0] <= 20e-6 <= f.latency_ci[1]
    assert f.bandwidth_ci[0] <= 10e9 <= f.bandwidth_ci[1]
    assert f.latency_seconds == pytest.approx(20e-6, rel=0.05) and f.bandwidth_bytes_per_second == pytest.approx(10e9, rel=0.05)
    assert not f.poor and f.r2_log > 0.99 and f.cv_relative_error < 0.05


def test_outliers_do_not_drag_the_fit():
    sizes, times = sweep(noise=0.01)
    times[::17] *= 5  # preempted iterations
    f = fit(sizes, times)
    assert f.latency_seconds == pytest.approx(20e-6, rel=0.1) and f.bandwidth_bytes_per_second == pytest.approx(10e9, rel=0.1)


def test_a_poor_fit_says_so():
    sizes = np.repeat(2.0 ** np.arange(0, 20), 3)
    times = 1e-6 * (1 + (sizes > 4096) * 50 + (sizes > 65536) * 200) + sizes / 1e10  # steps: not t_s + n/b
    f = fit(sizes, times)
    assert f.poor and f.notes and "poor fit" in f.notes[0]


@pytest.mark.parametrize("sizes, times", [([64, 128], [1e-6, 1.1e-6]), ([64, 64, 64], [1e-6] * 3),
                                          ([64, 128, 256], [1e-6, -1.0, 2e-6])])
def test_too_few_points_or_bad_values(sizes, times):
    with pytest.raises(BadValue):
        fit(sizes, times)


def test_fit_cli_profiles_and_errors(cli, tmp_path):
    from xferlab.measure.device import devices

    if not devices("opencl")[0]:
        pytest.skip("no OpenCL device (CI installs PoCL)")
    store = tmp_path / "s.duckdb"
    env = {"XFERLAB_PROFILES": str(tmp_path / "profiles")}
    cli("measure", "device", "--sizes", "1KiB..4MiB", "--kinds", "pageable", "--chunks", "", "--no-launch",
        "--min-time", "0", "--iterations", "5", "--store", store, check=0)
    import json

    plots = tmp_path / "plots"
    code, out, err = cli("fit", "latest", "--store", store, "--name", "mine", "--json", "--plots", plots, env=env)
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert {r["direction"] for r in rows} == {"h2d", "d2h", "d2d", "bidir"}
    limit = resolve("pcie3x16")
    for r in rows:
        assert r["model"] in ("plain", "packet", "piecewise")
        # A bootstrap resample can fit 0 s/B to the last segment: its rate is unbounded, written null.
        high = r["bandwidth_ci_high_bytes_per_second"]
        assert r["bandwidth_ci_low_bytes_per_second"] <= r["bandwidth_bytes_per_second"] <= (math.inf if high is None else high)
        assert r["poor"] == (r["cv_relative_error"] > 0.10 or r["worst_relative_error"] > 0.25)
        # The kept model is the simplest within 1.5 points of the best candidate, so never worse than plain + 1.5.
        assert r["cv_relative_error"] <= r["plain_cv_relative_error"] + 0.015
        assert r["fraction_of_model_limit"] == pytest.approx(r["measured_peak_bytes_per_second"] / r["model_limit_bytes_per_second"])
        expected = 2 * limit.peak_rate("readwrite") if r["direction"] == "bidir" else limit.peak_rate()
        assert r["model_limit_bytes_per_second"] == pytest.approx(expected)
        # One Figure-4-style PNG per direction x kind.
        assert (plots / f"{r['direction']}-{r['host_kind']}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list(plots.glob("*.png"))) == len(rows)
    # A saved profile is usable wherever a preset is, and predicts what the row says.
    code, out, err = cli("model", "time", "mine-h2d-pageable", "--sizes", "1MiB", "--json", env=env)
    assert code == 0, err
    h2d = next(r for r in rows if r["direction"] == "h2d")
    assert json.loads(out)["results"][0]["seconds"] == pytest.approx(row_time(h2d, 2**20))
    # Bad input: a model that does not exist; a link that does not exist.
    code, out, err = cli("fit", "latest", "--store", store, "--model", "cubic")
    assert code == 2 and "'cubic'" in err and "piecewise" in err and not out
    code, out, err = cli("fit", "latest", "--store", store, "--against", "warp")
    assert code == 2 and "'warp'" in err and not out
    # Bad input.
    code, _, err = cli("fit", "nope", "--store", store)
    assert code == 2 and "nope" in err
    from xferlab.links.presets import save_profile

    with pytest.raises(BadValue, match="clashes with a preset"):
        save_profile("pcie4x8", {"kind": "simple", "bandwidth": 1e9}, "test")


def row_time(row, n):
    """t(n) from a fit row's own figures: t_s + each segment's bytes / its rate (+ packets x overhead)."""
    edges = [0, *row["breakpoints_bytes"], np.inf]
    t = row["latency_seconds"] + sum(np.clip(n - lo, 0, hi - lo) / b
                                     for lo, hi, b in zip(edges[:-1], edges[1:], row["bandwidths_bytes_per_second"]))
    return t + (np.ceil(n / row["packet_bytes"]) * row["packet_overhead_seconds"] if row["packet_bytes"] else 0)


def two_regimes(n):
    """20 µs start-up, 40 GB/s while the data fit in a 4 MiB cache, 8 GB/s for the bytes beyond."""
    return 20e-6 + np.minimum(n, 2**22) / 40e9 + np.maximum(n - 2**22, 0) / 8e9


def noisy(sizes, truth, noise=0.03, seed=1):
    return truth(sizes) * np.random.default_rng(seed).lognormal(0, noise, len(sizes))


def test_two_regimes_choose_piecewise_and_its_profile_predicts(tmp_path, monkeypatch):
    sizes = np.repeat(2.0 ** np.arange(0, 28), 5)
    f = select(sizes, noisy(sizes, two_regimes))
    assert f.model == "piecewise" and f.breakpoints_bytes == (2**22,)
    assert f.bandwidths_bytes_per_second == pytest.approx((40e9, 8e9), rel=0.05)
    assert f.cv_relative_error < 0.03 and not f.poor
    assert f.candidates["plain"] > 0.10  # the plain model misses the large sizes, and says so on held-out sizes
    for (low, high), truth in zip(f.bandwidths_ci, (40e9, 8e9)):
        assert low <= truth <= high
    # Saved as a profile, it resolves as a LINK and predicts sizes it never saw within a few %.
    from xferlab.links.presets import save_profile

    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path))
    save_profile("two-regimes", f.link_fields(), "test")
    link = resolve("two-regimes")
    assert isinstance(link, PiecewiseLink)
    unseen = np.array([3e3, 1.5e6, 3 * 2**20, 48 * 2**20, 2**30])
    assert link.time(unseen) == pytest.approx(two_regimes(unseen), rel=0.05)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_plain_data_keep_the_plain_model(seed):
    sizes, times = sweep(seed=seed)
    f = select(sizes, times)
    assert f.model == "plain" and set(f.candidates) == {"plain", "packet", "piecewise-1", "piecewise-2"}
    assert f.bandwidth_bytes_per_second == pytest.approx(10e9, rel=0.05)


def test_packet_steps_choose_the_packet_model():
    # Sizes between the powers of two, so that the steps every 4 KiB show (at powers of two a packet
    # cost looks like a change of rate).
    sizes = np.repeat(np.unique(np.round(np.outer(2.0 ** np.arange(6, 24), [1, 1.25, 1.5, 1.75]).ravel())), 5)
    f = select(sizes, noisy(sizes, lambda n: 5e-6 + np.ceil(n / 4096) * 2e-6 + n / 10e9))
    assert f.model == "packet" and f.packet_bytes == 4096
    assert f.packet_overhead_seconds == pytest.approx(2e-6, rel=0.05)
    assert f.packet_overhead_ci[0] <= 2e-6 <= f.packet_overhead_ci[1]
    assert f.candidates["packet"] + 0.015 < f.candidates["plain"]
    link = PiecewiseLink.model_validate(f.link_fields())
    assert link.time(4096 * 3 + 1) == pytest.approx(5e-6 + 4 * 2e-6 + (4096 * 3 + 1) / 10e9, rel=0.05)


def test_a_forced_model_and_its_errors():
    sizes = np.repeat(2.0 ** np.arange(0, 28), 5)
    times = noisy(sizes, two_regimes)
    assert select(sizes, times, "plain").model == "plain"
    assert select(sizes, times, "piecewise").model == "piecewise"
    # Tried: a model name that does not exist.
    with pytest.raises(BadValue, match="model 'cubic' is not allowed; allowed: auto, plain, packet, piecewise"):
        select(sizes, times, "cubic")
    # Tried: a piecewise fit on 4 sizes (it has 4 parameters and needs one size more to check them).
    few = np.repeat([1e3, 1e4, 1e5, 1e6], 3)
    with pytest.raises(BadValue, match="piecewise fit needs measurements at 5 sizes or more .* got 4 sizes"):
        select(few, two_regimes(few), "piecewise")
    # Tried: a packet fit where every size is larger than the largest packet (64 KiB) tried.
    large = np.repeat(2.0 ** np.arange(17, 28), 3)
    with pytest.raises(BadValue, match="packet-overhead model does not fit these 11 sizes"):
        select(large, two_regimes(large), "packet")


def test_piecewise_link_time_is_continuous_and_matches_its_rate():
    link = PiecewiseLink(latency="10us", breakpoints=["1MiB", "16MiB"], bandwidths=["40GB/s", "20GB/s", "5GB/s"],
                         packet="4KiB", packet_overhead="100ns")
    n = np.array([1.0, 4096, 4097, 2**20, 2**24, 2**30])
    by_hand = (10e-6 + np.minimum(n, 2**20) / 40e9 + np.clip(n - 2**20, 0, 15 * 2**20) / 20e9
               + np.maximum(n - 2**24, 0) / 5e9 + np.ceil(n / 4096) * 100e-9)
    assert link.time(n) == pytest.approx(by_hand)
    assert link.time(n) == pytest.approx(link.latency + n / link.data_rate(n))  # Link.time's own identity
    assert link.time(0) == pytest.approx(10e-6)
    for b in (2**20, 2**24):  # no jump at a breakpoint: one more byte costs that byte at the next rate (and a packet)
        assert link.time(b + 1) - link.time(b) == pytest.approx(1 / (20e9 if b == 2**20 else 5e9) + 100e-9)
    assert link.peak_rate() == pytest.approx(1 / (1 / 5e9 + 100e-9 / 4096), rel=1e-3)  # the last rate, less packets


@pytest.mark.parametrize("spec, fragment", [
    # Tried: breakpoints that go down (16 MiB then 1 MiB).
    ("piecewise:breakpoints=16MiB;1MiB,bandwidths=1GB/s;2GB/s;3GB/s", "strictly increasing"),
    # Tried: the same breakpoint twice.
    ("piecewise:breakpoints=1MiB;1MiB,bandwidths=1GB/s;2GB/s;3GB/s", "strictly increasing"),
    # Tried: two breakpoints and only two bandwidths (three segments need three).
    ("piecewise:breakpoints=1MiB;16MiB,bandwidths=1GB/s;2GB/s", "got 2 bandwidths for 2 breakpoints"),
    # Tried: one bandwidth too many for no breakpoint.
    ("piecewise:bandwidths=1GB/s;2GB/s", "got 2 bandwidths for 0 breakpoints"),
    # Tried: a zero bandwidth.
    ("piecewise:bandwidths=0GB/s", "must be positive"),
    # Tried: a packet overhead without a packet size.
    ("piecewise:bandwidths=1GB/s,packet_overhead=1us", "needs a packet size"),
])
def test_piecewise_link_rejects_bad_fields(spec, fragment):
    with pytest.raises(BadValue, match=fragment):
        resolve(spec)


def test_plot_fit_writes_figure_4(tmp_path):
    from xferlab.errors import BadFile
    from xferlab.plots import plot_fit

    sizes = np.repeat(2.0 ** np.arange(0, 28), 5)
    times = noisy(sizes, two_regimes)
    f = select(sizes, times)
    path = plot_fit(sizes, times, f, resolve("pcie3x16"), tmp_path / "fig4.png", "two regimes")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Tried: a file name matplotlib cannot write by its extension.
    with pytest.raises(BadFile, match="must end in"):
        plot_fit(sizes, times, f, resolve("pcie3x16"), tmp_path / "fig4.gif", "two regimes")


def test_fit_cli_refuses_an_unknown_model_before_reading_the_store(cli, tmp_path):
    # Tried: --model bogus on a store that does not exist; the model is named, the store never opened.
    code, out, err = cli("fit", "latest", "--model", "bogus", "--store", tmp_path / "none.duckdb")
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "'bogus'" in err and "auto, plain, packet, piecewise" in err
    assert not (tmp_path / "none.duckdb").exists()


def test_times_that_do_not_grow_or_are_not_finite_cannot_be_fitted():
    # Tried: times flat over the sizes (1 B .. 64 B copies all take the launch latency): the plain
    # model's cost per byte comes out 0, an infinite bandwidth; once it became rate 'inf' in a Link.
    sizes = np.repeat(2.0 ** np.arange(0, 7), 6)
    falling = 20e-6 * (1 - 0.002 * np.log2(sizes)) * np.random.default_rng(3).lognormal(0, 0.001, len(sizes))
    for times in (np.full(len(sizes), 20e-6), falling):  # all equal; slightly faster for larger copies
        with pytest.raises(BadValue, match="times do not grow with size from 1 B to 64 B"):
            select(sizes, times)
    # Tried: a time that is not a number (a sample the probe could not time).
    times = 20e-6 + sizes / 1e9
    times[4] = np.nan
    with pytest.raises(BadValue, match="non-finite"):
        select(sizes, times)


def test_a_poor_fit_names_noise_or_model_as_its_cause():
    # Noise: the plain model is the truth, but 7 samples a size with 50 % spread leave each median
    # uncertain by about as much as the fit misses it.
    sizes = np.repeat(2.0 ** np.arange(10, 24), 7)
    times = (20e-6 + sizes / 10e9) * np.random.default_rng(0).lognormal(0, 0.5, len(sizes))
    f = select(sizes, times, "plain")
    assert f.poor and f.poor_cause == "noise" and f.missed_sizes_bytes == ()
    assert any("cause: noise" in n and "--precision" in n for n in f.notes)
    worst = np.argsort(f.held_out_errors)[-3:]
    assert all(f.held_out_errors[i] <= 2 * f.noise[i] for i in worst)
    # Model: steps in the times (not t_s + n/b) measured with 1 % noise: the sizes past the steps are named.
    sizes = np.repeat(2.0 ** np.arange(0, 20), 7)
    times = ((1e-6 * (1 + (sizes > 4096) * 50 + (sizes > 65536) * 200) + sizes / 1e10)
             * np.random.default_rng(1).lognormal(0, 0.01, len(sizes)))
    f = select(sizes, times, "plain")
    assert f.poor and f.poor_cause == "model" and 8192.0 in f.missed_sizes_bytes
    assert any("cause: model: the model misses" in n and "8 KiB" in n for n in f.notes)
    # A good fit has no cause.
    sizes, times = sweep()
    assert select(sizes, times).poor_cause is None


def test_diagnose_compares_the_error_with_twice_the_noise_where_it_is_largest():
    from xferlab.fit.linkfit import diagnose

    sizes = [1e3, 1e4, 1e5, 1e6, 1e7]
    assert diagnose(sizes, [0.3, 0.2, 0.15, 0.02, 0.01], [0.2, 0.1, 0.08, 0.01, 0.01])[0] == "noise"
    cause, missed, why = diagnose(sizes, [0.3, 0.2, 0.15, 0.02, 0.01], [0.2, 0.05, 0.08, 0.01, 0.01])
    from xferlab.units import format_size

    assert cause == "model" and missed == (1e4,) and why.startswith(f"the model misses {format_size(1e4)} (20% vs ± 5.0%)")
    # Unknown noise (one sample a size) counts as none: the cause is the model.
    assert diagnose(sizes, [0.3, 0.2, 0.15, 0.02, 0.01], [float("nan")] * 5)[0] == "model"


def test_drift_when_the_medians_fall_with_size_beyond_their_intervals():
    """Each point precise (1 % noise) but the machine twice as fast from 64 KiB on, as a busy
    neighbour leaving would make it: the times fall with size, which no model can follow."""
    from xferlab.fit.linkfit import diagnose, inversions

    sizes = np.repeat(2.0 ** np.arange(10, 22), 9)
    speed = np.where(sizes >= 65536, 0.5, 1.0)
    times = (20e-6 + sizes / 1e9) * speed * np.random.default_rng(2).lognormal(0, 0.01, len(sizes))
    f = select(sizes, times, "plain")
    assert f.poor and f.poor_cause == "drift" and f.missed_sizes_bytes[0] == 65536.0
    assert any("cause: drift" in n and "64 KiB" in n for n in f.notes)
    # Small dips (under 5 %, or within the intervals) are not drift; the same numbers without medians
    # fall back to noise or model.
    assert inversions([1, 2, 3], [10.0, 9.7, 11.0], [0.001] * 3) == []
    assert inversions([1, 2, 3], [10.0, 8.0, 11.0], [0.2, 0.2, 0.01]) == []
    assert inversions([1, 2, 3], [10.0, 8.0, 11.0], [0.01] * 3) == [(0, 1)]
    assert diagnose([1e3, 1e4, 1e5], [0.3, 0.2, 0.1], [0.01] * 3)[0] == "model"


def _device_run(cli, store, sizes, env=None):
    code, _, err = cli("measure", "device", "--sizes", sizes, "--kinds", "pageable", "--chunks", "", "--no-launch",
                       "--min-time", "0", "--iterations", "6", "--store", store, env=env)
    return code, err


def _need_opencl():
    from xferlab.measure.device import devices

    if not devices("opencl")[0]:
        pytest.skip("no OpenCL device (CI installs PoCL)")


def test_fit_skips_the_groups_a_real_run_cannot_support(cli, tmp_path):
    # Tried: a device run of only 2 sizes (every group needs 3): nothing fitted, exit 1, each group
    # named with its reason on stderr and in --json's skipped.
    import json

    _need_opencl()
    store = tmp_path / "s.duckdb"
    assert _device_run(cli, store, "1KiB..2KiB")[0] == 0
    code, out, err = cli("fit", "latest", "--store", store, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["results"] == [] and err.strip().splitlines()[-1].startswith("error: no group")
    assert {s["group"] for s in doc["skipped"]} == {f"{d}, pageable host memory" for d in ("h2d", "d2h", "d2d", "bidir")}
    assert all("got 2 sizes" in s["reason"] for s in doc["skipped"]) and err.count("not fitted: ") == 4
    # Tried: 1 B .. 64 B, where the copies take about the same time whatever their size: each group
    # is fitted or skipped with a reason, never a rate 'inf' error; exit 0 if any group fitted.
    assert _device_run(cli, store, "1B..64B")[0] == 0
    code, out, err = cli("fit", "latest", "--store", store, "--json")
    doc = json.loads(out)
    fitted, skipped = {r["direction"] for r in doc["results"]}, {s["group"].split(",")[0] for s in doc["skipped"]}
    assert fitted | skipped == {"h2d", "d2h", "d2d", "bidir"} and not fitted & skipped
    assert code == (0 if fitted else 1) and "inf" not in err
    for r in doc["results"]:
        assert r["poor_cause"] in ((None,) if not r["poor"] else ("drift", "noise", "model"))
        assert all(p["noise_relative_error"] is None or p["noise_relative_error"] >= 0 for p in r["per_size"])


def test_one_group_that_cannot_be_fitted_leaves_the_others(cli, tmp_path):
    # Tried: a real run whose h2d copies are cut down to 2 sizes: h2d is skipped, the rest fitted.
    from xferlab.cli.fit import fit_device
    from xferlab.store import open_store

    _need_opencl()
    store = tmp_path / "s.duckdb"
    assert _device_run(cli, store, "1KiB..1MiB")[0] == 0
    with open_store(store, read_only=True) as db:
        run_id = db.resolve_run("latest")
        samples = db.samples(run_id)
    cut = [s for s in samples if s["test"] != "h2d" or s["size_bytes"] in (1024, 2048)]
    rows, links, _, _, skipped = fit_device(cut, "pcie3x16", None, None, run_id)
    assert [s["group"] for s in skipped] == ["h2d, pageable host memory"] and "got 2 sizes" in skipped[0]["reason"]
    assert {r["direction"] for r in rows} == {"d2h", "d2d", "bidir"} and len(links) == 3


def test_unvalidated_samples_are_left_out_of_the_fit(cli, tmp_path):
    # Tried: a run whose probe crashed (injected SIGBUS) after 3 samples: they are stored, unvalidated,
    # and the fit refuses to use them: copies measured, none validated, so the work failed (exit 1, not
    # the exit 2 of bad input), nothing fitted from them.
    _need_opencl()
    store = tmp_path / "s.duckdb"
    code, err = _device_run(cli, store, "1KiB..1MiB", env={"XFERLAB_PROBE_FAULT": "crash=SIGBUS@3"})
    if "fault injected" not in err:
        pytest.skip("this probe has no fault injection (an older build)")
    assert code == 1
    code, out, err = cli("fit", "latest", "--store", store)
    assert code == 1 and "none validated by the probe" in err and len(err.strip().splitlines()) == 1 and not out


def test_fit_plot_folder_is_checked_before_the_store_is_read(cli, tmp_path):
    # Tried: --plot onto an existing file, under a file, and in /proc: one line, exit 2, no store made.
    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "file", tmp_path / "file" / "plots", "/proc/xferlab-plots"):
        code, out, err = cli("fit", "latest", "--plots", target, "--store", tmp_path / "none.duckdb")
        assert code == 2 and not out and len(err.strip().splitlines()) == 1 and "--plots" in err, err
    assert not (tmp_path / "none.duckdb").exists() and (tmp_path / "file").read_text() == "x"

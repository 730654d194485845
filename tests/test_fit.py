import numpy as np
import pytest

from xferlab.errors import BadValue
from xferlab.fit.linkfit import fit


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

    code, out, err = cli("fit", "latest", "--store", store, "--name", "mine", "--json", env=env)
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert {r["direction"] for r in rows} == {"h2d", "d2h", "d2d", "bidir"}
    for r in rows:
        assert r["bandwidth_ci_low_bytes_per_second"] <= r["bandwidth_bytes_per_second"] <= r["bandwidth_ci_high_bytes_per_second"]
        assert r["poor"] == (r["cv_relative_error"] > 0.10 or r["worst_relative_error"] > 0.25)
    # A saved profile is usable wherever a preset is.
    code, out, err = cli("model", "time", "mine-h2d-pageable", "--sizes", "1MiB", "--json", env=env)
    assert code == 0, err
    h2d = next(r for r in rows if r["direction"] == "h2d")
    assert json.loads(out)["results"][0]["seconds"] == pytest.approx(h2d["latency_seconds"] + 2**20 / h2d["bandwidth_bytes_per_second"])
    # Bad input.
    code, _, err = cli("fit", "nope", "--store", store)
    assert code == 2 and "nope" in err
    from xferlab.fit import profiles

    with pytest.raises(BadValue, match="clashes with a preset"):
        profiles.save("pcie4x8", {"kind": "simple", "bandwidth": 1e9}, "test")

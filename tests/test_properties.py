"""Property-based tests (Hypothesis) of what users type: the LINK language, sizes, lists and the YAML
files. Whatever the input, xferlab either gives a valid result or raises an XferlabError (a one-line
message for people): never another exception, never a non-finite time."""

import math

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from xferlab.errors import XferlabError
from xferlab.links.presets import PRESETS, load_links, resolve
from xferlab.units import MAX_SIZE, format_size, parse_list, parse_size, parse_time
from xferlab.system.yamlfile import load
from xferlab.system.models import Workflow

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
KEYS = ["mps", "mrrs", "ecrc", "lanes", "gen", "latency", "bandwidth", "penalty", "links", "gts", "mtu",
        "bandwidths", "breakpoints", "packet", "packet_overhead", "speed_gbps", "flit_variant", "kind", "name", "x"]
VALUES = st.one_of(st.sampled_from(["128", "256", "0", "-1", "true", "false", "1us", "12GB/s", "0.6", "2", "1e309",
                                    "nan", "abc", "4KiB", "16", "40GB/s;8GB/s", "8MiB", "", "1e-300B/s", "1e300s",
                                    "1.7e308", "1e-300"]),
                   st.text(st.characters(blacklist_categories=("Cs",)), max_size=6))
SIZES = np.array([1, 64, 1000, 4096, 65536, 2**20, 2**30, 2**40, MAX_SIZE], dtype=float)


def checked_link(spec):
    try:
        link = resolve(spec)
    except XferlabError as error:
        assert str(error) and "\n" not in str(error)
        return None
    times = np.asarray(link.time(SIZES))
    assert np.all(np.isfinite(times)) and np.all(times > 0), (spec, times)
    assert np.all(np.diff(times) >= -1e-12 * times[1:]), (spec, times)
    return link


@SETTINGS
@given(st.sampled_from(PRESETS + ("simple", "piecewise", "pcie9x3", "cxl4x16", "nvlink9", "ib-zz")),
       st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=4))
def test_any_link_string_resolves_to_a_sane_link_or_a_one_line_error(preset, overrides):
    spec = preset + (":" + ",".join(f"{k}={v}" for k, v in overrides) if overrides else "")
    checked_link(spec)


MAGNITUDES = st.floats(min_value=1e-320, max_value=1.7e308, allow_nan=False, allow_infinity=False)


@SETTINGS
@given(st.sampled_from(["simple:bandwidth={r}B/s,latency={t}s", "simple:bandwidth={r},overhead={t},latency={t}",
                        "piecewise:bandwidths={r};{r},breakpoints=4KiB,latency={t}", "pcie3x16:latency={t}s",
                        "piecewise:bandwidths={r},packet=64,packet_overhead={t},latency={t}"]),
       MAGNITUDES, MAGNITUDES)
def test_rates_and_times_of_any_magnitude_give_finite_times_or_a_one_line_error(template, rate, time):
    """Bad input among these: rates so small (1e-300 B/s) or times so large (1e308 s) that a time
    overflowed to `inf s`."""
    checked_link(template.format(r=repr(rate), t=repr(time)))


DIGITS = st.text(st.characters(whitelist_categories=("Nd",)), min_size=1, max_size=3)


@SETTINGS
@given(st.sampled_from(["pcie{}x{}", "cxl{}x{}", "eth{}", "roce{}", "nvlink{}"]), DIGITS, DIGITS)
def test_preset_names_take_ascii_digits_only(shape, a, b):
    """Bad input among these: digits of any script (`pcie３x16`); only ASCII ones may name a preset."""
    link = checked_link(shape.format(a, b))
    assert link is None or shape.format(a, b).isascii()


@SETTINGS
@given(st.text(max_size=40))
def test_random_link_text_never_raises_anything_else(text):
    checked_link(text)


@SETTINGS
@given(st.integers(min_value=1, max_value=MAX_SIZE))
def test_format_then_parse_a_size_round_trips(n):
    back = parse_size(format_size(n), whole=False)
    assert math.isclose(back, n, rel_tol=5e-3)


@SETTINGS
@given(st.text(max_size=20))
def test_a_size_string_parses_to_a_bounded_whole_number_or_is_refused(text):
    try:
        value = parse_size(text)
    except XferlabError:
        return
    assert isinstance(value, int) and 0 < value <= MAX_SIZE and text.strip().isascii()


@SETTINGS
@given(st.text(max_size=20))
def test_a_time_string_is_finite_and_non_negative_or_refused(text):
    try:
        value = parse_time(text)
    except XferlabError:
        return
    assert math.isfinite(value) and value >= 0


@SETTINGS
@given(st.integers(0, 40), st.integers(0, 40))
def test_a_doubling_range_holds_each_power_of_two_between_its_ends(a, b):
    lo, hi = min(a, b), max(a, b)
    values = parse_list(f"{2**lo}B..{2**hi}B")
    assert values == [2**k for k in range(lo, hi + 1)]


@SETTINGS
@given(st.lists(st.sampled_from(["64B", "4KiB", "1MiB", "", "x", "1..0", "0B", "2KB..1KB"]), min_size=1, max_size=5))
def test_a_list_is_parsed_or_refused_in_one_line(items):
    try:
        values = parse_list(",".join(items))
    except XferlabError as error:
        assert "\n" not in str(error)
        return
    assert all(v > 0 for v in values)


YAML_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                                     st.text(max_size=8)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=12)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["kind", "name", "tasks", "edges", "strategy", "chunk", "depth", "links", "x"]),
                       YAML_VALUES, max_size=6))
def test_random_yaml_documents_load_or_give_bad_file(tmp_path_factory, document):
    folder = tmp_path_factory.mktemp("yaml")
    path = folder / "doc.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        load(path, Workflow, "workflow")
    except XferlabError as error:
        assert "\n" not in str(error)
    try:
        load_links(path)
    except XferlabError as error:
        assert "\n" not in str(error)


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_as_a_yaml_file_give_bad_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("bytes") / "doc.yaml"
    path.write_bytes(data)
    for read in (lambda: load(path, Workflow, "workflow"), lambda: load_links(path)):
        try:
            read()
        except XferlabError as error:
            assert "\n" not in str(error)

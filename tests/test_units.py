import math
import re

import numpy as np
import pytest

from xferlab.errors import BadValue
from xferlab.units import (format_rate, format_size, format_time, parse_list, parse_rate, parse_size,
                           parse_sizes, parse_time)


@pytest.mark.parametrize("text, expected", [
    ("64", 64), ("64B", 64), ("4KiB", 4096), ("4KB", 4000), ("4kB", 4000), ("1.6GB", 1_600_000_000),
    ("1MiB", 2**20), ("1 GiB", 2**30), ("1.5KiB", 1536), (128, 128), ("2TiB", 2**41), ("10 bytes", 10),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text, fragment", [
    ("-5", "negative"), ("12XB", "'12XB'"), ("0", "zero"), ("", "is not"), ("abc", "'abc'"),
    ("0.5B", "whole number"), ("8Gb", "bits"), ("1e400", "not finite"),
])
def test_parse_size_rejects_with_the_value_named(text, fragment):
    with pytest.raises(BadValue) as info:
        parse_size(text, "--sizes")
    assert fragment in str(info.value)
    assert "--sizes" in str(info.value)


@pytest.mark.parametrize("value, fragment", [([1, 2], "is a list"), ({"a": 1}, "is a mapping"), (None, "is None")])
def test_a_yaml_structure_where_a_value_belongs_is_named_by_its_type(value, fragment):
    """Bad input: a list, a mapping or nothing (YAML `~`) as a size, time or rate (a list was turned
    into text, all of it, before being refused)."""
    for parse in (parse_size, parse_time, parse_rate):
        with pytest.raises(BadValue, match=f"{fragment}, not a number or text"):
            parse(value, "bandwidth")


def test_zero_size_allowed_when_asked():
    assert parse_size("0", allow_zero=True) == 0


@pytest.mark.parametrize("text, expected", [
    ("738.77ns", 738.77e-9), ("1us", 1e-6), ("1µs", 1e-6), ("20ms", 0.02), ("2s", 2.0), ("5m", 300.0),
    ("1h", 3600.0), ("0.5", 0.5), ("40 ns", 40e-9),
])
def test_parse_time(text, expected):
    assert math.isclose(parse_time(text), expected)


@pytest.mark.parametrize("text", ["-1ns", "fast", "1 lightyear", "nan"])
def test_parse_time_rejects(text):
    with pytest.raises(BadValue, match="time"):
        parse_time(text)


@pytest.mark.parametrize("text, fragment", [("1e300s", "over 1e+09 s"), ("1.7e308", "over 1e+09 s"),
                                            ("300000h", "over 1e+09 s"), ("inf", "is not a time")])
def test_parse_time_refuses_times_beyond_31_years(text, fragment):
    """Bad input: times so long (1e300 s, 300,000 h) that a link's time overflowed to `inf s`."""
    with pytest.raises(BadValue, match=re.escape(fragment)):
        parse_time(text, "--host-time")
    assert parse_time("1e9s") == 1e9  # the limit itself is taken


@pytest.mark.parametrize("text, expected", [
    ("12.4GB/s", 12.4e9), ("100Gb/s", 12.5e9), ("100Gbps", 12.5e9), ("1GiB/s", 2**30), ("1000", 1000.0),
])
def test_parse_rate(text, expected):
    assert math.isclose(parse_rate(text), expected)


@pytest.mark.parametrize("text", ["0GB/s", "-1GB/s", "fast"])
def test_parse_rate_rejects(text):
    with pytest.raises(BadValue, match="rate"):
        parse_rate(text)


@pytest.mark.parametrize("text", ["1e-300B/s", "0.5B/s", "4b/s"])
def test_parse_rate_refuses_rates_under_one_byte_per_second(text):
    """Bad input: rates so slow (1e-300 B/s) that 1 EiB took `inf s`; 4 bits/s is half a byte a second."""
    with pytest.raises(BadValue, match=r"under 1 B/s"):
        parse_rate(text, "--host-rate")
    assert parse_rate("8b/s") == 1.0  # the limit itself is taken


def test_lists_and_doubling_ranges():
    assert parse_list("64B,4KiB") == [64, 4096]
    assert parse_list("64B..1KiB") == [64, 128, 256, 512, 1024]
    assert parse_list("1..4,100") == [1, 2, 4, 100]
    assert parse_list("3..20") == [3, 6, 12]  # doubling from the start; the end is a bound
    sizes = parse_sizes("1B..1GiB")
    assert sizes.dtype == np.float64 and len(sizes) == 31 and sizes[-1] == 2**30


@pytest.mark.parametrize("text, fragment", [
    ("1KiB..64B", "ends below its start"), ("64B,,1KiB", "empty item"), ("", "empty"), ("64B..-1", "negative"),
])
def test_list_errors(text, fragment):
    with pytest.raises(BadValue, match=fragment):
        parse_list(text)


def test_formatting_states_units():
    assert format_size(4096) == "4 KiB"
    assert format_size(1.6e9, base=10) == "1.6 GB"
    assert format_size(13049) == "12.74 KiB"
    assert format_time(738.77e-9) == "738.8 ns"
    assert format_time(2.5) == "2.5 s"
    assert format_rate(12.4e9) == "12.4 GB/s"

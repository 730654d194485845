"""The probe's output as Python reads it: doubles printed so that they read back as the same double
(they were cut to 10 significant digits), strings that are valid UTF-8 whatever bytes a device or
driver name holds, and a probe line that is not UTF-8 failing the step, not the program."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xferlab.measure.probe import run_probe

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None and os.environ.get("CI") != "true":
        pytest.skip("no g++ here (make test's sysdeps installs it)")
    exe = tmp_path_factory.mktemp("json") / "json_driver"
    done = subprocess.run([compiler or "g++", "-O1", "-std=c++17", "-I", str(ROOT / "native" / "probe"),
                           str(ROOT / "tests" / "json_driver.cpp"), "-o", str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return exe


def test_doubles_read_back_exactly(driver):
    values = [0.1, 1 / 3, 2.0 ** -1074, sys.float_info.max, 1.2345678901234567e-05, 12_430_000_000.123456]
    done = subprocess.run([str(driver), *(v.hex() for v in values)], capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["value"] for r in lines if r["record"] == "number"] == values  # exact, not approximately


def test_a_name_that_is_not_utf8_is_made_valid(driver):
    # bad input: bytes 0xff 0xfe, a truncated 3-byte sequence, an encoded surrogate
    done = subprocess.run([str(driver)], capture_output=True, check=True)
    line = done.stdout.splitlines()[-1]
    record = json.loads(line.decode("utf-8"))  # strict: it is valid UTF-8 now
    assert record["name"] == "pthread-\ufffd\ufffd-é\ufffd\ufffd-\ufffd\ufffd\ufffd-end"


def test_a_probe_printing_bytes_that_are_not_utf8_fails_the_step_not_the_program(tmp_path, monkeypatch):
    fake = tmp_path / "probe"
    fake.write_bytes(b'#!/bin/sh\nprintf \'{"record": "setup", "name": "dev\\377"}\\n\\377\\376 garbage\\n\'\n')
    fake.chmod(0o755)
    monkeypatch.setenv("XFERLAB_PROBE", str(fake))
    run = run_probe(["clock"])
    assert run.records[0]["name"] == "dev\ufffd"
    assert not run.ok and run.failure.startswith("unparseable output line")

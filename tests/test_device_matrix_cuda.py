"""`measure device --matrix --backend cuda` on the stand-in driver (tests/fake_libcuda.c) with two devices
(FAKE_CUDA_DEVICES=2): the copies between the two devices (kernels --mode d2d --peer, cuMemcpyPeerAsync) fill
both device-to-device cells beside each device's own, each cell's path says whether peer access was on (the
stand-in's cuDeviceCanAccessPeer answers from FAKE_CUDA_PEER) or the driver staged the copy, and the stand-in's
own count of how it moved the bytes agrees; a corrupted peer copy is caught; a driver without the peer calls
gives N/A cells with the reason. The stand-in is not CUDA: no GPU, let alone two, measures anything here."""

import json

import pytest

from conftest import build_fake_libcuda
from xferlab.measure import device_matrix as dm


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    out = tmp_path_factory.mktemp("fake_cuda_peer")
    return {"peer": str(build_fake_libcuda(out / "libcuda.so.1")),
            "old": str(build_fake_libcuda(out / "libcuda-nopeer.so", "-DFAKE_NO_PEER"))}


def two(fake, library="peer", **env):
    return {"XFERLAB_CUDA_LIBRARY": fake[library], "FAKE_CUDA_DEVICES": "2", **env}


def matrix(cli, env, tmp_path, check=0):
    code, out, err = cli("measure", "device", "--matrix", "--backend", "cuda", "--sizes", "64KiB", "--iterations", "3",
                         "--min-time", "0", "--json", "--store", tmp_path / "s.duckdb", env=env, check=check)
    return {(c["direction"], c["src"], c["dst"]): c for c in json.loads(out)["results"]}


@pytest.mark.parametrize("access, path01, path10", [
    (None, "peer", "peer"),        # every pair can: peer access on both ways
    ("1:0", "peer", "staged"),     # only #1 can read #0's memory: #0 -> #1 (copied on #1's stream) is peer
])
def test_two_stand_in_gpus_fill_every_cell_with_its_path(cli, fake, tmp_path, access, path01, path10):
    env = two(fake, **({"FAKE_CUDA_PEER": access} if access else {}))
    by = matrix(cli, env, tmp_path)
    assert len(by) == 8 and all(c["status"] == "measured" and c["count"] >= 3 for c in by.values()), by
    assert by[("d2d", "#0", "#1")]["path"] == dm.path_text("cuda", path01)
    assert by[("d2d", "#1", "#0")]["path"] == dm.path_text("cuda", path10)
    assert by[("d2d", "#1", "#0")]["src_device"] == 1 and by[("d2d", "#1", "#0")]["dst_device"] == 0
    assert by[("d2d", "#0", "#0")]["path"] == dm.PATHS["transfer"] and by[("d2d", "#1", "#1")]["kernel_median_bytes_per_second"] > 0
    assert "peer access enabled" in dm.path_text("cuda", "peer")
    assert "by the driver" in dm.path_text("cuda", "staged") and "pinned" in dm.path_text("opencl", "staged")


@pytest.mark.parametrize("access, peer, staged", [(None, 4, 0), ("none", 0, 4), ("0:1", 0, 4), ("1:0", 4, 0)])
def test_the_probe_says_the_path_the_driver_took(probe_fake, access, peer, staged):
    """#0 -> #1: the copy runs on #1's stream, so it goes peer to peer when #1 may access #0's memory ("1:0"); the
    stand-in counts the copies it moved each way (three timed and the warm-up), and every call was made as the
    reference says (no bad call, nothing leaked)."""
    code, records, err, counts = probe_fake("--peer", "1", **({"FAKE_CUDA_PEER": access} if access else {}))
    assert code == 0, err
    setup = next(r for r in records if r["record"] == "setup")
    samples = [r for r in records if r["record"] == "sample"]
    path = "peer" if peer else "staged"
    assert setup["path"] == path and setup["peer_index"] == 1 and setup["device_index"] == 0
    assert [s["path"] for s in samples] == [path] * 3 and all(s["device_seconds"] >= 0 < s["host_seconds"] for s in samples)
    assert (counts["peer_copies"], counts["staged_copies"]) == (peer, staged)
    (check,) = [r for r in records if r["record"] == "validation"]
    assert check["ok"] and check["path"] == path


def test_a_corrupted_peer_copy_is_caught(probe_fake):
    code, records, err, _ = probe_fake("--peer", "1", FAKE_CUDA_CORRUPT="1")
    assert code == 0, err
    (check,) = [r for r in records if r["record"] == "validation"]
    assert not check["ok"] and check["what"] == "the peer holds other bytes"


@pytest.mark.parametrize("args, env, code, says", [
    (["--peer", "0"], {}, 2, "--peer 0 is the source device itself"),
    (["--peer", "5"], {}, 2, "device 5 does not exist; CUDA devices: 0..1"),
    (["--peer", "1"], {"FAKE_CUDA_DEVICES": "1"}, 3, "device to device needs two CUDA devices; the driver sees 1"),
])
def test_the_probe_refuses_what_it_cannot_copy(probe_fake, args, env, code, says):
    got, records, err, _ = probe_fake(*args, **env)
    assert got == code and says in err and not [r for r in records if r["record"] == "sample"], err


@pytest.fixture
def probe_fake(fake):
    import os
    import subprocess

    from xferlab.measure.probe import probe_path

    def run(*args, library="peer", **env):
        done = subprocess.run([str(probe_path()), "kernels", "--backend", "cuda", "--mode", "d2d", "--size", "65536",
                               "--iterations", "3", *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, **two(fake, library, FAKE_CUDA_REPORT="1", **env)})
        records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        report = [line for line in done.stderr.splitlines() if line.startswith("fake-cuda: launches=")]
        assert len(report) == 1 or (done.returncode == 2 and not report), done.stderr  # bad input: no driver loaded
        counts = dict(item.split("=", 1) for item in report[0].split(": ", 1)[1].split()) if report else {}
        assert counts.get("bad", "0") == "0" and counts.get("live", "0") == "0", done.stderr
        return done.returncode, records, done.stderr, {k: int(v) for k, v in counts.items() if v.isdigit()}

    return run


def test_a_driver_without_the_peer_calls(cli, fake, tmp_path, probe_fake):
    """The probe says what is missing (not available, exit 3); the matrix knows it from the inventory, plans no
    copy between the devices and shows those cells N/A with the reason, the others measured."""
    code, _, err, _ = probe_fake("--peer", "1", library="old")
    assert code == 3 and "does not export cuDeviceCanAccessPeer" in err, err
    by = matrix(cli, two(fake, "old"), tmp_path)
    for pair in (("d2d", "#0", "#1"), ("d2d", "#1", "#0")):
        assert by[pair]["status"] == "n/a" and by[pair]["path"] is None
        assert "does not export the peer calls" in by[pair]["reason"] and "libcuda-nopeer.so" in by[pair]["reason"]
    assert all(c["status"] == "measured" for k, c in by.items() if k[0] != "d2d" or k[1] == k[2])


def test_measure_kernels_peer_on_cuda(cli, fake, tmp_path):
    code, out, err = cli("measure", "kernels", "--backend", "cuda", "--peer", "1", "--memory", "device", "--kernels",
                         "copy", "--size", "64KiB", "--iterations", "2", "--json", "--store", tmp_path / "k.duckdb",
                         env=two(fake, FAKE_CUDA_PEER="none"), check=0)
    d2d = json.loads(out)["d2d"]
    assert [(r["path"], r["device_index"], r["peer_index"], r["count"]) for r in d2d] == [("staged", 0, 1, 2)], d2d

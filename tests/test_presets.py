import json

import pytest

from xferlab.errors import BadFile, BadValue, UnknownName
from xferlab.links import PRESETS, load_links, resolve
from xferlab.links.presets import link_file_schema


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_resolves_and_is_monotone(name):
    link = resolve(name)
    assert link.label == name
    sizes = [1, 64, 4096, 2**20, 2**30]
    times = [link.time(n) for n in sizes]
    assert times == sorted(times)
    assert link.peak_rate() > 0 and link.summary()


def test_overrides_are_validated_and_named():
    link = resolve("pcie3x16:mps=128,ecrc=true,latency=1us")
    assert (link.mps, link.ecrc, link.latency) == (128, True, 1e-6)
    assert link.label == "pcie3x16:mps=128,ecrc=true,latency=1us"
    assert resolve("nvlink2:links=3").raw_rate == pytest.approx(75e9)
    assert resolve("cxl3x16-lopt").flit_variant == "latency-optimized"


@pytest.mark.parametrize("spec, error, fragment", [
    ("pcie9x3", BadValue, "gen=9"), ("pcie3x5", BadValue, "lanes=5"), ("cxl4x16", BadValue, "cxl4x16"),
    ("warp", UnknownName, "'warp'"), ("pcie3x16:mps", BadValue, "KEY=VALUE"), ("pcie3x16:kind=cxl", BadValue, "'kind'"),
    ("pcie3x16:ecrc=maybe", BadValue, "ecrc"), ("", BadValue, "empty"),
])
def test_bad_specs(spec, error, fragment):
    with pytest.raises(error, match=fragment):
        resolve(spec)


def test_yaml_links(tmp_path):
    path = tmp_path / "links.yaml"
    path.write_text("links:\n"
                    "  my-gen4:\n    kind: pcie\n    gen: 4\n    lanes: 8\n    latency: 900ns\n"
                    "  slow-cxl:\n    preset: cxl2x16\n    penalty: 0.7\n"
                    "  fitted:\n    kind: simple\n    bandwidth: 11.2GB/s\n    latency: 2.1us\n")
    links = load_links(path)
    assert links["my-gen4"].latency == pytest.approx(900e-9) and links["my-gen4"].lanes == 8
    assert links["slow-cxl"].penalty == 0.7 and links["slow-cxl"].gts == 32
    assert links["fitted"].time(11.2e9) == pytest.approx(1 + 2.1e-6)
    # Defined names resolve like presets, with overrides.
    assert resolve("my-gen4:lanes=16", links).lanes == 16


@pytest.mark.parametrize("text, fragment", [
    ("links:\n  x:\n    kind: pcie\n    colour: red\n", "unknown parameter 'colour'"),
    ("links:\n  x:\n    kind: warp\n", "kind 'warp'"),
    ("links:\n  x:\n    kind: cxl\n    penalty: 0\n", "penalty=0"),
    ("links:\n  x:\n    kind: simple\n", "bandwidth is required"),
    ("links: [1, 2]\n", "mapping 'links:'"),
    ("linkz: {}\n", "mapping 'links:'"),
    ("links:\n  x: [\n", "not valid YAML"),
    ("links:\n  x:\n    preset: pcie9x9\n", "gen=9"),
])
def test_bad_yaml(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises((BadFile, BadValue), match=fragment) as info:
        load_links(path)
    assert str(path) in str(info.value)


def test_missing_file():
    with pytest.raises(BadFile, match="cannot be read"):
        load_links("/nonexistent/links.yaml")


def test_cli_with_links_file_and_bad_field(cli, tmp_path):
    good = tmp_path / "links.yaml"
    good.write_text("links:\n  mine:\n    kind: simple\n    bandwidth: 10GB/s\n    latency: 1us\n")
    doc = cli.json("model", "time", "mine", "--links", good, "--sizes", "10GB")
    assert doc["results"][0]["seconds"] == pytest.approx(1 + 1e-6)
    bad = tmp_path / "bad.yaml"
    bad.write_text("links:\n  mine:\n    kind: simple\n    bandwidth: 10GB/s\n    colour: red\n")
    code, out, err = cli("model", "time", "mine", "--links", bad, "--sizes", "1KiB")
    assert code == 2 and "unknown parameter 'colour'" in err and str(bad) in err


def test_schema(cli):
    code, out, _ = cli("schema", check=0)
    schema = json.loads(out)
    assert schema == json.loads(json.dumps(link_file_schema()))
    kinds = json.dumps(schema)
    for kind in ("pcie", "cxl", "nvlink", "infiniband", "ethernet", "simple"):
        assert f'"{kind}"' in kinds

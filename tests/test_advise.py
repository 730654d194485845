import numpy as np
import pytest

from xferlab.advise.links import fastest, ranking_changes
from xferlab.links import resolve


def test_fastest_and_ranking_changes_agree_with_crossovers():
    links = [resolve("pcie3x16"), resolve("cxl-seed:penalty=0.6")]
    rows = fastest(links, np.asarray([64.0, 13048.0, 13049.0, 2.0**30]), "readwrite")
    assert [r["fastest"] for r in rows] == ["cxl-seed:penalty=0.6", "cxl-seed:penalty=0.6", "pcie3x16", "pcie3x16"]
    (change,) = ranking_changes(links, "readwrite")
    assert change["size_bytes"] == 13049  # the seed's 12.7 KiB, exact to the byte


def test_advise_cli(cli):
    doc = cli.json("advise", "links", "pcie3x16", "nvlink2", "c2c", "--sizes", "64B,1GiB")
    assert [r["fastest"] for r in doc["results"]] == ["c2c", "c2c"]
    doc = cli.json("advise", "whatif", "seed-testbed", "deceval", "--replace", "pcie3x16=c2c", "--strategy", "staged")
    (row,) = doc["results"]
    assert row["after_seconds"] < row["before_seconds"] and row["speedup"] > 1
    doc = cli.json("advise", "offload", "pcie3x16", "--bytes", "1MiB", "--host-time", "1ms", "--device-time", "0.5ms")
    assert doc["results"][0]["pays"] is True


@pytest.mark.parametrize("args, fragment", [
    (["whatif", "seed-testbed", "deceval", "--replace", "warp9"], "not OLD=NEW"),
    (["whatif", "seed-testbed", "deceval", "--replace", "ib-edr=c2c"], "no link of system 'seed-testbed' is 'ib-edr'"),
    (["whatif", "seed-testbed", "deceval", "--replace", "pcie3x16=pcie9x9"], "gen=9"),
    (["links", "pcie3x16"], "two links or more"),
])
def test_bad_input(cli, args, fragment):
    code, _, err = cli("advise", *args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err

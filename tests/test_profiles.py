"""Saved profiles as a source of links owned by ``xferlab.links`` (``links/profiles.py`` stores,
``links/presets.py`` finds and saves): where the folder is, names that cannot be file names, and
that ``links`` neither reaches up into ``fit`` nor loads the store for a preset.

Bad input tried: profile names too long in UTF-8 bytes though short in characters, with a path
separator, a NUL, a leading dot; a LINK of that shape (it must not reach the file system).
"""

import subprocess
import sys

from pathlib import Path

import pytest

from xferlab.errors import BadFile, BadValue, UnknownName
from xferlab.links import profiles, resolve
from xferlab.links.presets import save_profile
from xferlab.links.simple import SimpleLink

FIELDS = {"kind": "simple", "bandwidth": 2e9, "latency": 3e-6}


def test_folder_is_the_variable_else_the_users_data_folder(tmp_path, monkeypatch):
    """$XFERLAB_PROFILES wins; without it the folder is $XDG_DATA_HOME/xferlab/profiles (bad input: a
    relative XDG_DATA_HOME, which the XDG spec says to ignore), never a folder of the working directory."""
    monkeypatch.delenv("XFERLAB_PROFILES", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert profiles.folder() == tmp_path / "data" / "xferlab" / "profiles"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    assert profiles.folder() == Path.home() / ".local" / "share" / "xferlab" / "profiles"
    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path / "mine"))
    assert profiles.folder() == tmp_path / "mine"
    with profiles.using(tmp_path / "lab"):  # the lab keeps its own under --out
        assert profiles.folder() == tmp_path / "lab"
    assert profiles.folder() == tmp_path / "mine"


def test_a_saved_profile_is_found_from_any_folder(tmp_path, monkeypatch, cli):
    """Saved with no variable set, the profile is found by `model time` run from another folder (it was
    looked up in ./xferlab-results/profiles, so moving elsewhere lost it)."""
    monkeypatch.delenv("XFERLAB_PROFILES", raising=False)
    monkeypatch.delenv("XFERLAB_STORE", raising=False)
    path = save_profile("anywhere", FIELDS, "test")
    assert path == profiles.folder() / "anywhere.yaml" and str(tmp_path) not in str(path.parent.parent)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    rows = cli.json("model", "time", "anywhere", "--sizes", "1MB")["results"]
    assert rows[0]["seconds"] == pytest.approx(3e-6 + 1e6 / 2e9)
    assert profiles.names() == ["anywhere"] and isinstance(resolve("anywhere"), SimpleLink)
    # A store somewhere else changes nothing: profiles do not follow the store or the folder.
    code, out, _ = cli("model", "time", "anywhere", "--sizes", "1MB", env={"XFERLAB_STORE": str(tmp_path / "s.duckdb")})
    assert code == 0


@pytest.mark.parametrize("name", ["😀" * 100, "é" * 120 + "x", "a/b", "a\0b", ".hidden", "", "a b"])
def test_names_that_cannot_be_file_names_are_refused_before_the_file_system(name, tmp_path, monkeypatch):
    """Bad input: a name of 100 emoji (400 bytes in UTF-8: File name too long), 121 characters, a
    separator, a NUL, a leading dot, an empty name, a space. Refused in one line; the folder is
    never created."""
    folder = tmp_path / "never"
    monkeypatch.setenv("XFERLAB_PROFILES", str(folder))
    with pytest.raises(BadValue, match="profile name") as caught:
        save_profile(name, FIELDS, "test")
    assert "\n" not in str(caught.value)
    assert not folder.exists()


def test_longest_names_are_stored():
    """The limits are the file system's: 120 two-byte characters (240 bytes) and 120 ASCII ones fit."""
    for name in ("é" * 120, "x" * 120, "e" * 50 + "😀" * 50):
        assert profiles.storable(name), name
    assert not profiles.storable("😀" * 63)  # 252 bytes: with ".yaml" over 255


def test_a_link_named_like_no_file_is_unknown_not_an_os_error(tmp_path, monkeypatch):
    """Bad input: a LINK of 100 emoji; it is not a preset, and not looked up as a file."""
    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path))
    with pytest.raises(UnknownName, match="is not a preset"):
        resolve("😀" * 100)


def test_links_needs_neither_fit_nor_the_store():
    """Importing the links and resolving a preset loads no fit module and not the store (DuckDB)."""
    code = ("import sys; from xferlab.links import resolve; resolve('pcie3x8'); "
            "bad = sorted(m for m in sys.modules if m.startswith(('xferlab.fit', 'xferlab.store', 'duckdb'))); "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)


def test_a_profile_file_is_read_with_the_bounded_loader(tmp_path, monkeypatch):
    """Bad input: a profile file whose aliases expand it a thousandfold ('billion laughs') is refused
    in one line, as a --links file is, instead of being expanded."""
    monkeypatch.setenv("XFERLAB_PROFILES", str(tmp_path))
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]"
                                                       for i in range(5)]
    (tmp_path / "laughs.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(BadFile, match="alias"):
        profiles.read(tmp_path / "laughs.yaml")

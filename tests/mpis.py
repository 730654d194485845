"""The MPIs the network tests run on, each by name: the `mpich` wheel (the MPI 5 standard ABI, a dependency of
xferlab) and Debian's Open MPI 4.1 and MPICH 4.0 (openmpi-bin libopenmpi-dev mpich libmpich-dev: `make test`
installs them as root), reached through their own wrappers, mpicc.openmpi and mpicc.mpich. A test takes the
`--mpi` value of each; where an MPI is absent it is skipped with the reason, and in CI (CI=true) that fails."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI") == "true"
#: name -> (the wrapper --mpi names, None for the wheel; the ABI the run must record; a word of its version string)
MPIS = {"wheel": (None, "standard", "MPICH Version:"),
        "openmpi": ("mpicc.openmpi", "openmpi", "Open MPI v4"),
        "mpich": ("mpicc.mpich", "mpich", "MPICH Version:")}
NAMES = list(MPIS)


def option(name: str) -> str:
    """The --mpi value of MPI ``name``; skips (fails in CI) where it is not installed."""
    wrapper = MPIS[name][0]
    if wrapper is None:
        return "wheel"
    found = shutil.which(wrapper)
    if found:
        return found
    why = f"{wrapper} is not on PATH (Debian's {name}: make test installs it as root)"
    if IN_CI:
        pytest.fail(why)
    pytest.skip(why)


def abi(name: str) -> str:
    return MPIS[name][1]


def version_word(name: str) -> str:
    return MPIS[name][2]


def require_wheel() -> None:
    """At a module's top: skip the module where the `mpich` wheel's library is missing (a dependency of
    xferlab, so CI must have it: there the error is raised)."""
    from xferlab.measure.mpi_site import wheel_library

    try:
        wheel_library()
    except Exception as error:  # noqa: BLE001
        if IN_CI:
            raise
        pytest.skip(f"no MPI here: {error}", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def shim_cache(tmp_path_factory):
    """The shims a module builds go to a cache of its own, never the user's (in the namespaces of two hosts too:
    one file system). A module takes it with `from mpis import shim_cache`."""
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    os.environ.pop("XDG_CACHE_HOME")
    if saved is not None:
        os.environ["XDG_CACHE_HOME"] = saved

"""Which MPI the network probe runs on: ``--mpi auto|wheel|PATH``.

* ``wheel``: the ``mpich`` wheel beside this Python (a dependency of xferlab), through the MPI 5 standard
  ABI (``libmpi_abi.so.1``), started by the wheel's ``mpiexec``; ``$XFERLAB_MPI_LIB`` and
  ``$XFERLAB_MPIEXEC`` override the library and the launcher.
* ``PATH``: an MPI's compiler wrapper (``mpicc``, ``mpicc.openmpi``, Intel's ``mpiicx`` …; a bare name is looked
  up on PATH) or an MPI library
  (``libmpi_abi.so.1``, ``libmpi.so.12``, ``libmpi.so.40``, ``libmpich.so.12``). A standard-ABI library is
  loaded as it is; any other MPI is reached through xferlab's shim (``mpi_shim.c``, beside this file),
  compiled at first use with that MPI's own wrapper, as the OSU Micro-Benchmarks and mpi4py are built
  against the site's MPI. A library names its wrapper: the one on PATH or in the library's ``../bin``
  whose ``-show`` links that library.
* ``auto`` (the default): the ``mpicc`` on PATH (a loaded module, the system's MPI) when it is not the
  wheel's own, else the wheel.

The launcher (``mpiexec``) must belong to the same MPI: the one beside the wrapper (``mpicc.X`` takes
``mpiexec.X``), or beside the library. :func:`launch_command` is the one place that builds a launch.

Shims are cached per MPI in ``$XDG_CACHE_HOME/xferlab/mpi`` (``~/.cache``), keyed by the wrapper's real
path, its ``-show`` line and the shim's source; each is built in a temporary file and renamed into
place, so that a second process building the same shim at once never sees half a library.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import BadValue, Unavailable
from ..units import shown

SHIM_SOURCE = Path(__file__).with_name("mpi_shim.c")
ABIS = {"standard": "MPI 5 standard ABI", "mpich": "MPICH ABI", "openmpi": "Open MPI ABI"}
CHOICES = "auto, wheel, or an MPI's mpicc (a path, or a name on PATH) or the path of its library (libmpi_abi.so.1, libmpi.so.12, libmpi.so.40)"
#: Which ABI an mpi.h declares, read by the preprocessor (Open MPI defines OPEN_MPI; MPICH and its
#: derivatives, Intel MPI, Cray MPICH and MVAPICH, define MPICH_VERSION).
_ABI_PROBE = ("#include <mpi.h>\n#if defined(OPEN_MPI)\nxferlab_abi=openmpi\n#elif defined(MPICH_VERSION)\n"
              "xferlab_abi=mpich\n#else\nxferlab_abi=other\n#endif\n")
WRAPPER_SECONDS = 120
SYSTEM_LIBS = {Path(p).resolve() for p in ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                                          "/usr/lib/aarch64-linux-gnu")}


@dataclass(frozen=True)
class Mpi:
    """An MPI as the probe will run it: the library it loads, the launcher, and what to record."""
    choice: str                     # what --mpi said
    source: str                     # wheel | mpicc | library | environment
    library: Path                   # what the probe loads ($XFERLAB_MPI_LIB): a standard-ABI library or the shim
    launcher: Optional[Path]        # mpiexec of the same MPI (None: not found; only a site launcher can start it)
    abi: str                        # standard | mpich | openmpi
    mpicc: Optional[Path] = None
    env: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        return {"choice": self.choice, "source": self.source, "abi": self.abi,
                "mpicc": str(self.mpicc) if self.mpicc else None, "launcher": str(self.launcher) if self.launcher else None,
                "probe_library": str(self.library)}


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xferlab" / "mpi"


def wheel_library() -> Path:
    """The standard-ABI library of the wheel (or $XFERLAB_MPI_LIB); :class:`Unavailable` saying where it looked."""
    tried = []
    if os.environ.get("XFERLAB_MPI_LIB"):
        path = Path(os.environ["XFERLAB_MPI_LIB"])
        if path.is_file():
            return path
        raise Unavailable(f"XFERLAB_MPI_LIB '{path}' is not a file (it names an MPI standard-ABI library, libmpi_abi.so)")
    for prefix in dict.fromkeys((Path(sys.prefix), Path(sys.executable).resolve().parent.parent)):
        candidate = prefix / "lib" / "libmpi_abi.so.1"
        tried.append(str(candidate))
        if candidate.is_file():
            return candidate
    for folder in ("/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/local/lib", "/usr/lib"):
        candidate = Path(folder) / "libmpi_abi.so.1"
        tried.append(str(candidate))
        if candidate.is_file():
            return candidate
    raise Unavailable("no MPI with the standard ABI (libmpi_abi.so.1) was found (looked in: " + ", ".join(tried) +
                      "); install the 'mpich' package (pip install mpich) or set XFERLAB_MPI_LIB")


def wheel_launcher() -> Path:
    """$XFERLAB_MPIEXEC, the ``mpiexec`` beside this Python (the wheel's), or the first on PATH."""
    if os.environ.get("XFERLAB_MPIEXEC"):
        return Path(os.environ["XFERLAB_MPIEXEC"])
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file():
        return beside
    found = shutil.which("mpiexec")
    if found:
        return Path(found)
    raise Unavailable("no MPI launcher (mpiexec) was found beside this Python or on PATH; install the 'mpich' "
                      "package (pip install mpich) or set XFERLAB_MPIEXEC")


def _wheel() -> Mpi:
    library = wheel_library()
    return Mpi("wheel", "environment" if os.environ.get("XFERLAB_MPI_LIB") else "wheel", library, wheel_launcher(),
               "standard")


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=WRAPPER_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BadValue(f"--mpi {shown(what)}: it could not run ({error}); allowed: {CHOICES}") from None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no message"


def _show(mpicc: Path, what: str) -> str:
    done = _run([str(mpicc), "-show"], what)
    if done.returncode != 0 or not done.stdout.strip():
        raise BadValue(f"--mpi {shown(what)} is not an MPI compiler wrapper (`-show` said: "
                       f"{_last_line(done.stderr or done.stdout)}); allowed: {CHOICES}")
    return done.stdout.strip()


def _shim(mpicc: Path, what: str) -> tuple[Path, str]:
    """The shim built with ``mpicc`` (cached), and the ABI of its mpi.h."""
    show = _show(mpicc, what)
    source = SHIM_SOURCE.read_bytes()
    key = hashlib.sha256("\n".join((str(mpicc.resolve()), show)).encode() + source).hexdigest()[:16]
    folder = cache_root() / key
    library, meta = folder / "libxferlab_mpi_shim.so", folder / "shim.json"
    if library.is_file() and meta.is_file():
        return library, json.loads(meta.read_text())["abi"]
    folder.mkdir(parents=True, exist_ok=True)
    handle, probe = tempfile.mkstemp(dir=folder, prefix=".abi-", suffix=".c")
    os.close(handle)
    handle, built = tempfile.mkstemp(dir=folder, prefix=".shim-", suffix=".so")
    os.close(handle)
    try:
        Path(probe).write_text(_ABI_PROBE)
        done = _run([str(mpicc), "-E", probe], what)
        abi = next((line.split("=", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("xferlab_abi=")),
                   None)
        if done.returncode != 0 or abi is None:
            raise BadValue(f"--mpi {shown(what)}: its mpi.h could not be read ({_last_line(done.stderr)}); allowed: {CHOICES}")
        done = _run([str(mpicc), "-shared", "-fPIC", "-O2", "-o", built, str(SHIM_SOURCE)], what)
        if done.returncode != 0 or os.path.getsize(built) == 0:
            raise BadValue(f"--mpi {shown(what)}: xferlab's MPI shim did not build with it "
                           f"({_last_line(done.stderr or done.stdout)}); allowed: {CHOICES}")
        fd, meta_tmp = tempfile.mkstemp(dir=folder, prefix=".meta-")
        with os.fdopen(fd, "w") as out:
            json.dump({"abi": abi, "mpicc": str(mpicc), "show": show}, out)
        os.replace(meta_tmp, meta)
        os.replace(built, library)  # last: a reader that sees the library sees its metadata too
    finally:
        for leftover in (probe, built):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return library, abi


def _beside(folder: Path, names: list[str]) -> Optional[Path]:
    for name in names:
        if (folder / name).is_file() and os.access(folder / name, os.X_OK):
            return folder / name
    return None


def _launcher_of(mpicc: Path, abi: str, what: str) -> Path:
    """The mpiexec beside the wrapper (mpicc.X takes mpiexec.X), checked to be of the same kind of MPI."""
    name = mpicc.name
    names = [name.replace("mpicc", "mpiexec"), name.replace("mpicc", "mpirun"), "mpiexec", "mpirun"]
    names = [n for n in dict.fromkeys(names) if n != name]
    found = _beside(mpicc.parent, names) or _beside(mpicc.resolve().parent, names)
    if not found:
        raise BadValue(f"--mpi {shown(what)}: no launcher of the same MPI beside it (looked for {', '.join(names)} in "
                       f"{mpicc.parent}); allowed: {CHOICES}")
    version = _run([str(found), "--version"], str(found))
    said = (version.stdout + version.stderr).lower()
    open_mpi = "open mpi" in said or "openrte" in said
    if open_mpi != (abi == "openmpi"):
        raise BadValue(f"--mpi {shown(what)}: the launcher beside it, {found}, belongs to another MPI "
                       f"({'Open MPI' if open_mpi else 'not Open MPI'}, the wrapper's mpi.h is {ABIS.get(abi, abi)}); "
                       f"allowed: {CHOICES}")
    return found


def _rank_env(abi: str) -> dict[str, str]:
    """What ranks need to start: Open MPI refuses root unless told (containers and CI run as root)."""
    if abi == "openmpi" and os.geteuid() == 0:
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return {}


def _from_mpicc(mpicc: Path, choice: str) -> Mpi:
    library, abi = _shim(mpicc, choice)
    if abi not in ("mpich", "openmpi"):
        raise BadValue(f"--mpi {shown(choice)}: its mpi.h is neither MPICH's nor Open MPI's; allowed: {CHOICES}")
    return Mpi(choice, "mpicc", library, _launcher_of(mpicc, abi, choice), abi, mpicc, _rank_env(abi))


def _wrapper_of(library: Path, choice: str) -> Path:
    """The compiler wrapper whose -show links ``library`` (-L its folder, -l its name)."""
    stem = library.name.split(".so")[0].removeprefix("lib")
    folder = library.resolve().parent
    candidates = [library.parent / "../bin", library.parent / "../../bin", folder / "../bin"]
    seen: list[Path] = []
    for where in (Path(os.path.realpath(c)) for c in candidates):  # /bin is /usr/bin (Open MPI takes its prefix from it)
        seen += sorted(where.glob("mpicc*")) if where.is_dir() else []
    seen += [Path(p) for p in (shutil.which(n) for n in ("mpicc", "mpicc.openmpi", "mpicc.mpich")) if p]
    for mpicc in dict.fromkeys(seen):
        done = subprocess.run([str(mpicc), "-show"], capture_output=True, text=True, timeout=WRAPPER_SECONDS)
        words = done.stdout.split()
        links = {Path(w[2:]).resolve() for w in words if w.startswith("-L")}
        # -L its folder, or a folder the linker searches anyway (Debian's Open MPI: -L names a folder of plugins)
        if done.returncode == 0 and f"-l{stem}" in words and (folder in links or folder in SYSTEM_LIBS):
            return mpicc
    raise BadValue(f"--mpi {shown(choice)}: not an MPI library that xferlab can reach: no standard ABI in its name "
                   f"(libmpi_abi) and no mpicc links it (looked at {', '.join(map(str, dict.fromkeys(seen))) or 'none'}); "
                   f"allowed: {CHOICES}")


def choose(text: str = "auto") -> Mpi:
    """The MPI ``--mpi TEXT`` names; :class:`BadValue` (one line) for a value that names no MPI."""
    text = (text or "").strip()
    if text == "wheel":
        return _wheel()
    if text == "auto":
        if os.environ.get("XFERLAB_MPI_LIB"):
            return _wheel()
        found = shutil.which("mpicc")
        if found and Path(found).resolve().parent != Path(sys.executable).resolve().parent:
            return _from_mpicc(Path(found), "auto")
        return _wheel()
    path = Path(text).expanduser()
    if text and "/" not in text and not path.exists() and shutil.which(text):
        path = Path(shutil.which(text))  # a wrapper by name, as a shell finds it: mpicc.openmpi, mpiicx
    elif not text or "/" not in text and not path.exists():
        raise BadValue(f"--mpi {shown(text)} is not allowed; allowed: {CHOICES}")
    if not path.is_file():
        raise BadValue(f"--mpi {shown(text)} is not a file; allowed: {CHOICES}")
    if ".so" in path.name:
        if "mpi_abi" in path.name:
            launcher = _beside(path.resolve().parent.parent / "bin", ["mpiexec", "mpirun"])
            return Mpi(text, "library", path.resolve(), launcher, "standard")
        return _from_mpicc(_wrapper_of(path, text), text)
    if not os.access(path, os.X_OK) or path.is_dir():
        raise BadValue(f"--mpi {shown(text)} is neither an MPI library (lib*.so*) nor an executable mpicc; "
                       f"allowed: {CHOICES}")
    return _from_mpicc(path, text)


def launch_command(mpi: Mpi, ranks: int, hosts: Optional[list[tuple[str, int]]] = None, agent: Optional[str] = None,
                   forward: tuple[str, ...] = ()) -> list[str]:
    """The command that starts ``ranks`` ranks of the probe with ``mpi``'s launcher: the one place a launch
    is built. On this machine, or on ``hosts`` ([(name, slots)], ranks filling each host's slots in turn)
    reached through ``agent`` (called as ssh is; None: the launcher's own ssh), ``forward`` naming the
    environment variables the ranks on other hosts need (mpi_hosts.py)."""
    if mpi.launcher is None:
        raise Unavailable(f"no launcher of {mpi.library} was found beside it; start xferlab under the site's launcher")
    if hosts:
        from .mpi_hosts import launcher_hosts

        return [str(mpi.launcher), *launcher_hosts(mpi.abi, hosts, agent, forward), "-n", str(ranks)]
    return [str(mpi.launcher), "-n", str(ranks)]

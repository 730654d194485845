"""Options shared by several commands, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from ..choices import DEVICE_AGAINST, NETWORK_AGAINST, OPS, STRATEGIES
from ..store import STORE_HELP
from ..errors import BadValue
from ..units import shown, parse_time

if TYPE_CHECKING:
    from ..links import Link

#: The option table: flag -> {variant: the option object}. An option that several commands take is declared here
#: once, with one default and one help text; a command that needs another default takes a named variant declared
#: here too, whose help states it. tests/test_options.py walks every command and holds each flag of this table to
#: it; docs/cli.md, 'Shared options', lists it.
TABLE: dict[str, dict[str, Any]] = {}


def _declare(flag: str, variant: str, default: Any, help: str, metavar: Optional[str] = None, **kwargs: Any):
    """One row of the table (a flag and one of its variants) as a Typer option."""
    info = typer.Option(default, flag, help=help, metavar=metavar, **kwargs)
    variants = TABLE.setdefault(flag, {})
    if variant in variants:
        raise ValueError(f"{flag} {variant} is declared twice")
    variants[variant] = info
    return info


def _checked_plot(path: Optional[Path]) -> Optional[Path]:
    """--plot FILE, refused before any work when its format is unknown or it cannot be written."""
    if path is None:
        return None
    from ..plots import check_plot_path

    return check_plot_path(path, "--plot")


#: What a study does with an option of the table: its own default unless given, and a study that does not take
#: the option refuses it (naming the studies that do).
_FOR_STUDIES = " Default: the study's own; a study that does not take it refuses it."

JSON = _declare("--json", "", False, "Print one JSON object on stdout instead of a table.")
CSV = _declare("--csv", "", False, "Print CSV rows on stdout instead of a table.")
STORE = _declare("--store", "", None, STORE_HELP, "PATH")
#: The lab's store goes into its results folder unless named (xferlab.lab.store_for; STORE_NAME there).
LAB_STORE = _declare("--store", "lab", None, "Results store, a DuckDB file (default: $XFERLAB_STORE, else "
                     "DIR/xferlab.duckdb with --out DIR, else ./xferlab-results/xferlab.duckdb).", "PATH")
PLOT = _declare("--plot", "", None, "Also write a plot to FILE (PNG, SVG or PDF by extension).", "FILE",
                callback=_checked_plot)
#: --plot FILE writes one file; --plots DIR writes a command's plots into a folder.
PLOTS = _declare("--plots", "", None, "Write the plots into DIR (created if needed).", "DIR")
LINKS_FILE = _declare("--links", "", None, "YAML file of named links (see `xferlab schema`); repeatable.", "FILE")
OP = _declare("--op", "", "write", "write (posted, one way), read (requests out, data back) or readwrite (both at once).",
              "write|read|readwrite")
#: CXL.cache requests are reads first: a request out, a line back (`model requests`).
REQUEST_OP = _declare("--op", "requests", "read", "read (a request out, a line back), write or readwrite.",
                      "write|read|readwrite")

_BUDGET = "Stop starting new measuring steps after this long, e.g. 60s"
BUDGET = _declare("--budget", "", None, f"{_BUDGET} (default: no limit).", "TIME")
STUDY_BUDGET = _declare("--budget", "study", "5m", f"{_BUDGET} (default 5m); run the study again to go on (the steps "
                        "already stored are reused).", "TIME")
LAB_BUDGET = _declare("--budget", "lab", "5m", f"{_BUDGET} (default 5m): the lab sizes each measuring stage to its share "
                      "(what does not fit is left out and named); statistics, plots, scenarios and the report come on top.",
                      "TIME")
TIMEOUT = _declare("--timeout", "", "10m", "Kill a probe run (every rank of an MPI run) after this long: a hung copy, "
                   "kernel or rank.", "TIME")

PROGRAM = _declare("--program", "", None, "OpenCL programs from binaries instead of source: a DIR written by `xferlab "
                   "kernels build` (one binary per program and build options, manifest.json naming the device), or "
                   "one binary FILE (SPIR-V where the device takes IL). For devices that compile nothing at run time "
                   "(FPGAs: docs/device.md).", "FILE|DIR")

LAB_PROGRAM = _declare("--program", "lab", None, "OpenCL programs from binaries: a DIR written by `xferlab kernels build` "
                       "for one of this machine's OpenCL devices. Every stage that builds kernels on that device loads "
                       "them from it (launches, collaboration, device STREAM, the offload runtime and DecEval on device "
                       "0); the other devices build from source.", "DIR")

STUDY_PROGRAM = _declare("--program", "study", None, "deceval: its OpenCL program from a binary (a DIR written by "
                         "`xferlab kernels build`, or one binary FILE) instead of source." + _FOR_STUDIES, "FILE|DIR")

_DEVICE = "Device index (see `xferlab inventory`)."
DEVICE = _declare("--device", "", 0, _DEVICE, "N")
STUDY_DEVICE = _declare("--device", "study", None, _DEVICE + _FOR_STUDIES, "N")
_PLATFORM = ("OpenCL platform, by index (in the order `xferlab inventory` lists them) or by a part of its name, e.g. "
             "'Intel' or 'Portable'; --device then counts that platform's devices (default: --device counts every "
             "platform's devices in turn).")
PLATFORM = _declare("--platform", "", None, _PLATFORM, "NAME|N")
MPI = _declare("--mpi", "", "auto", "The MPI that runs the ranks: auto (the mpicc on PATH, a loaded module, else the mpich "
               "wheel), wheel, or the path of an MPI's mpicc or library (libmpi_abi.so.1, libmpi.so.12, libmpi.so.40); "
               "an MPI without the standard ABI is reached through a shim built once with its mpicc. Its launcher "
               "(mpiexec) is the one beside it.", "auto|wheel|PATH")
_MPI = ("The MPI that runs the ranks: auto (the mpicc on PATH, a loaded module, else the mpich wheel), wheel, or the "
        "path of an MPI's mpicc or library (libmpi_abi.so.1, libmpi.so.12, libmpi.so.40)")
STUDY_MPI = _declare("--mpi", "study", None, f"characterize: {_MPI[0].lower()}{_MPI[1:]}, for its network step (default "
                     "auto).", "auto|wheel|PATH")
LAB_MPI = _declare("--mpi", "lab", "auto", f"{_MPI}, for the network stage.", "auto|wheel|PATH")
STUDY_PLATFORM = _declare("--platform", "study", None, _PLATFORM + " For the studies that take --device.", "NAME|N")
_BACKEND = ("Device API: opencl (any ICD: PoCL, GPUs, FPGAs), cuda (the driver API) or sycl (USM and launches through "
            "a SYCL runtime, with dpctl: pip install 'xferlab[sycl]').")
BACKEND = _declare("--backend", "", "opencl", _BACKEND, "opencl|cuda|sycl")
STUDY_BACKEND = _declare("--backend", "study", None, _BACKEND + _FOR_STUDIES, "opencl|cuda|sycl")
RUNTIME_BACKEND = _declare("--backend", "runtime", "emulated", "The offload runtime's device: emulated (a device thread "
                           "behind a modelled bus, the default) or opencl (a real device).", "opencl|emulated")

PRECISION = _declare("--precision", "", None, "Repeat each point until the 95 % confidence interval of its median is "
                     "within ±P of it (2% or 0.02; up to 50%), instead of a fixed count.", "P")
_MAX_TIME = "Stop a point after this much timed work, e.g. 2s"
MAX_TIME = _declare("--max-time", "", None, f"{_MAX_TIME}, even if --precision's target is not met (default: no limit).",
                    "TIME")
KERNELS_MAX_TIME = _declare("--max-time", "kernels", None, f"{_MAX_TIME} (at least 2 launches; default: no limit, "
                            "0.5 s in a --scaling sweep).", "TIME")

AGAINST = _declare("--against", "", DEVICE_AGAINST, f"The link model drawn beside the fits, whose peak rate is their "
                   f"model limit (default: {DEVICE_AGAINST}, seed 000's testbed link; {NETWORK_AGAINST}, seed 001's "
                   "network, for network runs).", "LINK")
def _checked_strategy(strategy: Optional[str]) -> Optional[str]:
    if strategy is not None and strategy not in STRATEGIES:
        raise BadValue(f"--strategy {shown(strategy)} is not allowed; allowed: {', '.join(STRATEGIES)}")
    return strategy


STRATEGY = _declare("--strategy", "", None, f"Flow strategy of every edge: {', '.join(STRATEGIES)} (default: the "
                    "workflow's).", "STRATEGY", callback=_checked_strategy)
#: --cpus LIST: where threads run. measure memory pins its threads round robin; measure device, launch, collab and
#: kernels place their host thread(s) on the set (the probe does it once the device is open, so the runtime's own
#: threads stay free); the launch and granularity studies default to the device's local socket.
CPUS = _declare("--cpus", "", None, "CPUs to pin threads to, round robin, e.g. 0-3,8.", "LIST")
DEVICE_CPUS = _declare("--cpus", "device", None, "CPUs for the host thread(s) that drive the device, e.g. 0-3 (default: "
                       "where the OS puts them), placed once the device is open; must be allowed (see `xferlab "
                       "inventory`). The run records them, and says so when they are not the device's local CPUs.", "LIST")
STUDY_PLOTS = _declare("--plots", "study", None, "tiers: write the plots of bandwidth against threads per class into DIR "
                       "(created if needed).", "DIR")
STUDY_CPUS = _declare("--cpus", "study", None, "launch: the CPUs pinned in turn; granularity: the CPUs of the copies' host "
                      "thread (default for both: the device's local socket, else every allowed CPU for launch and the "
                      "OS's choice for granularity)." + _FOR_STUDIES, "LIST")
CHUNK = _declare("--chunk", "", None, "Bytes per chunk of the pipelined strategy (default: the workflow's).", "SIZE")


def budget_seconds(budget: Optional[str]) -> Optional[float]:
    """--budget TIME in seconds (None: no limit)."""
    return parse_time(budget, "--budget", allow_zero=False) if budget else None


def timeout_seconds(timeout: str) -> float:
    """--timeout TIME in seconds, within what a probe run may be given."""
    from ..measure import checks

    return checks.timeout_seconds(parse_time(timeout, "--timeout", allow_zero=False))


def renamed(old: str, new: str, meaning: str):
    """A hidden option under an option's old name, refused in one line that names the new one."""
    def refuse(value):
        if value is not None:
            raise BadValue(f"{old} is now {new} ({meaning}); see docs/cli.md, 'Renamed options'")
        return value

    return typer.Option(None, old, hidden=True, callback=refuse, metavar="X")


OLD_PLOT = renamed("--plot", "--plots DIR", "a folder of plots; --plot FILE writes one file")


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set parameter ``name`` (on the command line or from the environment), as
    opposed to its default: an option given with its default value counts as given."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


def only_with(ctx: typer.Context, ties: list[tuple[str, bool, str]]) -> None:
    """Refuse an option that would be ignored: ``ties`` holds (parameter name, whether it applies here,
    when it applies: "with --faults", "without --scaling …"); the first one given that does not apply
    is one line: "--strides applies only with --faults"."""
    for name, applies, when in ties:
        if not applies and given(ctx, name):
            option = next(max(p.opts, key=len) for p in ctx.command.params if p.name == name)
            raise BadValue(f"{option} applies only {when}")


def check_op(op: str) -> str:
    if op not in OPS:
        raise BadValue(f"--op '{op}' is not allowed; allowed: {', '.join(OPS)}")
    return op


def user_links(files: Optional[list[Path]]) -> dict[str, Link]:
    from ..links.presets import load_links_files  # the link models load where a command needs them

    return load_links_files(files)


def links_from(specs: list[str], files: Optional[list[Path]]) -> list[Link]:
    from ..links import resolve

    defined = user_links(files)
    return [resolve(spec, defined) for spec in specs]


def verb(name: str, help: str):
    """A command group whose subcommands are `NAME run …` and the like. Its old spelling, `NAME X …` with
    X not a subcommand (it was `xferlab study tiers`), is refused in one line naming the new one."""
    from typer.core import TyperGroup

    class Verb(TyperGroup):
        def resolve_command(self, ctx, args):
            word = args[0] if args else ""
            if word and not word.startswith("-") and word not in self.commands:
                spelled = word if word.isprintable() and len(word) <= 60 else shown(word)
                raise BadValue(f"`{name} {spelled}` is now `{name} run {spelled}` (subcommands: "
                               f"{', '.join(self.commands)}); see docs/cli.md, 'Renamed commands'")
            return super().resolve_command(ctx, args)

    return typer.Typer(cls=Verb, no_args_is_help=True, help=help)

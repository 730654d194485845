"""The lab: the main job, as a library call. It checks the native probe, characterizes every memory
node and every accelerator of this machine (recorded in the store), runs the offload runtime, runs
every packaged scenario, fits link and tier profiles to the measurements and writes the HTML report
with the advice, everything under one results folder. ``xferlab lab`` (cli/lab.py) parses its
options, calls :func:`run` and prints what it returns.

The lab is :data:`STAGES`, a list of :class:`Stage` run in order by :func:`run`: the probe's clock, memory
(lab/memory.py), the accelerators (lab/devices.py), the offload runtime, the 2-rank network, DecEval
(lab/steps.py), the presets and scenarios, and the fits, advice and report. Each stage is a small
function over one shared :class:`~xferlab.lab.context.Lab` (the budget and its start, the folder, the
store, the summary written as lab.json, the runs the report shows, the failures); a stage's failure
is handled in one place, :func:`run`.

The folder holds every output: the store (``xferlab.duckdb``, unless ``--store`` or
``$XFERLAB_STORE`` names one: :func:`store_for`), the profiles the
lab fits (``profiles/``, named ``lab-…``; profiles an earlier lab left there are moved into
``profiles/previous-<UTC time>/``, never overwritten), one JSON file per stage, the plots and the
report.

The budget bounds every stage. The memory stage may use half of it, each accelerator 60 % of what
is left, its collaboration patterns and the runtime what is left after, the 2-rank MPI network
step and DecEval (seed 000's application measured against the simulator) at most 5 % of the whole each; a stage that would start
with too little time is skipped and said so. Each stage's share is passed down as the time budget
of its steps, and the memory and device points repeat until their median's 95 % interval is within
``PRECISION`` (2 %) of it, for at most the timed seconds per point that the share allows
(``MAX_TIME_MEMORY`` / ``MAX_TIME_DEVICE`` at most), so the steps end within their share.

How the memory stage is sized (:func:`memory_stage`, measure/sizing.py): what to measure follows
from the machine's caches and memory (STREAM's arrays 4 x the last-level cache, the latency sweep
to 8 x it, the loaded chase over 8 x it, each within half the available memory), what a point
costs from a calibration run first (a 16 MiB chase whose warm-up pass reads from memory), and what
is measured from the stage's share: STREAM and loaded latency each up to a part of it, the sweep the
rest, its timed work cut first, then the sets below the cache thinned, then the largest left out,
each thing left out named. The sweep's probe gets its share as ``--budget`` and starts no working
set it estimates would end past it, so a slower machine than calibrated gives fewer points, never
a kill; each step's timeout follows from its estimate (steps.planned_limit).

A stage that fails (the probe's clock, memory, an accelerator, its collaboration patterns, the
runtime, the network, DecEval, a scenario, the report) is noted and the others go on; the exit code is that of the
measure commands: 0 every stage ran, 3 some failed (what was measured is in the store and the
report), 1 nothing could be measured. Every file is written whole or not at all."""

from __future__ import annotations

import os
import shutil
import time as _time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from .. import scenarios
from ..errors import BadFile, XferlabError
from ..links import PRESETS, profiles, resolve
from ..measure.probe import run_probe
from ..outputs import check_folder, write_json
from ..system import inventory as inv
from .context import Lab, LabResult
from .devices import accelerators_stage, per_point  # noqa: F401  (per_point and the memory stage's names:
from .memory import MAX_TIME_MEMORY, MIN_TIME_PER_POINT, memory_stage  # noqa: F401  the lab's, as before)
from .steps import DECEVAL_SHARE, NETWORK_SHARE, deceval_stage, network_stage, runtime_stage

DEFAULT_OUT = Path("xferlab-results")
STORE_NAME = "xferlab.duckdb"  # the store in --out when neither --store nor $XFERLAB_STORE names one
#: The lab saves its fitted links and tiers as profiles lab-<direction>-<kind> and lab-node<N>.
PROFILE_PREFIX = "lab"
MEMORY_SHARE = 0.5  # of the budget, at most


def prepare(out: Optional[Path], started: datetime) -> Path:
    """The results folder (checked, created): ``out``, else ./xferlab-results/lab-<UTC time>."""
    folder = out or DEFAULT_OUT / f"lab-{started:%Y%m%d-%H%M%S}"
    check_folder(folder, "--out")  # before anything runs
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"--out '{folder}' cannot be created: {error.strerror or error}") from None
    return folder


def keep_previous_profiles(folder: Path, started: datetime) -> Optional[Path]:
    """Move the profiles an earlier lab left in ``folder`` into ``previous-<UTC time>/`` (kept, not
    overwritten); returns that folder, or None when there were none."""
    old = sorted(folder.glob(f"{PROFILE_PREFIX}-*.yaml")) if folder.is_dir() else []
    if not old:
        return None
    kept = folder / f"previous-{started:%Y%m%d-%H%M%S}"
    kept.mkdir(parents=True, exist_ok=True)
    for path in old:
        shutil.move(str(path), kept / path.name)
    return kept


def store_for(store: Optional[Path], out: Optional[Path]) -> Optional[Path]:
    """The store the lab records into: ``--store`` when given, else ``$XFERLAB_STORE`` when set, else
    ``OUT/xferlab.duckdb`` when ``--out`` is given, else the default store (None: ``store.resolve_path``
    then picks ``$XFERLAB_STORE`` or the default)."""
    from ..store import ENV

    if store is not None or os.environ.get(ENV) or out is None:
        return store
    return out / STORE_NAME


def run(seconds: float, out: Optional[Path] = None, store: Optional[Path] = None,
        say: Callable[[str], None] = lambda line: None, program: Optional[Path] = None, mpi: str = "auto") -> LabResult:
    """The whole lab within ``seconds``; ``say`` gets a line as each stage starts. ``program``: --program DIR,
    the binaries of one OpenCL device (checked here, before anything is made), which every stage that
    builds kernels on that device loads (:meth:`Lab.program_for`). ``mpi``: --mpi, the network stage's MPI
    (one other than auto is checked here too; auto with no MPI installed skips that stage, saying why)."""
    started = datetime.now(timezone.utc)
    from ..store import check_store, resolve_path

    if program is not None:
        from ..measure.device import devices
        from ..measure.programs import check_dir_for_some_device

        check_dir_for_some_device(program, devices("opencl")[0])
    if mpi != "auto":
        from ..measure.mpi_site import choose

        choose(mpi)
    given, store = store, store_for(store, out)
    if store is given or os.path.isfile(store):  # (isfile: False for a name no file can have)
        check_store(store)  # before the results folder is made: a damaged store is refused too (a new one
        # in --out is checked with its folder by prepare)
    folder = prepare(out, started)
    kept = keep_previous_profiles(folder / "profiles", started)
    lab = Lab(seconds, folder, store, resolve_path(store)[0], started, say, program=program, mpi=mpi)
    lab.summary["program"] = str(program) if program else None
    lab.summary["mpi"] = mpi
    with profiles.using(folder / "profiles"):
        for number, stage in enumerate(STAGES, 1):
            lab.prefix = f"[{number}/{len(STAGES)}]"
            lab.summary["stages_started_seconds"][stage.name] = round(_time.monotonic() - lab.t0, 2)
            lab.say(f"{lab.prefix} {stage.title}")
            try:
                stage.run(lab)
            except XferlabError as error:  # a stage that cannot go on is noted; the next one starts
                lab.failed.append((stage.name, str(error)))
        lab.close_summary()
        saved = [n for n in profiles.names() if n.startswith(PROFILE_PREFIX + "-")]
    code = 0 if not lab.failed else 3 if lab.measured else 1
    lab.summary["exit_code"] = code
    write_json(folder / "lab.json", lab.summary, "lab file")
    return LabResult(folder, lab.store_path, lab.summary, lab.rows, lab.memory, lab.memory_run, lab.device_runs,
                     lab.clock, lab.failed, lab.report, saved, kept, code)


def _probe(lab: Lab) -> None:
    lab.clock = run_probe(["clock"], timeout=min(60.0, lab.seconds))
    lab.summary["probe"] = {"ok": lab.clock.ok, "failure": lab.clock.failure, "records": lab.clock.records}
    if not lab.clock.ok:
        lab.failed.append(("probe", str(lab.clock.failure)))


def _memory(lab: Lab) -> None:
    outcome, lab.memory, lab.summary["memory_run"] = memory_stage(MEMORY_SHARE * lab.left(), lab.store, lab.folder,
                                                                  lab.seconds, lab.say)
    lab.memory_run = outcome.run_id
    lab.add_run(outcome.run_id if outcome.rows else None)
    lab.measured = bool(outcome.rows)
    lab.stage_failures("memory", lab.memory["failures"], bool(outcome.rows))


def _runtime(lab: Lab) -> None:
    lab.summary["runtime_runs"], lab.summary["runtime_failures"] = [], []
    for backend in ["emulated"] + (["opencl"] if any(p.backend == "opencl" for p in lab.plans) else []):
        if lab.left() < 0.1 * lab.seconds:
            lab.summary["runtime_failures"].append(f"{backend}: time budget used up")
            continue
        try:
            run_id, failure = runtime_stage(backend, lab.store, lab.program_for(backend, _device0(lab)))
        except XferlabError as error:  # the runtime cannot open this device: say so and go on
            run_id, failure = None, str(error)
        if run_id:
            lab.summary["runtime_runs"].append(run_id)
            lab.add_run(run_id)
        if failure:
            lab.summary["runtime_failures"].append(f"{backend}: {failure}")
            lab.failed.append((f"runtime on {backend}", failure))


def _network(lab: Lab) -> None:
    if lab.left() < 0.05 * lab.seconds:
        lab.summary["network"] = {"skipped": "time budget used up"}
        return
    run_id, failure = network_stage(min(NETWORK_SHARE * lab.seconds, lab.left()), lab.store, lab.mpi)
    lab.summary["network"] = {"run_id": run_id, "failure": failure, "mpi": lab.mpi}
    lab.add_run(run_id)
    if failure and not failure.startswith("skipped:"):
        lab.failed.append(("network", failure))


def _deceval(lab: Lab) -> None:
    failure = None
    if not any(p.backend == "opencl" for p in lab.plans):
        lab.summary["deceval"] = {"skipped": "no OpenCL device"}
    elif lab.left() < DECEVAL_SHARE * lab.seconds:
        lab.summary["deceval"] = {"skipped": "time budget used up"}
    else:
        lab.summary["deceval"], failure = deceval_stage(min(DECEVAL_SHARE * lab.seconds, lab.left()), lab.store,
                                                        lab.program_for("opencl", _device0(lab)))
        lab.recorded += lab.summary["deceval"].get("run_ids", [])
        if lab.summary["deceval"].get("note"):
            lab.note(f"DecEval: {lab.summary['deceval']['note']}")
    write_json(lab.folder / "deceval-measured.json", lab.summary["deceval"], "lab file")
    if failure:
        lab.failed.append(("deceval", failure))


def _device0(lab: Lab) -> dict:
    """OpenCL device 0's inventory: the device of the runtime's and DecEval's stages."""
    return next((p.info for p in lab.plans if p.backend == "opencl" and p.device == 0), {})


def _scenarios(lab: Lab) -> None:
    presets = [{"name": name, **resolve(name).parameters(), "peak_write_bytes_per_second": resolve(name).peak_rate("write"),
                "description": resolve(name).summary()} for name in PRESETS]
    write_json(lab.folder / "presets.json", presets, "lab file")
    names = lab.summary["scenarios"] = scenarios.names()
    for i, name in enumerate(names, 1):
        lab.note(f"scenario {name} ({i}/{len(names)})")
        try:
            scenario = scenarios.load(name)
            result = scenario.run()
            plots = [str(p) for p in scenario.plot(lab.folder)]
            write_json(lab.folder / f"{name}.json", {**result, "plots": plots}, "lab file")
        except Exception as error:  # noqa: BLE001 - one scenario that fails is noted; the others go on
            lab.failed.append((f"scenario {name}", str(error)))
            continue
        for check in result["checks"]:
            lab.rows.append({"scenario": name, "figure": check["figure"], "seed": check["seed"], "xferlab": check["xferlab"],
                             "unit": check["unit"], "status": check["status"], "status_reason": check["status_reason"]})


def _report(lab: Lab) -> None:
    """The fits, the advice and the report, from the runs recorded; lab.json is written first, so it is
    kept if the report fails."""
    from ..report.html import write_report

    lab.close_summary()
    write_json(lab.folder / "lab.json", lab.summary, "lab file")
    lab.report, line = write_report(lab.recorded, lab.folder / "report.html", "pcie3x16", PROFILE_PREFIX, lab.store,
                                    title=f"xferlab lab report, {lab.started:%Y-%m-%d %H:%M} UTC")
    lab.say(line)


@dataclass(frozen=True)
class Stage:
    """One stage of the lab: its name (in lab.json and its failures), the line said as it starts, and
    what it does to the shared :class:`Lab`."""

    name: str
    title: str
    run: Callable[[Lab], None]


#: The lab's stages, in the order it runs them. A stage that raises an XferlabError is noted as failed
#: (in :func:`run`, the one place) and the next one starts; a stage notes its steps' failures itself.
STAGES = [
    Stage("probe", "native probe: clock", _probe),
    Stage("memory", "memory: bandwidth, latency and loaded latency of every memory node", _memory),
    Stage("accelerators", "accelerators: copies, granularity, launch latency, collaboration and device STREAM of "
          "every device found", accelerators_stage),
    Stage("runtime", "offload runtime: every workload in sync and forward, emulated 1 us round trip and the first "
          "OpenCL device", _runtime),
    Stage("network", "network: MPI latency, bandwidth and allreduce between 2 ranks on this machine", _network),
    Stage("deceval", "DecEval for real (seed 000): zlib decompression feeding pi on the OpenCL device, measured and "
          "simulated", _deceval),
    Stage("scenarios", "link presets and scenarios", _scenarios),
    Stage("report", "fits, advice and the report", _report),
]


def landmark_sizes(latency_rows: list[dict]) -> set[int]:
    """The latency table of the lab shows a few working sets: half and four times each cache size."""
    measured = sorted({r["size_bytes"] for r in latency_rows})
    wanted = [size // 2 for _, size in inv.data_cache_sizes()] + [4 * size for _, size in inv.data_cache_sizes()]
    return {min(measured, key=lambda m: abs(m - w)) for w in wanted} if measured else set()



"""Measurement campaigns across a cluster's nodes (`xferlab campaign run`): the same xferlab command on
every node, each node recording into its own store and exporting its runs as shards (JSON, as
`results export` writes them), the shards merged into one store (`results import`), and the nodes
compared figure by figure, a node more than k MADs from the median flagged: the slow node is why
people run campaigns.

Where the nodes come from: the site's launcher (``--launcher "srun --ntasks-per-node=1"`` or
``"mpiexec -f hosts -ppn 1"``), which starts `xferlab campaign node` once per node; ``--hosts A,B``, each
reached in turn through ``--launch-agent`` (called as ssh is; ssh by default); or, to try it on one
machine, ``--nodes N`` local processes, one after another (so that they do not contend for this
machine's CPUs), each named ``local-K`` ($XFERLAB_NODE, recorded in its inventory as ``node``)."""

from __future__ import annotations

import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from .errors import BadFile, BadValue
from .measure.sizeclass import class_of
from .store.db import GROUPED_BY
from .units import format_size

RANK_VARIABLES = ("SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
#: What a launcher sets in the task it started (Hydra's PMI, Open MPI's and PMIx's, srun's task): the node's
#: command runs as a program of its own, not as that task, or `measure network` would take itself for a rank
#: of the campaign's launch and join it.
TASK_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCAL")
TASK_KEPT = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
TASK_SLURM = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_NODEID")


def node_environment(name: str) -> dict[str, str]:
    """This process's environment for the node's command: named ``name``, the launcher's task variables gone."""
    env = {k: v for k, v in os.environ.items()
           if k in TASK_KEPT or not (k.startswith(TASK_PREFIXES) or k in TASK_SLURM)}
    return {**env, "XFERLAB_NODE": name}


def node_name() -> str:
    """This node's name: $XFERLAB_NODE, else the host's name (with the launcher's rank when there is one)."""
    if os.environ.get("XFERLAB_NODE"):
        return os.environ["XFERLAB_NODE"]
    rank = next((os.environ[v] for v in RANK_VARIABLES if os.environ.get(v)), None)
    return platform.node() + (f"-{rank}" if rank is not None else "")


def _xferlab() -> list[str]:
    return [sys.executable, "-m", "xferlab"]


def run_node(shards: Path, command: list[str], timeout: Optional[float] = None) -> tuple[list[Path], int]:
    """On one node: run ``xferlab COMMAND`` into a store of its own, then export each of its runs as a
    shard into ``shards``; returns the shard files and the command's exit code (a failed step still
    leaves its run and samples to compare, so they are exported whatever the code)."""
    from .store import export_run, open_store

    name = node_name()
    _shard_folder(shards)
    store = shards / f".{name}.duckdb"  # kept: a node's earlier runs stay, but only this command's are exported
    before = set()
    if store.exists():
        with open_store(store, read_only=True) as db:
            before = {r["run_id"] for r in db.runs()}
    done = subprocess.run([*_xferlab(), *command, "--store", str(store)], env=node_environment(name), timeout=timeout,
                          stdout=sys.stderr.fileno())
    if not store.exists():
        raise BadValue(f"node {name}: `xferlab {shlex.join(command)}` recorded nothing (exit {done.returncode})")
    written = []
    with open_store(store, read_only=True) as db:
        for run in db.runs():
            if run["run_id"] in before:
                continue
            written.append(export_run(db, run["run_id"], "json", shards / f"{name}-{run['run_id']}.json", overwrite=True))
    return written, done.returncode


def _launcher(text: str) -> list[str]:
    """The launcher's words (``srun --ntasks-per-node=1``), as a shell would split them."""
    try:
        words = shlex.split(text)
    except ValueError as error:  # an unterminated quote, a lone escape
        raise BadValue(f"--launcher {text!r} cannot be split into words ({error}); allowed: the site's launcher as "
                       "a shell would take it, such as \"srun --ntasks-per-node=1\"") from None
    if not words:
        raise BadValue(f"--launcher {text!r} is empty; give the site's launcher, such as \"srun --ntasks-per-node=1\" "
                       "or \"mpiexec -f hosts -ppn 1\", or --nodes N for local processes")
    return words


def _shard_folder(shards: Path) -> None:
    """The shard folder, created if need be; refused naming it when it cannot be (a file is there, /proc)."""
    from .outputs import check_folder

    check_folder(shards, "--shards")
    try:
        shards.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"--shards '{shards}' cannot be created: {error.strerror or error}") from None


def run_campaign(command: list[str], shards: Path, store: Optional[Path], nodes: Optional[int] = None,
                 launcher: Optional[str] = None, timeout: Optional[float] = None,
                 hosts: Optional[list[str]] = None, agent: Optional[str] = None) -> dict[str, Any]:
    """Run ``command`` on every node (``launcher``; ``hosts`` reached one after another through ``agent``,
    called as ssh is, ssh itself by default; or ``nodes`` local processes), import every shard
    into ``store``; returns {"imported": [...], "runs": [run ids of this campaign], "failed": [what failed:
    a local node and its exit code, or the launcher's exit code]}. Every shard written is imported, a
    failed node's too; when no node wrote one, NothingMeasured (exit 1) says why."""
    if hosts is not None and (nodes is not None or launcher is not None):
        raise BadValue("give --hosts LIST, --nodes N or --launcher COMMAND, one of them")
    if agent is not None and hosts is None:
        raise BadValue("--launch-agent applies only with --hosts (the agent reaches each host)")
    if hosts is None and (nodes is None) == (launcher is None):
        raise BadValue("give --nodes N (local processes) or --launcher COMMAND (the site's: srun, mpiexec), one of them")
    if nodes is not None and not 1 <= nodes <= 256:
        raise BadValue(f"--nodes {nodes}: 1 to 256 local processes")
    if not command:
        raise BadValue("give the xferlab command each node runs after --, e.g. -- measure memory --threads 1")
    if "--store" in command:
        raise BadValue("the node command takes no --store: each node records into its own, merged into --store")
    from .store import check_store

    starter = _launcher(launcher) if launcher is not None else []
    check_store(store)  # both before any node runs, the store first: a refusal creates no shard folder
    _shard_folder(shards)
    before = set(shards.glob("*.json"))
    node_cmd = ["campaign", "node", "--shards", str(shards), "--", *command]
    failed: list[tuple[str, int]] = []  # what failed (a local node, the launcher) and its exit code
    if launcher is not None:
        try:
            done = subprocess.run([*starter, *_xferlab(), *node_cmd], timeout=timeout, stdout=sys.stderr.fileno())
        except FileNotFoundError:
            raise BadValue(f"--launcher '{launcher}': '{starter[0]}' is not a command here; allowed: "
                           "the site's launcher, such as srun or mpiexec") from None
        except OSError as error:  # a folder, a file that is not executable
            raise BadValue(f"--launcher '{launcher}': '{starter[0]}' cannot be run: {error.strerror or error}; allowed: "
                           "the site's launcher, such as srun or mpiexec") from None
        if done.returncode:  # one node or more failed; the launcher does not say which
            failed.append(("the launcher", done.returncode))
    elif hosts is not None:
        for host in hosts:  # one after another, as local nodes: hosts that share CPUs do not measure each other
            node = shlex.join(["env", f"XFERLAB_NODE={host}", *_xferlab(), *node_cmd])
            done = subprocess.run([agent or "ssh", host, node], timeout=timeout, stdout=sys.stderr.fileno(),
                                  stdin=subprocess.DEVNULL)
            if done.returncode:
                failed.append((f"host {host}", done.returncode))
    else:
        for k in range(nodes):
            done = subprocess.run([*_xferlab(), *node_cmd], env={**os.environ, "XFERLAB_NODE": f"local-{k}"},
                                  timeout=timeout, stdout=sys.stderr.fileno())
            if done.returncode:
                failed.append((f"node local-{k}", done.returncode))
    fresh = sorted(set(shards.glob("*.json")) - before)
    if not fresh and failed and all(code == 2 for _, code in failed):
        raise BadValue(f"every node refused `xferlab {shlex.join(command)}` as bad input (exit 2; each node's reason is "
                       "above); nothing was measured")
    if not fresh:
        from .errors import NothingMeasured

        said = "; ".join(f"{who} exited {code}" for who, code in failed) or "every node exited 0"
        raise NothingMeasured(f"no node wrote a shard into '{shards}' ({said}); nothing to import")
    from .store import open_store
    from .store.shards import import_shards, read_shards

    loaded = read_shards(fresh)
    with open_store(store) as db:
        imported = import_shards(db, loaded)
    return {"imported": imported, "runs": [r["run_id"] for r in imported],
            "failed": [f"{who} exited {code}" for who, code in failed]}


MIN_DEVIATION = 0.05  # a node within 5 % of the median over nodes is not flagged, however few MADs that is


#: What tells one figure of a run from another: every column the store's statistics group by
#: (``node`` there is the memory node, ``memory_node`` here beside the cluster's node), and across
#: nodes the arrays' size class (measure/sizeclass.py): within one run it follows from ``size_bytes``,
#: but the same arrays are memory on a node with a small last-level cache and cache-resident on one
#: with a large cache, and those two figures are not compared.
FIGURE = (*GROUPED_BY, "array_size_class")
#: The statistic compared: each node's median of the figure's samples.
STATISTIC = "median"


def placement(figure: dict[str, Any]) -> str:
    """The figure's placement beyond test, metric, size and threads, as text ("h2d pinned", "node 1")."""
    words = [figure.get("mode"), figure.get("host_kind")]
    memory = figure.get("memory_node")
    words += [f"memory node {memory}" if memory not in (None, "", "default") else None,
              f"{figure['kernel_args']} args" if figure.get("kernel_args") is not None else None,
              f"delay {figure['delay']}" if figure.get("delay") is not None else None,
              figure.get("pair"), figure.get("path"), figure.get("variant")]
    return " ".join(str(w) for w in words if w not in (None, "")) or "–"


def compare_nodes(db, run_ids: list[str], k: float = 3.0, min_deviation: float = MIN_DEVIATION,
                  split: Optional[list[str]] = None) -> list[dict[str, Any]]:
    """Per figure (every column the store's statistics group by: suite, test, metric, size, threads,
    memory node, mode, host memory kind, kernel arguments, delay, pair, path, variant) and node: the
    node's median, its distance from the median over nodes in MADs (median absolute deviations) and as
    a fraction of that median (``deviation``); ``outlier`` beyond ``k`` MADs and ``min_deviation``. The
    floor matters on few nodes alike within noise: three nodes at 100, 100.1 and 99 put the third 10
    MADs away for a 1 % gap. Two nodes are always 1 MAD apart: a campaign needs three or more to flag one.
    Figures of one size class only are compared (``array_size_class``: see :data:`FIGURE`); the
    statistic is each node's median (:data:`STATISTIC`). ``split``, a list, gets a line per figure
    that the nodes measured in different size classes (compared only within each class)."""
    per: dict[tuple, dict[str, float]] = {}
    classes: dict[tuple, dict[str, Optional[str]]] = {}
    for run_id in run_ids:
        inventory = db.run(run_id).get("inventory") or {}
        node = inventory.get("node") or run_id
        for g in db.stats(run_id):
            if g.get("median") is None:
                continue
            g = {**g, "array_size_class": class_of(inventory, g["suite"], g["test"], g.get("size_bytes"))}
            per.setdefault(tuple(g.get(f) for f in FIGURE), {})[node] = g[STATISTIC]
            classes.setdefault(tuple(g.get(f) for f in GROUPED_BY), {})[node] = g["array_size_class"]
    if split is not None:
        for figure, by_node in classes.items():
            if len(set(by_node.values())) > 1:
                row = {("memory_node" if f == "node" else f): v for f, v in zip(GROUPED_BY, figure)}
                classes_text = ", ".join(f"{n} {c or 'unknown'}" for n, c in sorted(by_node.items()))
                split.append(f"{row['test']} {row['metric']} at {format_size(row['size_bytes'] or 0)} ({placement(row)}): "
                             f"compared only within each size class: {classes_text}")
    out = []
    for figure, nodes in per.items():
        if len(nodes) < 2:
            continue
        center = statistics.median(nodes.values())
        mad = statistics.median(abs(v - center) for v in nodes.values())
        for node, value in sorted(nodes.items()):
            distance = abs(value - center) / mad if mad else (0.0 if value == center else float("inf"))
            deviation = abs(value - center) / abs(center) if center else (0.0 if value == center else float("inf"))
            row = {("memory_node" if f == "node" else f): v for f, v in zip(FIGURE, figure)}
            out.append(row | {"placement": placement(row), "statistic": STATISTIC, "node": node, "median": value,
                              "median_over_nodes": center,
                              "mads": distance, "relative_error": deviation,
                              "outlier": distance > k and deviation > min_deviation})
    return out

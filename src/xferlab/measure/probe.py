"""Finding and running ``xferlab-probe``, the native executable that does all timing.

The probe is built by CMake with the package and installed beside it (``xferlab/bin``) and into
the environment's ``bin/``. ``XFERLAB_PROBE`` names another one. Every run has a timeout; a probe
that hangs is killed and reported as failed, with its reason.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import Unavailable

NAME = "xferlab-probe"


def probe_path() -> Path:
    """The probe executable. Raises :class:`Unavailable` saying where it looked."""
    candidates = []
    if os.environ.get("XFERLAB_PROBE"):
        candidates.append(Path(os.environ["XFERLAB_PROBE"]))
    candidates.append(Path(__file__).resolve().parent.parent / "bin" / NAME)
    candidates.append(Path(sys.executable).parent / NAME)
    found = shutil.which(NAME)
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise Unavailable(f"the native probe '{NAME}' is not installed (looked in: {', '.join(map(str, candidates))}); "
                      "reinstall xferlab (`make lab` builds it) or set XFERLAB_PROBE")


@dataclass
class ProbeRun:
    """What one probe invocation produced: its JSON lines, and why it failed if it did."""

    args: list[str]
    records: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The records of one kind (their ``record`` field: setup, sample, validation …), in order."""
        return [r for r in self.records if r.get("record") == kind]

    def first(self, kind: str) -> dict[str, Any]:
        """The first record of one kind, or {} (a run that ended before printing it)."""
        return next(iter(self.of(kind)), {})


def run_probe(args: list[str], timeout: float = 60.0, launcher: Optional[list[str]] = None,
              env: Optional[dict[str, str]] = None, pass_fds: tuple[int, ...] = (),
              on_record: Optional[Callable[[dict[str, Any]], None]] = None) -> ProbeRun:
    """Run the probe with ``args``; parse the JSON lines it printed, even if it failed midway.

    ``launcher`` (``mpiexec -n 2``) starts the probe as several processes: they run in a session
    of their own, and a timeout or an interrupt ends the whole session, never only the launcher.
    ``on_record`` is called with each record as the probe prints it (progress while a long step runs)."""
    run = ProbeRun(args)
    command = [*(launcher or []), str(probe_path()), *args]
    if on_record is not None and launcher is None and env is None and not pass_fds:
        return _run_streaming(run, command, timeout, on_record)
    if launcher is not None or env is not None or pass_fds:
        return _run_group(run, command, timeout, env, pass_fds)
    try:
        # Device names and driver messages are not always UTF-8: a bad byte becomes U+FFFD, never an
        # exception that would end the program instead of the step.
        done = subprocess.run(command, capture_output=True, encoding="utf-8", errors="replace", timeout=timeout)
        stdout, run.returncode = done.stdout, done.returncode
        if done.returncode != 0:
            run.failure = exit_reason(done.returncode, done.stderr)
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        run.failure = f"killed after its timeout of {timeout:g} s"
    return _parse(run, stdout)


def _run_streaming(run: ProbeRun, command: list[str], timeout: float,
                   on_record: Callable[[dict[str, Any]], None]) -> ProbeRun:
    """The probe with its records handed to ``on_record`` line by line as it prints them (stderr read
    by a thread of its own, so neither pipe fills); killed at ``timeout`` like any other run."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                               errors="replace")
    lines: list[str] = []
    errors: list[str] = []

    def read_out() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.append(line)
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # _parse fails the run for it
            try:
                on_record(record)
            except Exception:  # noqa: BLE001 - a progress line that cannot be shown never ends a measurement
                pass

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=lambda: errors.append(process.stderr.read()), daemon=True)]  # type: ignore[union-attr]
    for reader in readers:
        reader.start()
    try:
        run.returncode = process.wait(timeout=timeout)
        if run.returncode != 0:
            for reader in readers:
                reader.join()
            run.failure = exit_reason(run.returncode, "".join(errors))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        run.failure = f"killed after its timeout of {timeout:g} s"
    except BaseException:
        process.kill()
        process.wait()
        raise
    for reader in readers:
        reader.join()
    return _parse(run, "".join(lines))


def _run_group(run: ProbeRun, command: list[str], timeout: float, env: Optional[dict[str, str]],
               pass_fds: tuple[int, ...]) -> ProbeRun:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                               errors="replace", start_new_session=True, env={**os.environ, **(env or {})},
                               pass_fds=pass_fds)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        run.returncode = process.returncode
        if process.returncode != 0:
            run.failure = exit_reason(process.returncode, stderr)
    except subprocess.TimeoutExpired:
        stdout, _ = _end_group(process)
        run.failure = f"killed after its timeout of {timeout:g} s"
    except BaseException:
        _end_group(process)
        raise
    return _parse(run, stdout)


def _end_group(process: subprocess.Popen) -> tuple[str, str]:
    """SIGTERM to the process group (the launcher and every rank it started), SIGKILL 3 s later;
    what they had printed."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            out, err = process.communicate(timeout=grace)
            return out or "", err or ""
        except subprocess.TimeoutExpired:
            continue
    return "", ""


def _parse(run: ProbeRun, stdout: str) -> ProbeRun:
    """The probe's JSON lines into ``run.records``; a line that is not JSON fails the run."""
    for line in stdout.splitlines():
        if line.strip():
            try:
                run.records.append(json.loads(line))
            except json.JSONDecodeError:
                run.failure = run.failure or f"unparseable output line: {line[:80]}"
    return run


def exit_reason(returncode: int, stderr: str) -> str:
    """Why a probe that ended with ``returncode`` failed: its last line on stderr, and for a probe
    killed by a signal the signal's name ("killed by SIGBUS after: <last line>"). Lines of punctuation
    alone (the rules Open MPI's mpiexec draws around its messages) are not a reason."""
    lines = [line.strip() for line in (stderr or "").splitlines() if any(c.isalnum() for c in line)]
    last = lines[-1] if lines else ""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}" + (f" after: {last}" if last else "")
    return last or f"exit code {returncode}"

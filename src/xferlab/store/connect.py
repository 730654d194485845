"""Opening the store's DuckDB file for one operation (waiting while another process holds it), the
one-line messages for DuckDB's errors, and who owns a running run.

DuckDB lets one process write a file at a time, and readers only while no process writes it. The
store therefore opens the file for each operation and closes it right after; a process that finds it
locked polls with a growing pause (20 ms to 200 ms, with jitter) until ``XFERLAB_STORE_WAIT``
seconds have passed (default 120 s to write, 30 s to read), then reports who holds it.
"""

from __future__ import annotations

import errno
import os
import random
import re
import socket
import time
from pathlib import Path
from typing import Optional

import duckdb

from .. import signals
from ..errors import BadFile, BadValue, Unavailable, XferlabError

WAIT_ENV = "XFERLAB_STORE_WAIT"
WRITER_WAIT = 120.0
READER_WAIT = 30.0

_LOCK_PID = re.compile(r"PID (\d+)")
RECOVER = ("export what is readable (`xferlab results export RUN --format json --store PATH` for each run "
           "`xferlab results list` shows), then move the file aside and record into a new one")


def wait_limit(read_only: bool) -> float:
    """How long to wait for a locked store: ``XFERLAB_STORE_WAIT`` seconds, else 120 s (30 s to read)."""
    text = os.environ.get(WAIT_ENV)
    if text is None or text.strip() == "":
        return READER_WAIT if read_only else WRITER_WAIT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and value < 1e7):
        raise BadValue(f"{WAIT_ENV}={text!r} is not allowed: give the seconds to wait for a busy store, "
                       "a number from 0 (do not wait) up")
    return value


def is_lock(error: BaseException) -> bool:
    return "could not set lock" in str(error).lower() or "conflicting lock" in str(error).lower()


def connect(target: Path, where: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to ``target``, after waiting (see the module) while another process holds it."""
    _refuse_other_files(target, where)
    limit = wait_limit(read_only)
    deadline = time.monotonic() + limit
    pause = 0.02
    while True:
        try:
            return duckdb.connect(str(target), read_only=read_only)
        except duckdb.Error as error:
            left = deadline - time.monotonic()
            if not is_lock(error) or left <= 0:
                raise translate(error, where, "opening it", waited=limit) from None
            time.sleep(min(left, pause * random.uniform(0.7, 1.3)))
            pause = min(pause * 1.6, 0.2)


#: A DuckDB database file's magic bytes, after the header's 8-byte checksum (DuckDB's MainHeader).
DUCKDB_MAGIC, MAGIC_AT = b"DUCK", 8


def _refuse_other_files(target: Path, where: str) -> None:
    """A file that is there and is not a DuckDB database is refused naming it. DuckDB itself opens a
    ``.json``, ``.csv`` or ``.parquet`` file as an empty database in memory (read-only: "Cannot launch
    in-memory database in read-only mode!"; writable: whatever is recorded is lost at the end)."""
    try:
        with open(target, "rb") as handle:
            head = handle.read(MAGIC_AT + len(DUCKDB_MAGIC))
    except (FileNotFoundError, IsADirectoryError):
        return
    except OSError:
        return  # DuckDB's own error names what is wrong (permission denied)
    if head and head[MAGIC_AT:] != DUCKDB_MAGIC:
        raise BadFile(f"{where} is not a DuckDB database file, so not an xferlab store (left as it is); give "
                      "another --store")


def no_space(error: BaseException) -> bool:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    return "no space left on device" in str(error).lower()


def interrupted_query(error: RuntimeError) -> BaseException:
    """DuckDB's ``RuntimeError("Query interrupted")``, raised where a SIGINT/SIGTERM cut a query short (the
    handler's KeyboardInterrupt is lost inside DuckDB), as that signal's exception; any other RuntimeError
    as it is."""
    return signals.interruption() if "interrupted" in str(error).lower() else error


def translate(error: BaseException, where: str, action: str, waited: Optional[float] = None) -> BaseException:
    """DuckDB's (or the OS's) complaint while ``action`` (``"opening it"``, ``"reading it"``, ``"writing
    it"``) as one line for people: an :class:`~xferlab.errors.XferlabError`, or the keyboard interrupt
    that cut a query short."""
    if isinstance(error, XferlabError):
        return error
    text = str(error)
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    if isinstance(error, RuntimeError) and "interrupted" in text.lower() and not isinstance(error, duckdb.Error):
        return signals.interruption()
    if isinstance(error, duckdb.InterruptException):
        return signals.interruption()
    if is_lock(error):
        pid = _LOCK_PID.search(text)
        holder = f" (PID {pid.group(1)})" if pid else ""
        after = f" and stayed so for {waited:g} s" if waited else ""
        return Unavailable(f"{where} is in use by another process{holder}{after}; DuckDB lets one process write "
                           f"it at a time: wait for that one to finish, set {WAIT_ENV} to wait longer, "
                           "or give another --store")
    if no_space(error):
        return BadFile(f"{where}: no space left on device while {action}; everything committed before is kept: "
                       "free some space, or give another --store")
    if "corrupt database file" in text.lower():
        return BadFile(f"{where} is damaged: {first} (while {action}); {RECOVER}")
    if "not a valid DuckDB database" in text:
        return BadFile(f"{where} is not a DuckDB database file (left as it is); give another --store")
    if "different configuration" in text:
        return Unavailable(f"{where} is already open in this process in another mode (read-only or writable)")
    if "permission denied" in text.lower():
        return BadFile(f"{where} cannot be used: {first}")
    if isinstance(error, (duckdb.ConversionException, duckdb.OutOfRangeException, duckdb.ConstraintException)):
        return BadValue(f"{where} refused a value while {action}: {first}; nothing of that write was kept")
    return BadFile(f"{where} failed while {action}: {first}; if the file is damaged, {RECOVER}")


# -- who owns a run ---------------------------------------------------------------------------------

def _start_ticks(pid: int) -> Optional[int]:
    """A process's start time (clock ticks since boot, /proc/PID/stat field 22), None if unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner() -> tuple[str, int, Optional[int]]:
    """This process as a run's owner: host name, PID, start time."""
    return socket.gethostname(), os.getpid(), _start_ticks(os.getpid())


def owner_alive(host: Optional[str], pid: Optional[int], started: Optional[int]) -> bool:
    """Whether the process that owns a run may still be recording it. A run without an owner (an older
    store, or one its process let go of) has none; a process on another host cannot be checked and
    counts as alive."""
    if pid is None:
        return False
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return False
    now = _start_ticks(int(pid))
    return started is None or now is None or now == started

"""SIGINT and SIGTERM as Python exceptions, and short stretches that must not be cut by them.

:func:`install` (called by the CLI's ``main()``) makes SIGINT raise :class:`Interrupted` and SIGTERM
(what ``timeout`` and batch schedulers send) raise :class:`Terminated`; both are
:class:`KeyboardInterrupt`, so every ``except KeyboardInterrupt`` that finishes a run as
``interrupted`` and kills a probe child treats them alike. The CLI exits 130 after SIGINT and 143
after SIGTERM.

:func:`deferred` holds both signals back while a store transaction commits, so that a signal arriving
then takes effect right after the commit instead of rolling back a finished step's samples; it yields
the list of the signals held, so that the transaction can see one arrived before it commits (the store
finishes a run as ``interrupted`` then, see :mod:`xferlab.store.db`).

:func:`fault` is a test hook: ``XFERLAB_SIGNAL_AT=SIGNAL@POINT[:N]`` makes this process send itself
SIGINT or SIGTERM at a named point of the store's write path (the N-th time it passes it, default the
first), so that tests put a signal exactly where a race would otherwise need luck. The points: ``start``,
``samples``, ``failure`` and ``finish`` (inside that write's transaction, before it commits) and
``after-samples`` (right after an ``add_samples`` transaction has committed).
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

from .errors import BadValue

__all__ = ["FAULT_ENV", "Interrupted", "Terminated", "behind", "deferred", "exit_code", "fault", "install", "interruption",
           "restore", "signal_name"]

FAULT_ENV = "XFERLAB_SIGNAL_AT"
FAULT_POINTS = ("start", "samples", "failure", "finish", "after-samples")


class Interrupted(KeyboardInterrupt):
    """SIGINT (Ctrl-C) arrived."""

    signum = signal.SIGINT


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived."""

    signum = signal.SIGTERM


_last: Optional[int] = None  # the last signal received, for errors that lost it (an interrupted query)
_HANDLED = (signal.SIGINT, signal.SIGTERM)


def _raise(signum: int, frame) -> None:
    global _last
    _last = signum
    raise Terminated() if signum == signal.SIGTERM else Interrupted()


def install() -> dict:
    """Make SIGINT raise :class:`Interrupted` and SIGTERM :class:`Terminated` (main thread only);
    returns the handlers they had, for :func:`restore`."""
    previous: dict = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for signum in _HANDLED:
        handler = signal.getsignal(signum)
        if handler is not signal.SIG_IGN:  # nohup'd and the like stay ignored
            previous[signum] = handler
            signal.signal(signum, _raise)
    return previous


def restore(previous: dict) -> None:
    """Put back the handlers :func:`install` replaced (a CLI run inside another program, tests)."""
    if threading.current_thread() is threading.main_thread():
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def interruption() -> KeyboardInterrupt:
    """The exception for the last signal received (SIGINT when none was seen)."""
    return Terminated() if _last == signal.SIGTERM else Interrupted()


def behind(error: Optional[BaseException]) -> Optional[KeyboardInterrupt]:
    """The SIGINT/SIGTERM behind ``error``: ``error`` itself, or the keyboard interrupt in its chain of
    causes and contexts. The handler's exception can be raised inside code that wraps it: a C extension
    whose initialization it cut short is an ``ImportError("initialization failed")`` raised from it
    (pybind11's PYBIND11_MODULE), and Typer turns a KeyboardInterrupt into an exit 130 raised from it."""
    seen, chain = set(), [error]
    while chain:
        error = chain.pop()
        if error is None or id(error) in seen:
            continue
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        chain += [error.__context__, error.__cause__]  # the cause first
    return None


def note_of(interrupt: BaseException) -> Optional[str]:
    """What was cut short (``xferlab_note``), from ``interrupt`` or, when it has none, from an interruption
    in its chain of contexts and causes: the same signal can surface twice, as the handler's exception and
    again as DuckDB's "Query interrupted" translated while the first one unwinds (a store closing), and only
    the first carries the note of the work it stopped."""
    seen, chain = set(), [interrupt]
    while chain:
        error = chain.pop()
        if error is None or id(error) in seen:
            continue
        note = getattr(error, "xferlab_note", None)
        if note:
            return note
        seen.add(id(error))
        chain += [error.__context__, error.__cause__]
    return None


def exit_code(error: BaseException) -> int:
    """143 for SIGTERM, 130 for SIGINT or any other keyboard interrupt."""
    return 128 + int(getattr(error, "signum", signal.SIGINT))


def signal_name(error: BaseException) -> str:
    return signal.Signals(getattr(error, "signum", signal.SIGINT)).name


@contextmanager
def deferred() -> Iterator[list[int]]:
    """SIGINT and SIGTERM received inside the block act when it ends (main thread; elsewhere a no-op).
    Yields the list of the signals held so far (it grows as they arrive)."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    pending: list[int] = []
    previous = {}
    for signum in _HANDLED:
        previous[signum] = signal.getsignal(signum)
        if previous[signum] is not signal.SIG_IGN:
            signal.signal(signum, lambda n, f: pending.append(n))
    try:
        yield pending
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in pending[:1]:
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


_passed: dict[str, int] = {}


def fault(point: str) -> None:
    """The test hook (see the module): send this process the signal ``XFERLAB_SIGNAL_AT`` names when it is
    at ``point`` for the N-th time. A malformed value raises :class:`~xferlab.errors.BadValue`."""
    text = os.environ.get(FAULT_ENV)
    if not text:
        return
    name, _, where = text.partition("@")
    where, _, count = where.partition(":")
    allowed = (f"{FAULT_ENV}={text!r} is not allowed: give SIGINT|SIGTERM@POINT[:N], POINT one of "
               f"{', '.join(FAULT_POINTS)}, N >= 1")
    if name not in ("SIGINT", "SIGTERM") or where not in FAULT_POINTS or not (count == "" or count.isdigit() and int(count) >= 1):
        raise BadValue(allowed)
    if where != point:
        return
    _passed[point] = _passed.get(point, 0) + 1
    if _passed[point] == int(count or 1):
        os.kill(os.getpid(), getattr(signal, name))

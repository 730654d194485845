"""Errors that xferlab reports to people.

An :class:`XferlabError` is a problem with what the user gave (a value, a name, a file) or a resource
they asked for that is not there. The CLI prints its message as one line, ``error: …``, and exits
with code 2 (:class:`NothingMeasured`, a valid request whose measurements all failed: 1); anything
else is a bug and exits with 1.
"""

from __future__ import annotations


class XferlabError(Exception):
    """A user-facing error: the message names the bad value, where it came from, what is allowed."""

    exit_code = 2


class BadValue(XferlabError, ValueError):
    """A value that cannot be parsed or is out of range (a size, a time, a preset parameter)."""


class UnknownName(XferlabError, KeyError):
    """A name that is not defined (a preset, a scenario, a field)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class BadFile(XferlabError):
    """A file that is missing, unreadable, or does not follow its schema."""


class NothingMeasured(XferlabError):
    """The input was right, but what it names holds no measurement the command can use (a run whose
    every copy the probe could not validate): the work failed, exit code 1, as a run that failed."""

    exit_code = 1


class Unavailable(XferlabError):
    """A resource the user asked for (a device, a driver, the probe) is not available here."""


def suggest(name: str, allowed: list[str] | tuple[str, ...], limit: int = 8) -> str:
    """The phrase that ends an unknown-name message: close matches first, then a short list."""
    import difflib

    close = difflib.get_close_matches(name, allowed, n=3, cutoff=0.6)
    shown = list(allowed)[:limit]
    more = f", … ({len(allowed)} in all)" if len(allowed) > limit else ""
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"{hint}allowed: {', '.join(shown)}{more}"

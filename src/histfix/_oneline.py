"""Errors as the one line a message quotes: every one-line message of histfix (the command line's,
a store's, a probe's) cuts an error down here, so they all cut it the same way."""

from __future__ import annotations

__all__ = ["first_line", "squeezed"]


def first_line(error: BaseException | str | None) -> str:
    """The first line of an error's message (or of a text), surrounding blank space left out;
    for an exception whose message is empty, its type's name (so the line is never empty); for an
    empty text or None, ``""``."""
    text = str(error).strip() if error is not None else ""
    if text:
        return text.splitlines()[0]
    return type(error).__name__ if isinstance(error, BaseException) else ""


def squeezed(text: str) -> str:
    """``text`` on one line: every run of white space (newlines too) one space."""
    return " ".join(text.split())

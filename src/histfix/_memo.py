"""One-slot memo for scans that several profile passes make of the same history list.

The passes of a profile run one after another on the same list object until one of them changes
something (a pass that changes nothing returns the list it was given), and the runner never
mutates a list it handed on. So a scan of "the list just scanned" can be reused: the memo keys on
the list's identity and length and keeps only the last one (a strong reference, so the identity
cannot be reused by another list while it is kept). Callers treat the result as read-only.
The slot holds one tuple, read and replaced whole, so threads repairing different histories at
once never see each other's scans.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["last_history_only"]

_R = TypeVar("_R")


def last_history_only(scan: Callable[[Sequence[Any]], _R]) -> Callable[[Sequence[Any]], _R]:
    """``scan`` computed once for the last history it was given (same list object, same length)."""
    slot: list[tuple[Sequence[Any], int, _R] | None] = [None]

    @functools.wraps(scan)
    def remembered(history: Sequence[Any]) -> _R:
        entry = slot[0]  # one read: another thread may replace the slot at any time
        if entry is not None and entry[0] is history and entry[1] == len(history):
            return entry[2]
        found = scan(history)
        slot[0] = (history, len(history), found)
        return found

    return remembered

"""One pass over a history that tells the shape and native rules whether they have anything to do.

Every profile repair runs every rule of its profile, and on a history with nothing to fix each
rule's cost is its early exit. Reading a message's attributes is what costs (100k messages are
100k scattered objects), so the facts the early exits need are gathered in one pass and kept for
the last history scanned: the passes of one profile run hand each other the same list object
whenever they change nothing. The list is checked by identity and length; the runner's lists are
its own copies, which nothing mutates, so a later pass never sees stale facts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["Scan", "scan"]


@dataclass(frozen=True)
class Scan:
    """What the early exits of the shape and native rules need to know about one history."""

    #: the classes of every part
    part_classes: frozenset[type]
    #: some message has no parts
    empty_message: bool
    #: the ``content`` of every text part and user prompt, in order
    text_contents: tuple[object, ...]
    #: indices of the messages with more than one part
    several_parts: tuple[int, ...]
    #: two responses in a row
    consecutive_responses: bool


_lock = threading.Lock()
_last: tuple[Sequence[ModelMessage], int, Scan] | None = None


def scan(history: Sequence[ModelMessage], *, cached: bool = True) -> Scan:
    """The facts about ``history``, gathered in one pass (or the last scan's, for the same list).

    ``cached=False`` for lists the caller owns (``check``'s detects), which may change in place
    between calls. The cache holds one history (the last scanned) alive until the next scan.
    """
    global _last
    last = _last
    if cached and last is not None and last[0] is history and last[1] == len(history):
        return last[2]
    from pydantic_ai.messages import TextPart, UserPromptPart

    texts = (TextPart, UserPromptPart)
    classes: set[type] = set()
    contents: list[object] = []
    several: list[int] = []
    empty = consecutive = previous_response = False
    for index, message in enumerate(history):
        parts = message.parts
        response = message.kind == "response"
        consecutive = consecutive or (response and previous_response)
        previous_response = response
        if len(parts) != 1:
            if not parts:
                empty = True
                continue
            several.append(index)
        for part in parts:
            classes.add(type(part))
            if isinstance(part, texts):
                contents.append(part.content)
    found = Scan(frozenset(classes), empty, tuple(contents), tuple(several), consecutive)
    if cached:
        with _lock:
            _last = (history, len(history), found)
    return found

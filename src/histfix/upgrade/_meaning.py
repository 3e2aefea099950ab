"""What a difference between two releases' versions of a history means: behaviour, or bookkeeping.

The one list of what no model sees and no run reads back (:data:`BOOKKEEPING`). A value that
differs anywhere else changes what an agent does with the history (content, what calls what and
with which id, authority, pause marks, which model's signed data goes back to it ...), and
only such a difference breaks an upgrade (exit status 1). Anything not listed is behaviour: a
field a new release adds counts until someone shows no model reads it.

Paths are the upgrade check's: ``[2].parts[0].timestamp`` (message 2, its first part).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, Literal

__all__ = [
    "BOOKKEEPING",
    "MISSING",
    "RESERVED",
    "Meaning",
    "changes",
    "differences",
    "general",
    "meaning",
    "sort",
]

Meaning = Literal["behaviour", "bookkeeping"]
#: The key of pydantic-ai's own namespace in ``metadata``: a run's protocol state (2.78.0 marks a
#: request written at a pause for deferred calls there), which the agent reads.
RESERVED = "__pydantic_ai__"

#: Field -> why no model sees it and nothing reads it back; by where it sits. ``metadata`` is
#: the application's own (never sent to a model), except the reserved namespace (RESERVED).
BOOKKEEPING: dict[str, dict[str, str]] = {
    "message": {
        "timestamp": "when the message was recorded",
        "request_timestamp": "when the request was sent (2.78.0; upstream leaves it out of equality)",
        "duration": "how long the model took (2.78.0; upstream leaves it out of equality)",
        "usage": "token counts and cost",
        "run_id": "the run that recorded the message",
        "conversation_id": "the conversation the message belongs to, for the caller",
        "provider_response_id": "the provider's id of a response, never sent back",
        "provider_url": "the endpoint that answered",
        "finish_reason": "why the model stopped",
        "model_id": "the string the model was chosen by (2.78.0)",
        "failed_attempts": "earlier attempts a fallback moved on from (2.78.0)",
        "metadata": "the application's own data; the reserved namespace is behaviour",
    },
    "part": {
        "timestamp": "when the part was recorded",
        "ui_visibility": "what a UI client is shown (2.78.0; never sent to a model)",
        "metadata": "the application's own data, never sent to a model; the reserved namespace is behaviour",
    },
}

#: A value one side does not have at all.
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()

_STEP = re.compile(r"\[(\d+)\]|\.([^.\[]+)")


def general(path: str) -> str:
    """``[2].parts[0].outcome`` as ``[*].parts[*].outcome``: the field, whichever message."""
    return re.sub(r"\[\d+\]", "[*]", path)


def _reserved(value: object) -> object:
    """The reserved namespace of a metadata value; none and an emptied one alike (no state)."""
    return (value.get(RESERVED) or {}) if isinstance(value, dict) else {}


def meaning(path: str, before: Any = MISSING, after: Any = MISSING) -> Meaning:
    """Whether a difference at ``path`` (``before`` and ``after`` its two values, when known)
    changes behaviour or is bookkeeping only."""
    steps = _STEP.findall(path)
    names = [name for index, name in steps]
    if not steps or steps[0][1] or len(steps) < 2:  # the whole history, or a whole message
        return "behaviour"
    where, rest = "message", names[1:]
    if rest[0] == "parts":
        if len(rest) < 3:  # the parts list, or a whole part
            return "behaviour"
        where, rest = "part", rest[2:]
    if rest[0] not in BOOKKEEPING[where]:
        return "behaviour"
    if rest[0] != "metadata":
        return "bookkeeping"
    if len(rest) > 1:  # one key of it: the reserved namespace, or the application's
        return "behaviour" if rest[1] == RESERVED else "bookkeeping"
    return "behaviour" if _reserved(before) != _reserved(after) else "bookkeeping"


def differences(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """What ``after`` lost or changed of what ``before`` held (pydantic-ai JSON data): each
    path with both values (``MISSING`` where ``after`` has no such key)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            if key not in after:
                yield f"{path}.{key}", value, MISSING
            else:
                yield from differences(value, after[key], f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (one, other) in enumerate(zip(before, after, strict=True)):
            yield from differences(one, other, f"{path}[{index}]")
    elif before != after:
        yield path or "(the whole history)", before, after


def changes(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """:func:`differences` both ways: also what ``after`` holds that ``before`` does not."""
    yield from differences(before, after, path)
    yield from _added(before, after, path)


def _added(before: Any, after: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """The keys only ``after`` has, below ``path`` (what :func:`differences` does not see)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in after.items():
            if key not in before:
                yield f"{path}.{key}", MISSING, value
            else:
                yield from _added(before[key], value, f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (one, other) in enumerate(zip(before, after, strict=True)):
            yield from _added(one, other, f"{path}[{index}]")


#: Paths named per record and meaning (the rest are counted).
SHOWN = 5


def sort(found: Iterable[tuple[str, Any, Any]], count: str) -> dict[str, Any]:
    """Differences sorted by what they mean: ``{count: n, count + "_paths": [...], "bookkeeping":
    m, "bookkeeping_paths": [...]}``, the first SHOWN paths of each, in the order found."""
    behaviour: list[str] = []
    bookkeeping: list[str] = []
    for path, before, after in found:
        (behaviour if meaning(path, before, after) == "behaviour" else bookkeeping).append(path)
    return {
        count: len(behaviour),
        f"{count}_paths": behaviour[:SHOWN],
        "bookkeeping": len(bookkeeping),
        "bookkeeping_paths": bookkeeping[:SHOWN],
    }

"""``repair(..., orphans="note")``: keep an orphaned result's content as a marked user-side note.

A slice that cut a call away leaves its result orphaned; the default repair drops it, as
upstream does. This pre-pass instead replaces each orphan, in place, by a ``UserPromptPart``
that says which tool returned what, so the model still sees it. A user prompt is plain user text
for every provider: no provider can read it as a tool result. The note's text and timestamp come
from the orphan alone, so the pass is deterministic, and a note is not a result, so running it
again changes nothing. The caller's list and messages are never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    RetryPromptPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_core import to_json

from .._records.changes import Change
from .._records.depth import PART_LEVELS, depth_limit, too_deep_value, value_depth
from .._records.parts import is_result
from .pairing import pair
from .report import _preview as preview

__all__ = ["ORPHAN_NOTE_PREFIX", "note_orphans"]

#: How every orphan note starts, so people and code can tell it from what the user typed.
ORPHAN_NOTE_PREFIX = "[histfix: orphaned tool result]"


def _content_text(content: object, where: str) -> str:
    """The result's content as text: strings as they are, anything else as JSON (as providers get it)."""
    if isinstance(content, str):
        return content
    try:
        return to_json(content, fallback=repr, bytes_mode="base64").decode()
    except ValueError:  # the serializer's depth limit, which its message does not always name
        if PART_LEVELS + value_depth(content) > depth_limit():
            raise ValueError(too_deep_value(content, where, above=PART_LEVELS)) from None
        raise


def _note(part: ToolReturnPart | RetryPromptPart, where: str) -> UserPromptPart:
    # A tool-bound retry: a RetryPromptPart, or from 2.60.0 the same retry loaded as outcome='retried'.
    retried = isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried"
    what = "asked for a retry" if retried else "returned"
    text = (
        f"{ORPHAN_NOTE_PREFIX} Tool {part.tool_name!r} (call {part.tool_call_id!r}) {what} the "
        f"following, but the call that asked for it is no longer in this history:\n"
        f"{_content_text(part.content, f'{where}.content')}"
    )
    return UserPromptPart(content=text, timestamp=part.timestamp)


def note_orphans(messages: Sequence[ModelMessage]) -> tuple[list[ModelMessage], list[Change]]:
    """``messages`` with every orphaned result replaced by its note, and one ``Change`` per note.

    Message indices are unchanged (each note takes its orphan's place), so the changes point into
    both the input and the output. Untouched messages are passed through as the same objects.
    """
    orphans = pair(messages, repair_last_response=True).orphans
    if not orphans:
        return list(messages), []
    out = list(messages)
    changes: list[Change] = []
    for index, found in sorted(orphans.items()):
        request = messages[index]
        assert isinstance(request, ModelRequest)
        parts: list[ModelRequestPart] = []
        for part_index, part in enumerate(request.parts):
            if id(part) in found and is_result(part):
                parts.append(_note(part, f"messages[{index}].parts[{part_index}]"))
                changes.append(
                    Change(
                        "noted_result",
                        index,
                        f"kept orphaned result {part.tool_call_id!r} ({part.tool_name}) as a user note: "
                        "no earlier call has its id",
                        part.tool_call_id,
                        part.tool_name,
                        preview=preview(part.content),
                    )
                )
            else:
                parts.append(part)
        out[index] = replace(request, parts=parts)
    return out, changes

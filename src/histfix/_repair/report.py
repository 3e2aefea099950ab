"""Explaining a repair: the same walk, with every change written down."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse

from .._records.changes import Change, RepairReport
from .._records.depth import text_or_depth
from .._records.parts import is_result
from .folding import FoldEvent
from .pairing import Pairing, pair
from .walk import dangling_calls, repair_walk

__all__ = ["repair_with_changes"]

_PREVIEW = 60


def _preview(content: object) -> str:
    text = " ".join(text_or_depth(str, content).split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def repair_with_changes(
    messages: Sequence[ModelMessage], repair_last_response: bool, pairing: Pairing | None = None
) -> RepairReport:
    """Run histfix's walk and list its changes in input order (drops, returns, then folds).

    ``pairing``: one already made of these messages with this ``repair_last_response``, to reuse."""
    if pairing is None:
        pairing = pair(messages, repair_last_response)
    log: list[FoldEvent] = []
    repaired = repair_walk(messages, repair_last_response=repair_last_response, pairing=pairing, log=log)
    changes: list[Change] = []
    for index, orphans in sorted(pairing.orphans.items()):
        request = messages[index]
        assert isinstance(request, ModelRequest)
        for part in request.parts:
            if id(part) in orphans and is_result(part):
                changes.append(
                    Change(
                        "dropped_result",
                        index,
                        f"dropped result {part.tool_call_id!r} ({part.tool_name}): no earlier call has its id",
                        part.tool_call_id,
                        part.tool_name,
                        preview=_preview(part.content),
                    )
                )
    for index, entries in sorted(pairing.dangling.items()):
        response = messages[index]
        assert isinstance(response, ModelResponse)
        for call in dangling_calls(response, entries):
            changes.append(
                Change(
                    "synthesized_return",
                    index,
                    f"closed call {call.tool_call_id!r} ({call.tool_name}) with a synthesized return",
                    call.tool_call_id,
                    call.tool_name,
                )
            )
    for event in log:
        first = event.input_indices[0] if event.input_indices else event.output_index
        if event.kind == "moved_parts":
            description = "moved parts from between tool results to after them"
        else:
            what = "requests" if event.kind == "merged_requests" else "responses"
            description = (
                f"merged {what} {', '.join(map(str, event.input_indices)) or '(synthesized)'} into one"
            )
        changes.append(Change(event.kind, first, description, merged=event.input_indices))  # type: ignore[arg-type]
    changes.sort(key=lambda c: c.message_index)
    return RepairReport(repaired, tuple(changes))

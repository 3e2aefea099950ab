"""The validator: every problem a strict provider rejects or the repair would change, located.

It reads the same pairing the repair uses, so the two never disagree about what is broken.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart

from .._records.parts import is_result
from .._records.problems import Problem
from .._repair.folding import is_synthetic
from .._repair.pairing import Dangling, Pairing, pair
from .._repair.walk import dangling_calls

__all__ = ["check_history", "check_paired"]


def _call_problems(messages: Sequence[ModelMessage], dangling: dict[int, list[Dangling]]) -> list[Problem]:
    problems = []
    for index, entries in dangling.items():
        response = messages[index]
        assert isinstance(response, ModelResponse)
        shadowed_ids = {entry.call_id for entry in entries if entry.shadowed}
        flagged = {id(call) for call in dangling_calls(response, entries)}
        for part_index, part in enumerate(response.parts):
            if id(part) not in flagged:
                continue
            assert isinstance(part, ToolCallPart)
            if part.tool_call_id in shadowed_ids:
                kind, text = "shadowed_call", "is never answered: a later response reuses its id"
            else:
                kind, text = "dangling_call", "has no result"
            problems.append(
                Problem(
                    kind,  # type: ignore[arg-type]
                    index,
                    part_index,
                    part.tool_call_id,
                    part.tool_name,
                    f"tool call {part.tool_call_id!r} ({part.tool_name}) {text}",
                )
            )
    return problems


def _result_problems(index: int, request: ModelRequest, pairing: Pairing, called: set[str]) -> list[Problem]:
    orphans = pairing.orphans.get(index, set())
    duplicates = pairing.duplicates.get(index, set())
    late = pairing.late.get(index, set())
    problems = []
    for part_index, part in enumerate(request.parts):
        if not is_result(part):
            continue
        call_id, name = part.tool_call_id, part.tool_name
        label = f"tool result {call_id!r} ({name})"
        if id(part) in orphans:
            if call_id in called:
                problems.append(
                    Problem(
                        "result_before_call",
                        index,
                        part_index,
                        call_id,
                        name,
                        f"{label} comes before its call",
                    )
                )
            else:
                problems.append(
                    Problem("orphan_result", index, part_index, call_id, name, f"{label} answers no call")
                )
        elif id(part) in duplicates:
            problems.append(
                Problem(
                    "duplicate_result",
                    index,
                    part_index,
                    call_id,
                    name,
                    f"{label} repeats a result already given",
                )
            )
        elif id(part) in late:
            problems.append(
                Problem(
                    "late_result",
                    index,
                    part_index,
                    call_id,
                    name,
                    f"{label} does not follow the response that made the call",
                )
            )
    return problems


def _shape_problems(
    messages: Sequence[ModelMessage], events: set[int], scattered: set[int], orphans: dict[int, set[int]]
) -> list[Problem]:
    problems = []
    for index in sorted(events):
        if index >= len(messages) or index == 0:
            continue
        before, message = messages[index - 1], messages[index]
        if isinstance(message, ModelRequest) and isinstance(before, ModelRequest):
            if (
                not before.instructions
                or not message.instructions
                or before.instructions == message.instructions
            ):
                problems.append(
                    Problem(
                        "consecutive_requests",
                        index,
                        None,
                        None,
                        None,
                        f"request follows request {index - 1} (repair merges them)",
                    )
                )
        elif (
            isinstance(message, ModelResponse)
            and isinstance(before, ModelResponse)
            and is_synthetic(before)
            and is_synthetic(message)
        ):
            problems.append(
                Problem(
                    "consecutive_responses",
                    index,
                    None,
                    None,
                    None,
                    f"response follows response {index - 1} (repair merges them)",
                )
            )
    for index in scattered:
        request = messages[index]
        dropped = orphans.get(index, set())
        positions = [i for i, part in enumerate(request.parts) if is_result(part) and id(part) not in dropped]
        moved = next(i for i in range(positions[0], positions[-1]) if not is_result(request.parts[i]))
        problems.append(
            Problem(
                "parts_between_results",
                index,
                moved,
                None,
                None,
                "a part sits between tool results (providers need the results together first)",
            )
        )
    return problems


def check_history(messages: Sequence[ModelMessage], repair_last_response: bool = True) -> list[Problem]:
    """Every problem in ``messages``, ordered by position.

    With ``repair_last_response=False`` the last response's calls without results are not
    problems (they may still run), exactly as ``repair`` leaves them alone then.
    """
    return check_paired(messages, pair(messages, repair_last_response=repair_last_response))


def check_paired(messages: Sequence[ModelMessage], pairing: Pairing) -> list[Problem]:
    """:func:`check_history` of ``messages`` from their ``pairing`` (``pair`` of these very messages,
    with the flag wanted): for a caller that hands the same pairing to the repair after."""
    if not (
        pairing.dangling
        or pairing.orphans
        or pairing.duplicates
        or pairing.late
        or pairing.events
        or pairing.scattered
    ):
        return []  # most histories: the walk found nothing for the steps below to describe
    problems = _call_problems(messages, pairing.dangling)
    # every id any response calls, for telling a result that comes early from an orphan: the walk saw them all
    called = pairing.call_ids_seen() if pairing.orphans else set()
    for index in sorted({*pairing.orphans, *pairing.duplicates, *pairing.late}):
        request = messages[index]
        assert isinstance(request, ModelRequest)
        problems += _result_problems(index, request, pairing, called)
    problems += _shape_problems(messages, pairing.events, pairing.scattered, pairing.orphans)
    problems.sort(key=lambda p: (p.message_index, -1 if p.part_index is None else p.part_index))
    return problems

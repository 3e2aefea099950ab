"""Results the default repair keeps that strict providers refuse: a second result for one call,
and a result that is not in the request right after its call (the profiles' after-stage).

Results are matched to calls as the default repair matches them (the oldest open call with the
result's id; a call reusing an id still open from an earlier response shadows those calls), so a
history the before-stage left with duplicate ids is read the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
)

from .._records.parts import after_results, is_result
from .._repair.folding import is_synthetic, with_parts
from .scan import Scan

__all__ = [
    "Misplaced",
    "ResultKind",
    "misplaced_for_pass",
    "misplaced_results",
    "without_misplaced",
]

#: ``duplicate``: another result for a call answered in the same request, right after the call;
#: ``late_duplicate``: any other result for a call already answered (in an earlier request, or
#: late itself);
#: ``late``: the call's only answer, but in a request that does not directly follow the response
#: holding the call (an intervening response saw no result for it).
ResultKind = Literal["duplicate", "late_duplicate", "late"]


class Misplaced(NamedTuple):
    """One result a strict provider refuses where it is."""

    kind: ResultKind
    message_index: int
    part_index: int
    #: the response holding the call it answers (for ``late``: where the result belongs)
    call_index: int


def _all_in_place(history: Sequence[ModelMessage]) -> bool:
    """A cheap sufficient test: every request's results answer calls of the response just before
    it, at most once per call (then nothing is late or duplicate). Almost every history passes."""
    previous: list[str] = []
    for message in history:
        if isinstance(message, ModelResponse):
            previous = [p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)]
            continue
        answered = [p.tool_call_id for p in message.parts if is_result(p)]
        if answered and answered != previous:
            if len(set(answered)) != len(answered) or not set(answered) <= set(previous):
                return False
            if len(set(previous)) != len(previous):  # an id called twice: counting needed
                return False
        previous = []
    return True


def misplaced_results(history: Sequence[ModelMessage]) -> list[Misplaced]:
    """Every duplicate and late result, in history order (orphans are the default repair's)."""
    return [] if _all_in_place(history) else classified(history)


def classified(history: Sequence[ModelMessage]) -> list[Misplaced]:
    """:func:`misplaced_results` without the cheap test first (the full walk)."""
    found: list[Misplaced] = []
    open_calls: dict[str, int] = {}  # id -> how many calls with it are open
    owner: dict[str, int] = {}  # id -> the response its open calls (or its last calls) are in
    answered_in: dict[str, int] = {}  # id -> the request holding the latest answer to it
    for i, message in enumerate(history):
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    call_id = part.tool_call_id
                    if owner.get(call_id, i) != i:
                        open_calls[call_id] = 0  # shadowed (the repair closed those calls)
                    open_calls[call_id] = open_calls.get(call_id, 0) + 1
                    owner[call_id] = i
        elif isinstance(message, ModelRequest):
            for j, piece in enumerate(message.parts):
                if not is_result(piece) or piece.tool_call_id not in owner:
                    continue
                call_id = piece.tool_call_id
                if open_calls[call_id]:
                    open_calls[call_id] -= 1
                    answered_in[call_id] = i
                    if owner[call_id] != i - 1:
                        found.append(Misplaced("late", i, j, owner[call_id]))
                elif answered_in.get(call_id) == i and owner[call_id] == i - 1:
                    found.append(Misplaced("duplicate", i, j, owner[call_id]))
                else:
                    found.append(Misplaced("late_duplicate", i, j, owner[call_id]))
    return found


def misplaced_for_pass(history: Sequence[ModelMessage], scan: Scan) -> list[Misplaced]:
    """:func:`misplaced_results` for the passes, which run one after another on the same list
    object: kept in its survey, and none where the run's default repair put every result in place."""
    if scan.results_in_place(history):
        return []
    found: list[Misplaced] = scan.survey(history).memo("misplaced", lambda: misplaced_results(history))
    return found


def without_misplaced(
    history: list[ModelMessage], drop: Sequence[Misplaced], move: Sequence[Misplaced]
) -> list[ModelMessage]:
    """``history`` without the ``drop`` results, with each ``move`` result in the request right
    after its call's response (a new request where a response or nothing follows it).

    A request left empty is removed when it is not the last message (the last one stays, empty,
    as the default repair leaves it); two synthetic responses that removal puts side by side are
    merged, as the default repair would merge them, so that repairing again changes nothing.
    """
    if not drop and not move:
        return history
    gone = {(m.message_index, m.part_index) for m in (*drop, *move)}
    touched = {m.message_index for m in (*drop, *move)}
    arriving: dict[int, list[ModelRequestPart]] = {}
    for m in sorted(move, key=lambda m: (m.message_index, m.part_index)):
        part = history[m.message_index].parts[m.part_index]
        arriving.setdefault(m.call_index, []).append(part)  # type: ignore[arg-type]
    out: list[ModelMessage] = []
    removed_before = False  # whether a request was just removed (a merge may be due)
    last = len(history) - 1
    for i, message in enumerate(history):
        if isinstance(message, ModelRequest):
            parts = list(message.parts)
            if i in touched:
                parts = [p for j, p in enumerate(parts) if (i, j) not in gone]
            if i - 1 in arriving:
                parts = after_results(parts, arriving[i - 1])
            if parts == list(message.parts) and i not in touched:
                out.append(message)
            elif parts or i == last:
                out.append(with_parts(message, parts))
            else:
                removed_before = True
                continue
        else:
            previous = out[-1] if out else None
            if (
                removed_before
                and isinstance(previous, ModelResponse)
                and isinstance(message, ModelResponse)
                and is_synthetic(previous)
                and is_synthetic(message)
            ):
                out[-1] = with_parts(previous, [*previous.parts, *message.parts])
            else:
                out.append(message)
            if i in arriving and not (i < last and isinstance(history[i + 1], ModelRequest)):
                out.append(ModelRequest(parts=arriving[i]))
        removed_before = False
    return out

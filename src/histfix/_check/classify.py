"""Judging a stored history's end: is it complete, waiting on calls or a request, interrupted, broken?

Repairing and judging are separate jobs: ``repair`` makes any history sendable, ``classify`` says
whether the stored one can be persisted and continued as it is. It reads the validator's
problems and sets apart the one thing that is not damage: the last response's calls without
results, when nothing but results of their siblings follows them (the frontier). Consecutive
messages that repair would merge are not damage either: pydantic-ai writes them itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart

from .._records.parts import stays_between_results
from .._records.problems import Problem
from .._records.state import HistoryState, HistoryStateKind
from .._release import switches as _compat
from .history import check_history
from .rejections import mark_rejections

__all__ = ["classify_history", "state_kind"]

#: Problems that are only a merge ``repair`` would make: pydantic-ai stores such runs itself (a
#: resume with deferred results appends a second request) and merges them before each request.
_MERGES_ONLY = frozenset({"consecutive_requests", "consecutive_responses"})
#: The states most histories are in, made once (frozen: sharing them is safe)
_COMPLETE = HistoryState("complete")
_PENDING_REQUEST = HistoryState("pending_request")


def _marked_interrupted(message: ModelMessage, message_kind: str) -> bool:
    """``state='interrupted'``, read only where the release can express it (see ``_release.switches``)."""
    return _compat.interrupted_state(message_kind) and getattr(message, "state", None) == "interrupted"


def _late_only_by_a_split(messages: Sequence[ModelMessage], problem: Problem) -> bool:
    """Whether a late result follows its call with nothing but requests in between.

    pydantic-ai stores a resume's results as a request after the earlier results' request, and
    merges the two before sending; such a result is late only until that merge.
    """
    index = problem.message_index - 1
    while index >= 0 and isinstance(messages[index], ModelRequest):
        index -= 1
    if index < 0:
        return False
    response = messages[index]
    return any(
        isinstance(part, ToolCallPart) and part.tool_call_id == problem.tool_call_id
        for part in response.parts
    )


def classify_history(
    messages: Sequence[ModelMessage], found: Sequence[Problem] | None = None
) -> HistoryState:
    """The state of ``messages``; raises ``TypeError`` for an element that is not a message.

    ``found``: ``check_history(messages, repair_last_response=True)`` when the caller has it already.
    """
    if found is None:
        found = check_history(messages, repair_last_response=True)
    return _classified(messages, found, mark_rejections)


def state_kind(messages: Sequence[ModelMessage], found: Sequence[Problem]) -> HistoryStateKind:
    """``classify_history(messages, found).kind``, without describing its problems (which APIs reject
    each, in their words): the kind does not depend on them, and the store's record needs no more."""
    return _classified(messages, found, lambda history, kept: kept).kind


def _classified(
    messages: Sequence[ModelMessage],
    found: Sequence[Problem],
    mark: Callable[[Sequence[ModelMessage], list[Problem]], list[Problem]],
) -> HistoryState:
    kept = [
        p
        for p in found
        if p.kind not in _MERGES_ONLY and not (p.kind == "late_result" and _late_only_by_a_split(messages, p))
    ]
    # the same records check() returns: with the APIs that reject each
    problems = mark(messages, kept) if kept else kept
    if not messages:
        return _COMPLETE
    last = messages[-1]
    last_response = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], ModelResponse)), None
    )
    request_interrupted = isinstance(last, ModelRequest) and _marked_interrupted(last, "request")
    tail = messages[last_response + 1 :] if last_response is not None else messages
    # Only results of sibling calls (or nothing) after the last response: its open calls are the
    # frontier, not damage. A trailing request pydantic-ai marked interrupted ends it too.
    frontier = last_response is not None and (
        request_interrupted
        or all(isinstance(m, ModelRequest) and all(map(stays_between_results, m.parts)) for m in tail)
    )
    pending: tuple[str, ...] = ()
    if problems:  # most histories have none: nothing pending and nothing broken
        pending = tuple(
            p.tool_call_id or ""
            for p in problems
            if p.kind == "dangling_call" and p.message_index == last_response
        )
        others = tuple(
            p
            for p in problems
            if not (frontier and p.kind == "dangling_call" and p.message_index == last_response)
        )
        if others:
            return HistoryState("broken", pending, others)
    response_interrupted = (
        frontier and last_response is not None and _marked_interrupted(messages[last_response], "response")
    )
    if request_interrupted or response_interrupted:
        return HistoryState("interrupted", pending)
    if pending:
        return HistoryState("pending_calls", pending)
    if isinstance(last, ModelRequest):
        return _PENDING_REQUEST
    return _COMPLETE

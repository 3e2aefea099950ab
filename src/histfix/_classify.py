"""Judging a stored history's end: is it complete, waiting on calls or a request, interrupted, broken?

Repairing and judging are separate jobs: ``repair`` makes any history sendable, ``classify`` says
whether the stored one can be persisted and continued as it is. It reads the validator's
problems and sets apart the one thing that is not damage: the last response's calls without
results, when nothing but results of their siblings follows them (the frontier).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse

from . import _compat
from ._check import check_history
from ._parts import stays_between_results
from ._state import HistoryState

__all__ = ["classify_history"]


def _marked_interrupted(message: ModelMessage, message_kind: str) -> bool:
    """``state='interrupted'``, read only where the release can express it (see ``_compat``)."""
    return _compat.interrupted_state(message_kind) and getattr(message, "state", None) == "interrupted"


def classify_history(messages: Sequence[ModelMessage]) -> HistoryState:
    """The state of ``messages``; raises ``TypeError`` for an element that is not a message."""
    problems = check_history(messages, repair_last_response=True)
    if not messages:
        return HistoryState("complete")
    last_response = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], ModelResponse)), None
    )
    last = messages[-1]
    request_interrupted = isinstance(last, ModelRequest) and _marked_interrupted(last, "request")
    tail = messages[last_response + 1 :] if last_response is not None else messages
    # Only results of sibling calls (or nothing) after the last response: its open calls are the
    # frontier, not damage. A trailing request pydantic-ai marked interrupted ends it too.
    frontier = last_response is not None and (
        request_interrupted
        or all(isinstance(m, ModelRequest) and all(map(stays_between_results, m.parts)) for m in tail)
    )
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
        return HistoryState("pending_request")
    return HistoryState("complete")

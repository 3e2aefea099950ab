"""histfix's own repair: the newest upstream behaviour, rebuilt as two linear walks.

The first walk only reads: it pairs every tool result with the call it answers and so learns which
calls dangle and which requests hold orphaned results. The second walk builds the output while
each message is at hand: it drops orphans, closes dangling calls, and folds runs of mergeable
messages as they end. Messages that need no change are passed through as the same objects, so
the caller's list and messages are never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeGuard

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

from . import _compat
from ._inputs import not_a_message

__all__ = ["SYNTHESIZED_CONTENT", "SYNTHESIZED_MARKER", "is_result", "repair_walk"]

#: The content of every synthesized return (the same text in every upstream release that has one).
SYNTHESIZED_CONTENT = "The tool call was interrupted before a result was produced."
#: The metadata key that marks a synthesized return.
SYNTHESIZED_MARKER = "pydantic_ai_synthesized_tool_return"
#: The metadata namespace that survives a request merge (upstream since 2.42.0).
_FRAMEWORK_NAMESPACE = "__pydantic_ai__"

_DELTA = _compat.TOOL_AVAILABILITY_DELTA


def is_result(part: object) -> TypeGuard[ToolReturnPart | RetryPromptPart]:
    """A part that answers a regular tool call.

    A tool-less ``RetryPromptPart`` is feedback, not a result: from 2.60.0 it loads as a
    ``RetryFeedbackPart``, which the newest repair never moves or matches.
    """
    return isinstance(part, ToolReturnPart) or (
        isinstance(part, RetryPromptPart) and part.tool_name is not None
    )


def _not_result(part: object) -> bool:
    """Sort key that puts results first (a stable sort keeps every other order)."""
    return not is_result(part)


def _stays_between_results(part: object) -> bool:
    return is_result(part) or (_DELTA is not None and isinstance(part, _DELTA))


# --- walk 1: pairing --------------------------------------------------------------------------------


class _OpenCalls:
    """The unanswered calls carrying one id; they always come from a single response."""

    __slots__ = ("calls", "next", "response")

    def __init__(self, response: int, call: ToolCallPart) -> None:
        self.response = response
        self.calls = [call]
        self.next = 0  # calls before this index are answered (FIFO)

    def unanswered(self) -> list[ToolCallPart]:
        return self.calls[self.next :]


class Pairing:
    """What the pairing walk learned: everything the building walk needs to know in advance."""

    __slots__ = ("dangling", "orphans", "scattered")

    def __init__(self) -> None:
        #: dangling calls by the index of the response that made them, in upstream's order
        self.dangling: dict[int, list[ToolCallPart]] = {}
        #: indices of requests holding a result whose id no earlier response called
        self.orphans: set[int] = set()
        #: indices of requests with other parts between their results (to be moved after them)
        self.scattered: set[int] = set()


def _pair(messages: Sequence[ModelMessage], repair_last_response: bool) -> Pairing:
    """Pair every result with the call it answers, in one read-only pass.

    A result answers the oldest open call with its id. A call reusing an id still open from an
    earlier response leaves those older calls dangling. A result whose id no earlier response
    called is an orphan. Calls still open at the end dangle, listed per response in the order
    their ids were first called, as upstream lists them.
    """
    found = Pairing()
    by_id: dict[str, _OpenCalls] = {}
    dangling = found.dangling
    last_response = -1
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            last_response = index
            for part in message.parts:
                if not isinstance(part, ToolCallPart):
                    continue
                entry = by_id.get(part.tool_call_id)
                if entry is None:
                    by_id[part.tool_call_id] = _OpenCalls(index, part)
                elif entry.response == index:
                    entry.calls.append(part)
                else:
                    shadowed = entry.unanswered()
                    if shadowed:
                        dangling.setdefault(entry.response, []).extend(shadowed)
                    entry.response, entry.calls, entry.next = index, [part], 0
        elif isinstance(message, ModelRequest):
            # 0: no result yet, 1: among results, 2: a movable part follows a result
            position = 0
            for piece in message.parts:
                if isinstance(piece, ToolReturnPart) or (
                    isinstance(piece, RetryPromptPart) and piece.tool_name is not None
                ):
                    entry = by_id.get(piece.tool_call_id)
                    if entry is None:
                        found.orphans.add(index)
                    elif entry.next < len(entry.calls):
                        entry.next += 1
                    if position == 2:
                        found.scattered.add(index)
                    position = 1
                elif position == 1 and not (_DELTA is not None and isinstance(piece, _DELTA)):
                    position = 2
        else:
            raise not_a_message(index, message)
    for entry in by_id.values():
        if entry.next < len(entry.calls):
            dangling.setdefault(entry.response, []).extend(entry.unanswered())
    if not repair_last_response:
        dangling.pop(last_response, None)
    return found


# --- walk 2: building -------------------------------------------------------------------------------


def _synthesized_return(call: ToolCallPart, response: ModelResponse) -> ToolReturnPart:
    """The placeholder result for a dangling call, with the fields the installed release has."""
    extra: dict[str, Any] = {}
    if _compat.OUTCOME_INTERRUPTED:
        extra["outcome"] = "interrupted"
    if _compat.RETURN_HAS_TOOL_KIND:
        kind = getattr(call, "tool_kind", None)
        if kind is not None and _compat.return_tool_kind_loads(kind):
            extra["tool_kind"] = kind
    return ToolReturnPart(
        tool_name=call.tool_name,
        content=SYNTHESIZED_CONTENT,
        tool_call_id=call.tool_call_id,
        metadata={SYNTHESIZED_MARKER: True},
        timestamp=response.timestamp,
        **extra,
    )


def _without_orphans(parts: Sequence[ModelRequestPart], called: set[str]) -> list[ModelRequestPart]:
    return [p for p in parts if not (is_result(p) and p.tool_call_id not in called)]


def _with_closing_returns(
    parts: Sequence[ModelRequestPart], closing: list[ToolReturnPart]
) -> list[ModelRequestPart]:
    """Insert synthesized returns straight after the last existing result (or first)."""
    at = len(parts)
    while at and not is_result(parts[at - 1]):
        at -= 1
    return [*parts[:at], *closing, *parts[at:]]


def _results_gathered(parts: Sequence[ModelRequestPart]) -> list[ModelRequestPart] | None:
    """Parts with whatever sits between the first and last result moved after the last one.

    Tool-availability deltas keep their place among the results. None when nothing moves.
    """
    first = last = -1
    for i, part in enumerate(parts):
        if is_result(part):
            if first < 0:
                first = i
            last = i
    if first < 0:
        return None
    middle = parts[first : last + 1]
    moved = [p for p in middle if not _stays_between_results(p)]
    if not moved:
        return None
    kept = [p for p in middle if _stays_between_results(p)]
    return [*parts[:first], *kept, *moved, *parts[last + 1 :]]


def _is_synthetic(response: ModelResponse) -> bool:
    """A response no provider produced: only such responses are ever merged."""
    return (
        response.provider_response_id is None
        and response.provider_name is None
        and response.model_name is None
    )


def _framework_namespace(request: ModelRequest) -> dict[str, Any] | None:
    meta = getattr(request, "metadata", None)
    value = meta.get(_FRAMEWORK_NAMESPACE) if isinstance(meta, dict) else None
    return value if isinstance(value, dict) else None


def _merged_request(run: list[ModelRequest], scattered: bool) -> ModelRequest:
    """One request from a run of consecutive compatible requests: results first, then the rest.

    Instructions are the first non-empty ones, the timestamp the latest one set; of the metadata
    only the framework namespace survives. Every other field takes its default.
    """
    parts = (_results_gathered(run[0].parts) if scattered else None) or list(run[0].parts)
    for request in run[1:]:
        parts.extend(request.parts)
    parts.sort(key=_not_result)
    fields: dict[str, Any] = {
        "instructions": next((r.instructions for r in run if r.instructions), run[-1].instructions)
    }
    if _compat.REQUEST_HAS_TIMESTAMP:
        stamps = [getattr(r, "timestamp", None) for r in run]
        fields["timestamp"] = next((t for t in reversed(stamps) if t), stamps[0])
    if _compat.REQUEST_HAS_METADATA:
        namespaces = [ns for ns in map(_framework_namespace, run) if ns is not None]
        if namespaces:
            fields["metadata"] = {_FRAMEWORK_NAMESPACE: {k: v for ns in namespaces for k, v in ns.items()}}
    return ModelRequest(parts=parts, **fields)


class _Folder:
    """Appends messages, merging each run of consecutive compatible ones when the run ends.

    Requests join a run unless both they and the run carry different non-empty instructions;
    responses join only when the run and they are synthetic (no provider, model or response id).
    """

    __slots__ = ("instructions", "out", "requests", "responses", "scattered")

    def __init__(self) -> None:
        self.out: list[ModelMessage] = []
        self.requests: list[ModelRequest] = []
        self.responses: list[ModelResponse] = []
        self.instructions: str | None = None  # the request run's first non-empty instructions
        self.scattered = False  # whether the run's first request has parts between its results

    def request(self, message: ModelRequest, scattered: bool = False) -> None:
        if self.responses:
            self._flush_responses()
        elif (
            self.requests
            and self.instructions
            and message.instructions
            and self.instructions != message.instructions
        ):
            self._flush_requests()
        if not self.requests:
            self.scattered = scattered
        if not self.instructions:
            self.instructions = message.instructions
        self.requests.append(message)

    def response(self, message: ModelResponse) -> None:
        if self.requests:
            self._flush_requests()
        elif self.responses and not (_is_synthetic(self.responses[0]) and _is_synthetic(message)):
            self._flush_responses()
        self.responses.append(message)

    def finish(self) -> list[ModelMessage]:
        self._flush_requests()
        self._flush_responses()
        return self.out

    def _flush_requests(self) -> None:
        run = self.requests
        if len(run) == 1:
            only = run[0]
            gathered = _results_gathered(only.parts) if self.scattered else None
            self.out.append(only if gathered is None else replace(only, parts=gathered))
        elif run:
            self.out.append(_merged_request(run, self.scattered))
        self.requests = []
        self.instructions = None

    def _flush_responses(self) -> None:
        run = self.responses
        if len(run) == 1:
            self.out.append(run[0])
        elif run:
            self.out.append(replace(run[0], parts=[p for r in run for p in r.parts]))
        self.responses = []


def repair_walk(messages: Sequence[ModelMessage], *, repair_last_response: bool = True) -> list[ModelMessage]:
    """Repair ``messages`` exactly as the newest upstream ``repair_messages`` does.

    Raises ``TypeError`` for an element that is not a ``ModelRequest``/``ModelResponse``.
    """
    pairing = _pair(messages, repair_last_response)
    dangling, orphan_requests = pairing.dangling, pairing.orphans
    folder = _Folder()
    called: set[str] = set()  # ids called so far, needed only to find orphans
    closing: list[ToolReturnPart] = []  # synthesized returns waiting for the next message
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            if orphan_requests:
                called.update(p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart))
            if closing:
                folder.request(ModelRequest(parts=closing))
                closing = []
            calls = dangling.get(index)
            if calls:
                closing = [_synthesized_return(call, message) for call in calls]
            folder.response(message)
            continue
        assert isinstance(message, ModelRequest)
        request = message
        if index in orphan_requests:
            kept = _without_orphans(message.parts, called)
            if not kept and index != last:
                continue  # an emptied interior request disappears
            request = replace(message, parts=kept)
        if closing:
            request = replace(request, parts=_with_closing_returns(request.parts, closing))
            closing = []
        folder.request(request, index in pairing.scattered)
    if closing:
        folder.request(ModelRequest(parts=closing))
    return folder.finish()

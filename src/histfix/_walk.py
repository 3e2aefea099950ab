"""histfix's own repair: the newest upstream behaviour, as one read-only walk and one building walk.

The pairing walk (``_pairing``) learns which calls dangle, which results are orphans, and every
index where something must change. The building walk then copies each untouched stretch of the
history in one slice and works message by message only around those indices: it drops orphans,
closes dangling calls, and folds mergeable runs (``_folding``). Untouched messages are passed
through as the same objects; the caller's list and messages are never mutated.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)

from . import _compat
from ._folding import Folder, FoldEvent, new_request, with_parts
from ._pairing import Dangling, Pairing, pair
from ._parts import is_result

__all__ = ["SYNTHESIZED_CONTENT", "SYNTHESIZED_MARKER", "dangling_calls", "repair_walk"]

#: The content of every synthesized return (the same text in every upstream release that has one).
SYNTHESIZED_CONTENT = "The tool call was interrupted before a result was produced."
#: The metadata key that marks a synthesized return.
SYNTHESIZED_MARKER = "pydantic_ai_synthesized_tool_return"


def _synthesized_return(call: ToolCallPart, response: ModelResponse) -> ModelRequestPart:
    """The placeholder result for a dangling call, with the fields the installed release has."""
    extra: dict[str, Any] = {}
    if _compat.OUTCOME_INTERRUPTED:
        extra["outcome"] = "interrupted"
    if _compat.RETURN_HAS_TOOL_KIND:
        kind = getattr(call, "tool_kind", None)
        if kind is not None and _compat.return_tool_kind_loads(kind):
            extra["tool_kind"] = kind
    part: ModelRequestPart = ToolReturnPart(
        tool_name=call.tool_name,
        content=SYNTHESIZED_CONTENT,
        tool_call_id=call.tool_call_id,
        metadata={SYNTHESIZED_MARKER: True},
        timestamp=response.timestamp,
        **extra,
    )
    if "tool_kind" in extra:
        # A request's constructor promotes a part by its tool_kind (2.59.0+): give this one those
        # checks here, once, so it can join a request by cloning (``with_parts``). A return
        # without a tool_kind has nothing to promote.
        (part,) = ModelRequest(parts=[part]).parts
    return part


def dangling_calls(response: ModelResponse, dangling: list[Dangling]) -> list[ToolCallPart]:
    """The response's dangling calls: for each entry, its last ``n`` calls with that id."""
    found: list[ToolCallPart] = []
    for entry in dangling:
        calls = [p for p in response.parts if isinstance(p, ToolCallPart) and p.tool_call_id == entry.call_id]
        found.extend(calls[-entry.n :])
    return found


def _closing_returns(response: ModelResponse, dangling: list[Dangling]) -> list[ModelRequestPart]:
    """Synthesized returns for the response's dangling calls, in upstream's order."""
    return [_synthesized_return(call, response) for call in dangling_calls(response, dangling)]


def _with_closing_returns(
    parts: Sequence[ModelRequestPart], closing: Sequence[ModelRequestPart]
) -> list[ModelRequestPart]:
    """Insert synthesized returns straight after the last existing result (or first)."""
    at = len(parts)
    while at and not is_result(parts[at - 1]):
        at -= 1
    return [*parts[:at], *closing, *parts[at:]]


class _Builder:
    """The building walk's state while it works message by message around an event."""

    __slots__ = ("closing", "dropped", "folder", "last", "pairing")

    def __init__(
        self, out: list[ModelMessage], pairing: Pairing, last: int, log: list[FoldEvent] | None
    ) -> None:
        self.folder = Folder(out, log)
        self.pairing = pairing
        self.last = last  # index of the input's last message
        self.closing: list[ModelRequestPart] = []  # synthesized returns waiting for the next message
        self.dropped = False  # whether the message just handled was dropped

    def add(self, index: int, message: ModelMessage) -> None:
        pairing = self.pairing
        self.dropped = False
        if isinstance(message, ModelResponse):
            if self.closing:
                self.folder.request(new_request(self.closing))
                self.closing = []
            dangling = pairing.dangling.get(index)
            if dangling:
                self.closing = _closing_returns(message, dangling)
            self.folder.response(message, index)
            return
        assert isinstance(message, ModelRequest)
        request = message
        orphans = pairing.orphans.get(index)
        if orphans:
            kept = [p for p in message.parts if id(p) not in orphans]
            if not kept and index != self.last:
                self.dropped = True  # an emptied interior request disappears
                return
            request = with_parts(message, kept)
        if self.closing:
            # A clone is enough: the request's own parts and the returns have had the checks a
            # constructor makes (2.59.0+), and those look at each part on its own.
            request = with_parts(request, _with_closing_returns(request.parts, self.closing))
            self.closing = []
        self.folder.request(request, index in pairing.scattered, index)

    def settled(self) -> bool:
        """Whether nothing pending can change what comes next (so it can be copied as it is)."""
        return not self.closing and not self.dropped

    def finish(self) -> None:
        if self.closing:
            self.folder.request(new_request(self.closing))
            self.closing = []
        self.folder.flush()


def repair_walk(
    messages: Sequence[ModelMessage],
    *,
    repair_last_response: bool = True,
    pairing: Pairing | None = None,
    log: list[FoldEvent] | None = None,
    every_index: bool = False,
) -> list[ModelMessage]:
    """Repair ``messages`` exactly as the newest upstream ``repair_messages`` does.

    Pass a ``pairing`` already made for these messages to reuse it, and a ``log`` list to have
    every merge and move recorded. ``every_index=True`` treats every index as an event, so no
    stretch is copied: the slow reference the fast path must equal (see the invariant below).
    Raises ``TypeError`` for an element that is not a ``ModelRequest``/``ModelResponse``.

    The invariant the fast path rests on: ``pairing.events`` holds every index ``i`` where the
    output can differ from ``messages[i]`` passed through as it is, that is where ``messages[i]``
    loses a part, gains one, moves parts, or merges with ``messages[i - 1]``. Then a message
    outside the events whose successor is outside them too is untouched, and so is everything
    after a message the builder has settled (nothing pending) up to the event before the next
    one: those stretches are copied in one slice. A rule that changes a message must record
    its index in ``_pairing.pair``; tests/test_invariant.py checks the fast path against
    ``every_index=True`` and fails when a rule forgets its events.
    """
    if pairing is None:
        pairing = pair(messages, repair_last_response)
    events: Collection[int] = range(len(messages)) if every_index else pairing.events
    out: list[ModelMessage] = []
    builder = _Builder(out, pairing, len(messages) - 1, log)
    copied_to = 0  # messages before this index are in ``out`` or in the builder
    orphans = pairing.orphans
    for event in sorted(events):
        if event < copied_to:
            continue  # already handled while working through an earlier event
        # Copy the untouched stretch, then work from the event, or from the message before it
        # when the two may end up as one: the same kind (a merge), or a request whose orphans
        # may all go, which brings its neighbours together. A message never merges with an
        # untouched neighbour of another kind.
        joins = event >= len(messages) or (
            event > 0 and (messages[event].__class__ is messages[event - 1].__class__ or event in orphans)
        )
        start = max(event - 1 if joins else event, copied_to)
        out.extend(messages[copied_to:start])
        index = start
        while index < len(messages):
            builder.add(index, messages[index])
            index += 1
            # Past the event, stop at the first index that is not one, once nothing is pending:
            # a settled builder hands that message on unchanged, as the copy does.
            if index > event and builder.settled() and index not in events:
                break
        if index < len(messages):
            builder.folder.flush()
        else:
            builder.finish()
        copied_to = index
    out.extend(messages[copied_to:])
    return out

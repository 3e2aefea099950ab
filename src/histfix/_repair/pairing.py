"""Walk 1 of the repair: pair every tool result with the call it answers, reading only.

It also notes every index where the building walk has work to do, so that walk can copy the
untouched stretches between them wholesale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

from .._records.inputs import not_a_message
from .._release import switches as _compat

__all__ = ["Dangling", "Pairing", "pair"]

_DELTA = _compat.delta_part()


class Dangling(NamedTuple):
    """Calls of one response that no result answers: its last ``n`` calls with ``call_id``."""

    call_id: str
    n: int
    #: True when a later response reused the id while these calls were open (which left them
    #: dangling), False when they are still open at the end of the history
    shadowed: bool


class Pairing:
    """What the pairing walk learned about a history, and where it stands (it can read on: :meth:`advance`)."""

    __slots__ = (
        "answered",
        "call_count",
        "dangling",
        "duplicates",
        "events",
        "extra_open",
        "finished",
        "last_response",
        "late",
        "open_calls",
        "orphans",
        "previous_kind",
        "scattered",
        "toolless_retry",
        "walked",
    )

    def __init__(self) -> None:
        #: response index -> its dangling calls, in the order upstream synthesizes their returns
        self.dangling: dict[int, list[Dangling]] = {}
        # The next three hold ``id()``s of parts (alive as long as the history is), by request index.
        #: results for calls already answered (repair keeps them)
        self.duplicates: dict[int, set[int]] = {}
        #: results answering a call not made by the message just before
        self.late: dict[int, set[int]] = {}
        #: results whose id no earlier response called (repair drops them)
        self.orphans: dict[int, set[int]] = {}
        #: indices of requests with other parts between their results
        self.scattered: set[int] = set()
        #: every index where the output can differ from the message there passed through as it
        #: is (a part dropped, added or moved, or a merge with the message before); the building
        #: walk copies everything else wholesale, so a rule that forgets its index corrupts output
        #: silently (``walk.repair_walk`` states the invariant, tests/test_invariant.py checks it)
        self.events: set[int] = set()
        # What the walk saw on its way, for the provider profiles' early exits (each would otherwise
        # read every part again): see :meth:`call_ids_seen`.
        #: how many regular calls (``ToolCallPart`` in a response) the history holds
        self.call_count = 0
        #: ids with calls still open at the end (id -> the response that made them)
        self.open_calls: dict[str, int] = {}
        #: ids whose calls were all answered at some point
        self.answered: set[str] = set()
        #: some request holds a ``RetryPromptPart`` without a ``tool_name``
        self.toolless_retry = False
        # Where the walk stands, so that it can go on over messages appended later (:meth:`advance`).
        #: how many messages it has read: the next one it reads is ``messages[walked]``
        self.walked = 0
        #: open calls beyond the first for an id, for the rare response that repeats one
        self.extra_open: dict[str, int] = {}
        #: the index of the last response read, -1 before one
        self.last_response = -1
        #: the class of the last message read
        self.previous_kind: type | None = None
        #: :meth:`finish` ran: the history ended here, and nothing more can be read
        self.finished = False

    def call_ids_seen(self) -> set[str]:
        """The id of every regular call: each id is open at the end or was answered (or both)."""
        return self.answered.union(self.open_calls)

    def copy(self) -> Pairing:
        """An independent walk standing where this one stands: advancing either leaves the other as it is."""
        twin = Pairing()
        twin.dangling = {index: list(entries) for index, entries in self.dangling.items()}
        twin.duplicates = {index: set(ids) for index, ids in self.duplicates.items()}
        twin.late = {index: set(ids) for index, ids in self.late.items()}
        twin.orphans = {index: set(ids) for index, ids in self.orphans.items()}
        twin.scattered = set(self.scattered)
        twin.events = set(self.events)
        twin.call_count = self.call_count
        twin.open_calls = dict(self.open_calls)
        twin.answered = set(self.answered)
        twin.toolless_retry = self.toolless_retry
        twin.walked = self.walked
        twin.extra_open = dict(self.extra_open)
        twin.last_response = self.last_response
        twin.previous_kind = self.previous_kind
        twin.finished = self.finished
        return twin

    # One flat loop on purpose: this is the hot path, and a function call per message is its largest cost.
    def advance(self, messages: Sequence[ModelMessage], stop: int | None = None) -> Pairing:  # noqa: PLR0915
        """Read ``messages[walked:stop]`` (to the end without ``stop``) and return this walk.

        ``messages[:walked]`` must be the messages already read, as they were then: the walk keeps
        no copy of them, only what it learned (a caller that resumes it checks that first). Reading
        a history in several stretches learns exactly what reading it in one does. Raises
        ``TypeError`` for an element that is not a message, which leaves the walk unusable.
        """
        start = self.walked
        end = len(messages) if stop is None else stop
        if self.finished or not start <= end <= len(messages):
            raise ValueError(
                f"cannot read messages[{start}:{end}] of {len(messages)} (finished: {self.finished})"
            )
        events = self.events
        dangling = self.dangling
        open_calls = self.open_calls
        answered = self.answered
        extra_open = self.extra_open
        call_count = self.call_count
        last_response = self.last_response
        previous_kind = self.previous_kind
        stretch = messages if start == 0 and end == len(messages) else messages[start:end]
        for index, message in enumerate(stretch, start):
            kind = type(message)
            if kind is previous_kind:
                events.add(index)  # two requests or two responses in a row: maybe a merge
            previous_kind = kind
            # The exact classes first (an isinstance that fails walks the class's bases), then subclasses.
            if kind is ModelResponse or (kind is not ModelRequest and isinstance(message, ModelResponse)):
                last_response = index
                for part in message.parts:
                    if not isinstance(part, ToolCallPart):
                        continue
                    call_count += 1
                    call_id = part.tool_call_id
                    if call_id not in open_calls:  # the usual case; ``in`` is cheaper than ``get``
                        open_calls[call_id] = index
                        continue
                    owner = open_calls[call_id]
                    if owner == index:
                        extra_open[call_id] = extra_open.get(call_id, 0) + 1
                    else:  # reused while calls from an earlier response are open: those dangle
                        dangling.setdefault(owner, []).append(
                            Dangling(call_id, 1 + extra_open.pop(call_id, 0), True)
                        )
                        open_calls[call_id] = index
            elif kind is ModelRequest or isinstance(message, ModelRequest):
                position = 0  # 0: no result yet, 1: among results, 2: a movable part after a result
                previous = index - 1
                for piece in message.parts:
                    if isinstance(piece, ToolReturnPart) or (
                        isinstance(piece, RetryPromptPart) and piece.tool_name is not None
                    ):
                        call_id = piece.tool_call_id
                        answering = open_calls.get(call_id)
                        if answering is None:
                            if call_id not in answered:  # dropped by repair: not a result here
                                self.orphans.setdefault(index, set()).add(id(piece))
                                events.add(index)
                                continue
                            self.duplicates.setdefault(index, set()).add(id(piece))
                        else:
                            if answering != previous:
                                self.late.setdefault(index, set()).add(id(piece))
                            spare = extra_open.get(call_id) if extra_open else None  # almost always empty
                            if spare is None:
                                del open_calls[call_id]
                                answered.add(call_id)
                            elif spare == 1:
                                del extra_open[call_id]
                            else:
                                extra_open[call_id] = spare - 1
                        if position == 2:
                            self.scattered.add(index)
                            events.add(index)
                        position = 1
                    elif isinstance(piece, RetryPromptPart):  # tool_name None: a retry for the output
                        self.toolless_retry = True
                        if position == 1:
                            position = 2
                    elif position == 1 and not (_DELTA is not None and isinstance(piece, _DELTA)):
                        position = 2
            else:
                raise not_a_message(index, message)  # the walk is spoilt: its caller drops it
        self.call_count = call_count
        self.last_response = last_response
        self.previous_kind = previous_kind
        self.walked = end
        return self

    def finish(self, messages: Sequence[ModelMessage], repair_last_response: bool) -> Pairing:
        """End the walk at the end of ``messages`` (all of them read): the calls still open dangle,
        but the last response's where ``repair_last_response`` is False. Returns this pairing."""
        if self.walked != len(messages) or self.finished:
            raise ValueError("finish() needs every message read, once")
        self.finished = True
        open_calls = self.open_calls
        dangling = self.dangling
        for call_id in _by_first_call(messages, open_calls, self.answered):
            owner = open_calls[call_id]
            dangling.setdefault(owner, []).append(
                Dangling(call_id, 1 + self.extra_open.get(call_id, 0), False)
            )
        if not repair_last_response:
            dangling.pop(self.last_response, None)
        for response_index in dangling:
            self.events.add(response_index)
            self.events.add(response_index + 1)  # its returns go there (or into a new request there)
        return self


def pair(messages: Sequence[ModelMessage], repair_last_response: bool) -> Pairing:
    """Pair results with calls in one pass, as the newest upstream repair does.

    A result answers the oldest open call with its id. A call reusing an id still open from an
    earlier response leaves those older calls dangling. A result whose id no earlier response
    called is an orphan. Calls still open at the end dangle, listed per response in the order
    their ids were first called, as upstream lists them.

    ``open_calls`` maps each id with open calls to the index of the response that made them, and
    only those: it stays small, which keeps the hot lookups in cache (a dict of every id ever
    called would outgrow it on dense damage). ``answered`` holds every id whose calls were
    all answered once, to tell a duplicate result from an orphan. ``extra_open`` counts open
    calls beyond the first, for the rare response that repeats an id.

    The walk is :meth:`Pairing.advance` over every message, then :meth:`Pairing.finish`; a caller
    that gets the history in stretches (a history processor, request after request) advances a
    copy of the walk it kept instead.
    """
    return Pairing().advance(messages).finish(messages, repair_last_response)


def _by_first_call(
    messages: Sequence[ModelMessage], open_calls: dict[str, int], answered: set[str]
) -> list[str]:
    """The ids still open at the end, in the order they were first called (as upstream lists them).

    ``open_calls`` holds them in the order they were last opened, the same order unless an id was
    answered and then called again: only then is the history read again, for the first calls, and
    only until every such id's first call is found. An id never answered was never taken out of
    ``open_calls``, so its place there is its first call's: those not read by then come after all
    that were, in that order.
    """
    reopened = answered.intersection(open_calls)
    if not reopened:
        return list(open_calls)
    first: dict[str, int] = {}
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id in open_calls:
                    call_id = part.tool_call_id
                    if call_id not in first:
                        first[call_id] = len(first)
                        reopened.discard(call_id)
            if not reopened:
                break
    for call_id in open_calls:
        first.setdefault(call_id, len(first))
    return sorted(open_calls, key=first.__getitem__)

"""A history processor's memory: the history it last found healthy, so a request costs its new messages.

Before every model request an agent hands its history processor the history so far. Within a run
that is the previous request's history plus the model's response and the next request; in the next
run of a conversation, the previous run's messages plus the new prompt; the same message objects
each time. Where the default repair would return the last history as it is (its pairing finds no
event), :class:`RepairMemory` keeps that history's messages but the last (the request then being
sent, which the next run may rebuild) and the pairing walk over them, unfinished. A history that
starts with those very messages, unchanged, is then decided by a copy of that walk reading only
what follows: reading a history in stretches learns what reading it in one does
(:meth:`.pairing.Pairing.advance`), so the answer, and the list returned, are the ones the repair
without memory gives.

Why the check of "unchanged" is exact. The walk reads of a message only its class and its
``parts``: each part's class, and a result's ``tool_call_id`` and ``tool_name``, all of which
pydantic-ai's dataclass equality compares (it requires the same class), so equal messages and
equal parts are read alike. The kept messages are compared with the history's first ones as lists
(identity first, so the same objects cost a pointer comparison; a message removed, inserted or
moved, or replaced by one that is not equal, is a change), and then each one's ``parts`` with a
copy of that list taken when it was found healthy, part by part in the same way. That sees every
edit pydantic-ai makes to a stored message between two requests (it replaces a message's ``parts``
list, never edits one in place: the dynamic system prompts re-evaluated at each run's start, the
instruction and settings records of 2.78.0; the ``instructions`` it also rewrites there matter to
the repair only at an event, and a healthy history has none), and every edit a user's processor or
capability makes to the history list or to a message's ``parts`` list, in place or not. What it cannot see is a part
object whose fields are edited in place (``part.tool_call_id = ...``), which pydantic-ai never does
to a stored part; a processor that must, builds a new part (``dataclasses.replace``). Anything
the check does not vouch for is read again: the whole history when its first message is not the
kept one (a reloaded or trimmed history, a processor that drops the oldest messages), so that no
comparison of copies runs there.

Safe to share between concurrent runs (``agent_options`` builds one processor per Agent, and
pydantic-ai runs a sync processor in a worker thread): what is kept is one immutable record, read
once per request and replaced whole; a walk is resumed on a copy, never in place. Two interleaved
conversations only miss each other's record and read their history in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .engine import Engine, event_free_as_is, leaves_as_is

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .pairing import Pairing

__all__ = ["RepairMemory"]


class _Healthy(NamedTuple):
    """A history the default repair returned as it is, but its last message."""

    #: its messages but the last
    messages: list[ModelMessage]
    #: a copy of each one's ``parts`` list as it was then
    parts: list[list[Any]]
    #: the pairing walk over ``messages``, unfinished; only ever advanced on a copy
    walk: Pairing


class RepairMemory:
    """The last history a processor found healthy, to read only what a later history adds to it."""

    __slots__ = ("_first", "_healthy", "walked")

    def __init__(self) -> None:
        self._healthy: _Healthy | None = None
        #: the first message of the last history read in full: one read in full twice is kept
        self._first: object = None
        #: how many messages the last :meth:`as_is` read (a test's proof that the memory served; with
        #: concurrent runs, whichever finished last)
        self.walked = 0

    def forget(self) -> None:
        """Let go of the history kept (it keeps its messages alive): the next one is read in full."""
        self._healthy = None
        self._first = None

    def as_is(
        self, history: Sequence[ModelMessage], engine: Engine
    ) -> tuple[list[ModelMessage] | None, Pairing | None]:
        """Whether ``engine``'s default repair (``repair_last_response=True``, orphans dropped)
        returns ``history`` as it is: ``(list(history), None)`` when it does, else ``(None,
        pairing)``, where ``pairing`` is ``pair(history, True)`` if this read the history in full
        (for the repair to reuse), or None. Raises what the walk raises for an element that is not
        a message."""
        if type(history) is not list or not history or not event_free_as_is(engine):
            self.walked = 0
            return None, None
        from .pairing import Pairing  # imports pydantic-ai: not before a history is read

        size = len(history)
        kept = self._healthy
        if kept is not None and _unchanged(kept, history):
            start, walk = len(kept.messages), kept.walk.copy().advance(history, size - 1)
        else:
            start, walk = 0, Pairing().advance(history, size - 1)
        self.walked = size - start
        done = walk.copy().advance(history).finish(history, True)  # ``walk`` stays unfinished, to keep
        if not start:
            # Kept only when it starts as the last history read in full did (its next request, or
            # the same history again): a history read once, as one reloaded for every run is, is
            # not copied for nothing, nor kept alive until the next one replaces it.
            again, self._first = self._first is history[0], history[0]
            if not again:
                return (list(history), None) if leaves_as_is(done, engine) else (None, done)
        if not leaves_as_is(done, engine):
            return None, None if start else done
        new_parts = [list(message.parts) for message in history[start : size - 1]]
        parts = kept.parts + new_parts if kept is not None and start else new_parts
        self._healthy = _Healthy(history[: size - 1], parts, walk)
        return list(history), None


def _unchanged(kept: _Healthy, history: list[ModelMessage]) -> bool:
    """Whether ``history`` starts with the kept messages, each one's parts as they were (see the module)."""
    size = len(kept.messages)
    if len(history) <= size or (size and history[0] is not kept.messages[0]):
        return False  # shorter, or a new start (a reloaded or trimmed history): no comparison runs
    start = history[:size]
    try:
        return start == kept.messages and [message.parts for message in start] == kept.parts
    except Exception:  # an equal-looking copy's own __eq__ failed (numpy content, say): read it all again
        return False

"""histfix's own repair: the newest upstream behaviour, as one read-only walk and one building walk.

The pairing walk (``pairing``) learns which calls dangle, which results are orphans, and every
index where something must change. The building walk then copies each untouched stretch of the
history in one slice and works message by message only around those indices: it drops orphans,
closes dangling calls, and folds mergeable runs (``folding``), all in one loop. Untouched messages
are passed through as the same objects; the caller's list and messages are never mutated.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)

from .._records.parts import after_results
from .._records.synthesized import SYNTHESIZED_CONTENT, SYNTHESIZED_TOOL_RETURN_METADATA_KEY
from .._release import switches as _compat
from .._release import table
from .._release.probes import field_names
from .._release.switches import has
from .folding import Folder, FoldEvent, new_request
from .pairing import Dangling, Pairing, pair

__all__ = [
    "dangling_calls",
    "repair_walk",
    "return_maker",
]


def _synthesized_return(call: ToolCallPart, stamp: Any, fields: dict[str, Any]) -> ModelRequestPart:
    """The placeholder result for a dangling call, stamped with its response's time, through the
    constructor (``fields``: the release's fixed extras, from :func:`_return_fields`), with the
    call's ``ui_visibility`` where returns have one (what a UI may show of the result)."""
    kind = getattr(call, "tool_kind", None) if has(table.RETURN_TOOL_KIND) else None
    promote = kind is not None and _compat.return_tool_kind_loads(kind)
    if has(table.RETURN_UI_VISIBILITY):
        fields = {**fields, "ui_visibility": getattr(call, "ui_visibility", None)}
    part: ModelRequestPart = ToolReturnPart(
        tool_name=call.tool_name,
        content=SYNTHESIZED_CONTENT,
        tool_call_id=call.tool_call_id,
        metadata={SYNTHESIZED_TOOL_RETURN_METADATA_KEY: True},
        timestamp=stamp,
        **({**fields, "tool_kind": kind} if promote else fields),
    )
    if promote:
        # A request's constructor promotes a part by its tool_kind (2.59.0+): give this one those
        # checks here, once, so it can join a request by cloning (``with_parts``). A return
        # without a tool_kind has nothing to promote.
        (part,) = ModelRequest(parts=[part]).parts
    return part


def _return_fields() -> dict[str, Any]:
    """The fields every synthesized return on the installed release sets besides its call's."""
    return {"outcome": "interrupted"} if has(table.OUTCOME_INTERRUPTED) else {}


@functools.cache
def return_maker() -> Callable[[Iterable[ToolCallPart], Any], list[ModelRequestPart]]:
    """The function a walk makes the synthesized returns of one response's dangling calls with:
    ``make(calls, stamp)``, a return for each call in order, stamped with the response's time.

    ``ToolReturnPart`` is a plain dataclass on every release so far (no ``__post_init__``), so a
    return is one constructor-made template's fields with the call's four (five with
    ``ui_visibility``) set, at two thirds of the constructor's cost (tests/test_synthesized.py
    compares the two on every release). A call whose ``tool_kind`` the release promotes, or a class
    that is no longer plain, takes the constructor. One call makes a response's returns, so the
    walk pays no function call per return.
    """
    fields = _return_fields()
    template = _synthesized_return(ToolCallPart(tool_name="", tool_call_id=""), None, fields)
    own_fields = {field.name for field in dataclasses.fields(ToolReturnPart)}
    base: dict[str, Any] | None = getattr(template, "__dict__", None)  # None: a class with slots
    if (
        hasattr(ToolReturnPart, "__post_init__")
        or base is None
        or base.keys() != own_fields
        # a mutable default the copy would share between returns (the four set below are fresh)
        or any(
            isinstance(value, list | dict | set | bytearray)
            for key, value in base.items()
            if key != "metadata"
        )
    ):
        return lambda calls, stamp: [_synthesized_return(call, stamp, fields) for call in calls]
    plain_fields: dict[str, Any] = base
    new = object.__new__
    # The call's own fields are read as attributes (a getattr per return costs more); where calls
    # have no such field, a return has no kind to promote and the template's ui_visibility (None)
    # is the call's.
    call_fields = field_names(ToolCallPart)
    kinds = has(table.RETURN_TOOL_KIND) and "tool_kind" in call_fields
    visible = has(table.RETURN_UI_VISIBILITY) and "ui_visibility" in call_fields

    def make(calls: Iterable[ToolCallPart], stamp: Any) -> list[ModelRequestPart]:
        made: list[ModelRequestPart] = []
        for call in calls:
            if kinds and call.tool_kind is not None:  # type: ignore[attr-defined,unused-ignore]
                made.append(_synthesized_return(call, stamp, fields))
                continue
            values = plain_fields.copy()
            values["tool_name"] = call.tool_name
            values["tool_call_id"] = call.tool_call_id
            values["metadata"] = {SYNTHESIZED_TOOL_RETURN_METADATA_KEY: True}
            values["timestamp"] = stamp
            if visible:
                values["ui_visibility"] = call.ui_visibility  # type: ignore[attr-defined,unused-ignore]
            part = new(ToolReturnPart)
            part.__dict__ = values
            made.append(part)
        return made

    return make


def dangling_calls(response: ModelResponse, dangling: list[Dangling]) -> list[ToolCallPart]:
    """The response's dangling calls: for each entry, its last ``n`` calls with that id.

    One pass over the response's parts, whatever the number of entries."""
    by_id: dict[str, list[ToolCallPart]] = {}
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            same = by_id.get(part.tool_call_id)
            if same is None:
                by_id[part.tool_call_id] = [part]
            else:
                same.append(part)
    found: list[ToolCallPart] = []
    for entry in dangling:
        found.extend(by_id.get(entry.call_id, [])[-entry.n :])
    return found


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
    after a stretch that ends with nothing pending up to the event before the next one: those
    stretches are copied in one slice. A rule that changes a message must record its index in
    ``pairing.pair``; tests/test_invariant.py checks the fast path against ``every_index=True``
    and fails when a rule forgets its events.
    """
    if pairing is None:
        pairing = pair(messages, repair_last_response)
    size = len(messages)
    events: Collection[int] = range(size) if every_index else pairing.events
    out: list[ModelMessage] = []
    orphans = pairing.orphans
    dangling = pairing.dangling
    scattered = pairing.scattered
    make_returns = return_maker()
    folder = Folder(out, log)
    copied_to = 0  # messages before this index are in ``out``
    for event in sorted(events):
        if event < copied_to:
            continue  # already handled while working through an earlier event
        # Copy the untouched stretch, then work from the event, or from the message before it
        # when the two may end up as one: the same kind (a merge), or a request whose orphans
        # may all go, which brings its neighbours together. A message never merges with an
        # untouched neighbour of another kind.
        joins = event >= size or (
            event > 0 and (messages[event].__class__ is messages[event - 1].__class__ or event in orphans)
        )
        start = max(event - 1 if joins else event, copied_to)
        out += messages[copied_to:start]
        # Work message by message: drop orphans, add the previous response's synthesized returns
        # (they wait in ``closing`` for the next message), and fold.
        closing: list[ModelRequestPart] = []
        index = start
        while index < size:
            message = messages[index]
            index += 1
            if isinstance(message, ModelResponse):
                if closing:  # no request follows the calls: their returns get one of their own
                    folder.request(new_request(closing))
                    closing = []
                calls = dangling.get(index - 1)
                if calls:
                    stamp = message.timestamp
                    closing = make_returns(dangling_calls(message, calls), stamp)
                folder.response(message, index - 1)
            else:
                parts: list[Any] | None = None  # the request's parts, when they change
                lost = orphans.get(index - 1)
                if lost:
                    parts = [part for part in message.parts if id(part) not in lost]
                    if not parts and index != size:
                        continue  # an emptied interior request disappears; its neighbours may fold
                if closing:
                    parts = after_results(message.parts if parts is None else parts, closing)
                    closing = []
                folder.request(message, parts, index - 1, index - 1 in scattered)
            # Past the event, stop at the first index that is not one once nothing is pending: the
            # message there is of the other kind (else it would be an event), so it cannot join
            # the open run, and it is copied as it is.
            if index > event and not closing and index not in events:
                break
        if closing:  # the last response's returns: a request of their own at the end
            folder.request(new_request(closing))
        folder.flush()
        copied_to = index
    out += messages[copied_to:]
    return out

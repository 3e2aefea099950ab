"""Merging consecutive messages, as the last step of the newest upstream repair.

Consecutive requests merge (results first) unless both carry different non-empty instructions;
consecutive responses merge only when no provider produced either. A request left unmerged gets
the parts between its results moved after them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    ToolReturnPart,
)

from .._records.parts import is_result, stays_between_results
from .._release import table
from .._release.switches import has

__all__ = [
    "FoldEvent",
    "Folder",
    "Member",
    "is_synthetic",
    "merged_request",
    "new_request",
    "results_gathered",
    "with_call_id",
    "with_parts",
]

_M = TypeVar("_M", ModelRequest, ModelResponse)

#: The metadata namespace that survives a request merge (upstream since 2.42.0).
_FRAMEWORK_NAMESPACE = "__pydantic_ai__"
#: The key in that namespace of a request written when a run paused for deferred calls (2.78.0): a
#: merge keeps it only when every merged request carries it as ``True``, so that a prompt added after
#: the pause continues the run instead of resuming only the paused calls.
_PAUSE_KEY = "deferred_pause"


def with_parts(message: _M, parts: list[Any]) -> _M:
    """``message`` with other ``parts``, every one of them taken from validated messages of its class.

    The same as ``dataclasses.replace(message, parts=parts)`` for such parts, without its per-field
    work: the message classes are plain dataclasses on every release, and their ``__post_init__``
    (2.59.0+) only re-checks and re-promotes parts, which these parts already went through. Parts
    histfix creates (synthesized returns) must go through the class's constructor instead.
    """
    values = message.__dict__.copy()  # a copied dict given whole: cheaper than filling the new one
    values["parts"] = parts
    clone = object.__new__(type(message))
    clone.__dict__ = values
    return clone


def with_call_id(part: Any, new: str) -> Any:
    """``part`` (a call, result or retry prompt) with another ``tool_call_id``.

    The same as ``dataclasses.replace(part, tool_call_id=new)`` at a fraction of its cost: the part
    classes are plain dataclasses, unfrozen, their fields in ``__dict__``, on every release, and
    their validation has nothing to say about an id (tests/profiles/test_profile_speed.py checks
    both); a part without a ``__dict__`` takes ``replace``."""
    fields = getattr(part, "__dict__", None)
    if fields is None:
        return dataclasses.replace(part, tool_call_id=new)
    values = fields.copy()
    values["tool_call_id"] = new
    clone = object.__new__(type(part))
    clone.__dict__ = values
    return clone


class _RequestShape(NamedTuple):
    """What building a ``ModelRequest`` takes on the installed release, read once for every merge."""

    #: the attributes of a constructor-made request whose every field but ``parts`` holds its plain
    #: default, to copy (a copy shares the class's key table, so it is smaller and quicker to make
    #: than a dict of its own); None where a field has no plain default (a default factory, whose
    #: value a copy would share) or the constructor sets another value: then the constructor runs
    template: dict[str, Any] | None
    #: requests carry a timestamp (``table.REQUEST_TIMESTAMP``)
    stamped: bool
    #: requests carry metadata (``table.REQUEST_METADATA``)
    with_metadata: bool


@functools.cache
def _request_shape() -> _RequestShape:
    made: dict[str, Any] | None = getattr(ModelRequest(parts=[]), "__dict__", None)  # None: slots
    fields = dataclasses.fields(ModelRequest)
    if made is None or made.keys() != {field.name for field in fields}:
        made = None
    else:
        for field in fields:
            plain = field.default is not dataclasses.MISSING and made[field.name] is field.default
            if field.name != "parts" and not plain:
                made = None
                break
    return _RequestShape(made, has(table.REQUEST_TIMESTAMP), has(table.REQUEST_METADATA))


def new_request(parts: list[Any], **fields: Any) -> ModelRequest:
    """``ModelRequest(parts=parts, **fields)`` for parts taken from validated messages (or
    synthesized returns already promoted), at a third of the cost.

    As with ``with_parts``, the constructor's ``__post_init__`` (2.59.0+) would only re-check and
    re-promote such parts; the other fields take their plain defaults. Where the installed class
    has a field without one (a default factory), the constructor runs instead.
    """
    template = _request_shape().template
    if template is None:
        return ModelRequest(parts=parts, **fields)
    values = template.copy()
    if fields:
        values.update(fields)
    values["parts"] = parts
    request = object.__new__(ModelRequest)
    request.__dict__ = values  # a dict given whole: cheaper than filling the instance's own
    return request


def _moves(part: object) -> bool:
    """Sort key: False for parts that keep their place among results, True for those moved after."""
    return not stays_between_results(part)


def results_gathered(parts: Sequence[ModelRequestPart]) -> list[ModelRequestPart] | None:
    """Parts with whatever sits between the first and last result moved after the last one.

    Only the span from the first result to the last changes: a stable sort on ``_moves`` puts
    the results (and tool-availability deltas, which keep their place among them) first and the
    parts they enclosed after, each group in its original order. None when nothing moves.
    """
    where = [i for i, part in enumerate(parts) if is_result(part)]
    if not where:
        return None
    span = parts[where[0] : where[-1] + 1]
    if not any(map(_moves, span)):
        return None
    return [*parts[: where[0]], *sorted(span, key=_moves), *parts[where[-1] + 1 :]]


def is_synthetic(response: ModelResponse) -> bool:
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


def _merged_metadata(requests: Iterable[ModelRequest]) -> dict[str, Any] | None:
    """The metadata of a merge of ``requests``: their framework namespaces, later keys winning, with
    the pause mark only if every one of them is a pause record; None where none has the namespace.

    Upstream's pairwise fold keeps the mark only where both sides have it, so through a run it keeps
    it exactly then."""
    namespace: dict[str, Any] | None = None
    paused = True  # every request so far is a pause record
    for request in requests:
        found = _framework_namespace(request)
        if found is None:
            paused = False
        else:
            namespace = {**(namespace or {}), **found}  # a new dict: the requests' stay as they are
            paused = paused and found.get(_PAUSE_KEY) is True
    if namespace is None:
        return None
    if not paused:
        namespace.pop(_PAUSE_KEY, None)  # an emptied namespace stays, as ``{}``
    return {_FRAMEWORK_NAMESPACE: namespace}


#: A message of an open run as the building walk holds it: the message, its parts when the walk
#: changed them (None: its own), and its input index (-1: a request of synthesized returns).
Member = tuple[Any, "list[Any] | None", int]


def merged_request(
    first: ModelRequest,
    parts: Sequence[Any] | None,
    joined: Sequence[Member],
    scattered: bool,
    returns: Sequence[ModelRequestPart] = (),
) -> ModelRequest:
    """One request from a run of consecutive compatible requests: ``first`` (with ``parts``, where the
    walk changed its own) and the ``joined`` members after it; results first, then the rest.

    Instructions are the first non-empty ones, the timestamp the latest one set; of the metadata
    only the framework namespace survives (:func:`_merged_metadata`). Every other field takes its
    default. ``scattered``: ``first``'s results are gathered first. ``returns`` (the synthesized
    returns of the calls the run answers) go after the first request's results, where
    ``parts.after_results`` puts them: the merge keeps results in order, so that is their place.
    """
    template, stamped, with_metadata = _request_shape()
    head: Sequence[Any] = first.parts if parts is None else parts
    if scattered:
        head = results_gathered(head) or head
    results: list[Any] = []
    rest: list[Any] = []
    for part in head:
        if isinstance(part, ToolReturnPart) or (  # ``is_result`` spelled out: the hot loop
            isinstance(part, RetryPromptPart) and part.tool_name is not None
        ):
            results.append(part)
        else:
            rest.append(part)
    results += returns
    instructions = first.instructions or None
    stamp = first.timestamp if stamped else None
    with_namespace = with_metadata and first.metadata is not None  # most requests have none
    for request, own, _ in joined:
        for part in request.parts if own is None else own:
            if isinstance(part, ToolReturnPart) or (
                isinstance(part, RetryPromptPart) and part.tool_name is not None
            ):
                results.append(part)
            else:
                rest.append(part)
        if instructions is None:
            instructions = request.instructions or None
        if stamped and request.timestamp:
            stamp = request.timestamp
        if with_metadata and not with_namespace:
            with_namespace = request.metadata is not None
    results += rest
    values: dict[str, Any] = {} if template is None else template.copy()
    values["parts"] = results
    values["instructions"] = (
        (joined[-1][0] if joined else first).instructions if instructions is None else instructions
    )
    if stamped:
        values["timestamp"] = stamp
    if with_namespace:
        metadata = _merged_metadata([first, *(request for request, _, _ in joined)])
        if metadata is not None:
            values["metadata"] = metadata
    if template is None:
        return ModelRequest(**values)
    request = object.__new__(ModelRequest)
    request.__dict__ = values
    return request


class FoldEvent(NamedTuple):
    """A merge or a move the folder made: its kind, where it landed in the output, its inputs."""

    kind: str  # "merged_requests", "merged_responses" or "moved_parts"
    output_index: int
    input_indices: tuple[int, ...]


class Folder:
    """Appends messages, merging each run of consecutive compatible ones when the run ends.

    Requests join a run unless both they and the run carry different non-empty instructions;
    responses join only when the run and they are synthetic (no provider, model or response id).
    The run is held as its first message and the members that joined it (``joined``, None while it
    is one message); each member's parts are passed along separately when the walk changed them,
    so a message fixed and then merged is built once, not cloned first.
    """

    __slots__ = (
        "held",
        "held_index",
        "held_instructions",
        "held_parts",
        "held_request",
        "held_scattered",
        "joined",
        "log",
        "out",
    )

    def __init__(self, out: list[ModelMessage], log: list[FoldEvent] | None = None) -> None:
        self.out = out
        self.log = log  # when given, every merge and move is recorded there
        self.held: Any = None  # the open run's first message
        self.held_parts: list[Any] | None = None  # its parts when the walk changed them
        self.held_request = False
        self.held_scattered = False  # a request with other parts between its results
        self.held_instructions: str | None = None  # the request run's first non-empty instructions
        self.held_index = -1  # its input index (-1: a request of synthesized returns)
        self.joined: list[Member] | None = None  # the run's later members

    def request(
        self, message: ModelRequest, parts: list[Any] | None = None, index: int = -1, scattered: bool = False
    ) -> None:
        """Fold a request (``parts``: its parts when the walk changed them)."""
        if self.held is not None:
            if self.held_request:
                instructions = message.instructions
                if not (self.held_instructions and instructions and self.held_instructions != instructions):
                    if self.joined is None:
                        self.joined = []
                    self.joined.append((message, parts, index))
                    if not self.held_instructions:
                        self.held_instructions = instructions
                    return
            self.flush()
        self.held = message
        self.held_parts = parts
        self.held_request = True
        self.held_scattered = scattered
        self.held_instructions = message.instructions
        self.held_index = index

    def response(self, message: ModelResponse, index: int = -1) -> None:
        """Fold a response (responses are only ever folded as they are)."""
        if self.held is not None:
            if not self.held_request and is_synthetic(self.held) and is_synthetic(message):
                if self.joined is None:
                    self.joined = []
                self.joined.append((message, None, index))
                return
            self.flush()
        self.held = message
        self.held_parts = None
        self.held_request = self.held_scattered = False
        self.held_index = index

    def flush(self) -> None:
        """Append the open run as one message: nothing that comes later can join it."""
        first = self.held
        if first is None:
            return
        self.held = None
        joined, self.joined = self.joined, None
        if joined is None and self.held_parts is None and not self.held_scattered:
            self.out.append(first)  # the common case: one message, as it came
        elif joined is None:
            parts = first.parts if self.held_parts is None else self.held_parts
            gathered = results_gathered(parts) if self.held_scattered else None
            if gathered is not None:
                self._record("moved_parts", [self.held_index])
                parts = gathered
            self.out.append(first if parts is first.parts else with_parts(first, parts))
        else:
            indices = [self.held_index, *(index for _, _, index in joined)]
            if self.held_request:
                self._record("merged_requests", indices)
                self.out.append(merged_request(first, self.held_parts, joined, self.held_scattered))
            else:
                self._record("merged_responses", indices)
                parts = [*first.parts, *(part for message, _, _ in joined for part in message.parts)]
                self.out.append(with_parts(first, parts))

    def _record(self, kind: str, indices: list[int]) -> None:
        if self.log is not None:
            self.log.append(FoldEvent(kind, len(self.out), tuple(i for i in indices if i >= 0)))

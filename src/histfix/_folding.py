"""Merging consecutive messages, as the last step of the newest upstream repair.

Consecutive requests merge (results first) unless both carry different non-empty instructions;
consecutive responses merge only when no provider produced either. A request left unmerged gets
the parts between its results moved after them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ModelResponse

from . import _compat
from ._parts import is_result, not_result, stays_between_results

__all__ = ["FoldEvent", "Folder", "is_synthetic", "new_request", "results_gathered", "with_parts"]

_M = TypeVar("_M", ModelRequest, ModelResponse)

#: The metadata namespace that survives a request merge (upstream since 2.42.0).
_FRAMEWORK_NAMESPACE = "__pydantic_ai__"


def with_parts(message: _M, parts: list[Any]) -> _M:
    """``message`` with other ``parts``, every one of them taken from validated messages of its class.

    The same as ``dataclasses.replace(message, parts=parts)`` for such parts, at a fifth of the
    cost: the message classes are plain dataclasses on every release, and their ``__post_init__``
    (2.59.0+) only re-checks and re-promotes parts, which these parts already went through. Parts
    histfix creates (synthesized returns) must go through the class's constructor instead.
    """
    clone = object.__new__(type(message))
    clone.__dict__.update(message.__dict__)
    clone.parts = parts
    return clone


#: The fields ``new_request`` may set; every other field of ``ModelRequest`` takes its default.
_REQUEST_FIELDS_SET = frozenset({"parts", "instructions", "timestamp", "metadata"})


@functools.cache
def _defaults_of_request() -> dict[str, Any] | None:
    """``ModelRequest``'s plain field defaults, or None when a field has no plain default to copy
    (one with a default factory or none at all, outside the fields ``new_request`` sets)."""
    defaults: dict[str, Any] = {}
    for field in dataclasses.fields(ModelRequest):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.name not in _REQUEST_FIELDS_SET:
            return None
    return defaults


def new_request(parts: list[Any], **fields: Any) -> ModelRequest:
    """``ModelRequest(parts=parts, **fields)`` for parts taken from validated messages (or
    synthesized returns already promoted), at a third of the cost.

    As with ``with_parts``, the constructor's ``__post_init__`` (2.59.0+) would only re-check and
    re-promote such parts; the other fields take their plain defaults. Where the installed class
    has a field this cannot default (a default factory), the constructor runs instead.
    """
    defaults = _defaults_of_request()
    if defaults is None:
        return ModelRequest(parts=parts, **fields)
    request = object.__new__(ModelRequest)
    attributes = request.__dict__
    attributes.update(defaults)
    attributes.update(fields)
    attributes["parts"] = parts
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


def _merged_request(run: list[ModelRequest], scattered: bool) -> ModelRequest:
    """One request from a run of consecutive compatible requests: results first, then the rest.

    Instructions are the first non-empty ones, the timestamp the latest one set; of the metadata
    only the framework namespace survives. Every other field takes its default.
    """
    parts = (results_gathered(run[0].parts) if scattered else None) or list(run[0].parts)
    for request in run[1:]:
        parts.extend(request.parts)
    parts.sort(key=not_result)
    instructions = run[-1].instructions
    for request in run:
        if request.instructions:
            instructions = request.instructions
            break
    fields: dict[str, Any] = {"instructions": instructions}
    if _compat.REQUEST_HAS_TIMESTAMP:
        stamp = run[0].timestamp
        for request in reversed(run):
            if request.timestamp:
                stamp = request.timestamp
                break
        fields["timestamp"] = stamp
    if _compat.REQUEST_HAS_METADATA:
        namespaces = [ns for ns in map(_framework_namespace, run) if ns is not None]
        if namespaces:
            fields["metadata"] = {_FRAMEWORK_NAMESPACE: {k: v for ns in namespaces for k, v in ns.items()}}
    return new_request(parts, **fields)


class FoldEvent(NamedTuple):
    """A merge or a move the folder made: its kind, where it landed in the output, its inputs."""

    kind: str  # "merged_requests", "merged_responses" or "moved_parts"
    output_index: int
    input_indices: tuple[int, ...]


class Folder:
    """Appends messages, merging each run of consecutive compatible ones when the run ends.

    Requests join a run unless both they and the run carry different non-empty instructions;
    responses join only when the run and they are synthetic (no provider, model or response id).
    """

    __slots__ = ("indices", "instructions", "log", "out", "requests", "responses", "scattered")

    def __init__(self, out: list[ModelMessage], log: list[FoldEvent] | None = None) -> None:
        self.out = out
        self.log = log  # when given, every merge and move is recorded there
        self.requests: list[ModelRequest] = []
        self.responses: list[ModelResponse] = []
        self.indices: list[int] = []  # input indices of the open run (-1: a synthesized request)
        self.instructions: str | None = None  # the request run's first non-empty instructions
        self.scattered = False  # whether the run's first request has parts between its results

    def request(self, message: ModelRequest, scattered: bool = False, index: int = -1) -> None:
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
        self.indices.append(index)

    def response(self, message: ModelResponse, index: int = -1) -> None:
        if self.requests:
            self._flush_requests()
        elif self.responses and not (is_synthetic(self.responses[0]) and is_synthetic(message)):
            self._flush_responses()
        self.responses.append(message)
        self.indices.append(index)

    def flush(self) -> None:
        """Append whatever run is still open: nothing that comes later can join it."""
        self._flush_requests()
        self._flush_responses()

    def _record(self, kind: str, indices: list[int]) -> None:
        if self.log is not None:
            self.log.append(FoldEvent(kind, len(self.out), tuple(i for i in indices if i >= 0)))

    def _flush_requests(self) -> None:
        run = self.requests
        if not run:
            return
        if len(run) == 1:
            only = run[0]
            gathered = results_gathered(only.parts) if self.scattered else None
            if gathered is not None:
                self._record("moved_parts", self.indices)
            self.out.append(only if gathered is None else with_parts(only, gathered))
        else:
            self._record("merged_requests", self.indices)
            self.out.append(_merged_request(run, self.scattered))
        self.requests = []
        self.indices = []
        self.instructions = None

    def _flush_responses(self) -> None:
        run = self.responses
        if not run:
            return
        if len(run) == 1:
            self.out.append(run[0])
        else:
            self._record("merged_responses", self.indices)
            self.out.append(with_parts(run[0], [p for r in run for p in r.parts]))
        self.responses = []
        self.indices = []

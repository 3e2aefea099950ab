"""What histfix needs to know about a part, in one place (imports pydantic-ai)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard

from pydantic_ai.messages import RetryPromptPart, ToolReturnPart

from .._release import switches as _compat

__all__ = ["NATIVE_KINDS", "after_results", "is_result", "native_kind", "not_result", "stays_between_results"]

_DELTA = _compat.delta_part()


#: The ``part_kind`` of a provider's native (server-side) tool call and of its return: the parts are
#: named Builtin* up to 2.x and Native* later, but the JSON kind is the same on every release.
NATIVE_KINDS = ("builtin-tool-call", "builtin-tool-return")


def native_kind(part: object) -> str:
    """``builtin-tool-call``/``builtin-tool-return`` for a native tool part (or its class), else ''."""
    kind = getattr(part, "part_kind", "")
    return kind if kind in NATIVE_KINDS else ""


def is_result(part: object) -> TypeGuard[ToolReturnPart | RetryPromptPart]:
    """A part that answers a regular tool call.

    A tool-less ``RetryPromptPart`` is feedback, not a result: from 2.60.0 it loads as a
    ``RetryFeedbackPart``, which the newest repair never moves or matches. Native (builtin)
    tool returns are siblings of ``ToolReturnPart``, not subclasses, so they never count.
    """
    return isinstance(part, ToolReturnPart) or (
        isinstance(part, RetryPromptPart) and part.tool_name is not None
    )


def not_result(part: object) -> bool:
    """Sort key that puts results first (a stable sort keeps every other order).

    ``is_result`` spelled out, not called: a merge sorts every part of the run by this key.
    """
    return not (
        isinstance(part, ToolReturnPart) or (isinstance(part, RetryPromptPart) and part.tool_name is not None)
    )


def stays_between_results(part: object) -> bool:
    """Results, and tool-availability deltas (2.23.0+), which keep their place among results."""
    return is_result(part) or (_DELTA is not None and isinstance(part, _DELTA))


def after_results(parts: Sequence[Any], inserted: Sequence[Any]) -> list[Any]:
    """``inserted`` straight after the last result in ``parts`` (at the start if there is none): where
    a synthesized return or a moved result joins a request, so that the results stay together."""
    at = len(parts)
    while at and not is_result(parts[at - 1]):
        at -= 1
    return [*parts[:at], *inserted, *parts[at:]]

"""Tool call args a model class cannot send: a string that is not a JSON object (a cut stream)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import PYDANTIC_AI

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "ARGS_WORDING",
    "RULES",
    "detect_tool_args_sendable",
    "tool_args_sendable",
]

#: pydantic-ai's own error (the request never leaves the client), as 1.0.0 raises it.
ARGS_WORDING = dict.fromkeys(("anthropic", "gemini", "bedrock"), PYDANTIC_AI["args_not_object"])


def _unsendable_args(history: Sequence[ModelMessage], scan: Scan) -> list[tuple[int, int, str]]:
    """(message, part, error) for every call whose string args are not a JSON object, where the
    release's ``args_as_dict`` raises on them (without ``table.ARGS_AS_DICT_TOLERATES_INVALID``)."""
    from pydantic_ai.messages import BaseToolCallPart, ModelResponse
    from pydantic_core import from_json

    if has(table.ARGS_AS_DICT_TOLERATES_INVALID):
        return []
    facts = scan.survey(history)
    calls = facts.classes(BaseToolCallPart)
    if not any(  # the cheap early exit: no call in any message holds args as a string
        map(isinstance, map(attrgetter("args"), compress(facts.flat, facts.selected(calls))), repeat(str))
    ):
        return []
    found = []
    for i, message in enumerate(history):
        if not isinstance(message, ModelResponse):
            continue
        for j, part in enumerate(message.parts):
            if isinstance(part, BaseToolCallPart) and isinstance(part.args, str) and part.args:
                try:
                    parsed = from_json(part.args)
                except ValueError as error:
                    found.append((i, j, str(error)))
                    continue
                if not isinstance(parsed, dict):
                    found.append((i, j, "args should be a dict"))
    return found


def tool_args_sendable(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Before ``table.ARGS_AS_DICT_TOLERATES_INVALID``, AnthropicModel, GoogleModel and
    BedrockConverseModel raise on args that are not a JSON object (a truncated stream) before sending
    (``ValueError: EOF while parsing``); such args are kept whole as ``{'INVALID_JSON': raw}``, what
    that release sends itself."""
    from dataclasses import replace

    from ..._repair.folding import with_parts

    found = _unsendable_args(history, scan)
    if not found:
        return history, []
    out = list(history)
    changes = []
    for i, j, error in found:
        response: Any = out[i]
        part: Any = response.parts[j]
        raw = str(part.args)
        parts = list(response.parts)
        parts[j] = replace(part, args={"INVALID_JSON": raw})
        out[i] = with_parts(response, parts)
        changes.append(
            Change(
                "wrapped_tool_args",
                i,
                f"call {getattr(part, 'tool_call_id', None)!r} ({getattr(part, 'tool_name', None)}): its args are "
                f"not a JSON object ({error}); kept whole under 'INVALID_JSON'",
                getattr(part, "tool_call_id", None),
                getattr(part, "tool_name", None),
                preview=raw,
            )
        )
    return out, changes


def detect_tool_args_sendable(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    found = []
    for i, j, error in _unsendable_args(history, scan):
        part = history[i].parts[j]
        description = f"call args are not a JSON object, which this release cannot send: {error}"
        found.append(
            problem(
                "invalid_tool_args",
                ARGS_WORDING,
                target,
                at=i,
                part_index=j,
                part=part,
                description=description,
                error=error,
            )
        )
    return found


#: This module's rule.
RULES: tuple[ProfileRule, ...] = (
    rule(
        "tool_args_sendable",
        "after",
        tool_args_sendable,
        detect_tool_args_sendable,
        ARGS_WORDING,
        why=(
            "args that are not a JSON object: the Anthropic, Gemini and Bedrock model classes "
            f"before {table.ARGS_AS_DICT_TOLERATES_INVALID.release} raise ValueError before sending (their "
            "models/*.py)"
        ),
    ),
)

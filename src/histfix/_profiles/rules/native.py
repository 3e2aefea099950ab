"""Provider-native (server) tool parts Anthropic refuses: a call without its result block, a return
under a name the release cannot send.

Pure, returning the list it was given and no changes when nothing applies; what it removes is
reported with its content. Sources: Anthropic's server-tool documentation, and the installed
releases' serializers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._records.parts import native_kind
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, preview, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse

__all__ = [
    "NATIVE_CALLS_APIS",
    "NATIVE_CALL_WORDING",
    "RULES",
    "detect_native_calls_paired",
    "native_calls_paired",
]

NATIVE_CALL_WORDING = said({"anthropic": "native_unpaired"})

NATIVE_CALLS_APIS = frozenset(NATIVE_CALL_WORDING)

#: Before ``table.NATIVE_RETURN_NAMED_BY_TOOL``, AnthropicModel sends a native return only under the
#: wire block's name (``web_search_tool_result``) and raises ``ValueError: Unsupported tool name`` for
#: the tool's own name, which that release and later store.
_WIRE_RETURN_NAMES = {"web_search": "web_search_tool_result", "code_execution": "code_execution_tool_result"}


def _anthropic(part: object) -> bool:
    return getattr(part, "provider_name", None) == "anthropic"


def _unsendable_natives(response: ModelResponse) -> set[int]:
    """Indices of Anthropic native calls without a sendable result in the same response, and of those
    calls' returns: a result block needs a dict or list (Anthropic's result shapes; from
    ``table.NATIVE_RETURN_NAMED_BY_TOOL`` nothing else is sent, so the call would go out alone). A call with no return at all is in flight, which
    the API refuses for code execution only (recorded: web_search under pause_turn got 200)."""
    parts: list[Any] = list(response.parts)  # native part classes differ by release: duck-typed
    returns: dict[str, list[int]] = {}
    for index, part in enumerate(parts):
        if native_kind(part) == "builtin-tool-return" and _anthropic(part):
            returns.setdefault(part.tool_call_id, []).append(index)
    found: set[int] = set()
    for index, part in enumerate(parts):
        if native_kind(part) != "builtin-tool-call" or not _anthropic(part):
            continue
        mine = returns.get(part.tool_call_id, [])
        if not mine and "code_execution" not in str(part.tool_name):
            continue  # in flight (no return yet): the API takes every server tool so but code execution
        if not any(isinstance(parts[r].content, (dict, list)) for r in mine):
            found.add(index)
            found.update(mine)
    return found


def _any_native(history: Sequence[ModelMessage], scan: Scan) -> bool:
    """The cheap early exit: whether any message holds a native part."""
    return any(native_kind(kind) for kind in scan.survey(history).part_classes)


def native_calls_paired(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic server_tool_use_without_result (pydantic-ai#6401): releases up
    to 2.30 send a native call whose result block is missing (2.68 drops it from the wire itself), so
    a code execution call with no return goes, and any call with a return no release can send goes
    with it (other server tools in flight are kept: the API accepts them); before
    ``table.NATIVE_RETURN_NAMED_BY_TOOL``, a native return is renamed to the wire name those releases
    require (they raise on the tool's own name)."""
    from pydantic_ai.messages import ModelResponse

    if not _any_native(history, scan):
        return history, []
    rename = not has(table.NATIVE_RETURN_NAMED_BY_TOOL)
    fixed: list[ModelMessage] = []
    changes: list[Change] = []
    for index, message in enumerate(history):
        if not isinstance(message, ModelResponse) or not any(map(native_kind, message.parts)):
            fixed.append(message)
            continue
        gone = _unsendable_natives(message)
        given: list[Any] = list(message.parts)
        parts: list[Any] = []
        for at, part in enumerate(given):
            if at in gone:
                what = "call" if native_kind(part) == "builtin-tool-call" else "return"
                content = part.args if what == "call" else part.content
                changes.append(
                    Change(
                        "dropped_native",
                        index,
                        f"dropped native {what} {part.tool_call_id!r} ({part.tool_name}): its call has no "
                        "result block the API accepts in the same response",
                        part.tool_call_id,
                        part.tool_name,
                        preview=preview(content),
                    )
                )
                continue
            if rename and native_kind(part) == "builtin-tool-return" and part.tool_name in _WIRE_RETURN_NAMES:
                wire = _WIRE_RETURN_NAMES[part.tool_name]
                changes.append(
                    Change(
                        "renamed_native_return",
                        index,
                        f"native return {part.tool_call_id!r} named {wire!r}, the name this release sends",
                        part.tool_call_id,
                        part.tool_name,
                    )
                )
                part = dataclasses.replace(part, tool_name=wire)  # noqa: PLW2901
            parts.append(part)
        same = len(parts) == len(message.parts) and all(
            a is b for a, b in zip(parts, message.parts, strict=True)
        )
        fixed.append(message if same else dataclasses.replace(message, parts=parts))
    return (fixed, changes) if changes else (history, [])


def detect_native_calls_paired(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ModelResponse

    if not _any_native(history, scan):
        return []
    found: list[Finding] = []
    for index, message in enumerate(history):
        if not isinstance(message, ModelResponse):
            continue
        given: list[Any] = list(message.parts)
        for at in sorted(_unsendable_natives(message)):
            part = given[at]
            if native_kind(part) == "builtin-tool-call":
                found.append(
                    problem(
                        "unpaired_native_call",
                        NATIVE_CALL_WORDING,
                        target,
                        at=index,
                        description=f"native call {part.tool_call_id!r} ({part.tool_name}) has no result "
                        "block in its response",
                        name=part.tool_name,
                        id=part.tool_call_id,
                    )
                )
    return found


#: This module's rule.
RULES: tuple[ProfileRule, ...] = (
    rule(
        "native_calls_paired",
        "after",
        native_calls_paired,
        detect_native_calls_paired,
        NATIVE_CALL_WORDING,
        why="Anthropic: a code execution call without its result block in the same response "
        f"(pydantic-ai#6401; other server tools in flight are accepted); before "
        f"{table.NATIVE_RETURN_NAMED_BY_TOOL.release} AnthropicModel sends a return only under its wire name "
        "(models/anthropic.py)",
    ),
)

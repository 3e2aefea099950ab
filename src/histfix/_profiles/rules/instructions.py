"""Where OpenAI Chat and Mistral put the instructions: never between a call and its results.

On :data:`BY_COUNT` (``table.INSTRUCTIONS_AT_SYSTEM_COUNT``), OpenAIChatModel and MistralModel insert the agent's instructions as a system
message at index N of the wire messages, N being the number of system messages anywhere in the
history: right after the system prompts when they all lead, but anywhere when a system prompt
comes later (a history processor or a spliced history puts one there). When message N is a tool
message, the instructions land between a call and its results (OpenAI Chat
tool_calls_without_response, Mistral unexpected_tool_role); for Mistral also right after a tool
message (user_after_tool: MistralModel adds its assistant message only when a user message follows
the tool message directly). The releases before and after insert them after the leading system
messages.

The pass, only where the insertion would land so: move every system prompt to the front of the
first request (order kept, each move reported with its text), which is where the release expects
them, or into a request of their own before a history that opens on a response; a request left
empty by the move goes. The history's instructions are unknown when repairing
(they come from the agent at run time), so it assumes there are some. Pure: it returns the list
it was given and no changes when nothing applies.

From ``table.FRAMING_ANNOUNCED`` the same wire rule meets pydantic-ai's framing announcement: for a model whose profile has
no inline system prompts (2.78.0's CloudflareChatModel, gpt-oss), ``Model.prepare_messages`` puts a
system prompt saying what its ``<system>`` blocks mean at the front of the first request, once the
history has a mid-conversation system prompt, a capability part or a framed summary and the agent has
instructions. In a history that opens on a response with tool calls, the first request holds their
results, and OpenAIChatModel sends that system message between the calls and their tool messages
(tool_calls_without_response). ``announcement_placed`` puts :data:`.rule.STARTER_PROMPT` first, so the
first request opens the history (as starts_with_user does for the APIs that want the user first). What
asks for the announcement (the model's profile, the agent's instructions, text resembling a frame) is
unknown when repairing, so it assumes it is asked for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has
from ..rule import STARTER_PROMPT, Finding, ProfileRule, preview, problem, rule, starter_request
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "ANNOUNCEMENT_APIS",
    "BY_COUNT",
    "INSTRUCTIONS_APIS",
    "RULES",
    "announcement_placed",
    "detect_announcement_placed",
    "detect_instructions_placed",
    "instructions_placed",
]

#: The releases whose OpenAIChatModel and MistralModel place the instructions by the count of system messages.
BY_COUNT = table.span(table.INSTRUCTIONS_AT_SYSTEM_COUNT.release, table.INSTRUCTIONS_AT_SYSTEM_COUNT.until)
#: The APIs whose model class counts system messages to place the instructions (on some releases).
INSTRUCTIONS_APIS = frozenset({"openai-chat", "mistral"})
#: Where landing right after a tool message is refused too (Mistral user_after_tool).
_AFTER_TOOL_REFUSED = frozenset({"mistral"})
#: The APIs whose model class sends the framing announcement where it stands in the first request (a
#: system message: OpenAI Chat; the others lift the first request's opening system prompts into their
#: system field, and MistralModel's profile always takes inline system prompts, so it gets none).
ANNOUNCEMENT_APIS = frozenset({"openai-chat"})
ANNOUNCEMENT_WORDING = said({"openai-chat": "no_response"})


def _system(part: object) -> bool:
    return getattr(part, "part_kind", "") == "system-prompt"


def _placed_by_count() -> bool:
    """Whether the installed model classes place the instructions by the count of system messages."""

    return has(table.INSTRUCTIONS_AT_SYSTEM_COUNT)


def _roles(history: Sequence[ModelMessage]) -> list[str]:
    """The wire roles the two model classes send, one message per request part and per response."""
    roles = []
    for message in history:
        if message.kind == "response":
            roles.append("assistant")
            continue
        for part in message.parts:
            kind = getattr(part, "part_kind", "")
            if kind == "system-prompt":
                roles.append("system")
            elif kind == "tool-return" or (kind == "retry-prompt" and getattr(part, "tool_name", None)):
                roles.append("tool")
            else:
                roles.append("user")
    return roles


def _misplaced(history: Sequence[ModelMessage], target: ProviderTarget) -> int | None:
    """The wire index the instructions would land at when that is between a call and its results
    (or, for Mistral, right after a tool message); None when they land harmlessly."""
    roles = _roles(history)
    count = roles.count("system")
    if count == 0 or all(role == "system" for role in roles[:count]):
        return None
    after_tool = bool(_AFTER_TOOL_REFUSED & set(target.apis))
    landing = roles[count] if count < len(roles) else None
    if landing == "tool" or (after_tool and roles[count - 1] == "tool"):
        return count
    return None


def instructions_placed(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """OpenAI Chat tool_calls_without_response / Mistral unexpected_tool_role, user_after_tool on
    :data:`BY_COUNT`: where the instructions would land inside a tool exchange, the system prompts move
    to the front of the first request (each move reported), so they land after them."""
    if not _placed_by_count() or _misplaced(history, target) is None:
        return history, []
    opens_with_request = history[0].kind == "request"
    moved: list[Any] = []
    changes: list[Change] = []
    fixed: list[ModelMessage] = []
    for index, message in enumerate(history):
        if message.kind != "request" or (index == 0 and opens_with_request):
            fixed.append(message)
            continue
        systems: list[Any] = [part for part in message.parts if _system(part)]
        if not systems:
            fixed.append(message)
            continue
        moved.extend(systems)
        changes.extend(
            Change(
                "moved_system_prompt",
                index,
                f"moved a system prompt from messages[{index}] to the front of the history: {target.name}'s model "
                "class on this release puts the instructions after as many messages as there are system prompts, "
                "which would land them inside a tool call's exchange"
                + ("" if len(systems) < len(message.parts) else " (the request, left empty, is dropped)"),
                preview=preview(part.content),
            )
            for part in systems
        )
        rest = [part for part in message.parts if not _system(part)]
        if rest:
            fixed.append(dataclasses.replace(message, parts=rest))
    if not opens_with_request:
        from pydantic_ai.messages import ModelRequest

        return [ModelRequest(parts=moved), *fixed], changes  # a history opening on a response
    first = history[0]
    leading = [part for part in first.parts if _system(part)]
    others = [part for part in first.parts if not _system(part)]
    fixed[0] = dataclasses.replace(first, parts=[*leading, *moved, *others])  # type: ignore[arg-type]
    return fixed, changes


def detect_instructions_placed(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """The request whose system prompt would make the instructions land inside a tool exchange (no
    provider wording: the refusal names the call or role the instructions displace)."""
    if not _placed_by_count() or _misplaced(history, target) is None:
        return []
    later = next(
        (
            index
            for index, message in enumerate(history)
            if index > 0 and message.kind == "request" and any(map(_system, message.parts))
        ),
        0,
    )
    return [
        problem(
            "misplaced_instructions",
            {},
            target,
            at=later,
            apis=INSTRUCTIONS_APIS,
            description="a system prompt after the first turn: this release's model class puts the instructions "
            "after as many messages as there are system prompts, which lands them between a tool call and its results",
        )
    ]


def _announcement_inside_calls(history: Sequence[ModelMessage], target: ProviderTarget) -> bool:
    """Whether the installed release may put its framing announcement between the history's opening
    calls and their results: the history opens on a response with a tool call, so the first request
    holds their results."""

    if not history or history[0].kind != "response":
        return False
    return has(table.FRAMING_ANNOUNCED) and any(
        getattr(part, "part_kind", "") == "tool-call" for part in history[0].parts
    )


def announcement_placed(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """OpenAI Chat tool_calls_without_response from ``table.FRAMING_ANNOUNCED``: a history opening on a response with tool
    calls gets :data:`.rule.STARTER_PROMPT` first, so pydantic-ai's framing announcement opens the history
    instead of landing between those calls and their results."""
    if not _announcement_inside_calls(history, target):
        return history, []
    opened = starter_request(history[0])  # type: ignore[arg-type]  # a response: _announcement_inside_calls
    description = (
        f"the history starts with a response with tool calls: put the fixed prompt {STARTER_PROMPT!r} before "
        f"it, so that the system message {target.name}'s model class may add at the front of the first request "
        "does not land between those calls and their results"
    )
    return [opened, *history], [Change("inserted_prompt", 0, description)]


def detect_announcement_placed(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    if not _announcement_inside_calls(history, target):
        return []
    calls = [part for part in history[0].parts if getattr(part, "part_kind", "") == "tool-call"]
    ids = ", ".join(str(getattr(part, "tool_call_id", "")) for part in calls)
    return [
        problem(
            "misplaced_announcement",
            ANNOUNCEMENT_WORDING,
            target,
            at=0,
            description="the history opens on a response with tool calls: for a model without inline system "
            "prompts, this release puts a system message at the front of the first request, between those "
            "calls and their results",
            ids=ids,
        )
    ]


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "announcement_placed",
        "after",
        announcement_placed,
        detect_announcement_placed,
        ANNOUNCEMENT_WORDING,
        why="pydantic-ai's framing announcement inside a tool exchange, rejected by OpenAI Chat "
        f"(pydantic-ai#562): from {table.FRAMING_ANNOUNCED.release} Model.prepare_messages puts it at the front of the first "
        "request, after the opening response of a history that starts with tool calls (its "
        "models/__init__.py)",
    ),
    rule(
        "instructions_placed",
        "after",
        instructions_placed,
        detect_instructions_placed,
        {},
        apis=INSTRUCTIONS_APIS,
        why="the instructions inside a tool exchange, rejected by OpenAI Chat (pydantic-ai#562) "
        f"and Mistral (its role-order error): {BY_COUNT} OpenAIChatModel and MistralModel "
        "place them after as many messages as there are system prompts (their models/*.py)",
    ),
)

"""A response's function calls kept together on the wire, for servers that read them as one group.

OpenAIResponsesModel sends a response's parts as input items in part order, so a response that
interleaves its tool calls with thinking or text (``[thinking, call a, call b, thinking, call c]``)
goes out with an assistant or reasoning item between ``call b`` and ``call c``, and all outputs after
``call c``. OpenAI itself accepts that (an output only has to come after its call), but
Responses-compatible servers that read a run of calls and outputs as one group refuse the calls
before the break: "No tool output found for tool call call-a." (pydantic-ai#7430, observed with a
DeepSeek model; every release that sends a response's text or thinking does it, 1.0.0-2.68.0).
The typed history is sound (every call has its result), so the default repair rightly leaves it.

The pass, only where the target names such a model (``openai-responses:deepseek-...``, or a
FallbackModel holding one): in each response where a function call is followed by a part that is
not a tool part, the function calls move after the response's other parts, in their own order.
Nothing is added or dropped; OpenAI's own models are left alone, whose reasoning items must stay
right before the item they precede (a FallbackModel that also holds one gets that rule's pass after
this one, so a reasoning item the move leaves without its follower is sent as text). Where only such
servers are named, the OpenAI reasoning rule is not theirs and its pass does not run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..rule import Finding, ProfileRule, problem, replaced
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "CALL_GROUP_APIS",
    "CALL_GROUP_WORDING",
    "call_group_rules",
    "calls_grouped",
    "detect_calls_grouped",
]

CALL_GROUP_WORDING = said({"openai-responses": "no_output_grouped"})
CALL_GROUP_APIS = frozenset(CALL_GROUP_WORDING)
#: Model-name prefixes of Responses-compatible servers recorded reading calls and outputs as one run.
_GROUPING_FAMILIES = ("deepseek",)


def _grouping(name: str) -> bool:
    return name.lower().rpartition("/")[2].startswith(_GROUPING_FAMILIES)


def groups_calls(target: ProviderTarget) -> bool:
    """Whether the target names a Responses model served by a server that groups calls and outputs."""
    return any(api in CALL_GROUP_APIS and _grouping(name) for api, name in target.models)


def only_grouping_servers(target: ProviderTarget) -> bool:
    """Whether every Responses model the target names is served by such a server (OpenAI's own
    rules, such as a reasoning item's following item, are then not the server's)."""
    named = [name for api, name in target.models if api in CALL_GROUP_APIS]
    return bool(named) and all(map(_grouping, named))


def _split_calls(parts: Sequence[Any], call_class: type[Any], thinking_sent: bool) -> bool:
    """Whether a function call is followed by a part the wire sends as an item of another kind
    (text, thinking where the release sends it, a file): tool parts (function or native calls and
    returns) keep the run."""
    seen_call = False
    for part in parts:
        kind = str(getattr(part, "part_kind", ""))
        if isinstance(part, call_class):
            seen_call = True
        elif seen_call and "tool" not in kind and (thinking_sent or kind != "thinking"):
            return True
    return False


def calls_grouped(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Each response whose function calls other items would split: its calls moved after the rest."""
    if not groups_calls(target):
        return history, []
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    from ..._release import switches as _compat

    thinking_sent = _compat.thinking_sent()
    fixed: list[ModelMessage] = []
    changes: list[Change] = []
    for index, message in enumerate(history):
        if isinstance(message, ModelResponse) and _split_calls(message.parts, ToolCallPart, thinking_sent):
            calls = [part for part in message.parts if isinstance(part, ToolCallPart)]
            rest = [part for part in message.parts if not isinstance(part, ToolCallPart)]
            fixed.append(replaced(message, parts=[*rest, *calls]))
            changes.append(
                Change(
                    "moved_parts",
                    index,
                    "moved this response's tool calls after its other parts (this model's server reads a "
                    "run of calls and their outputs as one group, which text or thinking between calls splits)",
                    calls[0].tool_call_id,
                )
            )
        else:
            fixed.append(message)
    return (fixed, changes) if changes else (history, [])


def detect_calls_grouped(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """Each response the pass would reorder, named by its first call."""
    _, changes = calls_grouped(list(history), target, scan)
    return [
        problem(
            "split_calls",
            CALL_GROUP_WORDING,
            target,
            at=change.message_index,
            description="text or thinking between this response's tool calls splits them from their "
            "outputs on the wire, which this model's server refuses",
            call_id=change.tool_call_id,
        )
        for change in changes
    ]


def call_group_rules() -> tuple[ProfileRule, ...]:
    return (
        ProfileRule(
            "calls_grouped",
            CALL_GROUP_APIS,
            "Responses-compatible servers that read a response's calls as one run (DeepSeek): text or "
            "thinking between them (pydantic-ai#7430); OpenAI's own models accept the split",
            "after",
            calls_grouped,
            detect_calls_grouped,
            CALL_GROUP_WORDING,
        ),
    )

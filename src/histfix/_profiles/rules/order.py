"""Parts and turns in an order the wire refuses: a part before a request's tool results, two
responses in a row, and (for servers that read them as one group) a response's calls split apart.

``calls_grouped``: OpenAIResponsesModel sends a response's parts as input items in part order, so a
response that interleaves its tool calls with thinking or text (``[thinking, call a, call b,
thinking, call c]``) goes out with an assistant or reasoning item between ``call b`` and ``call c``,
and all outputs after ``call c``. OpenAI itself accepts that (an output only has to come after its
call), but Responses-compatible servers that read a run of calls and outputs as one group refuse the
calls before the break: "No tool output found for tool call call-a." (pydantic-ai#7430, observed
with a DeepSeek model; every release that sends a response's text or thinking does it,
1.0.0-2.68.0). The typed history is sound (every call has its result), so the default repair rightly
leaves it. The pass, only where the target names such a model (``openai-responses:deepseek-...``,
or a FallbackModel holding one): in each response where a function call is followed by a part that
is not a tool part, the function calls move after the response's other parts, in their own order.
Nothing is added or dropped; OpenAI's own models are left alone, whose reasoning items must stay
right before the item they precede (a FallbackModel that also holds one gets ``reasoning_followed``
too, so a reasoning item the move leaves without its follower is sent as text). Where only such
servers are named, the OpenAI reasoning rule is not theirs and its pass does not run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, problem, replaced, rule
from ..scan import Scan
from ..targets import ProviderTarget, groups_calls
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest

__all__ = [
    "ALTERNATION_APIS",
    "ALTERNATION_WORDING",
    "CALL_GROUP_APIS",
    "CALL_GROUP_WORDING",
    "RESULTS_FIRST_APIS",
    "RESULTS_FIRST_WORDING",
    "RULES",
    "alternating_roles",
    "calls_grouped",
    "detect_alternating_roles",
    "detect_calls_grouped",
    "detect_results_first",
    "results_first",
]

RESULTS_FIRST_WORDING = said(
    {"anthropic": "result_first", "bedrock": "first", "openai-chat": "no_response", "mistral": "tool_role"},
    role="user",
)

RESULTS_FIRST_APIS = frozenset(RESULTS_FIRST_WORDING)

ALTERNATION_WORDING = said({"gemini": "call_position", "bedrock": "alternate"})

ALTERNATION_APIS = frozenset(ALTERNATION_WORDING)


def _results_late(request: ModelRequest, is_result: Callable[[object], bool]) -> bool:
    """Whether a result follows some other part in the request (a one-part request never has one)."""
    parts = request.parts
    if len(parts) < 2:
        return False
    other = False
    for part in parts:
        if not is_result(part):
            other = True
        elif other:
            return True
    return False


def results_first(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic tool_result_first (apify/tester-mcp-client#12), Bedrock tool_results_first (langchain-aws#451), OpenAI Chat and
    Mistral (a user message between the call and its tool messages): releases before
    ``table.RESULTS_SENT_FIRST`` send a prompt, system prompt or summary before the results; from it
    ``Model.prepare_messages`` reorders. Putting results first gives the same wire on every release."""
    from pydantic_ai.messages import ModelRequest

    from ..._records.parts import is_result, not_result

    changes: list[Change] = []
    fixed: list[ModelMessage] | None = None

    for index in scan.survey(history).several_parts():  # a one-part request never has a late result
        message = history[index]
        if isinstance(message, ModelRequest) and _results_late(message, is_result):
            if fixed is None:
                fixed = list(history)
            fixed[index] = replaced(message, parts=sorted(message.parts, key=not_result))
            changes.append(
                Change("moved_parts", index, "moved the tool results before the request's other parts")
            )
    return (history, []) if fixed is None else (fixed, changes)


def detect_results_first(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ModelRequest

    from ..._records.parts import is_result

    found: list[Finding] = []
    for index in scan.survey(history).several_parts():  # as the pass: a one-part request has none
        message = history[index]
        if not isinstance(message, ModelRequest) or not _results_late(message, is_result):
            continue
        results = [(at, part) for at, part in enumerate(message.parts) if is_result(part)]
        late = next(at for at, _ in results if any(not is_result(p) for p in message.parts[:at]))
        found.append(
            problem(
                "results_not_first",
                RESULTS_FIRST_WORDING,
                target,
                at=index,
                description="a prompt or other part comes before the tool results in this request "
                f"(releases before {table.RESULTS_SENT_FIRST.release} send it in that order)",
                n=index,
                m=late,
                count=len(results),
                ids=", ".join(str(part.tool_call_id) for _, part in results),
            )
        )
    return found


def alternating_roles(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock alternate_roles (dify#9294): two responses in a row (the default repair merges only
    responses no provider produced) become one, the parts of both in order, the first's fields."""
    from pydantic_ai.messages import ModelResponse

    if not scan.survey(history).consecutive_responses():
        return history, []  # the cheap early exit
    fixed: list[ModelMessage] = []
    changes: list[Change] = []
    run: list[int] = []
    for index, message in enumerate(history):
        previous = fixed[-1] if fixed else None
        if isinstance(message, ModelResponse) and isinstance(previous, ModelResponse):
            fixed[-1] = replaced(previous, parts=[*previous.parts, *message.parts])
            run.append(index)
            continue
        _close_run(run, changes)
        run = [index]
        fixed.append(message)
    _close_run(run, changes)
    return fixed, changes


def _close_run(run: list[int], changes: list[Change]) -> None:
    if len(run) > 1:
        changes.append(
            Change(
                "merged_responses",
                run[0],
                f"merged {len(run)} consecutive responses into one (the API wants user and assistant "
                "turns to alternate)",
                merged=tuple(run),
            )
        )


def detect_alternating_roles(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """Bedrock rejects any two responses in a row; Gemini only when the later one calls a tool (a
    function call turn must follow a user or function response turn)."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    if not scan.survey(history).consecutive_responses():
        return []  # the cheap early exit, as the pass's
    found = []
    for index, (a, b) in enumerate(itertools.pairwise(history)):
        if not (isinstance(a, ModelResponse) and isinstance(b, ModelResponse)):
            continue
        calls = any(isinstance(part, ToolCallPart) for part in b.parts)
        apis = ALTERNATION_APIS if calls else frozenset({"bedrock"})
        if not apis & set(target.apis):
            continue
        found.append(
            problem(
                "consecutive_responses",
                ALTERNATION_WORDING,
                target,
                at=index + 1,
                apis=apis,
                description="two responses in a row: the API wants user and assistant turns to alternate",
            )
        )
    return found


# --- calls_grouped ----------------------------------------------------------------------------------


CALL_GROUP_WORDING = said({"openai-responses": "no_output_grouped"})

CALL_GROUP_APIS = frozenset(CALL_GROUP_WORDING)


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

    thinking_sent = has(table.THINKING_SENT)
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


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "results_first",
        "after",
        results_first,
        detect_results_first,
        RESULTS_FIRST_WORDING,
        why="a part before the tool results of a request: Anthropic (apify/tester-mcp-client#12), "
        "Bedrock (langchain-aws#451), OpenAI Chat (pydantic-ai#562), Mistral (its role-order "
        f"error); releases before {table.RESULTS_SENT_FIRST.release} send the parts in stored order",
    ),
    rule(
        "calls_grouped",
        "after",
        calls_grouped,
        detect_calls_grouped,
        CALL_GROUP_WORDING,
        why="Responses-compatible servers that read a response's calls as one run (DeepSeek): text or "
        "thinking between them (pydantic-ai#7430); OpenAI's own models accept the split",
    ),
    rule(
        "alternating_roles",
        "after",
        alternating_roles,
        detect_alternating_roles,
        ALTERNATION_WORDING,
        why="two responses in a row: Bedrock (dify#9294, langchain-aws#130), Gemini for a function"
        " call turn (gemini-cli#3692)",
    ),
)

"""Tool results alone in their turn, for Bedrock models that refuse anything beside them (issue 10).

Bedrock Converse refuses a user turn that holds ``toolResult`` blocks and anything else (text, an
image) for models other than Claude: "Conversation blocks and tool result blocks cannot be provided
in the same turn." (providers.md, verified; pydantic-ai#6081 names Llama, Mistral and Writer
Palmyra). The default repair makes exactly that turn whenever a dangling call's synthesized return
joins the next prompt, and BedrockConverseModel sends one request as one user turn: before 2.6.0
always, from 2.6.0 unless the model's profile forbids it, and then it inserts an assistant turn of
``"."`` itself. This pass does the same in the history, on every release: such a request becomes the
request of its results, a response of ``"."`` and the request of the rest, so the wire alternates
and no turn mixes them. Only for a known non-Claude Bedrock model (a model string such as
``"bedrock:us.meta.llama3-3-70b-instruct-v1:0"``, the BedrockConverseModel itself, or a FallbackModel
holding one): Claude takes text beside its results, and ``provider="bedrock"`` names no model.
Nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._changes import Change
from ._problems import Problem
from ._providers import ProviderTarget
from ._rules_shape import problem

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest

    from ._profiles import ProfileRule

__all__ = [
    "RESULTS_ALONE_APIS",
    "RESULTS_ALONE_WORDING",
    "SEPARATOR_TEXT",
    "detect_tool_results_alone",
    "results_alone_rules",
    "tool_results_alone",
]

RESULTS_ALONE_WORDING = {
    "bedrock": "Conversation blocks and tool result blocks cannot be provided in the same turn.",
}
RESULTS_ALONE_APIS = frozenset(RESULTS_ALONE_WORDING)
#: The text of the response put between the results and the rest: what pydantic-ai 2.6.0+ sends in
#: the assistant turn it inserts there itself (several models reject whitespace-only text).
SEPARATOR_TEXT = "."


def refuses_mixed_turns(target: ProviderTarget) -> bool:
    """Whether the target names a Bedrock model other than Claude (by its model id), alone or as a
    member of a FallbackModel."""
    return any(
        api == "bedrock" and "anthropic" not in name.lower() and "claude" not in name.lower()
        for api, name in target.models
    )


def _mixed_test() -> Callable[[object], bool]:
    """The test for a request whose user turn holds tool results and something else: any part but a
    result, a system prompt (Bedrock's ``system`` field) or a tool-availability delta (not sent).
    Built once per pass, so the per-message test imports nothing."""
    from pydantic_ai.messages import ModelRequest, SystemPromptPart

    from . import _compat
    from ._parts import is_result

    delta = _compat.TOOL_AVAILABILITY_DELTA
    silent: tuple[type, ...] = (SystemPromptPart,) if delta is None else (SystemPromptPart, delta)

    def mixed(message: object) -> bool:
        if not isinstance(message, ModelRequest) or len(message.parts) < 2:
            return False
        results = others = False
        for part in message.parts:
            if is_result(part):
                results = True
            elif not isinstance(part, silent):
                others = True
        return results and others

    return mixed


def _separated(request: ModelRequest) -> list[Any]:
    """The request of the results (with what sits between them), a ``"."`` response, the request of
    the rest; each request keeps the original's fields."""
    from pydantic_ai.messages import ModelResponse, TextPart

    from ._folding import with_parts
    from ._parts import is_result

    last = max(at for at, part in enumerate(request.parts) if is_result(part))
    results, rest = list(request.parts[: last + 1]), list(request.parts[last + 1 :])
    stamp = getattr(request, "timestamp", None) or getattr(request.parts[last], "timestamp", None)
    separator = ModelResponse(parts=[TextPart(SEPARATOR_TEXT)], **({"timestamp": stamp} if stamp else {}))
    return [with_parts(request, results), separator, with_parts(request, rest)]


def tool_results_alone(
    history: list[ModelMessage], target: ProviderTarget
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock (non-Claude models): a request of results and other user content becomes the results'
    request, a ``"."`` response and the rest's request (the wire pydantic-ai 2.6.0+ makes itself).
    Runs after results_first, so a request's results lead it."""
    if not refuses_mixed_turns(target):
        return history, []
    mixed = _mixed_test()
    if not any(map(mixed, history)):
        return history, []
    fixed: list[ModelMessage] = []
    changes: list[Change] = []
    for index, message in enumerate(history):
        if not mixed(message):
            fixed.append(message)
            continue
        fixed.extend(_separated(message))  # type: ignore[arg-type]  # mixed: a ModelRequest
        changes.append(
            Change(
                "separated_results",
                index,
                f"put the tool results in a request of their own, then a response of {SEPARATOR_TEXT!r} "
                "and the request's other parts (this model takes nothing beside tool results in a turn)",
            )
        )
    return fixed, changes


def detect_tool_results_alone(history: Sequence[ModelMessage], target: ProviderTarget) -> list[Problem]:
    if not refuses_mixed_turns(target):
        return []
    mixed = _mixed_test()
    return [
        problem(
            "results_not_alone",
            RESULTS_ALONE_WORDING,
            target,
            at=index,
            description="this request holds tool results and other user content, which this Bedrock "
            "model refuses in one turn",
            n=index,
        )
        for index, message in enumerate(history)
        if mixed(message)
    ]


def results_alone_rules() -> tuple[ProfileRule, ...]:
    from ._profiles import ProfileRule

    return (
        ProfileRule(
            "tool_results_alone",
            RESULTS_ALONE_APIS,
            "Bedrock models other than Claude: 'Conversation blocks and tool result blocks cannot be provided "
            "in the same turn' (verified; pydantic-ai#6081); 2.6.0+ model classes insert a '.' assistant turn "
            "only where the model's profile asks, before 2.6.0 never",
            "after",
            tool_results_alone,
            detect_tool_results_alone,
            RESULTS_ALONE_WORDING,
        ),
    )

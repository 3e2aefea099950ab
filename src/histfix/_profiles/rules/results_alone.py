"""Tool results alone in their turn, for Bedrock models that refuse anything beside them.

Bedrock Converse refuses a user turn that holds ``toolResult`` blocks and anything else (text, an
image) for models other than Claude: "Conversation blocks and tool result blocks cannot be provided
in the same turn." (pydantic-ai#6081, which names Llama, Mistral and Writer Palmyra). The default repair makes exactly that turn whenever a dangling call's synthesized return
joins the next prompt, and BedrockConverseModel sends one request as one user turn: before 2.6.0
always, from 2.6.0 unless the model's profile forbids it, and then it inserts an assistant turn of
``"."`` itself. This pass does the same in the history, on every release: such a request becomes the
request of its results, a response of ``"."`` and the request of the rest, so the wire alternates
and no turn mixes them. The same holds for turns the wire joins: a request right after the
results' request, or after a response the release sends nothing of, gets a ``"."`` response before
it; and system prompts beside results move to the first request (some releases send a later one as
``<system>`` user text in that turn). Only for a known non-Claude Bedrock model (a model string such as
``"bedrock:us.meta.llama3-3-70b-instruct-v1:0"``, the BedrockConverseModel itself, or a FallbackModel
holding one): Claude takes text beside its results, and ``provider="bedrock"`` names no model.
Nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..rule import Finding, ProfileRule, problem
from ..scan import Scan
from ..targets import ProviderTarget, bedrock_claude
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest

__all__ = [
    "RESULTS_ALONE_APIS",
    "RESULTS_ALONE_WORDING",
    "SEPARATOR_TEXT",
    "detect_tool_results_alone",
    "results_alone_rules",
    "tool_results_alone",
]

RESULTS_ALONE_WORDING = said({"bedrock": "results_alone"})
RESULTS_ALONE_APIS = frozenset(RESULTS_ALONE_WORDING)
#: The text of the response put between the results and the rest: what pydantic-ai 2.6.0+ sends in
#: the assistant turn it inserts there itself (several models reject whitespace-only text).
SEPARATOR_TEXT = "."


def refuses_mixed_turns(target: ProviderTarget) -> bool:
    """Whether the target names a Bedrock model other than Claude (by its model id), alone or as a
    member of a FallbackModel."""
    return any(api == "bedrock" and not bedrock_claude(name) for api, name in target.models)


def _turn_contents() -> Callable[[Any], tuple[bool, bool, bool]]:
    """For a request: whether it holds tool results, system prompts, and user content (any other part
    but a tool-availability delta, which is not sent). A system prompt outside the first request goes
    to Bedrock's ``system`` field on some releases and into the user turn as ``<system>`` text on
    others (1.107.10 and 2.x wrap non-leading ones for profiles without inline system prompts),
    so beside results it is moved, not left to
    the release. Built once per pass: the per-request test imports nothing."""
    from pydantic_ai.messages import SystemPromptPart

    from ..._records.parts import is_result
    from ..._release import switches as _compat

    delta = _compat.TOOL_AVAILABILITY_DELTA

    def contents(request: Any) -> tuple[bool, bool, bool]:
        results = system = user = False
        for part in request.parts:
            if is_result(part):
                results = True
            elif isinstance(part, SystemPromptPart):
                system = True
            elif not (delta is not None and isinstance(part, delta)):
                user = True
        return results, system, user

    return contents


def _separated(request: ModelRequest) -> list[Any]:
    """The request of the results (with what sits between them), a ``"."`` response, the request of
    the rest; each request keeps the original's fields."""
    from ..._records.parts import is_result
    from ..._repair.folding import with_parts

    last = max(at for at, part in enumerate(request.parts) if is_result(part))
    results, rest = list(request.parts[: last + 1]), list(request.parts[last + 1 :])
    stamp = getattr(request, "timestamp", None) or getattr(request.parts[last], "timestamp", None)
    return [with_parts(request, results), _separator(stamp), with_parts(request, rest)]


def _with_system_prompts(first: ModelRequest, moved: list[Any]) -> ModelRequest:
    """The first request with ``moved`` system prompts after its own (at its start if it has none)."""
    from pydantic_ai.messages import SystemPromptPart

    from ..._repair.folding import with_parts

    at = max((i + 1 for i, part in enumerate(first.parts) if isinstance(part, SystemPromptPart)), default=0)
    return with_parts(first, [*first.parts[:at], *moved, *first.parts[at:]])


def _stamp(request: Any, before: list[Any]) -> Any:
    """A fixed time for a response put before ``request``: the request's, one of its parts', else the
    message before's (every response has one), so the output is deterministic."""
    found = getattr(request, "timestamp", None)
    for part in request.parts:
        found = found or getattr(part, "timestamp", None)
    return found or (getattr(before[-1], "timestamp", None) if before else None)


def _separator(stamp: Any) -> Any:
    """A response of ``"."`` no provider produced, stamped as the turn it closes (deterministic)."""
    from pydantic_ai.messages import ModelResponse, TextPart

    if stamp is None:
        return ModelResponse(parts=[TextPart(SEPARATOR_TEXT)])
    return ModelResponse(parts=[TextPart(SEPARATOR_TEXT)], timestamp=stamp)


def _sends_nothing() -> Callable[[object], bool]:
    """For a response: whether BedrockConverseModel sends nothing of it, so the user turns around it
    meet on the wire (the model class merges them): files (left out from 1.80.0; earlier the files
    pass drops them), native parts, compaction, and thinking before 1.0.3 (not sent for models other
    than Claude), or no parts at all."""
    from ..._records.parts import NATIVE_KINDS
    from ..._release import switches as _compat

    unsent = {"file", *NATIVE_KINDS, "compaction"}
    if not _compat.thinking_sent():
        unsent.add("thinking")

    def nothing(message: object) -> bool:
        return all(getattr(part, "part_kind", "") in unsent for part in getattr(message, "parts", ()))

    return nothing


def tool_results_alone(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock (non-Claude models): a request of results and other user content becomes the results'
    request, a ``"."`` response and the rest's request (the wire pydantic-ai 2.6.0+ makes itself);
    a request of user content whose user turn would meet the results' on the wire (right after it,
    or after a response the release sends nothing of) gets a ``"."`` response before it; system
    prompts beside results move to the first request, whose system prompts every release sends as
    system text. Runs after results_first, so a request's results lead it."""
    from pydantic_ai.messages import ModelRequest, SystemPromptPart

    from ..._repair.folding import with_parts

    if not refuses_mixed_turns(target):
        return history, []
    contents, nothing = _turn_contents(), _sends_nothing()
    first = next((i for i, message in enumerate(history) if isinstance(message, ModelRequest)), None)
    fixed: list[ModelMessage] = []
    changes: list[Change] = []
    moved: list[Any] = []
    pending = False  # the user turn the wire has open holds tool results
    for index, original in enumerate(history):
        message: Any = original
        if not isinstance(message, ModelRequest):
            fixed.append(message)
            pending = pending and nothing(message)
            continue
        results, system, user_content = contents(message)
        if system and index != first and (results or pending):
            moved += [part for part in message.parts if isinstance(part, SystemPromptPart)]
            message = with_parts(message, [p for p in message.parts if not isinstance(p, SystemPromptPart)])
            changes.append(
                Change(
                    "moved_system_prompt",
                    index,
                    "moved the system prompts beside tool results to the first request (this model takes "
                    "nothing beside tool results in a turn, where the release sends them as user text)",
                )
            )
        if not message.parts:  # it held only system prompts, now in the first request
            continue
        mixed = results and user_content
        if pending and not results and user_content:
            fixed.append(_separator(_stamp(message, fixed)))
            changes.append(
                Change(
                    "separated_results",
                    index,
                    f"put a response of {SEPARATOR_TEXT!r} before this request: its user turn would "
                    "otherwise join the tool results' turn before it on the wire",
                )
            )
            pending = False
        if mixed:
            fixed.extend(_separated(message))
            changes.append(
                Change(
                    "separated_results",
                    index,
                    f"put the tool results in a request of their own, then a response of {SEPARATOR_TEXT!r} "
                    "and the request's other parts (this model takes nothing beside tool results in a turn)",
                )
            )
            pending = False
        else:
            fixed.append(message)
            pending = results or pending
    if not changes:
        return history, []
    if moved and first is not None:
        fixed[first] = _with_system_prompts(fixed[first], moved)  # type: ignore[arg-type]  # the first request
    changes.sort(key=lambda change: change.message_index)
    return fixed, changes


def detect_tool_results_alone(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """Each request the pass would change: its turn would hold tool results and something else."""
    _, changes = tool_results_alone(list(history), target, scan)
    return [
        problem(
            "results_not_alone",
            RESULTS_ALONE_WORDING,
            target,
            at=index,
            description="tool results share this request's user turn on the wire with other user content "
            "(or system prompts, which some releases send as user text), which this Bedrock model refuses",
            n=index,
        )
        for index in sorted({change.message_index for change in changes})
    ]


def results_alone_rules() -> tuple[ProfileRule, ...]:
    return (
        ProfileRule(
            "tool_results_alone",
            RESULTS_ALONE_APIS,
            "Bedrock models other than Claude: tool results beside other blocks in one turn "
            "(pydantic-ai#6081); 2.6.0+ model classes insert a '.' assistant turn only where the "
            "model's profile asks",
            "after",
            tool_results_alone,
            detect_tool_results_alone,
            RESULTS_ALONE_WORDING,
        ),
    )

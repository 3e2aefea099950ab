"""Tool results the default repair keeps that strict APIs refuse: a second result for one call, a
result that is not in the request right after its call, and results beside other user content in
one turn (Bedrock's models other than Claude).

Results are matched to calls as the default repair matches them (:mod:`..call_results`: the oldest
open call with the result's id; a call reusing an id still open from an earlier response shadows
those calls), so a history the id passes left with duplicate ids is read the same way.

Bedrock Converse refuses a user turn that holds ``toolResult`` blocks and anything else (text, an
image) for models other than Claude: "Conversation blocks and tool result blocks cannot be provided
in the same turn." (pydantic-ai#6081, which names Llama, Mistral and Writer Palmyra). The default
repair makes exactly that turn whenever a dangling call's synthesized return joins the next prompt,
and BedrockConverseModel sends one request as one user turn: before ``table.BEDROCK_SEPARATES_RESULTS``
always, from it unless the model's profile forbids it, and then it inserts an assistant turn of ``"."``
itself.
``tool_results_alone`` does the same in the history, on every release: such a request becomes the
request of its results, a response of ``"."`` and the request of the rest, so the wire alternates
and no turn mixes them. The same holds for turns the wire joins: a request right after the results'
request, or after a response the release sends nothing of, gets a ``"."`` response before it; and
system prompts beside results move to the first request (some releases send a later one as
``<system>`` user text in that turn). Only for a known non-Claude Bedrock model (a model string such
as ``"bedrock:us.meta.llama3-3-70b-instruct-v1:0"``, the BedrockConverseModel itself, or a
FallbackModel holding one): Claude takes text beside its results, and ``provider="bedrock"`` names no
model. Nothing is dropped there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._records.depth import text_or_depth
from ..._records.problems import ProblemKind
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, moved, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget, refuses_mixed_turns
from ..unsent import unsent_response_part
from ..wording import UNINDEXED, said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest

    from ..call_results import Misplaced

__all__ = [
    "LATE_WORDING",
    "ONE_RESULT_WORDING",
    "RESULTS_ALONE_WORDING",
    "RULES",
    "SEPARATOR_TEXT",
    "detect_one_result_per_call",
    "detect_results_follow_their_call",
    "detect_tool_results_alone",
    "one_result_per_call",
    "results_follow_their_call",
    "tool_results_alone",
]

ONE_RESULT_WORDING = said(
    {
        "openai-chat": "no_call",
        "openai-responses": "duplicate_output",
        "anthropic": "multiple",
        "gemini": "count",
        "bedrock": "too_many",
        "mistral": "count",
    },
    **UNINDEXED,
)

LATE_WORDING = said(
    {
        "openai-chat": "no_call",
        "anthropic": "unexpected",
        "gemini": "response_position",
        "bedrock": "too_many",
        "mistral": "tool_role",
    },
    role="assistant",
    **UNINDEXED,
)


def _content(part: object) -> str:
    content = getattr(part, "content", None)
    return content if isinstance(content, str) else text_or_depth(repr, content)


def _dropped(history: list[ModelMessage], found: Sequence[Misplaced], kind: str, why: str) -> list[Change]:
    changes = []
    for m in found:
        part = history[m.message_index].parts[m.part_index]
        call_id = getattr(part, "tool_call_id", None)
        changes.append(
            Change(
                kind,  # type: ignore[arg-type]
                m.message_index,
                f"{why} {call_id!r} ({getattr(part, 'tool_name', None)}), made in messages[{m.call_index}]",
                call_id,
                getattr(part, "tool_name", None),
                preview=_content(part),
            )
        )
    return changes


def _duplicate_kinds(target: ProviderTarget) -> frozenset[str]:
    """The second results this rule drops: those in the call's own request, and where no target
    API places results (OpenAI Responses alone: results_follow_their_call does not run) late ones too."""
    if "openai-responses" in target.apis and not set(LATE_WORDING) & set(target.apis):
        return frozenset({"duplicate", "late_duplicate"})
    return frozenset({"duplicate"})


def one_result_per_call(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """One result per call, the first kept: Anthropic multiple_results, Gemini function_response_count,
    Bedrock too_many_tool_results, Mistral call_response_count, OpenAI Chat tool_without_tool_calls
    (wording in _profiles/wording.py), OpenAI Responses (quoted through a gateway only: keeping the
    first result, reported, is harmless where the rule does not hold); the default repair keeps duplicates by design."""
    from ..call_results import misplaced_for_pass, without_misplaced

    kinds = _duplicate_kinds(target)
    drop = [m for m in misplaced_for_pass(history, scan) if m.kind in kinds]
    if not drop:
        return history, []
    changes = _dropped(history, drop, "dropped_duplicate_result", "dropped a second result for call")
    return without_misplaced(history, drop, ()), changes


def results_follow_their_call(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """A result sits in the request right after its call: OpenAI tool_without_tool_calls, Anthropic
    unexpected_tool_result, Gemini function_response_turn_position, Mistral unexpected_tool_role,
    Bedrock too_many_tool_results (pydantic-ai#562, openclaw#13896, gemini-cli#3692). A late copy of an answered call's result is
    dropped; a call's only result, late, is moved to right after the call."""
    from ..call_results import misplaced_for_pass, without_misplaced

    found = misplaced_for_pass(history, scan)
    drop = [m for m in found if m.kind == "late_duplicate"]
    move = [m for m in found if m.kind == "late"]
    if not drop and not move:
        return history, []
    changes = _dropped(history, drop, "dropped_late_result", "dropped a late second result for call")
    for m in move:
        part = history[m.message_index].parts[m.part_index]
        changes.append(
            Change(
                "moved_late_result",
                m.message_index,
                f"moved the result for call {getattr(part, 'tool_call_id', None)!r} to right after its call "
                f"in messages[{m.call_index}]",
                getattr(part, "tool_call_id", None),
                getattr(part, "tool_name", None),
            )
        )
    changes.sort(key=lambda c: c.message_index)
    return without_misplaced(history, drop, move), changes


def _detect_misplaced(
    history: Sequence[ModelMessage],
    target: ProviderTarget,
    scan: Scan,
    kinds: frozenset[str],
    wording: dict[str, str],
) -> list[Finding]:
    from ..call_results import misplaced_results

    if scan.results_in_place(history):  # check found no duplicate or late result
        return []
    facts = scan.pinned_survey(history)  # check's own list: both detects share one reading
    misplaced = (
        misplaced_results(history)
        if facts is None
        else facts.memo("misplaced", lambda: misplaced_results(history))
    )
    found: list[Finding] = []
    first: dict[tuple[str, str], Finding] = {}  # (kind, description) -> its first finding, worded once
    for m in misplaced:
        if m.kind not in kinds:
            continue
        part = history[m.message_index].parts[m.part_index]
        call_id = str(getattr(part, "tool_call_id", ""))
        if m.kind == "late":
            kind: ProblemKind = "late_result"
            description = f"result {call_id!r} answers the call in messages[{m.call_index}] after an intervening response"
        else:
            kind = "duplicate_result"
            description = (
                f"another result for call {call_id!r} of messages[{m.call_index}], which is already answered"
            )
        known = first.get((kind, description))
        if known is not None:
            found.append(moved(known, at=m.message_index, part_index=m.part_index, part=part))
            continue
        known = first[kind, description] = problem(
            kind,
            wording,
            target,
            at=m.message_index,
            part_index=m.part_index,
            part=part,
            description=description,
            id=call_id,
        )
        found.append(known)
    return found


def detect_one_result_per_call(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    return _detect_misplaced(history, target, scan, _duplicate_kinds(target), ONE_RESULT_WORDING)


def detect_results_follow_their_call(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    return _detect_misplaced(history, target, scan, frozenset({"late", "late_duplicate"}), LATE_WORDING)


# --- tool_results_alone -----------------------------------------------------------------------------


RESULTS_ALONE_WORDING = said({"bedrock": "results_alone"})

#: The text of the response put between the results and the rest: what pydantic-ai sends in the
#: assistant turn it inserts there itself (``table.BEDROCK_SEPARATES_RESULTS``; several models reject
#: whitespace-only text).
SEPARATOR_TEXT = "."


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

    delta = _compat.delta_part()

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


def _sends_nothing(target: ProviderTarget) -> Callable[[object], bool]:
    """For a response: whether BedrockConverseModel sends nothing of it, so the user turns around it
    meet on the wire (the model class merges them): files (left out from
    ``table.BEDROCK_SKIPS_RESPONSE_FILES``; earlier the files pass drops them) and the parts it leaves out of every response (:func:`..unsent.unsent_response_part`),
    or no parts at all."""

    thinking_sent = has(table.THINKING_SENT)

    def nothing(message: object) -> bool:
        return all(
            getattr(part, "part_kind", "") == "file"
            or unsent_response_part(part, "bedrock", thinking_sent, target)
            for part in getattr(message, "parts", ())
        )

    return nothing


def tool_results_alone(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock (non-Claude models): a request of results and other user content becomes the results'
    request, a ``"."`` response and the rest's request (the wire pydantic-ai makes itself where the
    model's profile asks, ``table.BEDROCK_SEPARATES_RESULTS``);
    a request of user content whose user turn would meet the results' on the wire (right after it,
    or after a response the release sends nothing of) gets a ``"."`` response before it; system
    prompts beside results move to the first request, whose system prompts every release sends as
    system text."""
    from pydantic_ai.messages import ModelRequest, SystemPromptPart

    from ..._repair.folding import with_parts

    if not refuses_mixed_turns(target):
        return history, []
    contents, nothing = _turn_contents(), _sends_nothing(target)
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


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "one_result_per_call",
        "after",
        one_result_per_call,
        detect_one_result_per_call,
        ONE_RESULT_WORDING,
        why=(
            "two results for one call: Anthropic (vectorize-io/hindsight#4250), OpenAI Chat "
            "(langchain-mcp-adapters#61), Gemini (google/adk-python#1583), Bedrock and Mistral"
            " (their count errors), OpenAI Responses (through a gateway only: "
            "NousResearch/hermes-agent#102629)"
        ),
    ),
    rule(
        "results_follow_their_call",
        "after",
        results_follow_their_call,
        detect_results_follow_their_call,
        LATE_WORDING,
        why=(
            "a result outside the message right after its call: OpenAI Chat (pydantic-ai#562),"
            " Anthropic (openclaw#13896), Gemini (gemini-cli#3692), Bedrock (crewAI#4749), "
            "Mistral (its role-order error, code 3230)"
        ),
    ),
    rule(
        "tool_results_alone",
        "after",
        tool_results_alone,
        detect_tool_results_alone,
        RESULTS_ALONE_WORDING,
        why="Bedrock models other than Claude: tool results beside other blocks in one turn "
        f"(pydantic-ai#6081); {table.BEDROCK_SEPARATES_RESULTS.release}+ model classes insert a '.' "
        "assistant turn only where the model's profile asks",
    ),
)

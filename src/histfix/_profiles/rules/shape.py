"""Profile rules about message shape, order and content: the after-stage passes.

Each pass is named for the provider rule it satisfies, runs on the default repair's output, and
is pure: it returns the list it was given (the same object) and no changes when nothing applies.
Whatever a pass removes is reported with its content in ``Change.preview``. Wording and sources:
the providers' API references and error texts, as the emulators in ``tests/support/emulators/`` enforce them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._records.parts import native_kind
from ..rule import (
    STARTER_PROMPT,
    Finding,
    ProfileRule,
    preview,
    problem,
    renormalized,
    replaced,
    starter_prompt,
    with_starter_prompt,
)
from ..scan import Scan
from ..targets import PROVIDER_APIS, ProviderTarget
from ..wording import PYDANTIC_AI, said
from .turns import no_user_turn_before_a_response

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse

__all__ = [
    "AGENT_OPENING_WORDING",
    "agent_accepts_opening",
    "alternating_roles",
    "detect_agent_accepts_opening",
    "detect_alternating_roles",
    "detect_no_empty_content",
    "detect_results_first",
    "detect_starts_with_user",
    "no_empty_content",
    "results_first",
    "starts_with_user",
]

#: What 1.21.0's agent raises for a history opening on a response, whatever the provider.
AGENT_OPENING_WORDING = dict.fromkeys(PROVIDER_APIS, PYDANTIC_AI["opens_on_response"])
FIRST_USER_WORDING = said({"anthropic": "first_user", "bedrock": "first_user", "gemini": "empty_text"})
EMPTY_WORDING = said(
    {
        "anthropic": "empty_text",
        "bedrock": "empty_text",
        "gemini": "empty_text",
        "openai-chat": "empty_content",
    }
)
EMPTY_MESSAGE_WORDING = said(
    {
        "anthropic": "empty_message",
        "bedrock": "empty_content",
        "gemini": "last_user",
        "openai-chat": "empty_content",
        "mistral": "last_role",
    }
)
#: The APIs that want the last turn from the user (or a tool): an empty last request, which sends
#: nothing, leaves a response last on the wire (Gemini ends_on_model_turn, no public source;
#: Mistral trailing_assistant, 0xPlaygrounds/rig#1130).
ENDS_ON_USER_APIS = frozenset({"gemini", "mistral"})
RESULTS_FIRST_WORDING = said(
    {"anthropic": "result_first", "bedrock": "first", "openai-chat": "no_response", "mistral": "tool_role"},
    role="user",
)
ALTERNATION_WORDING = said({"gemini": "call_position", "bedrock": "alternate"})
#: The APIs that get an empty assistant message for a response of native (server) tool parts only,
#: which they never send (OpenAI Chat content_or_tool_calls, Gemini empty_parts, Bedrock empty_content).
NATIVE_BLIND_APIS = frozenset({"openai-chat", "gemini", "bedrock"})

#: The APIs each rule is for (the keys of its wording).
STARTS_WITH_USER_APIS = frozenset(FIRST_USER_WORDING)
NO_EMPTY_CONTENT_APIS = frozenset(EMPTY_WORDING) | ENDS_ON_USER_APIS
RESULTS_FIRST_APIS = frozenset(RESULTS_FIRST_WORDING)
ALTERNATION_APIS = frozenset(ALTERNATION_WORDING)

# --- starts_with_user ---------------------------------------------------------------------------------


def _opening_response(history: Sequence[ModelMessage]) -> int | None:
    """The index of a response that comes before anything the user sent (None: the history opens
    with a user turn, or has no response). Requests of only system prompts send no user message, nor
    do request-scoped capability parts once that response answers them (2.78.0 leaves them out)."""
    from pydantic_ai.messages import ModelRequest

    for index, message in enumerate(history):
        if not isinstance(message, ModelRequest):
            return index
        if not all(map(no_user_turn_before_a_response, message.parts)):
            return None
    return None


#: Model families that take a conversation opening on the model's response: Claude after the Claude 3
#: family on Anthropic's API (recorded: claude-sonnet-4-5 answered one with 200; the 2024 reports of
#: first_message_user name Claude 3), and on Bedrock Claude, Qwen, GLM and Kimi (pydantic-ai#6255).
_LEGACY_CLAUDE = re.compile(r"claude-(instant|[123])([.-]|$)")
_BEDROCK_LEADING_ASSISTANT = re.compile(r"anthropic|claude|qwen|glm|zai|moonshot|kimi")


def _takes_assistant_first(api: str, model: str) -> bool:
    if api == "anthropic":
        return not _LEGACY_CLAUDE.search(model.lower())
    return api == "bedrock" and bool(_BEDROCK_LEADING_ASSISTANT.search(model.lower()))


def needs_user_first(target: ProviderTarget) -> bool:
    """Whether some target API wants the first turn from the user for the model the target names
    (no model named: the family is unknown, so yes)."""
    named: dict[str, list[str]] = {}
    for api, model in target.models:
        named.setdefault(api, []).append(model)
    return any(
        not named.get(api) or not all(_takes_assistant_first(api, model) for model in named[api])
        for api in STARTS_WITH_USER_APIS & set(target.apis)
    )


def starts_with_user(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic first_message_user (lobehub#1601), Bedrock start_with_user (pydantic-ai#4495), Gemini (GoogleModel
    opens the contents with an empty user text, which is rejected): put :data:`STARTER_PROMPT` first,
    unless every named model's family takes a conversation opening on a response."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    from ..._release import switches as _compat

    index = _opening_response(history)
    if index is None or not needs_user_first(target):
        return history, []
    response = history[index]
    assert isinstance(response, ModelResponse)
    description = f"the history starts with a response: put the fixed prompt {STARTER_PROMPT!r} before it"
    if index:  # a leading request of system prompts only: the prompt joins it
        opening = history[index - 1]
        assert isinstance(opening, ModelRequest)
        fixed = [*history[: index - 1], with_starter_prompt(opening, response), *history[index:]]
        return fixed, [Change("inserted_prompt", index - 1, description)]
    fields: dict[str, Any] = {"timestamp": response.timestamp} if _compat.REQUEST_HAS_TIMESTAMP else {}
    opened = ModelRequest(parts=[starter_prompt(response)], **fields)
    return [opened, *history], [Change("inserted_prompt", 0, description)]


def detect_starts_with_user(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    index = _opening_response(history)
    if index is None or not needs_user_first(target):
        return []
    return [
        problem(
            "starts_with_response",
            FIRST_USER_WORDING,
            target,
            at=index,
            description="the history starts with the model's response, not with a user turn",
        )
    ]


def _agent_refuses(history: Sequence[ModelMessage]) -> bool:
    """Whether 1.21.0's agent would refuse ``history`` (the version test first: it is all most releases need)."""
    from ..._release import switches as _compat

    return _compat.agent_refuses_response_first() and bool(history) and history[0].kind == "response"


def agent_accepts_opening(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """1.21.0's agent raises ``UserError`` on a history opening with a response, for every provider:
    there, :data:`STARTER_PROMPT` goes first as starts_with_user puts it (elsewhere: nothing)."""
    return starts_with_user(history, target, scan) if _agent_refuses(history) else (history, [])


def detect_agent_accepts_opening(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    if not _agent_refuses(history):
        return []
    return [
        problem(
            "starts_with_response",
            AGENT_OPENING_WORDING,
            target,
            at=0,
            description="the history starts with the model's response, which this release's agent refuses "
            "(UserError) for every provider",
        )
    ]


# --- no_empty_content ---------------------------------------------------------------------------------


#: The APIs that refuse text of only whitespace too: "messages: text content blocks must contain
#: non-whitespace text" (Anthropic, verified: anthropics/claude-code#23440; Bedrock's Converse likewise).
WHITESPACE_APIS = frozenset({"anthropic", "bedrock"})


def _blank(text: str, target: ProviderTarget) -> bool:
    """Empty text (Gemini, OpenAI Chat); whitespace-only counts too where Anthropic or Bedrock is a target."""
    return not text.strip() if WHITESPACE_APIS & set(target.apis) else text == ""


def _request_without_blanks(request: ModelRequest, target: ProviderTarget) -> tuple[list[Any], list[str]]:
    """The request's parts without blank user prompts, and the removed prompts' previews."""
    from pydantic_ai.messages import UserPromptPart

    kept: list[Any] = []
    removed: list[str] = []
    for part in request.parts:
        if not isinstance(part, UserPromptPart):
            kept.append(part)
            continue
        items = [part.content] if isinstance(part.content, str) else list(part.content)
        blank = [isinstance(item, str) and _blank(item, target) for item in items]
        if not any(blank):
            kept.append(part)
            continue
        removed.extend(preview(item) for item, gone in zip(items, blank, strict=True) if gone)
        rest = [item for item, gone in zip(items, blank, strict=True) if not gone]
        if rest:  # a multimodal prompt keeps its files and its other text
            kept.append(replaced(part, content=rest))
    return kept, removed


def _response_without_blanks(response: ModelResponse, target: ProviderTarget) -> tuple[list[Any], list[str]]:
    from pydantic_ai.messages import TextPart

    kept: list[Any] = []
    removed: list[str] = []
    for part in response.parts:
        if isinstance(part, TextPart) and _blank(part.content, target):
            removed.append(preview(part.content))
            continue
        kept.append(part)
    if kept and NATIVE_BLIND_APIS & set(target.apis) and all(map(native_kind, kept)):
        # nothing here is sent to those APIs: the message would go out empty
        removed.extend(
            f"{p.part_kind} {p.tool_name}: {preview(getattr(p, 'content', getattr(p, 'args', None)))}"
            for p in kept
        )
        kept = []
    return kept, removed


def _only_deltas(message: ModelMessage) -> bool:
    """A request of tool-availability deltas alone, which MistralModel sends nothing of: as the last
    request it leaves the response before it last on the wire, as an empty one does."""
    from ..._release import switches as _compat

    delta = _compat.TOOL_AVAILABILITY_DELTA
    parts = message.parts
    return (
        message.kind == "request"
        and bool(parts)
        and delta is not None
        and all(isinstance(p, delta) for p in parts)
    )


def _has_blank(history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan) -> bool:
    """The cheap early exit: a message without parts, or a text part or user prompt that is blank
    (the strings tested at C speed, multimodal prompts' strings too)."""

    found = scan.survey(history)
    if found.empty_message:
        return True
    if "mistral" in target.apis and history and _only_deltas(history[-1]):
        return True
    if "bedrock" in target.apis and found.empty_instructions():
        return True
    if NATIVE_BLIND_APIS & set(target.apis) and any(native_kind(kind) for kind in found.part_classes):
        return True  # a response of native parts only may send nothing: the exact pass decides
    contents = found.text_contents()
    strings = [content for content in contents if type(content) is str]
    if len(strings) != len(contents):
        for content in contents:
            if isinstance(content, (list, tuple)):
                strings.extend(item for item in content if isinstance(item, str))
    if WHITESPACE_APIS & set(target.apis):
        return "" in map(str.strip, strings)
    return "" in strings


def no_empty_content(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic empty_text/empty_message, Bedrock whitespace_text/empty_content, Gemini empty_text/
    empty_parts/ends_on_model_turn, OpenAI Chat content_or_tool_calls: drop empty text and prompts,
    then messages left without parts (an empty last request sends no user turn at all: dropped
    where Gemini or Mistral is a target, which want the last turn from the user; elsewhere it stays).
    For Mistral alone only that last request goes: it does not refuse empty text."""
    from pydantic_ai.messages import ModelRequest

    if not _has_blank(history, target, scan):
        return history, []
    ends_on_user = bool(ENDS_ON_USER_APIS & set(target.apis))
    if not set(EMPTY_WORDING) & set(target.apis):  # Mistral: empty text is not refused, only the end
        last = history[-1]
        if len(history) < 2 or not isinstance(last, ModelRequest) or (last.parts and not _only_deltas(last)):
            return history, []
        history = history[:-1]
        # the parts are tool-availability deltas (_only_deltas), which name the tools they add
        notes = [f"tools added: {', '.join(getattr(part, 'tools_added', ()))}" for part in last.parts]
        if last.instructions:
            notes.append(f"instructions: {last.instructions}")
        dropped = Change(
            "dropped_empty",
            len(history),
            f"dropped the request at messages[{len(history)}]: nothing in it can be sent",
            preview=preview("; ".join(notes)) if notes else None,
        )
        return history, [dropped]
    fixed: list[ModelMessage] = []
    kept: list[int] = []  # the index in ``history`` of each message in ``fixed``
    changes: list[Change] = []
    dropped_message = False
    for index, message in enumerate(history):
        # Bedrock: BedrockModel sends instructions='' as an empty system text block, which boto3
        # refuses before sending ('Invalid length for parameter system[0].text')
        if "bedrock" in target.apis and isinstance(message, ModelRequest) and message.instructions == "":
            message = replaced(message, instructions=None)  # noqa: PLW2901 (the copy replaces it)
            changes.append(Change("dropped_empty", index, "dropped empty instructions ('')", preview=""))
        if isinstance(message, ModelRequest):
            parts, removed = _request_without_blanks(message, target)
        else:
            parts, removed = _response_without_blanks(message, target)
        for content in removed:
            changes.append(
                Change("dropped_empty", index, f"dropped an empty {message.kind} part", preview=content)
            )
        if not parts and index == len(history) - 1 and isinstance(message, ModelRequest) and not ends_on_user:
            fixed.append(message)  # an empty last request sends nothing: only Gemini needs it gone
            kept.append(index)
            continue
        if not parts:
            held = message.instructions if isinstance(message, ModelRequest) else None
            changes.append(
                Change(
                    "dropped_empty",
                    index,
                    f"dropped the {message.kind} at messages[{index}]: nothing in it can be sent",
                    preview=f"instructions: {preview(held)}" if held else None,
                )
            )
            dropped_message = True
            continue
        fixed.append(replaced(message, parts=parts) if removed else message)
        kept.append(index)
    if not changes:
        return history, []  # the blank string was in a part this rule leaves alone
    if dropped_message:
        fixed, found = renormalized(fixed, kept)
        changes.extend(found)
    return fixed, changes


def detect_no_empty_content(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ModelRequest

    if not _has_blank(history, target, scan):
        return []
    found: list[Finding] = []
    last = len(history) - 1
    ends_on_user = bool(ENDS_ON_USER_APIS & set(target.apis))
    blank_text = bool(set(EMPTY_WORDING) & set(target.apis))
    for index, message in enumerate(history):
        if not blank_text and index != last:
            continue  # Mistral: only an empty last request matters
        if not message.parts or (not blank_text and _only_deltas(message)):
            if (
                index == last
                and isinstance(message, ModelRequest)
                and not (ends_on_user and (blank_text or index))
            ):
                continue  # an empty last request sends nothing; only Gemini and Mistral reject the result
            found.append(
                problem(
                    "empty_message",
                    EMPTY_MESSAGE_WORDING,
                    target,
                    at=index,
                    apis=ENDS_ON_USER_APIS if index == last and isinstance(message, ModelRequest) else None,
                    description=f"the {message.kind} has no parts: the provider gets an empty message, or none"
                    if not message.parts
                    else "the last request holds only tool-availability deltas, which the model class does not "
                    "send: the response before it is the last message",
                    n=index,
                )
            )
            continue
        if not blank_text:
            continue
        if isinstance(message, ModelRequest):
            _, removed = _request_without_blanks(message, target)
        else:
            _, removed = _response_without_blanks(message, target)
        if removed:
            found.append(
                problem(
                    "empty_text",
                    EMPTY_WORDING,
                    target,
                    at=index,
                    description=f"the {message.kind} holds empty or whitespace-only text",
                )
            )
    return found


# --- results_first ------------------------------------------------------------------------------------


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
    Mistral (a user message between the call and its tool messages): releases whose serializer keeps
    part order (up to 2.30) send a prompt before the results; newer ones reorder. Putting results
    first gives the same wire on every release."""
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
    for index, message in enumerate(history):
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
                "(releases up to 2.30 send it in that order)",
                n=index,
                m=late,
                count=len(results),
                ids=", ".join(str(part.tool_call_id) for _, part in results),
            )
        )
    return found


# --- alternating_roles --------------------------------------------------------------------------------


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


def shape_rules() -> tuple[ProfileRule, ...]:
    """This module's rules (their place among the other modules' is the registry's)."""
    return (
        ProfileRule(
            "no_empty_content",
            NO_EMPTY_CONTENT_APIS,
            "empty or whitespace-only text or messages: Anthropic (anthropics/claude-code#23440), "
            "Bedrock (hermes#63983), Gemini (contents.parts must not be empty), OpenAI Chat "
            "(vercel/ai#13744), Mistral a trailing assistant message, also after a last request of "
            "only tool-availability deltas (0xPlaygrounds/rig#1130)",
            "after",
            no_empty_content,
            detect_no_empty_content,
            EMPTY_WORDING,
        ),
        ProfileRule(
            "starts_with_user",
            STARTS_WITH_USER_APIS,
            "a first turn that is not the user's: Anthropic (lobehub#1601), Bedrock except Claude,"
            " Qwen, GLM and Kimi (pydantic-ai#4495, pydantic-ai#6255), Gemini (an empty user text "
            "from GoogleModel)",
            "after",
            starts_with_user,
            detect_starts_with_user,
            FIRST_USER_WORDING,
        ),
        ProfileRule(
            "agent_accepts_opening",
            frozenset(AGENT_OPENING_WORDING),
            "a history opening on a response: 1.21.0's Agent raises UserError before sending, for "
            "every provider (its _agent_graph.py)",
            "after",
            agent_accepts_opening,
            detect_agent_accepts_opening,
            AGENT_OPENING_WORDING,
        ),
        ProfileRule(
            "results_first",
            RESULTS_FIRST_APIS,
            "a part before the tool results of a request: Anthropic (apify/tester-mcp-client#12), "
            "Bedrock (langchain-aws#451), OpenAI Chat (pydantic-ai#562), Mistral (its role-order "
            "error); serializers up to 2.30 keep part order",
            "after",
            results_first,
            detect_results_first,
            RESULTS_FIRST_WORDING,
        ),
        ProfileRule(
            "alternating_roles",
            ALTERNATION_APIS,
            "two responses in a row: Bedrock (dify#9294, langchain-aws#130), Gemini for a function"
            " call turn (gemini-cli#3692)",
            "after",
            alternating_roles,
            detect_alternating_roles,
            ALTERNATION_WORDING,
        ),
    )

"""Messages and text the wire refuses as empty: blank text, a message with nothing in it, and
messages of only parts the release never sends (which go out empty, or not at all).

Some parts never reach the provider as part of a turn (:mod:`..unsent`): system prompts, tool-
availability deltas, native (server) tool parts of another provider, compaction, and, before
``table.THINKING_SENT``, thinking on OpenAI Chat and Gemini. A message made only of such parts goes out empty (OpenAI Chat
``content_or_tool_calls``, Gemini ``empty_parts``/``empty_text``, Bedrock ``empty_content``), or not
at all, which leaves its neighbours adjacent on the wire (Bedrock ``alternate_roles``, Gemini
``function_call_turn_position``: ``alternating_roles`` merges them). Each pass is pure, returns the
list it was given and no changes when nothing applies, and reports what it moves or drops with its
content (``Change.preview``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._records.parts import native_kind
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, preview, problem, renormalized, replaced, rule
from ..scan import Scan, Survey
from ..targets import ProviderTarget
from ..unsent import (
    EMPTY_RESPONSE_APIS,
    compaction,
    unsent_once_answered,
    unsent_request_classes,
    unsent_request_part,
    unsent_response_part,
)
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse

__all__ = [
    "EMPTY_MESSAGE_WORDING",
    "EMPTY_REQUEST_WORDING",
    "EMPTY_RESPONSE_WORDING",
    "EMPTY_WORDING",
    "ENDS_ON_USER_APIS",
    "NO_EMPTY_CONTENT_APIS",
    "RULES",
    "WHITESPACE_APIS",
    "detect_no_empty_content",
    "detect_requests_send_something",
    "detect_responses_send_something",
    "no_empty_content",
    "requests_send_something",
    "responses_send_something",
]


def _thinking_sent() -> bool:

    return has(table.THINKING_SENT)


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


NO_EMPTY_CONTENT_APIS = frozenset(EMPTY_WORDING) | ENDS_ON_USER_APIS

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
    if kept and EMPTY_RESPONSE_APIS & set(target.apis) and all(map(native_kind, kept)):
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

    delta = _compat.delta_part()
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
    if found.empty_message():
        return True
    if "mistral" in target.apis and history and _only_deltas(history[-1]):
        return True
    if "bedrock" in target.apis and found.empty_instructions():
        return True
    if EMPTY_RESPONSE_APIS & set(target.apis) and any(native_kind(kind) for kind in found.part_classes):
        return True  # a response of native parts only may send nothing: the exact pass decides
    whitespace = bool(WHITESPACE_APIS & set(target.apis))
    return found.memo(f"blank text, whitespace {whitespace}", lambda: _blank_text(found, whitespace))


def _blank_text(found: Survey, whitespace: bool) -> bool:
    """Whether a text part or user prompt holds a blank string (``whitespace``: or one of only
    whitespace), multimodal prompts' strings too."""
    if whitespace:
        try:  # every content a string, the usual history: each stripped as it is read
            return "" in map(str.strip, found.text_contents())  # type: ignore[arg-type]
        except TypeError:  # a multimodal prompt's list: its strings are gathered below
            pass
    contents = list(found.text_contents())
    strings = [content for content in contents if type(content) is str]
    if len(strings) != len(contents):
        for content in contents:
            if isinstance(content, (list, tuple)):
                strings.extend(item for item in content if isinstance(item, str))
    if whitespace:
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

    blank_text = bool(set(EMPTY_WORDING) & set(target.apis))
    # Mistral alone drops only a last request that _has_blank finds at once: no text need be read
    mistral_alone = not blank_text and "mistral" in target.apis
    if not history or (not mistral_alone and not _has_blank(history, target, scan)):
        return history, []
    ends_on_user = bool(ENDS_ON_USER_APIS & set(target.apis))
    if not blank_text:  # Mistral: empty text is not refused, only the end
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


# --- responses_send_something -----------------------------------------------------------------------


EMPTY_RESPONSE_WORDING = said(
    {"openai-chat": "empty_content", "gemini": "empty_parts", "bedrock": "empty_content"}
)


def _unsent_response(
    message: ModelMessage, target: ProviderTarget, thinking_sent: bool, maybe: frozenset[type]
) -> bool:
    """A response with parts, none of which some target API's serializer sends (``maybe``: the classes
    that can be unsent, a cheap first test on every response)."""
    parts = message.parts
    if message.kind != "response" or not parts or type(parts[0]) not in maybe:
        return False
    if not all(type(part) in maybe for part in parts):
        return False
    return any(
        all(unsent_response_part(part, api, thinking_sent, target) for part in parts)
        for api in target.apis
        if api in EMPTY_RESPONSE_APIS
    )


def _maybe_unsent(history: Sequence[ModelMessage], thinking_sent: bool, scan: Scan) -> frozenset[type]:
    """The cheap early exit: the history's part classes a response may hold unsent (native parts,
    compaction; thinking where the release drops it), from one set of part classes."""
    from pydantic_ai.messages import ThinkingPart

    return frozenset(
        kind
        for kind in scan.survey(history).part_classes
        if native_kind(kind) or compaction(kind) or (not thinking_sent and issubclass(kind, ThinkingPart))
    )


def responses_send_something(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """OpenAI Chat content_or_tool_calls, Gemini empty_parts, Bedrock empty_content (1.0.0 sends a
    response of only thinking or native parts as an empty assistant message): such a response joins
    a response next to it (nothing lost: the one before it, else the one after), or, with no sent
    response beside it, is dropped and reported."""
    thinking_sent = _thinking_sent()
    maybe = _maybe_unsent(history, thinking_sent, scan)
    if not maybe:
        return history, []
    unsent = [_unsent_response(message, target, thinking_sent, maybe) for message in history]
    if not any(unsent):
        return history, []
    fixed: list[ModelMessage] = []
    kept: list[int] = []  # the index in ``history`` of each message in ``fixed``
    changes: list[Change] = []
    dropped = False
    index = 0
    while index < len(history):
        if history[index].kind != "response":
            fixed.append(history[index])
            kept.append(index)
            index += 1
            continue
        end = index
        while end < len(history) and history[end].kind == "response":
            end += 1
        run = range(index, end)
        anchors = [i for i in run if not unsent[i]]
        if len(anchors) == len(run):
            fixed.extend(history[index:end])
            kept.extend(run)
        elif not anchors:
            dropped = True
            changes.extend(_dropped(i, history[i], target) for i in run)
        else:
            fixed.extend(_joined(history, run, anchors, changes))
            kept.extend(anchors)
        index = end
    if dropped:
        fixed, found = renormalized(fixed, kept)
        changes.extend(found)
    return fixed, changes


def _joined(
    history: list[ModelMessage], run: range, anchors: list[int], changes: list[Change]
) -> list[ModelMessage]:
    """One response per anchor (a sent response) of the run, each unsent response's parts joined to
    the anchor before it (or, before the first anchor, to the first), in the original part order."""
    groups: dict[int, list[Any]] = {anchor: [] for anchor in anchors}
    owner = anchors[0]
    for i in run:
        if i in groups:
            owner = i
        else:
            changes.append(_merged(i, owner))
        groups[owner].extend(history[i].parts)
    return [
        history[anchor]
        if len(parts) == len(history[anchor].parts)
        else replaced(history[anchor], parts=parts)
        for anchor, parts in groups.items()
    ]


def _dropped(index: int, message: ModelMessage, target: ProviderTarget) -> Change:
    return Change(
        "dropped_unsent",
        index,
        f"dropped the response at messages[{index}]: none of its parts is sent to {target.name} by this "
        "release (it would go out as an empty assistant message), and no response beside it can hold them",
        preview=preview([_describe(part) for part in message.parts]),
    )


def _merged(index: int, into: int) -> Change:
    return Change(
        "merged_responses",
        index,
        f"merged the response at messages[{index}] into the response at messages[{into}]: none of its parts "
        "is sent by this release, which would send it as an empty assistant message",
        merged=tuple(sorted((index, into))),
    )


def _describe(part: object) -> str:
    content = getattr(part, "content", None)
    if content is None:
        content = getattr(part, "args", None)
    return f"{getattr(part, 'part_kind', type(part).__name__)}: {content!r}"


def detect_responses_send_something(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    thinking_sent = _thinking_sent()
    maybe = _maybe_unsent(history, thinking_sent, scan)
    if not maybe:
        return []
    return [
        problem(
            "empty_message",
            EMPTY_RESPONSE_WORDING,
            target,
            at=index,
            description="the response holds only parts this release does not send (thinking, native "
            "tool parts): the provider gets an empty assistant message",
            n=index,
        )
        for index, message in enumerate(history)
        if _unsent_response(message, target, thinking_sent, maybe)
    ]


# --- requests_send_something ------------------------------------------------------------------------


#: BedrockConverseModel sends no user message for an empty request: the responses around it meet.
EMPTY_REQUEST_WORDING = said({"gemini": "empty_text", "bedrock": "alternate"})


def _unsent_request(message: ModelMessage, classes: frozenset[type]) -> bool:
    """A request with parts, every one of ``classes`` (the first part tested first: the cheap case)."""
    parts = message.parts
    return (
        message.kind == "request"
        and bool(parts)
        and type(parts[0]) in classes
        and all(type(part) in classes for part in parts)
    )


def _capability_classes(history: Sequence[ModelMessage], scan: Scan) -> frozenset[type]:
    """The history's capability part classes (``table.CAPABILITY_PARTS``; none before), from the run's survey."""
    return frozenset(kind for kind in scan.survey(history).part_classes if _capability_class(kind))


def _capability_class(kind: type) -> bool:
    return getattr(kind, "part_kind", "") == "capability"


def _answered_and_unsent(message: ModelMessage, classes: frozenset[type], answered: bool) -> bool:
    """A request with parts, each of ``classes`` and either never sent as a user turn or a request-scoped
    capability part that a later response answers (the release leaves those out)."""
    return _unsent_request(message, classes) and all(
        not _capability_class(type(part)) or (answered and unsent_once_answered(part))
        for part in message.parts
    )


def _misplaced_requests(history: Sequence[ModelMessage], scan: Scan) -> tuple[int | None, list[int]]:
    """The first user turn (the first request that sends something) and the requests of only unsent
    parts that Gemini would send as empty user turns (and, of request-scoped capability parts a response
    answers, that the release leaves out, which leaves the responses around them neighbours): every one after
    it, and the leading ones before it when no response comes first (with a response first,
    starts_with_user puts the starter prompt in them)."""

    capability = _capability_classes(history, scan)
    classes = unsent_request_classes(history, scan) | capability
    if not classes:
        return None, []
    facts = scan.survey(history)
    # the messages whose first part is of those classes (C-level: each message's first part is at
    # the running total of the part counts before it)
    lens = facts.lens()
    starts = facts.starts()[:-1]
    first_types = map(facts.types.__getitem__, compress(starts, lens))
    with_parts = compress(range(len(lens)), lens)
    candidates = list(compress(with_parts, map(classes.__contains__, first_types)))
    if capability:
        last_response = max((i for i, m in enumerate(history) if m.kind == "response"), default=-1)
        unsent = [
            index
            for index in candidates
            if _answered_and_unsent(history[index], classes, index < last_response)
        ]
    else:
        unsent = [index for index in candidates if _unsent_request(history[index], classes)]
    if not unsent:
        return None, []
    gone = set(unsent)
    first = next(
        (i for i, m in enumerate(history) if m.kind == "request" and m.parts and i not in gone), None
    )
    if first is None:
        return None, []
    found = [index for index in unsent if index > first]
    if all(message.kind == "request" for message in history[:first]):
        found = [index for index in unsent if index < first] + found
    return first, found


def requests_send_something(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Gemini empty_text (GoogleModel sends a request of only system prompts or tool-availability deltas
    as a user turn of one empty text) and Bedrock alternate_roles (BedrockConverseModel sends no user
    message for it, so the responses around it meet, which alternating_roles merges): such a request's parts join the request before it (before the
    first user turn: the start of that turn), and the request goes. System prompts are collected in
    order, so the wire's system text is the same; the responses around it are then adjacent, as they
    are on the wire."""
    first, misplaced = _misplaced_requests(history, scan)
    if first is None or not misplaced:
        return history, []
    gone = set(misplaced)
    leading = [part for index in misplaced if index < first for part in history[index].parts]
    fixed: list[ModelMessage] = []
    changes: list[Change] = []
    last_request: int | None = None  # in fixed
    for index, message in enumerate(history):
        if index in gone:
            held = getattr(message, "instructions", None)
            where = (
                "to the start of the first user turn"
                if index < first
                else "to the end of the request before it"
            )
            what = (
                "the system prompts of"
                if all(map(unsent_request_part, message.parts))
                else "the request-scoped capability parts of"
            )
            changes.append(
                Change(
                    "moved_parts",
                    index,
                    f"moved {what} messages[{index}] (a request with nothing else, which sends no user turn) "
                    f"{where}",
                    preview=f"instructions: {preview(held)}" if held else None,
                )
            )
            if index > first and last_request is not None:
                earlier = fixed[last_request]
                fixed[last_request] = replaced(earlier, parts=[*earlier.parts, *message.parts])
            continue
        if index == first and leading:
            message = replaced(message, parts=[*leading, *message.parts])  # noqa: PLW2901
        if message.kind == "request":
            last_request = len(fixed)
        fixed.append(message)
    return fixed, changes


def detect_requests_send_something(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    _, misplaced = _misplaced_requests(history, scan)
    return [
        problem(
            "empty_message",
            EMPTY_REQUEST_WORDING,
            target,
            at=index,
            description="the request holds only system prompts, tool-availability deltas or request-scoped "
            "capability parts a response answers: the provider gets an empty user turn, or none",
        )
        for index in misplaced
    ]


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "no_empty_content",
        "after",
        no_empty_content,
        detect_no_empty_content,
        EMPTY_WORDING,
        apis=NO_EMPTY_CONTENT_APIS,
        why="empty or whitespace-only text or messages: Anthropic (anthropics/claude-code#23440), "
        "Bedrock (hermes#63983), Gemini (contents.parts must not be empty), OpenAI Chat "
        "(vercel/ai#13744), Mistral a trailing assistant message, also after a last request of "
        "only tool-availability deltas (0xPlaygrounds/rig#1130)",
    ),
    rule(
        "requests_send_something",
        "after",
        requests_send_something,
        detect_requests_send_something,
        EMPTY_REQUEST_WORDING,
        why="a request with nothing to send: Gemini gets an empty user text (gemini-cli#3692), "
        "Bedrock two assistant turns in a row (dify#9294)",
    ),
    rule(
        "responses_send_something",
        "after",
        responses_send_something,
        detect_responses_send_something,
        EMPTY_RESPONSE_WORDING,
        apis=EMPTY_RESPONSE_APIS,
        why="a response of only parts the release does not send: OpenAI Chat (vercel/ai#13744), "
        "Gemini (contents.parts must not be empty), Bedrock (an empty content field)",
    ),
)

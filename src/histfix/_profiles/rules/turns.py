"""Profile rules about turns the wire does not see: parts a release never sends.

Some parts never reach the provider as part of a turn: system prompts (a system field, or a
system message), tool-availability deltas (2.23.0+: a system announcement or nothing), native
(server) tool parts of another provider, and, before 1.0.3, thinking on OpenAI Chat and Gemini.
A message made only of such parts goes out empty (OpenAI Chat ``content_or_tool_calls``, Gemini
``empty_parts``/``empty_text``, Bedrock ``empty_content``), or not at all, which leaves its
neighbours adjacent on the wire (Bedrock ``alternate_roles``, Gemini ``function_call_turn_position``: the
alternating_roles pass, after these, merges them). These after-stage passes run after the other shape
rules; each is pure, returns the list it was given and no changes
when nothing applies, and reports what it moves or drops with its content.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from itertools import compress
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
    with_starter_prompt,
)
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "detect_opens_with_user_turn",
    "detect_requests_send_something",
    "detect_responses_send_something",
    "no_user_turn_before_a_response",
    "only_unsent_request_parts",
    "opens_with_user_turn",
    "requests_send_something",
    "responses_send_something",
    "sends_nothing",
    "turn_rules",
    "unsent_once_answered",
    "unsent_request_part",
]

EMPTY_RESPONSE_WORDING = said(
    {"openai-chat": "empty_content", "gemini": "empty_parts", "bedrock": "empty_content"}
)
#: BedrockConverseModel sends no user message for an empty request: the responses around it meet.
EMPTY_REQUEST_WORDING = said({"gemini": "empty_text", "bedrock": "alternate"})
OPENING_WORDING = said({"anthropic": "first_user", "bedrock": "first_user", "gemini": "empty_text"})
RESPONSES_APIS = frozenset(EMPTY_RESPONSE_WORDING)
REQUESTS_APIS = frozenset(EMPTY_REQUEST_WORDING)
OPENING_APIS = frozenset(OPENING_WORDING)

#: The APIs whose serializers drop thinking on releases before ``switches.THINKING_SENT_SINCE``.
_THINKING_DROPPED_BY = frozenset({"openai-chat", "gemini"})


def all_parts(history: Sequence[ModelMessage]) -> Iterator[Any]:
    """Every part of every message, in order, chained at C speed (the cheap early exits)."""
    return itertools.chain.from_iterable([message.parts for message in history])


# --- what is never sent -------------------------------------------------------------------------------


def _unsent_request_class(kind: type) -> bool:
    """A request part class no release sends as part of a user turn: a system prompt, or a
    tool-availability delta (rendered as a system announcement, or nothing)."""
    from pydantic_ai.messages import SystemPromptPart

    from ..._release import switches as _compat

    delta = _compat.TOOL_AVAILABILITY_DELTA
    return issubclass(kind, SystemPromptPart) or (delta is not None and issubclass(kind, delta))


def unsent_request_part(part: object) -> bool:
    """Whether ``part`` is a system prompt or a tool-availability delta (never sent as a user turn)."""
    return _unsent_request_class(type(part))


def unsent_once_answered(part: object) -> bool:
    """A request-scoped capability part (2.78.0+): ``Model.prepare_messages`` leaves it out once a response
    has answered its request (an instruction at operator authority as a request-scoped system prompt, a
    downgraded one as framed user text), so before a response it sends no user turn."""
    return getattr(part, "part_kind", "") == "capability" and getattr(part, "scope", None) == "request"


def no_user_turn_before_a_response(part: object) -> bool:
    """A request part that sends no user turn when a response follows its request: a system prompt or a
    request-scoped capability part (:func:`unsent_once_answered`)."""
    from pydantic_ai.messages import SystemPromptPart

    return isinstance(part, SystemPromptPart) or unsent_once_answered(part)


def _part_classes(history: Sequence[ModelMessage], scan: Scan) -> frozenset[type]:
    """The classes of every part, from the run's survey."""
    return scan.survey(history).part_classes


def only_unsent_request_parts(history: Sequence[ModelMessage], scan: Scan) -> bool:
    """Whether every part is a system prompt or a tool-availability delta (one set of part classes)."""
    return all(map(_unsent_request_class, _part_classes(history, scan)))


def _unsent_request_classes(history: Sequence[ModelMessage], scan: Scan) -> frozenset[type]:
    """The history's request part classes that are never sent as a user turn (the cheap early exit)."""
    return frozenset(filter(_unsent_request_class, _part_classes(history, scan)))


def _compaction(part: object) -> bool:
    """A ``CompactionPart`` (a provider's summary of earlier turns; present from after 1.80.0)."""
    return getattr(part, "part_kind", "") == "compaction"


def _unsent_response_part(part: object, api: str, thinking_sent: bool, target: ProviderTarget) -> bool:
    """A response part the installed release's ``api`` serializer leaves out: native parts (OpenAI Chat
    and Bedrock never send them; Gemini sends only Google's own), compaction (OpenAI Chat, Gemini and
    Bedrock never send it), and thinking on OpenAI Chat and Gemini before 1.0.3 (1.0.0-1.0.2 drop it;
    Bedrock sends it for Claude models, and drops it for the others)."""
    from pydantic_ai.messages import ThinkingPart

    if _compaction(part):
        return True  # every api of this rule (RESPONSES_APIS)
    if native_kind(part):
        return not (api == "gemini" and getattr(part, "provider_name", None) == "google")
    if not isinstance(part, ThinkingPart) or thinking_sent:
        return False
    from .results_alone import refuses_mixed_turns  # only here: thinking a release may drop

    return api in _THINKING_DROPPED_BY or (api == "bedrock" and refuses_mixed_turns(target))


def _responses_leaves_out(part: object, thinking_sent: bool) -> bool:
    """A response part the installed OpenAIResponsesModel never sends: another provider's native
    parts (OpenAI's own too before 1.0.9) and, before 1.0.3, thinking (read in 1.0.0's models/openai.py)."""
    from pydantic_ai.messages import ThinkingPart

    from ..._release import switches as _compat

    if native_kind(part):
        return getattr(part, "provider_name", None) != "openai" or not _compat.responses_native_calls_sent()
    return isinstance(part, ThinkingPart) and not thinking_sent


def _mistral_leaves_out(part: object) -> bool:
    """A response part MistralModel never sends: native parts (1.0.0, 2.68.0)."""
    return bool(native_kind(part))


def sends_nothing(history: Sequence[ModelMessage], target: ProviderTarget) -> bool:
    """Whether some target API gets nothing of this history from the installed release: its requests
    hold only parts never sent as a turn, and its responses only parts that API's serializer leaves out
    (1.0.0's OpenAIResponsesModel then sends an empty ``input``)."""
    if not only_unsent_request_parts([message for message in history if message.kind == "request"], Scan()):
        return False
    responses = [message for message in history if message.kind == "response"]
    thinking_sent = _thinking_sent()
    for api in target.apis:
        unsent: Callable[[object], bool]
        if api == "openai-responses":
            unsent = functools.partial(_responses_leaves_out, thinking_sent=thinking_sent)
        elif api == "mistral":
            unsent = _mistral_leaves_out
        elif api in RESPONSES_APIS:
            unsent = functools.partial(
                _unsent_response_part, api=api, thinking_sent=thinking_sent, target=target
            )
        else:
            continue
        if all(unsent(part) for message in responses for part in message.parts):
            return True
    return False


def _thinking_sent() -> bool:
    from ..._release import switches as _compat

    return _compat.thinking_sent()


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
        all(_unsent_response_part(part, api, thinking_sent, target) for part in parts)
        for api in target.apis
        if api in RESPONSES_APIS
    )


def _maybe_unsent(history: Sequence[ModelMessage], thinking_sent: bool, scan: Scan) -> frozenset[type]:
    """The cheap early exit: the history's part classes a response may hold unsent (native parts,
    compaction; thinking where the release drops it), from one set of part classes."""
    from pydantic_ai.messages import ThinkingPart

    return frozenset(
        kind
        for kind in _part_classes(history, scan)
        if native_kind(kind) or _compaction(kind) or (not thinking_sent and issubclass(kind, ThinkingPart))
    )


# --- responses_send_something -------------------------------------------------------------------------


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


# --- requests_send_something --------------------------------------------------------------------------


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
    """The history's capability part classes (2.78.0+; none before), from the run's survey."""
    return frozenset(kind for kind in _part_classes(history, scan) if _capability_class(kind))


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
    answers, that 2.78.0 leaves out, which leaves the responses around them neighbours): every one after
    it, and the leading ones before it when no response comes first (with a response first,
    starts_with_user puts the starter prompt in them)."""

    capability = _capability_classes(history, scan)
    classes = _unsent_request_classes(history, scan) | capability
    if not classes:
        return None, []
    facts = scan.survey(history)
    # the messages whose first part is of those classes (C-level: each message's first part is at
    # the running total of the part counts before it)
    starts = list(itertools.accumulate(facts.lens, initial=0))[:-1]
    first_types = map(facts.types.__getitem__, compress(starts, facts.lens))
    with_parts = compress(range(len(facts.lens)), facts.lens)
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
    message for it, so the responses around it meet; alternating_roles then merges them): such a request's parts join the request before it (before the
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


# --- opens_with_user_turn -----------------------------------------------------------------------------


def _sends_no_turn_before_a_response(part: object) -> bool:
    return unsent_request_part(part) or unsent_once_answered(part)


def _opening(history: Sequence[ModelMessage]) -> int | None:
    """The index of the request that should get the starter prompt: the last of the leading requests
    that send nothing (system prompts, deltas, request-scoped capability parts a response answers), when
    a response follows them and some is a delta (starts_with_user covers the others alone)."""
    index = 0  # the leading requests are few: each is tested part by part
    while (
        index < len(history)
        and history[index].kind == "request"
        and history[index].parts
        and all(map(_sends_no_turn_before_a_response, history[index].parts))
    ):
        index += 1
    if index == 0 or index >= len(history) or history[index].kind != "response":
        return None
    if all(map(no_user_turn_before_a_response, all_parts(history[:index]))):
        return None
    return index - 1


def opens_with_user_turn(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic first_message_user, Bedrock start_with_user, Gemini empty_text: a first request of
    system prompts and tool-availability deltas sends no user turn, so the first turn on the wire is
    the model's: :data:`STARTER_PROMPT` joins that request (as starts_with_user does for system prompts)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    at = _opening(history)
    if at is None:
        return history, []
    request = history[at]
    response = history[at + 1]
    assert isinstance(request, ModelRequest) and isinstance(response, ModelResponse)
    fixed = [*history[:at], with_starter_prompt(request, response), *history[at + 1 :]]
    description = (
        "the history's first request holds only system prompts and tool-availability deltas (no user turn "
        f"on the wire): put the fixed prompt {STARTER_PROMPT!r} in it"
    )
    return fixed, [Change("inserted_prompt", at, description)]


def detect_opens_with_user_turn(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    at = _opening(history)
    if at is None:
        return []
    return [
        problem(
            "starts_with_response",
            OPENING_WORDING,
            target,
            at=at + 1,
            description="the first request sends no user turn (system prompts and tool-availability deltas "
            "only): the model's response comes first on the wire",
        )
    ]


# --- registration -------------------------------------------------------------------------------------


def turn_rules() -> tuple[ProfileRule, ...]:
    """This module's rules in pass order: unsent requests, then responses (either can make two responses
    neighbours: alternating_roles, after them, merges those for Bedrock and Gemini), then the opening turn."""
    return (
        ProfileRule(
            "requests_send_something",
            REQUESTS_APIS,
            "a request with nothing to send: Gemini gets an empty user text (gemini-cli#3692), "
            "Bedrock two assistant turns in a row (dify#9294)",
            "after",
            requests_send_something,
            detect_requests_send_something,
            EMPTY_REQUEST_WORDING,
        ),
        ProfileRule(
            "responses_send_something",
            RESPONSES_APIS,
            "a response of only parts the release does not send: OpenAI Chat (vercel/ai#13744), "
            "Gemini (contents.parts must not be empty), Bedrock (an empty content field)",
            "after",
            responses_send_something,
            detect_responses_send_something,
            EMPTY_RESPONSE_WORDING,
        ),
        ProfileRule(
            "opens_with_user_turn",
            OPENING_APIS,
            "a first request of only system prompts and tool-availability deltas, which sends no "
            "user turn: Anthropic (lobehub#1601), Bedrock (pydantic-ai#4495), Gemini (an empty "
            "text parameter)",
            "after",
            opens_with_user_turn,
            detect_opens_with_user_turn,
            OPENING_WORDING,
        ),
    )

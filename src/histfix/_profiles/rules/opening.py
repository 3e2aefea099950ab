"""A conversation that does not open with the user's turn, where the API or the agent wants it to.

Anthropic, Bedrock (but for some model families) and Gemini want the first turn on the wire from the
user; the agent of :data:`AGENT_REFUSES` (``table.AGENT_REFUSES_RESPONSE_FIRST``) refuses a history
opening on a response for every provider. A history can open
on the model's response (a slice of a longer conversation, or a first request left with nothing to
send), or with a request that sends no user turn (system prompts, tool-availability deltas). The
passes put :data:`..rule.STARTER_PROMPT` first, which keeps the model's text where dropping the
response would lose it; a re-run recognizes it and never inserts it twice.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has
from ..rule import STARTER_PROMPT, Finding, ProfileRule, problem, rule, starter_request, with_starter_prompt
from ..scan import Scan
from ..targets import PROVIDER_APIS, ProviderTarget
from ..unsent import no_user_turn_before_a_response, unsent_once_answered, unsent_request_part
from ..wording import PYDANTIC_AI, said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "AGENT_OPENING_WORDING",
    "AGENT_REFUSES",
    "FIRST_USER_WORDING",
    "RULES",
    "STARTS_WITH_USER_APIS",
    "agent_accepts_opening",
    "all_parts",
    "detect_agent_accepts_opening",
    "detect_opens_with_user_turn",
    "detect_starts_with_user",
    "needs_user_first",
    "opens_with_user_turn",
    "starts_with_user",
]

#: The releases whose agent refuses a history opening on a response.
AGENT_REFUSES = table.span(
    table.AGENT_REFUSES_RESPONSE_FIRST.release, table.AGENT_REFUSES_RESPONSE_FIRST.until
)
#: What that agent raises for a history opening on a response, whatever the provider.
AGENT_OPENING_WORDING = dict.fromkeys(PROVIDER_APIS, PYDANTIC_AI["opens_on_response"])

FIRST_USER_WORDING = said({"anthropic": "first_user", "bedrock": "first_user", "gemini": "empty_text"})

#: The APIs each rule is for (the keys of its wording).
STARTS_WITH_USER_APIS = frozenset(FIRST_USER_WORDING)


def _opening_response(history: Sequence[ModelMessage]) -> int | None:
    """The index of a response that comes before anything the user sent (None: the history opens
    with a user turn, or has no response). Requests of only system prompts send no user message, nor
    do request-scoped capability parts once that response answers them (the release leaves them out)."""
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
    return [starter_request(response), *history], [Change("inserted_prompt", 0, description)]


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
    """Whether the installed release's agent would refuse ``history`` (:data:`AGENT_REFUSES`; the version
    test first: it is all most releases need)."""

    return has(table.AGENT_REFUSES_RESPONSE_FIRST) and bool(history) and history[0].kind == "response"


def agent_accepts_opening(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """The agent of :data:`AGENT_REFUSES` raises ``UserError`` on a history opening with a response, for every provider:
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


# --- opens_with_user_turn ----------------------------------------------------------------------------


def all_parts(history: Sequence[ModelMessage]) -> Iterator[Any]:
    """Every part of every message, in order, chained at C speed (the cheap early exits)."""
    return itertools.chain.from_iterable([message.parts for message in history])


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
            FIRST_USER_WORDING,
            target,
            at=at + 1,
            description="the first request sends no user turn (system prompts and tool-availability deltas "
            "only): the model's response comes first on the wire",
        )
    ]


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "starts_with_user",
        "after",
        starts_with_user,
        detect_starts_with_user,
        FIRST_USER_WORDING,
        why="a first turn that is not the user's: Anthropic (lobehub#1601), Bedrock except Claude,"
        " Qwen, GLM and Kimi (pydantic-ai#4495, pydantic-ai#6255), Gemini (an empty user text "
        "from GoogleModel)",
    ),
    rule(
        "agent_accepts_opening",
        "after",
        agent_accepts_opening,
        detect_agent_accepts_opening,
        AGENT_OPENING_WORDING,
        why=f"a history opening on a response: {AGENT_REFUSES}'s Agent raises UserError before sending, "
        "for every provider (its _agent_graph.py)",
    ),
    rule(
        "opens_with_user_turn",
        "after",
        opens_with_user_turn,
        detect_opens_with_user_turn,
        FIRST_USER_WORDING,
        why="a first request of only system prompts and tool-availability deltas, which sends no "
        "user turn: Anthropic (lobehub#1601), Bedrock (pydantic-ai#4495), Gemini (an empty "
        "text parameter)",
    ),
)

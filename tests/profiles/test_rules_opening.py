"""The opening rules (histfix._profiles.rules.opening), on the installed release's types.

A history that does not open with the user's turn where the API (or 1.21.0's agent) wants it: the
starter prompt each rule puts first, for which APIs and model families only, and what
``check(provider=)`` says in the provider's words.
"""

from __future__ import annotations

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import opening
from histfix._profiles.scan import Scan
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider
from histfix._release import table
from histfix._release.switches import delta_part, has

from conftest import PYDANTIC_AI
from dsl import Json, load, real, req, resp, ret, system, text, user
from profile_support import kinds, texts

PROFILES = [*PROVIDER_APIS, "any"]


SLICE = [req(ret("get", "c9", "42", at=3)), real(text("it is 42"), at=4)]

needs_delta = pytest.mark.skipif(
    delta_part() is None, reason=f"no ToolAvailabilityDeltaPart on {PYDANTIC_AI}"
)

DELTA: Json = {"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None}


def shape(history: list[pai.ModelMessage]) -> list[list[str]]:
    return [[part.part_kind for part in message.parts] for message in history]


@pytest.mark.parametrize("api", ["anthropic", "bedrock", "gemini", "any"])
def test_a_history_opening_on_a_response_gets_the_fixed_prompt_first(api: str) -> None:
    report = histfix.repair_report(load(SLICE), provider=api)
    first, second = report.messages[0], report.messages[1]
    assert isinstance(first, pai.ModelRequest) and isinstance(second, pai.ModelResponse)
    assert [p.content for p in first.parts if isinstance(p, pai.UserPromptPart)] == [histfix.STARTER_PROMPT]
    assert first.parts[0].timestamp == second.timestamp  # deterministic, from the response
    assert texts(report.messages) == [histfix.STARTER_PROMPT, "it is 42"]  # the model's text is kept
    assert "inserted_prompt" in kinds(report)


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "mistral"])
def test_apis_that_accept_a_response_first_get_no_prompt(api: str) -> None:

    if has(table.AGENT_REFUSES_RESPONSE_FIRST):
        pytest.skip("1.21.0's agent refuses a response-first history for every API (agent_accepts_opening)")
    assert histfix.repair(load(SLICE), provider=api) == histfix.repair(load(SLICE))


def test_a_leading_request_of_system_prompts_receives_the_prompt() -> None:
    history = load([req(system("be kind")), real(text("hello"), at=4), req(user("hi"))])
    fixed = histfix.repair(history, provider="bedrock")
    assert len(fixed) == len(history)
    assert [type(p) for p in fixed[0].parts] == [pai.SystemPromptPart, pai.UserPromptPart]
    assert fixed[0].parts[1].content == histfix.STARTER_PROMPT


def test_a_history_opening_on_a_user_turn_is_left_alone() -> None:
    history = load([req(user("hi")), real(text("hello"), at=4)])
    assert histfix.repair_report(history, provider="any").changes == ()


def test_check_names_the_first_user_rule_in_the_providers_words() -> None:
    history = load([real(text("hello"), at=4), req(user("hi"))])
    ((found, _),) = opening.detect_starts_with_user(history, resolve_provider("bedrock"), Scan())
    assert found.kind == "starts_with_response" and found.rejected_by == ("bedrock",)
    assert found.provider_error == opening.FIRST_USER_WORDING["bedrock"]
    ((found, words),) = opening.detect_starts_with_user(history, resolve_provider("any"), Scan())
    assert found.rejected_by == ("anthropic", "gemini", "bedrock") == tuple(words)
    assert found.provider_error == "; ".join(f"{api}: {opening.FIRST_USER_WORDING[api]}" for api in words)
    (checked,) = histfix.check(history, provider="any")
    assert checked.provider_error == found.provider_error


def test_the_agent_opening_switch_is_1_21_0_only() -> None:
    """Read in the wheels of 1.19.0-1.23.0: only 1.21.0's agent graph raises on it."""
    note = table.AGENT_REFUSES_RESPONSE_FIRST
    assert (note.release, note.until) == ("1.21.0", "1.22.0")
    assert has(table.AGENT_REFUSES_RESPONSE_FIRST) == (str(PYDANTIC_AI) == "1.21.0")


@pytest.mark.parametrize("api", PROVIDER_APIS)
def test_every_profile_opens_with_the_prompt_where_the_agent_needs_it(api: str) -> None:

    history = load([resp(text("where were we")), req(user("go on"))])
    report = histfix.repair_report(history, provider=api)
    inserted = [c for c in report.changes if c.kind == "inserted_prompt"]
    needed = has(table.AGENT_REFUSES_RESPONSE_FIRST) or api in opening.STARTS_WITH_USER_APIS
    assert bool(inserted) == needed, report.changes
    assert isinstance(report.messages[0], pai.ModelRequest) == needed
    found = [p for p in histfix.check(history, provider=api) if p.kind == "starts_with_response"]
    assert bool(found) == needed
    if has(table.AGENT_REFUSES_RESPONSE_FIRST) and api not in opening.STARTS_WITH_USER_APIS:
        assert any("cannot start with a `ModelResponse`" in (p.provider_error or "") for p in found)


@pytest.mark.parametrize(
    ("provider", "prompt_added"),
    [
        ("anthropic", True),  # no model named: the family is unknown
        ("anthropic:claude-sonnet-4-5", False),  # recorded accepting an assistant-first history
        ("anthropic:claude-3-5-sonnet-latest", True),  # the 2024 reports' family
        ("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", False),
        ("bedrock:us.qwen.qwen3-32b-v1:0", False),
        ("bedrock:amazon.nova-pro-v1:0", True),
        ("gemini:gemini-2.5-flash", True),
    ],
)
def test_a_starter_prompt_only_for_a_model_family_that_needs_it(provider: str, prompt_added: bool) -> None:
    """A profile changes only what its provider needs for the model family named: Claude 4 (direct
    or on Bedrock), Qwen, GLM and Kimi take a conversation opening on the model's response."""
    history = load([real(text("hello"), at=10), req(user("hi"))])
    repaired = histfix.repair(history, provider=provider)
    assert (len(repaired) == len(history) + 1) is prompt_added
    found = [p.kind for p in histfix.check(history, provider=provider)]
    assert ("starts_with_response" in found) is prompt_added


def test_the_starter_prompt_is_exported() -> None:
    assert "STARTER_PROMPT" in histfix.__all__ and histfix.STARTER_PROMPT == opening.STARTER_PROMPT


@needs_delta
@pytest.mark.parametrize("api", ["anthropic", "bedrock", "gemini"])
def test_a_first_request_of_a_system_prompt_and_a_delta_gets_the_starter_prompt(api: str) -> None:
    history = load([req(system("sys"), DELTA), real(text("hello"), at=2)])
    report = histfix.repair_report(history, provider=api)
    assert "inserted_prompt" in kinds(report)
    first = report.messages[0].parts
    assert isinstance(first[-1], pai.UserPromptPart) and first[-1].content == histfix.STARTER_PROMPT
    ((found, _),) = opening.detect_opens_with_user_turn(history, resolve_provider(api), Scan())
    assert found.kind == "starts_with_response" and found.provider_error == opening.FIRST_USER_WORDING[api]
    assert opening.opens_with_user_turn(report.messages, resolve_provider(api), Scan()) == (
        report.messages,
        [],
    )


@needs_delta
@pytest.mark.parametrize("name", PROFILES)
def test_a_history_of_only_a_delta_is_a_conversation_not_started(name: str) -> None:
    """Nothing to send yet, as in ``[]``: returned as the default repair returns it, not refused."""
    history = load([req(DELTA, instructions="be brief")])
    assert histfix.repair(history, provider=name) == histfix.repair(history)
    assert histfix.check(history, provider=name) == []

"""The shape rules of the provider profiles (histfix._profiles.rules.shape), on the installed release's types.

Each rule: what it changes, for which APIs only, what it reports (removed content in ``preview``),
and what ``check(provider=)`` says, in the provider's words. Across the corpus and every profile:
no mutation, determinism, idempotence, and no non-blank text or prompt lost.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import native as histfix_native
from histfix._profiles.rules import shape
from histfix._profiles.scan import Scan
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider
from histfix._release import switches as _compat

from conftest import PYDANTIC_AI
from corpus import CASES
from dsl import (
    call,
    dump,
    load,
    loadable,
    native_call,
    native_return,
    real,
    req,
    resp,
    ret,
    system,
    text,
    thinking,
    user,
)

PROFILES = [*PROVIDER_APIS, "any"]


def kinds(report: histfix.RepairReport) -> list[str]:
    return [change.kind for change in report.changes]


def texts(history: list[pai.ModelMessage]) -> list[str]:
    """Every non-blank text a person or the model wrote: prompts, text parts, thinking."""
    found: list[str] = []
    for message in history:
        for part in message.parts:
            content = getattr(part, "content", None)
            kind = (pai.UserPromptPart, pai.TextPart, pai.ThinkingPart)
            if isinstance(part, kind) and isinstance(content, str) and content.strip():
                found.append(content)
    return found


# --- starts_with_user -------------------------------------------------------------------------------


SLICE = [req(ret("get", "c9", "42", at=3)), real(text("it is 42"), at=4)]


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
    from histfix._release import switches as _compat

    if _compat.agent_refuses_response_first():
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
    ((found, _),) = shape.detect_starts_with_user(history, resolve_provider("bedrock"), Scan())
    assert found.kind == "starts_with_response" and found.rejected_by == ("bedrock",)
    assert found.provider_error == shape.FIRST_USER_WORDING["bedrock"]
    ((found, words),) = shape.detect_starts_with_user(history, resolve_provider("any"), Scan())
    assert found.rejected_by == ("anthropic", "gemini", "bedrock") == tuple(words)
    assert found.provider_error == "; ".join(f"{api}: {shape.FIRST_USER_WORDING[api]}" for api in words)
    (checked,) = histfix.check(history, provider="any")
    assert checked.provider_error == found.provider_error


# --- no_empty_content -------------------------------------------------------------------------------


def test_an_empty_prompt_is_dropped_and_reported() -> None:
    history = load([req(user("hi"), user("")), real(text("hello"), at=4)])
    report = histfix.repair_report(history, provider="anthropic")
    assert [p.content for p in report.messages[0].parts] == ["hi"]
    (change,) = report.changes
    assert change.kind == "dropped_empty" and change.preview == "''"
    assert "its content was: ''" in str(change)


def test_whitespace_text_is_dropped_for_anthropic_and_bedrock_only() -> None:
    history = load([req(user("hi")), real(text("  "), text("ok"), at=4), req(user("next"))])
    for api in ("openai-chat", "openai-responses", "gemini", "mistral"):
        assert histfix.repair(history, provider=api) == histfix.repair(history), api  # they accept it
    for api in ("anthropic", "bedrock", "any"):
        fixed = histfix.repair(history, provider=api)
        assert [p.content for p in fixed[1].parts] == ["ok"], api


@pytest.mark.uses_sdk("anthropic")
def test_anthropic_refuses_whitespace_text_and_accepts_its_profile(provider_bench: Any) -> None:
    history = load([req(user("hi")), real(text(" \n"), text("ok"), at=4), req(user("next"))])
    seconds: dict[str, float] = {"anthropic": 0.0}
    assert provider_bench.send("anthropic", histfix.repair(history), seconds).label() == (
        "rejected:anthropic.whitespace_text"
    )
    fixed = histfix.repair(history, provider="anthropic")
    assert provider_bench.send("anthropic", fixed, seconds).kind == "accepted"


def test_an_empty_last_request_is_dropped_with_its_instructions_reported() -> None:
    history = load([req(user("hi")), real(text("hello"), at=4), req(instructions="Be brief")])
    report = histfix.repair_report(history, provider="gemini")
    assert len(report.messages) == 2 and isinstance(report.messages[-1], pai.ModelResponse)
    (change,) = report.changes
    assert change.kind == "dropped_empty" and change.preview == "instructions: Be brief"


@pytest.mark.parametrize("api", ["anthropic", "bedrock", "openai-chat"])
def test_an_empty_last_request_stays_where_gemini_is_not_a_target(api: str) -> None:
    history = load([req(user("hi")), real(text("hello"), at=4), req(instructions="Be brief")])
    assert histfix.repair_report(history, provider=api).changes == ()


#: A response, then a request of only a tool-availability delta, which MistralModel does not send (the
#: long campaign's 2.68.0 seed 499454440374382): the response would be the last message on the wire.
DELTA_LAST = [
    real(thinking("th1"), at=1),
    req({"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None}),
]
needs_delta = pytest.mark.skipif(
    _compat.TOOL_AVAILABILITY_DELTA is None, reason=f"no ToolAvailabilityDeltaPart on {PYDANTIC_AI}"
)


@needs_delta
def test_a_last_request_of_only_deltas_is_dropped_for_mistral_and_reported() -> None:
    history = load(DELTA_LAST)
    before = copy.deepcopy(history)
    report = histfix.repair_report(history, provider="mistral")
    assert history == before
    assert report.messages == history[:1]
    (change,) = report.changes
    assert change.kind == "dropped_empty" and change.preview == "tools added: get"
    assert histfix.repair(report.messages, provider="mistral") == report.messages
    (found,) = histfix.check(history, provider="mistral")
    assert found.kind == "empty_message" and found.rejected_by == ("mistral",)
    assert "only tool-availability deltas" in found.description
    assert histfix.check(report.messages, provider="mistral") == []


@needs_delta
@pytest.mark.uses_sdk("mistral")
def test_mistral_accepts_the_delta_last_history_after_its_profile(provider_bench: Any) -> None:
    history = load(DELTA_LAST)
    seconds: dict[str, float] = {"mistral": 0.0}
    assert provider_bench.send("mistral", histfix.repair(history), seconds).label() == (
        "rejected:mistral.trailing_assistant"
    )
    assert (
        provider_bench.send("mistral", histfix.repair(history, provider="mistral"), seconds).kind
        == "accepted"
    )


#: The long campaign's seeds that found it (2.68.0, and 2.55.0 with instructions on the delta's request).
FOUND_BY_THE_CAMPAIGN = (499454440374382, 106186746626257)


@pytest.mark.uses_sdk("mistral")
@pytest.mark.parametrize("seed", FOUND_BY_THE_CAMPAIGN)
def test_the_campaigns_seeds_are_accepted_by_mistral(seed: int, provider_bench: Any) -> None:
    from test_provider_generated import NOTHING_SENDABLE, generated_history, may_refuse

    seconds: dict[str, float] = {"mistral": 0.0}
    history = load(generated_history(seed))  # another history where the delta part does not load
    for target in ("mistral", "any"):
        try:
            fixed = histfix.repair(history, provider=target)
        except ValueError as exc:  # nothing sendable: only where nothing could be
            assert NOTHING_SENDABLE in str(exc) and may_refuse(history), (seed, target)
            continue
        assert provider_bench.send("mistral", fixed, seconds).kind == "accepted", (seed, target)


@pytest.mark.parametrize("api", ["anthropic", "bedrock", "openai-chat", "openai-responses"])
def test_a_last_request_of_only_deltas_stays_where_mistral_is_not_a_target(api: str) -> None:
    if _compat.TOOL_AVAILABILITY_DELTA is None:
        pytest.skip(f"no ToolAvailabilityDeltaPart on {PYDANTIC_AI}")
    history = load(DELTA_LAST)
    assert [
        c for c in histfix.repair_report(history, provider=api).changes if c.kind == "dropped_empty"
    ] == []


def test_dropping_an_empty_response_merges_the_requests_it_separated() -> None:
    history = load([req(user("hi")), resp(at=4), req(user("again")), real(text("ok"), at=5)])
    report = histfix.repair_report(history, provider="bedrock")
    assert [type(m) for m in report.messages] == [pai.ModelRequest, pai.ModelResponse]
    assert [p.content for p in report.messages[0].parts] == ["hi", "again"]
    assert kinds(report) == ["dropped_empty", "merged_requests"]
    assert histfix.repair(report.messages, provider="bedrock") == report.messages


@pytest.mark.parametrize("api", ["openai-responses", "mistral"])
def test_apis_that_accept_empty_content_keep_it(api: str) -> None:
    history = load([req(user("hi"), user("")), real(text(""), text("ok"), at=4), req(user("n"))])
    assert histfix.repair(history, provider=api) == histfix.repair(history)


def test_check_reports_empty_content_in_the_providers_words() -> None:
    history = load([req(user("hi")), real(text(" "), at=4), req()])
    ((found, _),) = shape.detect_no_empty_content(history, resolve_provider("bedrock"), Scan())
    assert (found.kind, found.message_index, found.rejected_by) == ("empty_text", 1, ("bedrock",))
    assert found.provider_error == shape.EMPTY_WORDING["bedrock"]
    ((found, _),) = shape.detect_no_empty_content(history, resolve_provider("gemini"), Scan())
    assert (found.kind, found.message_index) == ("empty_message", 2)
    assert found.provider_error == "Please ensure that the last turn is a user turn."
    ((found, _),) = shape.detect_no_empty_content(history, resolve_provider("anthropic"), Scan())
    assert (found.kind, found.message_index, found.rejected_by) == ("empty_text", 1, ("anthropic",))
    assert shape.detect_no_empty_content(history, resolve_provider("openai-responses"), Scan()) == []


# --- results_first ----------------------------------------------------------------------------------


USER_BEFORE_RESULTS = [
    req(user("go")),
    real(call("f", "c1"), call("g", "c2"), at=10),
    req(user("x"), ret("f", "c1", "f done"), user("y"), ret("g", "c2", "g done")),
    real(text("ok"), at=20),
]


@pytest.mark.parametrize("api", ["anthropic", "bedrock", "openai-chat", "mistral", "any"])
def test_results_come_first_and_every_other_order_is_kept(api: str) -> None:
    report = histfix.repair_report(load(USER_BEFORE_RESULTS), provider=api)
    parts = report.messages[2].parts  # (ids may be renamed by the call rules: compare by tool name)
    assert [getattr(p, "tool_name", None) or p.content for p in parts] == ["f", "g", "x", "y"]
    assert "moved_parts" in kinds(report)


@pytest.mark.parametrize("api", ["gemini", "openai-responses"])
def test_results_first_is_only_for_the_apis_that_need_it(api: str) -> None:
    history = load(USER_BEFORE_RESULTS)
    assert histfix.repair(history, provider=api) == histfix.repair(history)


def test_check_reports_results_not_first() -> None:
    history = histfix.repair(load(USER_BEFORE_RESULTS))
    ((found, _),) = shape.detect_results_first(history, resolve_provider("mistral"), Scan())
    assert found.kind == "results_not_first" and found.message_index == 2
    assert found.provider_error == "Unexpected role 'tool' after role 'user'"


# --- alternating_roles ------------------------------------------------------------------------------


TWO_RESPONSES = [req(user("hi")), resp(text("a"), at=10, provider_name="openai"), real(text("b"), at=20)]


def test_bedrock_gets_one_response_from_two_in_a_row() -> None:
    report = histfix.repair_report(load(TWO_RESPONSES), provider="bedrock")
    assert len(report.messages) == 2
    merged = report.messages[1]
    assert isinstance(merged, pai.ModelResponse) and merged.provider_name == "openai"
    assert [p.content for p in merged.parts] == ["a", "b"]
    (change,) = report.changes
    assert change.kind == "merged_responses" and change.merged == (1, 2)


def test_other_apis_keep_two_responses_in_a_row() -> None:
    history = load(TWO_RESPONSES)
    assert histfix.repair(history, provider="anthropic") == histfix.repair(history)


def test_check_reports_consecutive_responses_for_bedrock() -> None:
    ((found, _),) = shape.detect_alternating_roles(load(TWO_RESPONSES), resolve_provider("bedrock"), Scan())
    assert found.kind == "consecutive_responses" and found.rejected_by == ("bedrock",)
    assert found.provider_error == shape.ALTERNATION_WORDING["bedrock"]
    assert shape.detect_alternating_roles(load(TWO_RESPONSES), resolve_provider("anthropic"), Scan()) == []
    # Gemini refuses only a function call turn that follows the model's own turn
    assert shape.detect_alternating_roles(load(TWO_RESPONSES), resolve_provider("gemini"), Scan()) == []
    calling = load([req(user("q")), resp(text("a")), resp(call("f", "c1")), req(ret("f", "c1"))])
    ((gemini, _),) = shape.detect_alternating_roles(calling, resolve_provider("gemini"), Scan())
    assert gemini.rejected_by == ("gemini",) and gemini.provider_error == shape.ALTERNATION_WORDING["gemini"]


# --- properties over the corpus, every profile --------------------------------------------------------


def _corpus() -> list[list[pai.ModelMessage]]:
    return [history for _, history in loadable(CASES) if history]


@pytest.fixture(scope="module")
def corpus() -> list[list[pai.ModelMessage]]:
    return _corpus()


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_are_pure_deterministic_idempotent_and_keep_text(
    profile: str, corpus: list[list[pai.ModelMessage]]
) -> None:
    for history in corpus:
        before = copy.deepcopy(history)
        try:
            fixed = histfix.repair(history, provider=profile)
        except ValueError:
            continue  # nothing sendable (a history of system prompts only)
        assert dump(history) == dump(before)  # never mutates
        assert dump(histfix.repair(history, provider=profile)) == dump(fixed)  # deterministic
        assert histfix.repair(fixed, provider=profile) == fixed  # idempotent
        kept = texts(fixed)
        # no text lost, but thinking a provider refuses (Bedrock's Claude on 1.0.0-1.0.2), reported
        report = histfix.repair_report(history, provider=profile)
        dropped = {change.preview for change in report.changes if change.kind == "dropped_thinking"}
        assert all(t in kept or shape.preview(t) in dropped for t in texts(histfix.repair(history))), profile


def test_the_starter_prompt_is_exported() -> None:
    assert "STARTER_PROMPT" in histfix.__all__ and histfix.STARTER_PROMPT == shape.STARTER_PROMPT


# --- native_calls_paired ----------------------------------------------------------------------------

RESULTS = [{"type": "web_search_result", "url": "https://ai.pydantic.dev", "title": "Pydantic AI"}]


def test_a_code_execution_call_without_its_result_is_dropped_and_reported() -> None:
    history = load(
        [req(user("run")), real(native_call("code_execution", "n1", {"code": "print(1)"}), text("hm"), at=4)]
    )
    report = histfix.repair_report(history, provider="anthropic")
    assert [p.part_kind for p in report.messages[1].parts] == ["text"]
    (change,) = report.changes
    assert change.kind == "dropped_native" and change.tool_call_id == "n1" and "print(1)" in str(change)
    ((found, _),) = histfix_native.detect_native_calls_paired(history, resolve_provider("anthropic"), Scan())
    assert found.provider_error == (
        "code_execution tool use with id n1 was found without a corresponding code_execution_tool_result block"
    )


IN_FLIGHT = [req(user("search")), real(native_call("web_search", "n1", {"q": "pydantic"}), text("hm"), at=4)]


def test_another_server_tool_in_flight_is_kept_for_anthropic() -> None:
    """The API takes a server tool call with no result yet (recorded: web_search under pause_turn)."""
    history = load(IN_FLIGHT)
    assert histfix.repair(history, provider="anthropic") == histfix.repair(history)
    assert histfix_native.detect_native_calls_paired(history, resolve_provider("anthropic"), Scan()) == []


@pytest.mark.uses_sdk("anthropic")
def test_anthropic_accepts_a_server_tool_in_flight_after_its_profile(provider_bench: Any) -> None:
    seconds: dict[str, float] = {"anthropic": 0.0}
    fixed = histfix.repair(load(IN_FLIGHT), provider="anthropic")
    assert provider_bench.send("anthropic", fixed, seconds).kind == "accepted"


def test_a_native_pair_the_api_accepts_is_kept() -> None:
    pair = [native_call("web_search", "n1"), native_return("web_search", "n1", RESULTS), text("found")]
    history = load([req(user("search")), real(*pair, at=4), req(user("thanks"))])
    fixed = histfix.repair(history, provider="anthropic")
    kinds_ = [p.part_kind for p in fixed[1].parts]
    assert kinds_ == ["builtin-tool-call", "builtin-tool-return", "text"]
    expected = (
        "web_search" if histfix._release.switches.native_return_named_by_tool() else "web_search_tool_result"
    )
    assert fixed[1].parts[1].tool_name == expected
    assert histfix.repair(fixed, provider="anthropic") == fixed


def test_a_native_pair_whose_result_no_release_sends_goes_whole() -> None:
    pair = [native_call("web_search", "n1"), native_return("web_search", "n1", "results"), text("found")]
    report = histfix.repair_report(load([req(user("search")), real(*pair, at=4)]), provider="any")
    assert [p.part_kind for p in report.messages[1].parts] == ["text"]
    assert [c.preview for c in report.changes] == ["{}", "results"]


@pytest.mark.parametrize("api", ["openai-chat", "gemini", "bedrock"])
def test_a_response_of_native_parts_only_goes_where_they_are_never_sent(api: str) -> None:
    pair = [native_call("web_search", "n1"), native_return("web_search", "n1", RESULTS)]
    history = load([req(user("search")), real(*pair, at=4), req(user("again")), real(text("ok"), at=5)])
    report = histfix.repair_report(history, provider=api)
    assert [type(m) for m in report.messages] == [pai.ModelRequest, pai.ModelResponse]
    assert "web_search_result" in str(report.changes[1])  # the results are in the report
    kept = histfix.repair(history, provider="anthropic")[1].parts  # Anthropic sends them: kept
    assert [p.part_kind for p in kept] == ["builtin-tool-call", "builtin-tool-return"]


def test_other_apis_keep_native_parts() -> None:
    history = load([req(user("search")), real(native_call("web_search", "n1"), text("hm"), at=4)])
    assert histfix.repair(history, provider="openai-responses") == histfix.repair(history)


# --- thinking_transfers -----------------------------------------------------------------------------


def _signed_by(provider: str) -> list[pai.ModelMessage]:
    return load(
        [
            req(user("think")),
            resp(thinking("let me see", signature="sig-x"), text("done"), at=4, provider_name=provider),
            req(user("next")),
        ]
    )


def test_a_foreign_signature_goes_and_the_thinking_text_stays() -> None:
    report = histfix.repair_report(_signed_by("openai"), provider="anthropic")
    part = report.messages[1].parts[0]
    assert isinstance(part, pai.ThinkingPart) and part.content == "let me see" and part.signature is None
    (change,) = report.changes
    assert change.kind == "dropped_signature" and change.preview == "sig-x"
    assert histfix.repair(report.messages, provider="anthropic") == report.messages
    ((found, _),) = histfix_native.detect_thinking_transfers(
        _signed_by("openai"), resolve_provider("anthropic"), Scan()
    )
    assert found.provider_error == "messages.1.content.0: Invalid signature in thinking block"


@pytest.mark.parametrize(("provider", "api"), [("anthropic", "anthropic"), ("openai", "openai-responses")])
def test_a_signature_stays_with_its_own_provider(provider: str, api: str) -> None:
    history = _signed_by(provider)
    assert histfix.repair(history, provider=api) == histfix.repair(history)


def test_any_keeps_no_signature_of_a_known_provider_but_every_thinking_text_bedrock_can_send() -> None:
    """From 1.0.3 no known provider's signature verifies with both Anthropic and OpenAI Responses, and
    the thinking text stays. 1.0.0-1.0.2 send OpenAI Responses no thinking, so Anthropic's signature
    stays there; Bedrock's Claude refuses the unsigned thinking they send it, so ``"any"`` drops the
    thinking it stripped of a signature, and says so."""
    for provider in ("anthropic", "openai", "google-gla"):
        report = histfix.repair_report(_signed_by(provider), provider="any")
        part = report.messages[1].parts[0]
        if _compat.bedrock_sends_only_own_thinking():
            assert (
                isinstance(part, pai.ThinkingPart) and part.signature is None and part.content == "let me see"
            )
        elif provider == "anthropic":
            assert isinstance(part, pai.ThinkingPart) and part.signature == "sig-x"
            assert not report.changes
        else:
            assert [(p.part_kind, p.content) for p in report.messages[1].parts] == [("text", "done")]
            assert [c.preview for c in report.changes if c.kind == "dropped_thinking"] == ["let me see"]


@pytest.mark.parametrize("provider", ["anthropic", "google-gla"])
def test_openai_responses_drops_a_signature_only_where_it_is_sent_thinking(provider: str) -> None:
    report = histfix.repair_report(_signed_by(provider), provider="openai-responses")
    dropped = [c.preview for c in report.changes if c.kind == "dropped_signature"]
    assert dropped == (["sig-x"] if _compat.thinking_sent() else [])
    assert report.messages[1].parts[0].content == "let me see"


def test_a_signature_of_unknown_origin_is_kept() -> None:
    history = load([req(user("t")), real(thinking("x", signature="sig"), text("y"), at=4), req(user("n"))])
    assert histfix.repair(history, provider="any")[1].parts[0].signature == "sig"


def test_empty_instructions_are_dropped_for_bedrock_only() -> None:
    """BedrockModel sends ``instructions=''`` as an empty system block, which boto3 refuses."""
    history = load([req(user("q")), resp(text("a")), req(user("b"))])
    history[2] = dataclasses.replace(history[2], instructions="")  # type: ignore[call-arg]
    fixed = histfix.repair(history, provider="bedrock")
    assert all(getattr(m, "instructions", None) != "" for m in fixed)
    assert histfix.repair(fixed, provider="bedrock") == fixed
    assert any(getattr(m, "instructions", None) == "" for m in histfix.repair(history, provider="anthropic"))


# --- agent_accepts_opening (1.21.0's agent refuses a response-first history) -------------------------


def test_the_agent_opening_switch_is_1_21_0_only() -> None:
    """Read in the wheels of 1.19.0-1.23.0: only 1.21.0's agent graph raises on it."""
    from histfix._release import switches as _compat

    assert tuple(map(str, _compat.AGENT_REFUSES_RESPONSE_FIRST)) == ("1.21.0", "1.22.0")
    assert _compat.agent_refuses_response_first() == (str(PYDANTIC_AI) == "1.21.0")


@pytest.mark.parametrize("api", PROVIDER_APIS)
def test_every_profile_opens_with_the_prompt_where_the_agent_needs_it(api: str) -> None:
    from histfix._release import switches as _compat

    history = load([resp(text("where were we")), req(user("go on"))])
    report = histfix.repair_report(history, provider=api)
    inserted = [c for c in report.changes if c.kind == "inserted_prompt"]
    needed = _compat.agent_refuses_response_first() or api in shape.STARTS_WITH_USER_APIS
    assert bool(inserted) == needed, report.changes
    assert isinstance(report.messages[0], pai.ModelRequest) == needed
    found = [p for p in histfix.check(history, provider=api) if p.kind == "starts_with_response"]
    assert bool(found) == needed
    if _compat.agent_refuses_response_first() and api not in shape.STARTS_WITH_USER_APIS:
        assert any("cannot start with a `ModelResponse`" in (p.provider_error or "") for p in found)


def test_an_empty_last_request_goes_for_mistral_which_wants_the_last_turn_from_the_user() -> None:
    """Mistral trailing_assistant (verified): an empty last request sends nothing, so the wire ends on
    the response; the profile drops it (reported with its instructions), where Chat keeps it."""
    history = load([req(user("hi")), real(text("hello"), at=10), req(instructions="be brief")])
    report = histfix.repair_report(history, provider="mistral")
    assert [m.kind for m in report.messages] == ["request", "response"]
    (dropped,) = report.changes
    assert (
        dropped.kind == "dropped_empty"
        and dropped.message_index == 2
        and "be brief" in (dropped.preview or "")
    )
    assert histfix.repair(report.messages, provider="mistral") == report.messages  # idempotent
    assert histfix.repair(history, provider="openai-chat") == histfix.repair(history)
    blank = load([req(user("hi")), real(text(" "), at=10), req(user(""))])
    assert histfix.repair(blank, provider="mistral") == histfix.repair(blank)  # Mistral keeps blank text


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

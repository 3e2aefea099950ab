"""The rules about empty messages and text (histfix._profiles.rules.empty), on the installed release's types.

Blank text, messages with nothing in them, and messages of only parts the release never sends
(native parts, thinking before 1.0.3, system prompts, tool-availability deltas, compaction), which
must not leave an empty message or two model turns in a row on the wire: each rule's change, for
which APIs only, what it reports, its detect wording; across the corpus, generated histories and
every profile: no mutation, determinism, idempotence, and no non-blank text lost but what a report
names.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import empty
from histfix._profiles.scan import Scan
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider
from histfix._profiles.unsent import EMPTY_RESPONSE_APIS
from histfix._release import table
from histfix._release.switches import delta_part, has

from conftest import PYDANTIC_AI
from corpus import CASES
from dsl import (
    call,
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
from generate import random_history
from volume import sized

PROFILES = [*PROVIDER_APIS, "any"]


def kinds(report: histfix.RepairReport) -> list[str]:
    return [change.kind for change in report.changes]


#: A response, then a request of only a tool-availability delta, which MistralModel does not send (the
#: long campaign's 2.68.0 seed 499454440374382): the response would be the last message on the wire.
DELTA_LAST = [
    real(thinking("th1"), at=1),
    req({"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None}),
]

needs_delta = pytest.mark.skipif(
    delta_part() is None, reason=f"no ToolAvailabilityDeltaPart on {PYDANTIC_AI}"
)

#: The long campaign's seeds that found it (2.68.0, and 2.55.0 with instructions on the delta's request).
FOUND_BY_THE_CAMPAIGN = (499454440374382, 106186746626257)


def _corpus() -> list[list[pai.ModelMessage]]:
    return [history for _, history in loadable(CASES) if history]


def shape(history: list[pai.ModelMessage]) -> list[list[str]]:
    return [[part.part_kind for part in message.parts] for message in history]


NATIVE_ALONE = [
    req(user("find it")),
    resp(native_call("web_search", "n1")),
    req(user("and then?")),
    real(text("found"), at=4),
]

LATE_SYSTEM = [
    req(user("q")),
    real(text("thinking about it"), at=2),
    req(system("be careful")),
    resp(call("get", "c1")),
    req(ret("get", "c1", at=4)),
]

HISTORIES: list[list[pai.ModelMessage]] = _corpus() + [
    load(random_history(seed)) for seed in range(sized(60))
]

EXTRA = [
    load(NATIVE_ALONE),
    load(LATE_SYSTEM),
    load([req(user("q")), resp(thinking("hmm")), resp(native_call("web_search", "n1")), req(user("x"))]),
    load(
        [req(user("q")), resp(native_call("web_search", "n1"), native_return("web_search", "n1", {"r": 1}))]
    ),
]


def _repaired(history: list[pai.ModelMessage], name: str) -> list[pai.ModelMessage] | None:
    try:
        return histfix.repair(history, provider=name)
    except ValueError:
        return None


def _texts(history: list[pai.ModelMessage]) -> list[Any]:
    return sorted(
        str(part.content)
        for message in history
        for part in message.parts
        if isinstance(part, (pai.UserPromptPart, pai.SystemPromptPart, pai.TextPart))
        and str(part.content).strip()
    )


COMPACTION = getattr(pai, "CompactionPart", None)

#: The provider sweep's 2.17.0 history (tests/profiles/test_provider_generated.py): nothing but a compaction
#: response survives the default repair, which OpenAI Chat sends as no message at all.
FOUND_ON_2_17 = 2444178726322182


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
    if delta_part() is None:
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
    ((found, _),) = empty.detect_no_empty_content(history, resolve_provider("bedrock"), Scan())
    assert (found.kind, found.message_index, found.rejected_by) == ("empty_text", 1, ("bedrock",))
    assert found.provider_error == empty.EMPTY_WORDING["bedrock"]
    ((found, _),) = empty.detect_no_empty_content(history, resolve_provider("gemini"), Scan())
    assert (found.kind, found.message_index) == ("empty_message", 2)
    assert found.provider_error == "Please ensure that the last turn is a user turn."
    ((found, _),) = empty.detect_no_empty_content(history, resolve_provider("anthropic"), Scan())
    assert (found.kind, found.message_index, found.rejected_by) == ("empty_text", 1, ("anthropic",))
    assert empty.detect_no_empty_content(history, resolve_provider("openai-responses"), Scan()) == []


def test_empty_instructions_are_dropped_for_bedrock_only() -> None:
    """BedrockModel sends ``instructions=''`` as an empty system block, which boto3 refuses."""
    history = load([req(user("q")), resp(text("a")), req(user("b"))])
    history[2] = dataclasses.replace(history[2], instructions="")  # type: ignore[call-arg]
    fixed = histfix.repair(history, provider="bedrock")
    assert all(getattr(m, "instructions", None) != "" for m in fixed)
    assert histfix.repair(fixed, provider="bedrock") == fixed
    assert any(getattr(m, "instructions", None) == "" for m in histfix.repair(history, provider="anthropic"))


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


@pytest.mark.parametrize("api", ["openai-chat", "gemini", "bedrock"])
def test_a_response_of_only_native_parts_alone_is_dropped_and_reported(api: str) -> None:
    """1.0.0 sends it as an empty assistant message; every release leaves the parts out (the profile's
    no_empty_content drops it first; this pass alone does the same)."""
    report = histfix.repair_report(load(NATIVE_ALONE), provider=api)
    assert shape(report.messages) == [["user-prompt", "user-prompt"], ["text"]]
    assert any("web_search" in str(change) for change in report.changes)
    fixed, changes = empty.responses_send_something(load(NATIVE_ALONE), resolve_provider(api), Scan())
    assert shape(fixed) == [["user-prompt", "user-prompt"], ["text"]]
    dropped = [change for change in changes if change.kind == "dropped_unsent"]
    assert len(dropped) == 1 and dropped[0].message_index == 1
    assert dropped[0].preview is not None and "builtin-tool-call" in dropped[0].preview
    assert "merged_requests" in [change.kind for change in changes]


@pytest.mark.parametrize("api", ["openai-responses", "mistral"])
def test_apis_that_never_get_an_empty_message_keep_the_response(api: str) -> None:
    history = load(NATIVE_ALONE)
    assert empty.responses_send_something(history, resolve_provider(api), Scan()) == (history, [])


def test_a_native_only_response_joins_the_response_beside_it_without_loss() -> None:
    history = load([req(user("q")), resp(native_call("web_search", "n1")), real(text("done"), at=2)])
    fixed, changes = empty.responses_send_something(history, resolve_provider("openai-chat"), Scan())
    assert shape(fixed) == [["user-prompt"], ["builtin-tool-call", "text"]]
    assert [c.kind for c in changes] == ["merged_responses"] and changes[0].merged == (1, 2)
    after = load([req(user("q")), real(text("done"), at=2), resp(native_call("web_search", "n1"))])
    fixed, _ = empty.responses_send_something(after, resolve_provider("bedrock"), Scan())
    assert shape(fixed) == [["user-prompt"], ["text", "builtin-tool-call"]]


def test_gemini_keeps_googles_own_native_parts() -> None:
    """GoogleModel sends Google's code execution parts; only other providers' native parts go."""
    history = load(
        [req(user("q")), resp(native_call("code_execution", "g1", provider="google")), req(user("more"))]
    )
    assert empty.responses_send_something(history, resolve_provider("gemini"), Scan()) == (history, [])
    ((found, _),) = empty.detect_responses_send_something(history, resolve_provider("openai-chat"), Scan())
    assert found.kind == "empty_message" and found.rejected_by == ("openai-chat",)
    assert found.provider_error == "content or tool_calls must be set"


def test_thinking_alone_is_unsent_only_where_the_release_drops_it() -> None:
    """1.0.0's OpenAI Chat and Gemini serializers drop thinking (1.0.3+ send it); Bedrock sends it."""
    history = load([req(user("q")), resp(thinking("hmm")), req(user("next"))])
    for api in ("openai-chat", "gemini"):
        fixed, changes = empty.responses_send_something(history, resolve_provider(api), Scan())
        if has(table.THINKING_SENT):
            assert (fixed, changes) == (history, [])
        else:
            assert shape(fixed) == [["user-prompt", "user-prompt"]]
            assert changes[0].kind == "dropped_unsent" and "hmm" in str(changes[0])
    assert empty.responses_send_something(history, resolve_provider("bedrock"), Scan()) == (history, [])


def test_a_later_request_of_system_prompts_joins_the_request_before_it_on_gemini() -> None:
    """GoogleModel sends it as a user turn of one empty text; the system text keeps its order."""
    report = histfix.repair_report(load(LATE_SYSTEM), provider="gemini")
    assert shape(report.messages) == [
        ["user-prompt", "system-prompt"],
        ["text", "tool-call"],
        ["tool-return"],
    ]
    assert kinds(report) == ["moved_parts", "merged_responses"]
    ((found, _),) = empty.detect_requests_send_something(
        load(LATE_SYSTEM), resolve_provider("gemini"), Scan()
    )
    assert found.message_index == 2 and found.provider_error == empty.EMPTY_REQUEST_WORDING["gemini"]
    assert "moved_parts" not in kinds(histfix.repair_report(load(LATE_SYSTEM), provider="anthropic"))


def test_a_later_request_of_system_prompts_goes_on_bedrock_and_the_responses_merge() -> None:
    """BedrockConverseModel sends no user message for it: the responses around it would meet."""
    report = histfix.repair_report(load(LATE_SYSTEM), provider="bedrock")
    assert shape(report.messages) == [
        ["user-prompt", "system-prompt"],
        ["text", "tool-call"],
        ["tool-return"],
    ]
    assert kinds(report) == ["moved_parts", "merged_responses"]


def test_a_leading_request_of_system_prompts_joins_the_first_user_turn_on_gemini() -> None:
    """Kept apart (the default repair does not merge a request the profile left), 1.0.0 sends it as
    an empty user text; its system prompts go to the start of the first user turn."""
    history = load([req(system("sys"), instructions="be verbose"), req(user("q")), real(text("a"), at=2)])
    fixed, changes = empty.requests_send_something(history, resolve_provider("gemini"), Scan())
    assert shape(fixed) == [["system-prompt", "user-prompt"], ["text"]]
    assert changes[0].kind == "moved_parts" and "be verbose" in str(changes[0])
    assert empty.requests_send_something(fixed, resolve_provider("gemini"), Scan()) == (fixed, [])


def test_a_leading_request_of_system_prompts_is_left_to_starts_with_user() -> None:
    history = load([req(system("sys")), req(user("q")), real(text("a"), at=2)])
    fixed = histfix.repair(history, provider="gemini")
    assert empty.requests_send_something(fixed, resolve_provider("gemini"), Scan()) == (fixed, [])


@pytest.mark.parametrize("name", PROFILES)
def test_profiles_with_the_turn_rules_are_pure_deterministic_and_idempotent(name: str) -> None:
    for history in HISTORIES + EXTRA:
        before = copy.deepcopy(history)
        once = _repaired(history, name)
        assert history == before
        if once is None:
            continue
        assert _repaired(history, name) == once
        assert histfix.repair(once, provider=name) == once


@pytest.mark.parametrize("name", PROFILES)
def test_no_response_is_left_with_only_unsent_parts(name: str) -> None:
    target = resolve_provider(name)
    for history in HISTORIES + EXTRA:
        fixed = _repaired(history, name)
        if fixed is None:
            continue
        for detect in (
            empty.detect_responses_send_something,
            empty.detect_requests_send_something,
        ):
            assert [found for found, _ in detect(fixed, target, Scan()) if found.rejected_by] == []


def test_moving_and_merging_loses_no_text() -> None:
    for history in EXTRA:
        for name in ("gemini", "openai-chat", "bedrock"):
            fixed = histfix.repair(history, provider=name)
            assert set(_texts(history)) <= set(_texts(fixed))


@pytest.mark.uses_sdk(*PROVIDER_APIS)
def test_the_sweeps_compaction_history_is_refused_or_accepted(provider_bench: Any) -> None:
    """Where CompactionPart loads, the history holds nothing OpenAI Chat sends: a profile refuses it
    (nothing sendable: it has no call, prompt or text) instead of sending an empty request
    (request_schema, as it did on 2.17.0); whatever a profile returns is accepted."""
    from test_provider_generated import NOTHING_SENDABLE, generated_history, may_refuse

    history = load(generated_history(FOUND_ON_2_17))
    seconds: dict[str, float] = {}
    for target in ("openai-chat", "any"):
        try:
            fixed = histfix.repair(history, provider=target)
        except ValueError as exc:
            assert NOTHING_SENDABLE in str(exc) and may_refuse(history), exc
            continue
        for api in PROVIDER_APIS if target == "any" else (target,):
            assert provider_bench.send(api, fixed, seconds).kind == "accepted", (target, api)


@pytest.mark.skipif(COMPACTION is None, reason="CompactionPart arrived after 1.80.0")
@pytest.mark.parametrize("api", sorted(EMPTY_RESPONSE_APIS))
def test_compaction_alone_is_dropped_and_reported(api: str) -> None:
    assert COMPACTION is not None
    history = load([req(user("q")), resp(text("a")), req(user("next"))])
    summary = COMPACTION(content="summary of earlier turns", provider_name="anthropic")
    history[1] = pai.ModelResponse(parts=[summary])
    before = copy.deepcopy(history)
    report = histfix.repair_report(history, provider=api)
    assert history == before
    assert not any(isinstance(p, COMPACTION) for m in report.messages for p in m.parts)
    assert [c.kind for c in report.changes if c.kind == "dropped_unsent"], report.changes
    kept = histfix.repair(history, provider="anthropic")  # Anthropic sends its own compaction
    assert any(isinstance(p, COMPACTION) for m in kept for p in m.parts)

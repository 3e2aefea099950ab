"""The turn rules of the provider profiles (histfix._profiles.rules.turns), on the installed release's types.

Parts the release never sends (native parts, thinking before 1.0.3, system prompts, tool-availability
deltas) must not leave an empty message or two model turns in a row on the wire: each rule's change,
for which APIs only, what it reports, its detect wording; across the corpus, generated histories
and every profile: no mutation, determinism, idempotence, and no non-blank text or prompt lost
except what a report names.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import turns
from histfix._profiles.scan import Scan
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider
from histfix._release import switches as _compat

from corpus import CASES
from dsl import (
    Json,
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

PROFILES = [*PROVIDER_APIS, "any"]
DELTA: Json = {"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None}
needs_delta = pytest.mark.skipif(
    _compat.TOOL_AVAILABILITY_DELTA is None, reason="ToolAvailabilityDeltaPart: 2.23.0+"
)


def kinds(report: histfix.RepairReport) -> list[str]:
    return [change.kind for change in report.changes]


def shape(history: list[pai.ModelMessage]) -> list[list[str]]:
    return [[part.part_kind for part in message.parts] for message in history]


# --- responses_send_something -------------------------------------------------------------------------

NATIVE_ALONE = [
    req(user("find it")),
    resp(native_call("web_search", "n1")),
    req(user("and then?")),
    real(text("found"), at=4),
]


@pytest.mark.parametrize("api", ["openai-chat", "gemini", "bedrock"])
def test_a_response_of_only_native_parts_alone_is_dropped_and_reported(api: str) -> None:
    """1.0.0 sends it as an empty assistant message; every release leaves the parts out (the profile's
    no_empty_content drops it first; this pass alone does the same)."""
    report = histfix.repair_report(load(NATIVE_ALONE), provider=api)
    assert shape(report.messages) == [["user-prompt", "user-prompt"], ["text"]]
    assert any("web_search" in str(change) for change in report.changes)
    fixed, changes = turns.responses_send_something(load(NATIVE_ALONE), resolve_provider(api), Scan())
    assert shape(fixed) == [["user-prompt", "user-prompt"], ["text"]]
    dropped = [change for change in changes if change.kind == "dropped_unsent"]
    assert len(dropped) == 1 and dropped[0].message_index == 1
    assert dropped[0].preview is not None and "builtin-tool-call" in dropped[0].preview
    assert "merged_requests" in [change.kind for change in changes]


@pytest.mark.parametrize("api", ["openai-responses", "mistral"])
def test_apis_that_never_get_an_empty_message_keep_the_response(api: str) -> None:
    history = load(NATIVE_ALONE)
    assert turns.responses_send_something(history, resolve_provider(api), Scan()) == (history, [])


def test_a_native_only_response_joins_the_response_beside_it_without_loss() -> None:
    history = load([req(user("q")), resp(native_call("web_search", "n1")), real(text("done"), at=2)])
    fixed, changes = turns.responses_send_something(history, resolve_provider("openai-chat"), Scan())
    assert shape(fixed) == [["user-prompt"], ["builtin-tool-call", "text"]]
    assert [c.kind for c in changes] == ["merged_responses"] and changes[0].merged == (1, 2)
    after = load([req(user("q")), real(text("done"), at=2), resp(native_call("web_search", "n1"))])
    fixed, _ = turns.responses_send_something(after, resolve_provider("bedrock"), Scan())
    assert shape(fixed) == [["user-prompt"], ["text", "builtin-tool-call"]]


def test_gemini_keeps_googles_own_native_parts() -> None:
    """GoogleModel sends Google's code execution parts; only other providers' native parts go."""
    history = load(
        [req(user("q")), resp(native_call("code_execution", "g1", provider="google")), req(user("more"))]
    )
    assert turns.responses_send_something(history, resolve_provider("gemini"), Scan()) == (history, [])
    ((found, _),) = turns.detect_responses_send_something(history, resolve_provider("openai-chat"), Scan())
    assert found.kind == "empty_message" and found.rejected_by == ("openai-chat",)
    assert found.provider_error == "content or tool_calls must be set"


def test_thinking_alone_is_unsent_only_where_the_release_drops_it() -> None:
    """1.0.0's OpenAI Chat and Gemini serializers drop thinking (1.0.3+ send it); Bedrock sends it."""
    history = load([req(user("q")), resp(thinking("hmm")), req(user("next"))])
    for api in ("openai-chat", "gemini"):
        fixed, changes = turns.responses_send_something(history, resolve_provider(api), Scan())
        if _compat.thinking_sent():
            assert (fixed, changes) == (history, [])
        else:
            assert shape(fixed) == [["user-prompt", "user-prompt"]]
            assert changes[0].kind == "dropped_unsent" and "hmm" in str(changes[0])
    assert turns.responses_send_something(history, resolve_provider("bedrock"), Scan()) == (history, [])


# --- requests_send_something --------------------------------------------------------------------------

LATE_SYSTEM = [
    req(user("q")),
    real(text("thinking about it"), at=2),
    req(system("be careful")),
    resp(call("get", "c1")),
    req(ret("get", "c1", at=4)),
]


def test_a_later_request_of_system_prompts_joins_the_request_before_it_on_gemini() -> None:
    """GoogleModel sends it as a user turn of one empty text; the system text keeps its order."""
    report = histfix.repair_report(load(LATE_SYSTEM), provider="gemini")
    assert shape(report.messages) == [
        ["user-prompt", "system-prompt"],
        ["text", "tool-call"],
        ["tool-return"],
    ]
    assert kinds(report) == ["moved_parts", "merged_responses"]
    ((found, _),) = turns.detect_requests_send_something(
        load(LATE_SYSTEM), resolve_provider("gemini"), Scan()
    )
    assert found.message_index == 2 and found.provider_error == turns.EMPTY_REQUEST_WORDING["gemini"]
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
    fixed, changes = turns.requests_send_something(history, resolve_provider("gemini"), Scan())
    assert shape(fixed) == [["system-prompt", "user-prompt"], ["text"]]
    assert changes[0].kind == "moved_parts" and "be verbose" in str(changes[0])
    assert turns.requests_send_something(fixed, resolve_provider("gemini"), Scan()) == (fixed, [])


def test_a_leading_request_of_system_prompts_is_left_to_starts_with_user() -> None:
    history = load([req(system("sys")), req(user("q")), real(text("a"), at=2)])
    fixed = histfix.repair(history, provider="gemini")
    assert turns.requests_send_something(fixed, resolve_provider("gemini"), Scan()) == (fixed, [])


# --- opens_with_user_turn and nothing sendable (tool-availability deltas, 2.23.0+) --------------------


@needs_delta
@pytest.mark.parametrize("api", ["anthropic", "bedrock", "gemini"])
def test_a_first_request_of_a_system_prompt_and_a_delta_gets_the_starter_prompt(api: str) -> None:
    history = load([req(system("sys"), DELTA), real(text("hello"), at=2)])
    report = histfix.repair_report(history, provider=api)
    assert "inserted_prompt" in kinds(report)
    first = report.messages[0].parts
    assert isinstance(first[-1], pai.UserPromptPart) and first[-1].content == histfix.STARTER_PROMPT
    ((found, _),) = turns.detect_opens_with_user_turn(history, resolve_provider(api), Scan())
    assert found.kind == "starts_with_response" and found.provider_error == turns.OPENING_WORDING[api]
    assert turns.opens_with_user_turn(report.messages, resolve_provider(api), Scan()) == (report.messages, [])


@needs_delta
@pytest.mark.parametrize("name", PROFILES)
def test_a_history_of_only_a_delta_is_a_conversation_not_started(name: str) -> None:
    """Nothing to send yet, as in ``[]``: returned as the default repair returns it, not refused."""
    history = load([req(DELTA, instructions="be brief")])
    assert histfix.repair(history, provider=name) == histfix.repair(history)
    assert histfix.check(history, provider=name) == []


# --- guarantees ---------------------------------------------------------------------------------------


def _corpus() -> list[list[pai.ModelMessage]]:
    """Every corpus case this release can load (a case needing a newer field is left out here, as
    its own tests skip it)."""
    return [history for _, history in loadable(CASES)]


HISTORIES: list[list[pai.ModelMessage]] = _corpus() + [load(random_history(seed)) for seed in range(60)]
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
            turns.detect_responses_send_something,
            turns.detect_requests_send_something,
        ):
            assert [found for found, _ in detect(fixed, target, Scan()) if found.rejected_by] == []


def _texts(history: list[pai.ModelMessage]) -> list[Any]:
    return sorted(
        str(part.content)
        for message in history
        for part in message.parts
        if isinstance(part, (pai.UserPromptPart, pai.SystemPromptPart, pai.TextPart))
        and str(part.content).strip()
    )


def test_moving_and_merging_loses_no_text() -> None:
    for history in EXTRA:
        for name in ("gemini", "openai-chat", "bedrock"):
            fixed = histfix.repair(history, provider=name)
            assert set(_texts(history)) <= set(_texts(fixed))


# --- compaction (a provider's summary of earlier turns) -------------------------------------------------

COMPACTION = getattr(pai, "CompactionPart", None)
#: The provider sweep's 2.17.0 history (tests/profiles/test_provider_generated.py): nothing but a compaction
#: response survives the default repair, which OpenAI Chat sends as no message at all.
FOUND_ON_2_17 = 2444178726322182


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
@pytest.mark.parametrize("api", sorted(turns.RESPONSES_APIS))
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

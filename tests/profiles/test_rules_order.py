"""The ordering rules (histfix._profiles.rules.order), on the installed release's types.

A part before a request's tool results, two responses in a row, and a response's calls split apart
for a server that reads them as one group: what each rule changes, for which APIs and models only,
and what ``check(provider=)`` says in the provider's words.

pydantic-ai#7430: OpenAIResponsesModel sends a response's parts in order, so thinking or text
between its function calls splits them, and a Responses-compatible server that reads a run of calls
and outputs as one group (a DeepSeek model, observed) refuses the calls before the break.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import order
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import table
from histfix._release.switches import has

from conftest import PYDANTIC_AI
from corpus import CASES
from dsl import Json, call, load, real, req, resp, ret, text, user
from emulators import serve
from wire import Client, Driver, responses_client


def kinds(report: histfix.RepairReport) -> list[str]:
    return [change.kind for change in report.changes]


USER_BEFORE_RESULTS = [
    req(user("go")),
    real(call("f", "c1"), call("g", "c2"), at=10),
    req(user("x"), ret("f", "c1", "f done"), user("y"), ret("g", "c2", "g done")),
    real(text("ok"), at=20),
]

TWO_RESPONSES = [req(user("hi")), resp(text("a"), at=10, provider_name="openai"), real(text("b"), at=20)]

DEEPSEEK = "deepseek-v4-flash"

TARGET = f"openai-responses:{DEEPSEEK}"

REFUSED = "rejected:openai-responses.function_call_without_output"

BY_NAME = {case.name: case for case in CASES}

#: The issue's history (thinking between calls; a retry answers call-a), and the same split by text.
SPLIT_BY_THINKING = BY_NAME["X_calls_split_by_thinking"].history

SPLIT_BY_TEXT: list[Json] = [
    req(user("weather in two cities")),
    real(text("first Paris"), call("get", "call-a"), text("then Rome"), call("get", "call-b"), at=10),
    req(ret("get", "call-a"), ret("get", "call-b")),
]

SHAPES = {"thinking": SPLIT_BY_THINKING, "text": SPLIT_BY_TEXT}


def _sent_between(kind: str) -> bool:
    """Whether this release sends the part between the calls (thinking only from 1.0.3)."""
    return kind == "text" or has(table.THINKING_SENT)


def _calls_last(history: list[pai.ModelMessage]) -> bool:
    """Every response's tool calls come after its other parts."""
    for message in history:
        if isinstance(message, pai.ModelResponse):
            kinds = [isinstance(part, pai.ToolCallPart) for part in message.parts]
            if kinds != sorted(kinds):
                return False
    return True


@pytest.fixture(scope="module")
def deepseek() -> Iterator[tuple[Client, Any, Driver]]:
    client = responses_client(DEEPSEEK)
    if isinstance(client, str):
        pytest.skip(client)
    emulator = serve("openai-responses")
    driver = Driver()
    try:
        yield client, emulator, driver
    finally:
        driver.close()
        emulator.close()


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
    ((found, _),) = order.detect_results_first(history, resolve_provider("mistral"), Scan())
    assert found.kind == "results_not_first" and found.message_index == 2
    assert found.provider_error == "Unexpected role 'tool' after role 'user'"


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
    ((found, _),) = order.detect_alternating_roles(load(TWO_RESPONSES), resolve_provider("bedrock"), Scan())
    assert found.kind == "consecutive_responses" and found.rejected_by == ("bedrock",)
    assert found.provider_error == order.ALTERNATION_WORDING["bedrock"]
    assert order.detect_alternating_roles(load(TWO_RESPONSES), resolve_provider("anthropic"), Scan()) == []
    # Gemini refuses only a function call turn that follows the model's own turn
    assert order.detect_alternating_roles(load(TWO_RESPONSES), resolve_provider("gemini"), Scan()) == []
    calling = load([req(user("q")), resp(text("a")), resp(call("f", "c1")), req(ret("f", "c1"))])
    ((gemini, _),) = order.detect_alternating_roles(calling, resolve_provider("gemini"), Scan())
    assert gemini.rejected_by == ("gemini",) and gemini.provider_error == order.ALTERNATION_WORDING["gemini"]


@pytest.mark.parametrize("kind", SHAPES)
def test_the_calls_move_after_the_other_parts_for_a_grouping_server_only(kind: str) -> None:
    history = load(SHAPES[kind])
    before = copy.deepcopy(history)
    report = histfix.repair_report(history, provider=TARGET)
    assert history == before
    if not _sent_between(kind):  # 1.0.0-1.0.2 send no thinking: nothing splits the calls
        assert report.messages == histfix.repair(history) and not report.changes
        assert histfix.check(history, provider=TARGET) == []
        return
    assert [change.kind for change in report.changes] == ["moved_parts"]
    assert _calls_last(report.messages) and not _calls_last(history)
    (fixed, original) = (report.messages[1], history[1])
    assert sorted(map(repr, fixed.parts)) == sorted(map(repr, original.parts))  # nothing added or lost
    assert histfix.repair(report.messages, provider=TARGET) == report.messages
    for other in ("openai-responses", "openai-responses:o3", "openai-responses:gpt-4o", "any"):
        kept = histfix.repair_report(history, provider=other)
        assert "moved_parts" not in [change.kind for change in kept.changes], other
        assert not _calls_last(kept.messages), other


@pytest.mark.parametrize("kind", SHAPES)
def test_check_names_the_split_in_the_servers_words(kind: str) -> None:
    if not _sent_between(kind):
        pytest.skip(f"pydantic-ai-slim {PYDANTIC_AI} sends no thinking")
    history = load(SHAPES[kind])
    (found,) = histfix.check(history, provider=TARGET)
    assert found.kind == "split_calls" and found.message_index == 1
    assert found.provider_error == "No tool output found for tool call call-a."
    assert histfix.check(history, provider="openai-responses") == []
    assert histfix.check(histfix.repair(history, provider=TARGET), provider=TARGET) == []


def test_a_response_whose_calls_come_last_is_left_alone() -> None:
    history = load([req(user("go")), real(text("both"), call("get", "a"), call("get", "b"), at=10)])
    assert histfix.repair(history, provider=TARGET) == histfix.repair(history)


@pytest.mark.uses_sdk("openai-responses")
@pytest.mark.parametrize("kind", SHAPES)
def test_refused_where_the_release_splits_the_calls_and_accepted_after_the_profile(
    kind: str, deepseek: tuple[Client, Any, Driver]
) -> None:
    client, emulator, driver = deepseek
    history = load(SHAPES[kind])
    stored = driver.send(client, emulator, histfix.repair(history))
    if _sent_between(kind):
        assert stored.label() == REFUSED, (PYDANTIC_AI, stored)
    else:
        assert stored.kind == "accepted", (PYDANTIC_AI, stored)
    fixed = driver.send(client, emulator, histfix.repair(history, provider=TARGET))
    assert fixed.kind == "accepted", (PYDANTIC_AI, fixed)

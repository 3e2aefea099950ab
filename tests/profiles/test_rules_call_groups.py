"""The call-group pass (``src/histfix/_profiles/rules/call_groups.py``) on the installed release.

pydantic-ai#7430: OpenAIResponsesModel sends a response's parts in order, so thinking or text
between its tool calls goes out between the function_call items, before any output. OpenAI accepts
that; a Responses-compatible server that reads calls and outputs as one run (DeepSeek) refuses the
calls before the break. Measured through this release's own OpenAIResponsesModel against the
Responses emulator: the stored shapes are refused for a DeepSeek model exactly where the release
sends the part between the calls (text on every release, thinking from 1.0.3), and accepted after
``repair(h, provider="openai-responses:deepseek-v4-flash")``; OpenAI's models get them unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._release import switches as _compat

from conftest import PYDANTIC_AI
from corpus import CASES
from dsl import Json, call, load, real, req, ret, text, user
from emulators import serve
from wire import Client, Driver, responses_client

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
    return kind == "text" or _compat.thinking_sent()


def _calls_last(history: list[pai.ModelMessage]) -> bool:
    """Every response's tool calls come after its other parts."""
    for message in history:
        if isinstance(message, pai.ModelResponse):
            kinds = [isinstance(part, pai.ToolCallPart) for part in message.parts]
            if kinds != sorted(kinds):
                return False
    return True


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

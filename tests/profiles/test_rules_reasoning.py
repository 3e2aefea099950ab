"""The reasoning-item pass (``src/histfix/_rules_reasoning.py``) on the installed release.

OpenAIResponsesModel replays thinking as ``reasoning`` items (every thinking part on 1.0.3-1.0.4,
OpenAI's own with an id from 1.0.5, for reasoning models), and OpenAI rejects one with no output
item after it. Found by the provider sweep on 1.0.4 (generated seeds 2917592901615616 and
2917592901615623: three id-less thinking parts, then a call). Measured here through the release's
own OpenAIResponsesModel for a reasoning model (``wire.REASONING_MODEL``) against the Responses
emulator: the stored histories are refused exactly where the release sends such an item, and
``repair(h, provider="openai-responses")`` and ``provider="any"`` are accepted on every release.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from packaging.version import Version
from pydantic_ai import messages as pai
from test_provider_generated import generated_history

import histfix
from histfix._release import table
from histfix._release.switches import has

from conftest import PYDANTIC_AI
from dsl import Json, call, load, req, resp, ret, text, user
from emulators import serve
from wire import Client, Driver, Outcome, reasoning_responses_client

#: Which thinking parts the installed OpenAIResponsesModel sends as reasoning items.
MODE = (
    "none" if not has(table.THINKING_SENT) else "own" if has(table.RESPONSES_REASONING_OWN_ONLY) else "every"
)
#: Thinking has ``id`` and ``provider_name`` (both arrived in 1.0.x after 1.0.0's ThinkingPart).
FIELDS = {field.name for field in dataclasses.fields(pai.ThinkingPart)}
needs_ids = pytest.mark.skipif(
    not {"id", "provider_name"} <= FIELDS, reason=f"ThinkingPart on {PYDANTIC_AI} has no id or provider_name"
)
#: The sweep's 1.0.4 seeds (tests/profiles/test_provider_generated.py), a regression test on every release.
FOUND_ON_1_0_4 = (2917592901615616, 2917592901615623)
REFUSED = "openai-responses.reasoning_without_following_item"


def _own(content: str = "let me think", id: str = "rs_1", **extra: Any) -> Json:
    return {
        "part_kind": "thinking",
        "content": content,
        "id": id,
        "signature": "enc",
        "provider_name": "openai",
        **extra,
    }


def _foreign(content: str) -> Json:
    return {"part_kind": "thinking", "content": content}


def _openai(*parts: Json) -> Json:
    return resp(*parts, provider_name="openai")


#: name -> (history, whether the release sends a reasoning item with nothing after it)
CASES: dict[str, tuple[list[Json], bool]] = {
    "own thinking only (a stream cut after its reasoning)": (
        [req(user("hi")), _openai(_own()), req(user("again"))],
        MODE != "none",
    ),
    # text without the id of its stored message goes out as an id-less assistant message, which is
    # no following item (gpt-5 refused one: pydantic-ai's test_openai_responses_thinking_with_modified_history)
    "own thinking, then text": (
        [req(user("hi")), _openai(_own(), text("hello")), req(user("again"))],
        MODE != "none",
    ),
    "own thinking, then a call": (
        [req(user("hi")), _openai(_own(), call("f", "c1")), req(ret("f", "c1", "ok")), resp(text("done"))],
        False,
    ),
    "two own reasoning items in a row": (
        [req(user("hi")), _openai(_own("a"), _own("b", id="rs_2"), text("hello")), req(user("again"))],
        MODE != "none",
    ),
    "one item in two parts, then text": (
        [req(user("hi")), _openai(_own("a"), _own("b"), text("hello")), req(user("again"))],
        MODE != "none",
    ),
    **(
        {
            "own thinking, then its own message (with its id)": (
                [req(user("hi")), _openai(_own(), {**text("hello"), "id": "msg_1"}), req(user("again"))],
                False,
            )
        }
        if "id" in {field.name for field in dataclasses.fields(pai.TextPart)}
        else {}
    ),
    "foreign thinking only": ([req(user("hi")), resp(_foreign("hmm")), req(user("again"))], MODE == "every"),
    "foreign thinking twice, then text": (
        [req(user("hi")), resp(_foreign("a"), _foreign("b"), text("hello")), req(user("again"))],
        MODE == "every",
    ),
}


@pytest.fixture(scope="module")
def responses() -> Iterator[tuple[Client, Any, Driver]]:
    client = reasoning_responses_client()
    if isinstance(client, str):
        pytest.skip(client)
    emulator = serve("openai-responses")
    driver = Driver()
    try:
        yield client, emulator, driver
    finally:
        driver.close()
        emulator.close()


def _send(responses: tuple[Client, Any, Driver], history: list[pai.ModelMessage]) -> Outcome:
    client, emulator, driver = responses
    return driver.send(client, emulator, history)


def test_the_switches_are_the_read_boundaries() -> None:
    """1.0.3 first sends thinking, 1.0.5 first sends only OpenAI's own as reasoning items (read in
    the wheels of 1.0.1-1.0.7), 1.0.9 first sends OpenAI's native calls (1.0.8/1.0.9)."""
    assert (table.THINKING_SENT.release, table.RESPONSES_REASONING_OWN_ONLY.release) == ("1.0.3", "1.0.5")
    assert table.RESPONSES_NATIVE_CALLS_SENT.release == "1.0.9"
    expected = "none" if Version("1.0.3") > PYDANTIC_AI else "every"
    if Version("1.0.5") <= PYDANTIC_AI:
        expected = "own"
    assert expected == MODE
    assert has(table.RESPONSES_NATIVE_CALLS_SENT) == (Version("1.0.9") <= PYDANTIC_AI)


@needs_ids
@pytest.mark.uses_sdk("openai-responses")
@pytest.mark.parametrize("name", CASES)
def test_refused_exactly_where_measured_and_the_profiles_are_accepted(
    name: str, responses: tuple[Client, Any, Driver]
) -> None:
    stored, refused = CASES[name]
    history = load(stored)
    outcome = _send(responses, histfix.repair(history))
    if refused:
        assert outcome.label() == f"rejected:{REFUSED}", outcome
    else:
        assert outcome.kind == "accepted", outcome
    for target in ("openai-responses", "any"):
        fixed = histfix.repair(history, provider=target)
        assert _send(responses, fixed).kind == "accepted", (target, _send(responses, fixed))


@pytest.mark.uses_sdk("openai-responses")
@pytest.mark.parametrize("seed", FOUND_ON_1_0_4)
def test_the_sweeps_seeds_are_accepted(seed: int, responses: tuple[Client, Any, Driver]) -> None:
    history = load(generated_history(seed))
    for target in ("openai-responses", "any"):
        outcome = _send(responses, histfix.repair(history, provider=target))
        assert outcome.kind == "accepted", (target, outcome)


@needs_ids
@pytest.mark.parametrize("name", CASES)
def test_the_pass_changes_only_what_is_refused_and_reports_it(name: str) -> None:
    stored, refused = CASES[name]
    history = load(stored)
    before = copy.deepcopy(history)
    report = histfix.repair_report(history, provider="openai-responses")
    assert history == before
    mine = [change for change in report.changes if change.kind == "unfollowed_reasoning"]
    assert bool(mine) == refused, mine
    thinking = [p for m in report.messages for p in m.parts if isinstance(p, pai.ThinkingPart)]
    kept = [p for m in history for p in m.parts if isinstance(p, pai.ThinkingPart)]
    if MODE == "every" and refused:
        assert len(thinking) < len(kept)  # dropped, and its text reported
        assert all(change.preview for change in mine)
    else:
        # the text of every thinking part stays; only an unfollowed item's id goes
        assert [p.content for p in thinking] == [p.content for p in kept]
    assert histfix.repair(report.messages, provider="openai-responses") == report.messages  # idempotent
    found = [
        p for p in histfix.check(history, provider="openai-responses") if p.kind == "unfollowed_reasoning"
    ]
    assert bool(found) == refused
    for problem in found:
        assert (
            problem.provider_error is not None
            and "of type 'reasoning' was provided without" in problem.provider_error
        )
    assert not [
        p
        for p in histfix.check(report.messages, provider="openai-responses")
        if p.kind == "unfollowed_reasoning"
    ]


@needs_ids
def test_an_own_native_call_is_a_follower_only_where_the_release_sends_it() -> None:
    native_call = {
        "part_kind": "builtin-tool-call",
        "tool_name": "web_search",
        "args": {"query": "q"},
        "tool_call_id": "ws_1",
        "provider_name": "openai",
    }
    history = load([req(user("hi")), _openai(_own(), native_call), req(user("again"))])
    changes = histfix.repair_report(history, provider="openai-responses").changes
    cleared = any(change.kind == "unfollowed_reasoning" for change in changes)
    assert cleared == (MODE != "none" and not has(table.RESPONSES_NATIVE_CALLS_SENT))

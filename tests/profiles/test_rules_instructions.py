"""Where OpenAI Chat and Mistral put the instructions, and OpenAI Chat pydantic-ai's framing announcement
(``src/histfix/_profiles/rules/instructions.py``).

On 1.33.0-1.74.x both model classes insert the instructions at the count of system messages in the
history, which lands them inside a tool exchange when a system prompt comes after the first turn
(found by the long campaign on 1.67.0: seeds 2562699975196837, 2562699975196840, 2562699975197037).
Measured here through the release's own OpenAIChatModel and MistralModel against the emulators
(``tests/support/provider_bench.py``): the default repair's output is refused exactly on those releases, and
``repair(h, provider=...)`` and ``provider="any"`` are accepted on every release.

From 2.63.0, for a model whose profile takes no inline system prompts, ``Model.prepare_messages`` puts a
system prompt announcing its ``<system>`` blocks at the front of the first request; in a history opening on
a response with tool calls that is between the calls and their results (found through 2.78.0's
``CloudflareChatModel`` on a generated history). Measured through OpenAIChatModel with such a profile.
"""

from __future__ import annotations

import copy

import pytest
from packaging.version import Version
from test_provider_generated import generated_history

import histfix
from histfix._release import table
from histfix._release.switches import has

from conftest import PYDANTIC_AI
from dsl import Json, call, load, req, resp, ret, system, text, user
from emulators import PROVIDER_APIS
from provider_bench import Bench
from wire import system_blocks_chat_client

AFFECTED = has(table.INSTRUCTIONS_AT_SYSTEM_COUNT)
FOUND_ON_1_67 = (2562699975196837, 2562699975196840, 2562699975197037)
APIS = ("openai-chat", "mistral")
#: Nine letters or digits: ids every Mistral release sends as stored.
C0, C1, C2 = "callaaaa0", "callaaaa1", "callaaaa2"
#: Two system prompts after the first turn, instructions on that request, and a last request of only
#: a tool result (so the release takes the instructions from the request before it): on the wire,
#: user, assistant(call), tool, ... with the instructions inserted at 2, between the call and its result.
LATER_SYSTEM: list[Json] = [
    req(user("weather in Paris?")),
    resp(call("weather", C1, {"city": "Paris"})),
    req(
        ret("weather", C1, "sunny"),
        system("be terse"),
        system("use metric"),
        user("and Rome?"),
        instructions="brief",
    ),
    resp(call("weather", C2, {"city": "Rome"})),
    req(ret("weather", C2, "rainy")),
]
#: A slice opening on a response, three system prompts after two tool exchanges: the instructions land at
#: 3, between the second call and its result.
OPENS_ON_RESPONSE: list[Json] = [
    resp(call("weather", C0, {"city": "Oslo"})),
    req(ret("weather", C0, "snow")),
    resp(call("weather", C1, {"city": "Paris"})),
    req(
        ret("weather", C1, "sunny"),
        system("a"),
        system("b"),
        system("c"),
        user("and Rome?"),
        instructions="brief",
    ),
    *LATER_SYSTEM[3:],
]
LEADING_SYSTEM: list[Json] = [
    req(system("be terse"), system("use metric"), user("weather in Paris?")),
    LATER_SYSTEM[1],
    req(ret("weather", C1, "sunny"), user("and Rome?"), instructions="brief"),
    *LATER_SYSTEM[3:],
]
CASES = {"later system prompts": LATER_SYSTEM, "opens on a response": OPENS_ON_RESPONSE}
SYSTEM_TEXTS = {"later system prompts": ["be terse", "use metric"], "opens on a response": ["a", "b", "c"]}


def _moves(history: list[Json], target: str) -> list[histfix.Change]:
    return [
        c
        for c in histfix.repair_report(load(history), provider=target).changes
        if c.kind == "moved_system_prompt"
    ]


def test_the_switch_is_the_read_boundary() -> None:
    """1.32.0 inserts the instructions first, 1.33.0-1.74.x at the system count, 1.75.0 after the
    leading system messages (read in their wheels)."""
    note = table.INSTRUCTIONS_AT_SYSTEM_COUNT
    assert (note.release, note.until) == ("1.33.0", "1.75.0")
    assert (Version("1.33.0") <= PYDANTIC_AI < Version("1.75.0")) == AFFECTED


@pytest.mark.uses_sdk(*APIS)
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("api", APIS)
def test_refused_exactly_where_the_release_miscounts_and_the_profiles_are_accepted(
    api: str, name: str, provider_bench: Bench
) -> None:
    history = load(CASES[name])
    seconds: dict[str, float] = {}
    default = provider_bench.send(api, histfix.repair(history), seconds)
    if AFFECTED:
        assert default.kind == "rejected", default
    elif api == "openai-chat" and not (
        name == "opens on a response" and has(table.AGENT_REFUSES_RESPONSE_FIRST)
    ):
        assert default.kind == "accepted", default
    for target in (api, "any"):
        outcome = provider_bench.send(api, histfix.repair(history, provider=target), seconds)
        assert outcome.kind == "accepted", (target, outcome)


@pytest.mark.uses_sdk(*PROVIDER_APIS)
@pytest.mark.parametrize("seed", FOUND_ON_1_67)
def test_the_campaigns_seeds_are_accepted_everywhere(seed: int, provider_bench: Bench) -> None:
    history = load(generated_history(seed))
    seconds: dict[str, float] = {}
    for api in APIS:
        outcome = provider_bench.send(api, histfix.repair(history, provider=api), seconds)
        assert outcome.kind == "accepted", (api, outcome)
    fixed = histfix.repair(history, provider="any")
    for api in PROVIDER_APIS:
        assert provider_bench.send(api, fixed, seconds).kind == "accepted", api


@pytest.mark.parametrize("name", CASES)
def test_system_prompts_move_only_where_needed_and_each_move_is_reported(name: str) -> None:
    history = load(CASES[name])
    before = copy.deepcopy(history)
    for target in (*APIS, "any"):
        report = histfix.repair_report(history, provider=target)
        assert history == before
        moves = [c for c in report.changes if c.kind == "moved_system_prompt"]
        wanted = SYSTEM_TEXTS[name]
        assert [c.preview for c in moves] == (wanted if AFFECTED else []), moves
        texts = [p.content for m in report.messages for p in m.parts if p.part_kind == "system-prompt"]
        assert texts == wanted  # nothing lost, order kept
        if AFFECTED:
            first = report.messages[0]
            assert [p.part_kind for p in first.parts][: len(wanted)] == ["system-prompt"] * len(wanted)
        assert histfix.repair(report.messages, provider=target) == report.messages  # idempotent
        found = [p for p in histfix.check(history, provider=target) if p.kind == "misplaced_instructions"]
        assert bool(found) == AFFECTED
        assert not [
            p for p in histfix.check(report.messages, provider=target) if p.kind == "misplaced_instructions"
        ]
    assert not _moves(LEADING_SYSTEM, "openai-chat")  # leading system prompts are where the release counts
    assert not _moves(LATER_SYSTEM, "anthropic")  # only the two APIs that count


ANNOUNCED = has(table.FRAMING_ANNOUNCED)
#: A slice opening on a response with a call; after its result a system prompt (which the release sends as a
#: ``<system>`` block, and announces); ending on a request of only a result, so the run sends it as it is,
#: with the instructions of the request before.
OPENS_ON_CALLS: list[Json] = [
    resp(call("weather", C0, {"city": "Oslo"})),
    req(ret("weather", C0, "snow"), system("use metric"), instructions="brief"),
    resp(call("weather", C1, {"city": "Rome"})),
    req(ret("weather", C1, "rain"), instructions="brief"),
]


def test_the_announcement_switch_is_the_read_boundary() -> None:
    """2.62.0 announces nothing; 2.63.0 (``_announce_system_voice``) to 2.78.0
    (``Model._announce_in_standing_prompt``) put it at the front of the first request (read in their wheels)."""
    assert table.FRAMING_ANNOUNCED.release == "2.63.0"
    assert (Version("2.63.0") <= PYDANTIC_AI) == ANNOUNCED


@pytest.mark.uses_sdk("openai-chat")
def test_the_announcement_is_refused_where_the_release_puts_it_and_the_profiles_are_accepted(
    provider_bench: Bench,
) -> None:
    client = system_blocks_chat_client()
    if isinstance(client, str):
        pytest.skip(client)
    emulator = provider_bench.emulator("openai-chat")
    history = load(OPENS_ON_CALLS)
    stored = provider_bench.driver.send(client, emulator, history)
    if ANNOUNCED:
        assert (stored.kind, stored.rule) == ("rejected", "openai-chat.tool_calls_without_response"), stored
    else:
        assert stored.kind == "accepted", stored
    found = [p for p in histfix.check(history, provider="openai-chat") if p.kind == "misplaced_announcement"]
    assert len(found) == ANNOUNCED
    assert not found or found[0].provider_error == (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: callaaaa0"
    )
    for target in ("openai-chat", "any", "groq"):
        report = histfix.repair_report(history, provider=target)
        outcome = provider_bench.driver.send(client, emulator, report.messages)
        assert outcome.kind == "accepted", (target, outcome)
        assert histfix.check(report.messages, provider=target) == []
        inserted = [c for c in report.changes if c.kind == "inserted_prompt"]
        assert len(inserted) == (1 if ANNOUNCED or target == "any" else 0), report.changes
        assert histfix.repair(report.messages, provider=target) == report.messages  # idempotent


def test_the_announcement_rule_is_only_for_a_history_opening_on_calls_sent_to_openai_chat() -> None:
    opens_on_text = load([resp(text("hello")), *OPENS_ON_CALLS[1:2]])
    opens_on_request = load([req(user("q")), *OPENS_ON_CALLS])
    for history in (opens_on_text, opens_on_request):
        assert not [
            p for p in histfix.check(history, provider="openai-chat") if p.kind == "misplaced_announcement"
        ]
    history = load(OPENS_ON_CALLS)
    for target in ("openai-responses", "mistral", "anthropic:claude-sonnet-4-5"):
        assert not [
            c for c in histfix.repair_report(history, provider=target).changes if c.kind == "inserted_prompt"
        ]

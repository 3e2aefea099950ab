"""Capability parts and request-side summaries, sent by the release's own model classes to the emulators.

2.78.0's ``Model.prepare_messages`` renders each capability part (``ctx.enqueue``, capabilities) before any
model class maps it: an instruction at operator authority as a system prompt (OpenAI Chat, Responses
and Mistral send a system message; Anthropic, Gemini and Bedrock, whose profiles take no inline system
prompts, ``<system>`` text in the user's turn), anything below that as a note and its framed content in
the user's turn; a request-scoped one is left out once a response has answered its request. A
``CompactionPart`` a summarizer wrote sits in a request (from 2.62.0) and goes out as user text in
``<pyai:conversation_summary>``. The profile rules reason about turns, empty messages and system
prompts; here they are measured against what those parts become on the wire.

Each case goes, as stored and after ``repair(h, provider=<the client's model>)`` and ``provider="any"``,
through each client the release has (``wire.BUILDERS``: the six APIs' own model classes, a Claude 3
model, which wants the user's turn first, a Bedrock Llama, OpenAI Chat for a model without inline system
prompts, as 2.78.0's ``CloudflareChatModel`` has: ``test_provider_prefixes.py`` proves that class). Asserted: what ``check`` finds nothing in is accepted as
stored (on these releases "as stored" is after pydantic-ai's own repair, which changes nothing here);
the stored verdicts are the measured ones in ``REJECTED`` (accepted elsewhere); both profile ways are
accepted, and ``check`` finds nothing in the profile's output. Feature detection: the capability cases
run where the release has capability parts, the summary cases where a request loads a compaction part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._release import table
from histfix._release.switches import has

from provider_bench import Bench
from wire import BEDROCK_LLAMA, LEGACY_CLAUDE, SYSTEM_BLOCKS_CHAT

#: The release has capability parts (2.78.0).
CAPABILITY = hasattr(pai, "DataCapabilityPart") and hasattr(pai, "InstructionCapabilityPart")


def _request_compaction_loads() -> bool:
    try:
        (loaded,) = pai.ModelMessagesTypeAdapter.validate_python(
            [{"kind": "request", "parts": [{"part_kind": "compaction", "content": "summary"}]}]
        )
    except ValueError:
        return False
    return getattr(loaded.parts[0], "part_kind", "") == "compaction"


#: A request holds a summary an application wrote (2.62.0).
REQUEST_COMPACTION = _request_compaction_loads()

#: Each client (a ``wire.BUILDERS`` key) -> the ``provider=`` naming the model it sends to.
TARGETS: dict[str, str] = {
    "openai-chat": "openai-chat:gpt-4o",
    "openai-responses": "openai-responses:gpt-4o",
    "anthropic": "anthropic:claude-sonnet-4-6",
    "gemini": "gemini:gemini-2.5-flash",
    "bedrock": "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0",
    "mistral": "mistral:mistral-large-latest",
    LEGACY_CLAUDE: LEGACY_CLAUDE,
    BEDROCK_LLAMA: BEDROCK_LLAMA,
    SYSTEM_BLOCKS_CHAT: "openai-chat",
}
AT = datetime(2026, 12, 1, tzinfo=timezone.utc)

if CAPABILITY:

    @dataclass(kw_only=True)
    class Reminder(pai.InstructionCapabilityPart, namespace="histfix_tests"):  # type: ignore[call-arg,misc,name-defined]
        """An instruction a capability adds mid-conversation."""

    @dataclass(kw_only=True)
    class Progress(pai.DataCapabilityPart[str], namespace="histfix_tests", tag="progress_report"):  # type: ignore[call-arg,misc,name-defined]
        """Data a capability inserts (a judge's report)."""


def _instruction(content: str, source: str = "operator", scope: str = "conversation") -> Any:
    sources: dict[str, Callable[[], Any]] = {
        "operator": pai.OperatorSource,  # type: ignore[attr-defined]
        "user": pai.UserSource,  # type: ignore[attr-defined]
        "model": lambda: pai.ModelSource("judge"),  # type: ignore[attr-defined]
    }
    return Reminder(content=content, source=sources[source](), scope=scope, timestamp=AT)


def _data(content: str) -> Any:
    return Progress(content=content, source=pai.ModelSource("judge"), timestamp=AT)  # type: ignore[attr-defined]


def _summary(content: str | None = "We compared the weather in Oslo and Rome.") -> Any:
    return pai.CompactionPart(content)  # type: ignore[attr-defined]


def req(*parts: Any, instructions: str | None = None) -> pai.ModelRequest:
    return pai.ModelRequest(parts=list(parts), instructions=instructions)


def resp(*parts: Any) -> pai.ModelResponse:
    return pai.ModelResponse(parts=list(parts), model_name="m", timestamp=AT)


def user(text: str) -> pai.UserPromptPart:
    return pai.UserPromptPart(text, timestamp=AT)


def call(call_id: str) -> pai.ToolCallPart:
    return pai.ToolCallPart("weather", {"city": "Oslo"}, call_id)


def ret(call_id: str) -> pai.ToolReturnPart:
    return pai.ToolReturnPart("weather", "snow", call_id, timestamp=AT)


def text(content: str) -> pai.TextPart:
    return pai.TextPart(content)


#: Nine letters or digits: ids every Mistral release sends as stored.
C1, C2 = "callaaaa1", "callaaaa2"


def capability_cases() -> dict[str, list[pai.ModelMessage]]:
    op, data = _instruction, _data
    return {
        "an instruction opens": [req(op("Be brief.")), resp(text("Hi."))],
        "data opens": [req(data("3 of 5 done.")), resp(text("Hi."))],
        "a user's instruction opens": [req(op("Metric units.", "user")), resp(text("Hi."))],
        "a request-scoped instruction opens": [
            req(op("Answer now.", scope="request")),
            resp(text("Hi.")),
            req(user("weather?")),
            resp(text("Snow.")),
        ],
        "a request-scoped judge's instruction opens": [
            req(op("Answer now.", "model", "request")),
            resp(text("Hi.")),
            req(user("weather?")),
            resp(text("Snow.")),
        ],
        "a system prompt and a request-scoped instruction open": [
            req(pai.SystemPromptPart("Be kind."), op("Answer now.", scope="request")),
            resp(text("Hi.")),
        ],
        "an instruction between turns": [
            req(user("q")),
            resp(text("a")),
            req(op("Be brief.")),
            resp(text("b")),
        ],
        "a request-scoped instruction before a call": [
            req(user("q")),
            resp(text("a")),
            req(op("Answer now.", scope="request")),
            resp(call(C1)),
            req(ret(C1)),
        ],
        "an instruction beside results": [
            req(user("q")),
            resp(call(C1)),
            req(ret(C1), op("Be brief.")),
            resp(text("b")),
        ],
        "data before results": [
            req(user("q")),
            resp(call(C1)),
            req(data("3 of 5."), ret(C1)),
            resp(text("b")),
        ],
        "an instruction ends": [req(user("q")), resp(text("a")), req(op("Be brief."))],
        "data ends": [req(user("q")), resp(text("a")), req(data("3 of 5."))],
        "a slice opens on calls, data after the results": [
            resp(call(C1)),
            req(ret(C1), data("3 of 5."), instructions="brief"),
            resp(call(C2)),
            req(ret(C2), instructions="brief"),
        ],
    }


def summary_cases() -> dict[str, list[pai.ModelMessage]]:
    return {
        "a summary opens": [req(_summary()), resp(text("Hi."))],
        "a summary between turns": [req(user("q")), resp(text("a")), req(_summary()), resp(text("b"))],
        "a summary before results": [
            req(user("q")),
            resp(call(C1)),
            req(_summary(), ret(C1)),
            resp(text("b")),
        ],
        "a summary ends": [req(user("q")), resp(text("a")), req(_summary())],
        "an empty summary": [req(user("q")), resp(text("a")), req(_summary(None)), resp(text("b"))],
        "a slice opens on calls, a summary after the results": [
            resp(call(C1)),
            req(ret(C1), _summary(), instructions="brief"),
            resp(call(C2)),
            req(ret(C2), instructions="brief"),
        ],
    }


CASES: dict[str, list[pai.ModelMessage]] = {
    **(capability_cases() if CAPABILITY else {}),
    **(summary_cases() if REQUEST_COMPACTION else {}),
}
_ANNOUNCED = "openai-chat.tool_calls_without_response"
_FIRST_USER = "anthropic.first_message_user"
#: (case, client) -> the rule the stored history meets (measured on 2.78.0; the summary cases on
#: 2.62.0-2.68.0 too). A request-scoped part that opens the history is left out once answered, so the
#: conversation opens on the model's turn, as a slice opening on calls does; one between two responses
#: leaves them neighbours, which Bedrock refuses; a slice opening on calls gets the framing announcement
#: between them and their results from a model without inline system prompts (``rules/instructions.py``,
#: from ``table.FRAMING_ANNOUNCED``); before ``table.RESULTS_SENT_FIRST`` a summary before the results
#: goes out before them, which every API that wants the results first refuses (``rules/order.py``).
REJECTED: dict[tuple[str, str], str] = {
    ("a request-scoped instruction opens", LEGACY_CLAUDE): _FIRST_USER,
    ("a request-scoped judge's instruction opens", LEGACY_CLAUDE): _FIRST_USER,
    ("a system prompt and a request-scoped instruction open", LEGACY_CLAUDE): _FIRST_USER,
    ("a request-scoped instruction before a call", "bedrock"): "bedrock.alternate_roles",
    ("a request-scoped instruction before a call", BEDROCK_LLAMA): "bedrock.alternate_roles",
    ("a slice opens on calls, data after the results", LEGACY_CLAUDE): _FIRST_USER,
    ("a slice opens on calls, a summary after the results", LEGACY_CLAUDE): _FIRST_USER,
}
if has(table.FRAMING_ANNOUNCED):
    REJECTED[("a slice opens on calls, data after the results", SYSTEM_BLOCKS_CHAT)] = _ANNOUNCED
    REJECTED[("a slice opens on calls, a summary after the results", SYSTEM_BLOCKS_CHAT)] = _ANNOUNCED
if not has(table.RESULTS_SENT_FIRST):
    REJECTED.update(
        {
            ("a summary before results", "openai-chat"): "openai-chat.tool_calls_without_response",
            ("a summary before results", SYSTEM_BLOCKS_CHAT): "openai-chat.tool_calls_without_response",
            ("a summary before results", "anthropic"): "anthropic.tool_result_first",
            ("a summary before results", LEGACY_CLAUDE): "anthropic.tool_result_first",
            ("a summary before results", "bedrock"): "bedrock.tool_results_first",
            # for Llama, the '.' turn Bedrock puts between the summary and the results calls nothing
            ("a summary before results", BEDROCK_LLAMA): "bedrock.too_many_tool_results",
            ("a summary before results", "mistral"): "mistral.unexpected_tool_role",
        }
    )


def test_every_case_kind_this_release_has_is_measured() -> None:
    """The cases run exactly where the release has what they hold (an empty CASES would prove nothing)."""
    assert bool(CAPABILITY and REQUEST_COMPACTION) == (len(CASES) == 19)
    assert REQUEST_COMPACTION or not CASES
    assert all(case in CASES for case, _ in REJECTED) or not CAPABILITY


@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_what_check_passes_is_accepted_and_the_profiles_are(
    name: str, api: str, provider_bench: Bench
) -> None:
    history, target = CASES[name], TARGETS[api]
    seconds: dict[str, float] = {}
    stored = provider_bench.send(api, history, seconds)
    assert stored.label() == (f"rejected:{REJECTED[name, api]}" if (name, api) in REJECTED else "accepted"), (
        stored
    )
    found = histfix.check(history, provider=target)
    assert found or stored.kind == "accepted", f"check({target!r}) finds nothing, the wire refuses: {stored}"
    for way in (target, "any"):
        repaired = histfix.repair(history, provider=way)
        outcome = provider_bench.send(api, repaired, seconds)
        assert outcome.kind == "accepted", (way, outcome)
        assert histfix.check(repaired, provider=way) == [], way
        assert histfix.repair(repaired, provider=way) == repaired, way  # idempotent


@pytest.mark.skipif(not CAPABILITY, reason="capability parts arrived in 2.78.0")
def test_a_request_scoped_part_that_opens_the_history_is_no_user_turn() -> None:
    """starts_with_user (for a model that wants the user's turn first) counts a request-scoped capability
    part as the system prompt it is not: left out once answered, it leaves the model's turn first."""
    history = CASES["a request-scoped instruction opens"]
    (problem,) = histfix.check(history, provider=LEGACY_CLAUDE)
    assert (problem.kind, problem.message_index) == ("starts_with_response", 1)
    report = histfix.repair_report(history, provider=LEGACY_CLAUDE)
    assert [c.kind for c in report.changes] == ["inserted_prompt"]
    assert [p.part_kind for p in report.messages[0].parts] == ["capability", "user-prompt"]
    assert (
        histfix.check(history, provider="anthropic:claude-sonnet-4-6") == []
    )  # takes the model's turn first
    conversation = CASES["an instruction opens"]  # a conversation-scoped one is sent: a user turn
    assert histfix.check(conversation, provider=LEGACY_CLAUDE) == []


@pytest.mark.skipif(not CAPABILITY, reason="capability parts arrived in 2.78.0")
def test_a_request_scoped_part_beside_a_tool_reveal_opens_with_the_starter_prompt() -> None:
    """opens_with_user_turn counts it too: a first request of a tool-availability delta and a request-scoped
    part sends nothing once answered, so the starter prompt joins that request."""
    history = [
        req(pai.ToolAvailabilityDeltaPart(tools_added=["weather"]), _instruction("Now.", scope="request"))
    ]
    history += [resp(text("Hi.")), req(user("weather?"))]
    (problem,) = histfix.check(history, provider="anthropic")
    assert (problem.kind, problem.message_index) == ("starts_with_response", 1)
    fixed = histfix.repair(history, provider="anthropic")
    assert [p.part_kind for p in fixed[0].parts] == ["tool-availability-delta", "capability", "user-prompt"]
    assert histfix.check(fixed, provider="anthropic") == []

"""agent_options(): one line that makes every model request see a repaired history, on every release.

The model is a StrictModel (a FunctionModel that rejects broken pairing the way strict providers
do); tools are real agent tools. No provider, no network.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import warnings
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry, capture_run_messages
from pydantic_ai import messages as pai
from pydantic_ai.exceptions import UserError
from pydantic_ai.models.function import AgentInfo

import histfix

from dsl import INTERRUPTED, MARKER, call, load, real, req, ret, system, text, user
from strict import StrictModel, StrictProviderError, assert_provider_valid, pairing_problems

UNPROCESSED_CALLS = (
    "Cannot provide a new user prompt when the message history contains unprocessed tool calls."
)


def tool_using_reply(*tools: str) -> Any:
    """A model that calls ``tools`` in parallel on every new prompt, then answers from the results."""
    ids = itertools.count(1)

    def reply(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        last = messages[-1]
        answered = [p for p in last.parts if isinstance(p, pai.ToolReturnPart | pai.RetryPromptPart)]
        # a retry is a RetryPromptPart before 2.60.0 and a ToolReturnPart(outcome='retried') from it
        retried = [
            p
            for p in answered
            if isinstance(p, pai.RetryPromptPart) or getattr(p, "outcome", None) == "retried"
        ]
        if retried:
            name = retried[0].tool_name or tools[0]
            return pai.ModelResponse(parts=[pai.ToolCallPart(name, {"city": "Oslo"}, f"t{next(ids)}")])
        if answered:
            return pai.ModelResponse(parts=[pai.TextPart(f"answer from {len(answered)} results")])
        calls = [pai.ToolCallPart(name, {"city": "Paris"}, f"t{next(ids)}") for name in tools]
        return pai.ModelResponse(parts=calls)

    return reply


def weather_agent(model: StrictModel, **options: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model.model, **options)

    @agent.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    @agent.tool_plain
    def time(city: str) -> str:
        return f"noon in {city}"

    return agent


def test_one_line_wiring_warns_nowhere() -> None:
    model = StrictModel(tool_using_reply("weather"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = weather_agent(model, **histfix.agent_options(keep_last_turns=5))
        result = agent.run_sync("weather?")
    assert result.output == "answer from 1 results"
    assert [str(w.message) for w in caught] == []


def test_options_use_the_releases_own_mechanism() -> None:
    options = histfix.agent_options()
    try:
        from pydantic_ai.capabilities import ProcessHistory  # 1.87.0+
    except ImportError:
        assert list(options) == ["history_processors"]
        assert isinstance(options["history_processors"][0], histfix.RepairProcessor)
    else:
        assert list(options) == ["capabilities"]
        assert isinstance(options["capabilities"][-1], ProcessHistory)


def test_own_capabilities_pass_through() -> None:
    sentinel = object()
    options = histfix.agent_options(capabilities=[sentinel])
    assert options["capabilities"][0] is sentinel


def test_multi_turn_with_parallel_tools() -> None:
    model = StrictModel(tool_using_reply("weather", "time"))
    agent = weather_agent(model, **histfix.agent_options())
    history: list[pai.ModelMessage] = []
    for question in ("paris?", "and tomorrow?", "thanks"):
        result = agent.run_sync(question, message_history=history)
        assert result.output == "answer from 2 results"
        history = result.all_messages()
    assert len(model.received) == 6
    assert not pairing_problems(history)


def test_interrupted_run_is_repaired_before_the_model_sees_it() -> None:
    aborted = load(
        [req(user("test")), real(call("weather", "call_1", {"city": "Rome"}), at=5), req(user("test"))]
    )
    plain = StrictModel()
    if not hasattr(pai, "repair_messages") and not _repairs_on_the_wire():
        with pytest.raises(StrictProviderError):
            weather_agent(plain).run_sync(None, message_history=aborted)
    model = StrictModel()
    result = weather_agent(model, **histfix.agent_options()).run_sync(None, message_history=aborted)
    assert result.output == "done"
    (sent,) = model.received
    closing = sent[2].parts[0]
    assert isinstance(closing, pai.ToolReturnPart)
    assert (closing.tool_call_id, closing.content, closing.metadata) == (
        "call_1",
        INTERRUPTED,
        {MARKER: True},
    )
    stored = result.all_messages()
    assert not pairing_problems(stored)  # the processor's output became the stored history
    assert stored[2].parts[0] == closing


def _repairs_on_the_wire() -> bool:
    from packaging.version import Version

    from conftest import PYDANTIC_AI

    return Version("2.10.0") <= PYDANTIC_AI


def test_tool_that_crashes_then_a_new_prompt() -> None:
    model = StrictModel(tool_using_reply("explode"))
    agent = weather_agent(model, **histfix.agent_options())

    @agent.tool_plain
    def explode(city: str) -> str:
        raise RuntimeError("worker died")

    with capture_run_messages() as captured, pytest.raises(RuntimeError, match="worker died"):
        agent.run_sync("go")
    # what the application stored: the prompt and the call that never got its result
    stored = [*captured[:1], pai.ModelResponse(parts=[pai.ToolCallPart("explode", {"city": "Paris"}, "t1")])]
    assert len(model.received) == 1
    # A processor runs only before a model request, after pydantic-ai's own check of the new prompt,
    # so for this one shape repair the stored history before adding the prompt.
    with pytest.raises(UserError, match=UNPROCESSED_CALLS):
        weather_agent(StrictModel(), **histfix.agent_options()).run_sync("next", message_history=stored)
    resumed = StrictModel()
    result = weather_agent(resumed, **histfix.agent_options()).run_sync(
        "next", message_history=histfix.repair(stored)
    )
    assert result.output == "done"
    assert_provider_valid(result.all_messages())


def test_tool_retry_round_trip() -> None:
    model = StrictModel(tool_using_reply("picky"))
    agent = weather_agent(model, **histfix.agent_options())
    attempts = []

    @agent.tool_plain
    def picky(city: str) -> str:
        attempts.append(city)
        if city == "Paris":
            raise ModelRetry("Paris is not supported, try another city")
        return f"fine in {city}"

    result = agent.run_sync("go")
    assert attempts == ["Paris", "Oslo"]
    assert result.output == "answer from 1 results"
    assert not pairing_problems(result.all_messages())


def test_resume_from_stored_json_with_a_lost_parallel_result() -> None:
    model = StrictModel(tool_using_reply("weather", "time"))
    agent = weather_agent(model, **histfix.agent_options())
    first = agent.run_sync("paris?").all_messages()
    # the store lost one of the two parallel results (a crash between the two tool executions)
    broken = json.loads(pai.ModelMessagesTypeAdapter.dump_json(first))
    broken[2]["parts"] = broken[2]["parts"][:1]
    del broken[3]  # and the answer that followed
    stored = pai.ModelMessagesTypeAdapter.validate_json(json.dumps(broken))
    result = agent.run_sync(None, message_history=stored)
    assert result.output == "answer from 2 results"
    sent = model.received[-1]
    synthesized = [p for p in sent[2].parts if (getattr(p, "metadata", None) or {}).get(MARKER)]
    assert len(synthesized) == 1


def test_trimming_that_would_split_a_pair() -> None:
    turns = []
    for t in range(4):
        turns += [
            req(*([system("be brief")] if t == 0 else []), user(f"q{t}", 10 * t)),
            real(call("weather", f"w{t}", {"city": "Paris"}), at=10 * t + 1),
            req(ret("weather", f"w{t}", "sunny", at=10 * t + 2)),
            real(text(f"a{t}"), at=10 * t + 3),
        ]
    history = load(turns)
    naive = history[-2:]  # what `messages[-N:]` can do: start on a tool result
    assert pairing_problems([*naive, pai.ModelRequest(parts=[pai.UserPromptPart("q4")])])
    model = StrictModel(tool_using_reply("weather"))
    agent = weather_agent(model, **histfix.agent_options(keep_last_turns=2))
    result = agent.run_sync("q4", message_history=history)
    assert result.output == "answer from 1 results"
    first_sent = model.received[0]
    assert [type(p).__name__ for p in first_sent[0].parts] == ["SystemPromptPart", "UserPromptPart"]
    assert first_sent[0].parts[1].content == "q3"
    assert len(first_sent) == 5  # turn q3 (4 messages) + the new prompt


def test_budget_trimming_in_the_agent() -> None:
    words = " ".join(["word"] * 200)  # ~250 estimated tokens per answer
    history = load([m for t in range(6) for m in (req(user(f"q{t}")), real(text(words), at=t + 1))])
    model = StrictModel()
    agent = weather_agent(model, **histfix.agent_options(max_tokens=700))
    agent.run_sync("last question", message_history=history)
    sent = model.received[0]
    assert sum(histfix.estimate_tokens(m) for m in sent) <= 700
    assert 3 <= len(sent) < len(history)
    assert isinstance(sent[0], pai.ModelRequest)
    assert any(isinstance(p, pai.UserPromptPart) for p in sent[0].parts)


def test_processor_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="keep_last_turns must be a positive int"):
        histfix.agent_options(keep_last_turns=0)
    with pytest.raises(ValueError, match="max_tokens must be a positive int"):
        histfix.RepairProcessor(max_tokens=-5)
    with pytest.raises(TypeError, match="count_tokens must be callable"):
        histfix.RepairProcessor(count_tokens=3)  # type: ignore[arg-type]


# --- provider profiles: agent_options(provider=...) -----------------------------------------------------


def test_auto_without_a_known_profile_is_the_default_repair() -> None:
    """A FunctionModel has no provider profile: provider="auto" repairs exactly as before."""
    aborted = load(
        [req(user("test")), real(call("weather", "call_1", {"city": "Rome"}), at=5), req(user("test"))]
    )
    sent = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for provider in (None, "auto"):
            model = StrictModel()
            agent = weather_agent(model, **histfix.agent_options(provider=provider))
            assert agent.run_sync(None, message_history=aborted).output == "done"
            (sent[provider],) = model.received
    assert [str(w.message) for w in caught] == []
    assert [m.parts for m in sent["auto"]] == [m.parts for m in sent[None]]


def test_provider_settings_are_checked_when_the_options_are_built() -> None:
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        histfix.agent_options(provider="nope")
    with pytest.raises(ValueError, match="needs the run's model"):
        histfix.RepairProcessor(provider="auto")([])
    processor = histfix.RepairProcessor(provider="mistral")
    assert processor.provider == "mistral" and "provider='mistral'" in repr(processor)


#: A second result for an answered call: the Chat Completions wire accepts it (the tool messages right
#: after the call), Mistral counts calls and responses and rejects it; the default repair keeps it.
#: Ids are Mistral's format (nine letters or digits), which every release's MistralModel sends as stored.
TWICE_ANSWERED = [
    req(user("weather in Paris?")),
    real(call("weather", "abcDEF123", {"city": "Paris"}), at=1),
    req(ret("weather", "abcDEF123", "sunny"), ret("weather", "abcDEF123", "sunny, again")),
    real(text("sunny"), at=2),
]


@pytest.mark.uses_sdk("mistral", "openai-chat")
def test_auto_follows_a_fallback_model_to_the_provider_that_answers() -> None:
    """One line stays right when a FallbackModel moves from one provider to another: its first model
    (OpenAI Chat) fails over, its second (Mistral, strict emulator) must accept the history. Only
    paired (the default), Mistral refuses it; repaired for OpenAI Chat, which also wants one result per
    call, Mistral takes it too."""
    from pydantic_ai.models.fallback import FallbackModel

    from emulators import serve
    from wire import client_for, loop_runner

    chat, mistral = client_for("openai-chat"), client_for("mistral")
    for found in (chat, mistral):
        if isinstance(found, str):
            pytest.skip(found)
    assert not isinstance(chat, str) and not isinstance(mistral, str)
    history = load(TWICE_ANSWERED)
    runner = loop_runner()
    # The OpenAI client posts /v1/chat/completions to the Anthropic emulator: a 404, so the
    # FallbackModel moves on to Mistral, as it does when a provider is down.
    with serve("anthropic") as elsewhere, serve("mistral") as strict:
        first, close_first = chat.build(elsewhere.base_url)
        second, close_second = mistral.build(strict.base_url)
        model = FallbackModel(first, second)
        verdicts = {}
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for provider in (None, "openai-chat", "auto"):
                    strict.clear()
                    agent: Agent[None, str] = Agent(model, **histfix.agent_options(provider=provider))
                    with contextlib.suppress(Exception):  # the FallbackModel gave up: the verdicts say why
                        runner.run(agent.run("and tomorrow?", message_history=history))
                    verdicts[provider] = strict.last()
        finally:
            runner.run(close_first())
            runner.run(close_second())
            runner.close()
    assert elsewhere.last().status == 404  # the first model did fail over
    assert not verdicts[None].accepted and verdicts[None].rule == "mistral.call_response_count"
    assert verdicts["openai-chat"].accepted, verdicts["openai-chat"].message
    assert verdicts["auto"].accepted, verdicts["auto"].message
    # ResourceWarnings come from whatever earlier test's garbage the collector meets meanwhile
    assert [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)] == []

"""The processor's memory inside real agent runs: served from memory, and exact when the history is edited.

Each agent below is wired as ``agent_options`` wires it, with a processor that checks every answer
against the repair without memory (``Checked``) and records how many messages the memory read. Real
pydantic-ai machinery edits the history between requests: history processors or capabilities of
the user's that drop, replace or strip messages (in place too), dynamic system prompts re-evaluated
at each run's start, and ``ReinjectSystemPrompt`` where the release has it. No provider, no network.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.models.function import AgentInfo

import histfix
from histfix._wiring import process_history_class

from dsl import dump
from strict import StrictModel, assert_provider_valid

Step = Callable[[list[pai.ModelMessage]], list[pai.ModelMessage]]


class Checked(histfix.RepairProcessor):
    """The processor ``agent_options()`` installs, asserting at each request that it returns what the
    repair without memory returns, and recording what its memory read."""

    def __init__(self) -> None:
        super().__init__()
        self.walked: list[int] = []
        self.sizes: list[int] = []

    def process(self, messages: Any, provider: object) -> list[pai.ModelMessage]:
        fresh = histfix.RepairProcessor().process(messages, provider)
        got = super().process(messages, provider)
        self.walked.append(self.memory.walked)
        self.sizes.append(len(messages))
        assert dump(got) == dump(fresh)
        given = {id(m) for m in messages}
        assert [id(m) in given and id(m) for m in got] == [id(m) in given and id(m) for m in fresh]
        return got


def calls_then_answers() -> Any:
    """A model that calls ``weather`` on each new prompt, and answers once the result is in."""
    ids = itertools.count(1)

    def reply(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        if any(isinstance(p, pai.ToolReturnPart) for p in messages[-1].parts):
            return pai.ModelResponse(parts=[pai.TextPart("sunny")])
        return pai.ModelResponse(parts=[pai.ToolCallPart("weather", {"city": "Paris"}, f"w{next(ids)}")])

    return reply


def agent(
    model: StrictModel, checked: Checked, *steps: Step, capabilities: tuple[Any, ...] = (), **settings: Any
) -> Agent[None, str]:
    """An agent wired as ``agent_options`` wires one: the user's processors (``steps``) and
    capabilities first, the checked processor last."""
    process_history = process_history_class()
    options: dict[str, Any]
    if process_history is None:
        options = {"history_processors": [*steps, checked]}
        if capabilities:
            options["capabilities"] = list(capabilities)
    else:
        options = {"capabilities": [*capabilities, *map(process_history, [*steps, checked])]}
    built: Agent[None, str] = Agent(model.model, **settings, **options)

    @built.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    return built


def converse(built: Agent[None, str], runs: int, **run: Any) -> list[pai.ModelMessage]:
    history: list[pai.ModelMessage] = []
    for turn in range(runs):
        history = built.run_sync(f"question {turn}", message_history=history, **run).all_messages()
    return history


def test_a_continuing_conversation_is_served_from_memory() -> None:
    """Within a run (call, result) and from one run to the next, each request reads only what the
    last one did not have: a few messages, however long the conversation."""
    checked = Checked()
    model = StrictModel(calls_then_answers())
    history = converse(agent(model, checked), 8)
    assert_provider_valid(history)
    assert len(checked.walked) == 16
    assert checked.walked[0] == 1
    assert max(checked.walked[1:]) <= 3, checked.walked
    assert checked.sizes[-1] > 30


def oldest_turn_dropped(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """Keep the conversation short: from the second user prompt on, once it holds more than ten messages."""
    if len(messages) <= 10:
        return messages
    prompts = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, pai.ModelRequest) and any(isinstance(p, pai.UserPromptPart) for p in m.parts)
    ]
    return messages[prompts[1] :]


def first_answer_copied(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """Replace the first text answer with an equal copy, and the first result with a changed one."""
    out = list(messages)
    for i, message in enumerate(out):
        if isinstance(message, pai.ModelResponse) and any(isinstance(p, pai.TextPart) for p in message.parts):
            out[i] = dataclasses.replace(message)
            break
    for i, message in enumerate(out):
        if isinstance(message, pai.ModelRequest) and isinstance(message.parts[0], pai.ToolReturnPart):
            out[i] = dataclasses.replace(
                message, parts=[dataclasses.replace(message.parts[0], content="cloudy")]
            )
            break
    return out


def old_results_stripped_in_place(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """Prune old tool results the careless way: in place, leaving their calls dangling."""
    for message in messages[:-6]:
        if isinstance(message, pai.ModelRequest):
            message.parts[:] = [p for p in message.parts if not isinstance(p, pai.ToolReturnPart)]
    return messages


@pytest.mark.parametrize(
    "step",
    [oldest_turn_dropped, first_answer_copied, old_results_stripped_in_place],
    ids=lambda s: s.__name__,
)
def test_processors_that_edit_the_history_between_requests(step: Step) -> None:
    checked = Checked()
    model = StrictModel(calls_then_answers())
    converse(agent(model, checked, step), 6)  # the strict model checked each request as it came
    assert len(model.received) == len(checked.walked) == 12


def test_dynamic_system_prompts_reevaluated_each_run() -> None:
    """pydantic-ai re-evaluates a dynamic system prompt at each run's start by replacing the first
    request's parts: the memory sees it, and stays exact."""
    checked = Checked()
    model = StrictModel(calls_then_answers())
    built = agent(model, checked)
    runs = itertools.count()

    @built.system_prompt(dynamic=True)
    def which_run() -> str:
        return f"run {next(runs)}"

    history = converse(built, 5)
    first = history[0].parts[0]
    assert isinstance(first, pai.SystemPromptPart) and first.content == "run 4"
    assert len(checked.walked) == 10


def test_reinject_system_prompt() -> None:
    try:
        from pydantic_ai.capabilities import ReinjectSystemPrompt
    except ImportError:
        pytest.skip("pydantic_ai.capabilities.ReinjectSystemPrompt arrived after this release")
    for replace_existing in (False, True):
        checked = Checked()
        model = StrictModel(calls_then_answers())
        reinject = ReinjectSystemPrompt(replace_existing=replace_existing)
        built = agent(model, checked, capabilities=(reinject,), system_prompt="be brief")
        history = converse(built, 4)
        assert len(checked.walked) == 8
        assert [p.content for p in history[0].parts if isinstance(p, pai.SystemPromptPart)] == ["be brief"]

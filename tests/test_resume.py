"""The documented ways to load and continue a stored history, through a real Agent, on every release.

Each history comes from a real run (a crash, a model that failed, a run that ended in
``DeferredToolRequests``) or from stored JSON, is written with ``histfix.dump_json`` and read back
with ``histfix.load_json``, classified, and continued the way docs/resume.md says for its kind:

- ``pending_calls``: ``repair(h, repair_last_response=False)`` and run with no prompt (the calls
  run), or with ``deferred_tool_results`` (approvals, external results);
- ``pending_request``: the same call, with no prompt (the model answers);
- a new prompt on any kind, or crash recovery (``interrupted``, or calls you know will never
  run): ``repair(h)`` closes what is pending.

The model is a FunctionModel that rejects broken pairing like a strict provider; every test runs
with and without ``histfix.agent_options()``.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pydantic_ai
import pytest
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai import messages as pai
from pydantic_ai.exceptions import UserError
from pydantic_ai.models.function import AgentInfo

import histfix

from conftest import MEASURED
from dsl import call, docs_block, load, real, req, ret, user
from strict import StrictModel, pairing_problems

WIRINGS = ["plain", "agent_options"]
DEFERRED = ("DeferredToolRequests", "DeferredToolResults", "ToolApproved")


def reply(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
    """Call both weather tools when asked to "go"; otherwise say which results it received."""
    last = messages[-1]
    prompts = [p.content for p in last.parts if isinstance(p, pai.UserPromptPart)]
    if prompts == ["go"]:
        return pai.ModelResponse(
            parts=[
                pai.ToolCallPart("weather", {"city": "Paris"}, "c_paris"),
                pai.ToolCallPart(info.function_tools[-1].name, {"city": "Rome"}, "c_rome"),
            ]
        )
    # Every result since the last response (1.0.0 sends consecutive requests unmerged).
    since = len(messages)
    while since and isinstance(messages[since - 1], pai.ModelRequest):
        since -= 1
    seen = [
        f"{p.tool_call_id}={'interrupted' if histfix.is_synthesized(p) else p.content}"
        for m in messages[since:]
        for p in m.parts
        if isinstance(p, pai.ToolReturnPart)
    ]
    return pai.ModelResponse(parts=[pai.TextPart("done: " + ", ".join(seen))])


class Weather:
    """The tools, counting their runs. ``second`` is the Rome tool's name and kind."""

    def __init__(self, second: str = "weather", crash: bool = False) -> None:
        self.runs: list[str] = []
        self.second = second
        self.crash = crash
        #: Set once the Paris tool has returned: Rome crashes only after it, as the stored shape
        #: assumes (pydantic-ai runs the parallel calls concurrently, so otherwise it is a race).
        self.paris_done = threading.Event()

    def agent(
        self, wiring: str, output_type: Any = str, model: StrictModel | None = None
    ) -> tuple[Agent[None, Any], StrictModel]:
        model = model or StrictModel(reply)
        options = histfix.agent_options() if wiring == "agent_options" else {}
        agent: Agent[None, Any] = Agent(model.model, output_type=output_type, **options)

        @agent.tool_plain
        def weather(city: str) -> str:
            self.runs.append(city)
            if self.crash and city == "Rome":
                self.paris_done.wait(timeout=10)
                time.sleep(0.1)  # let pydantic-ai record Paris's result before the crash
                raise RuntimeError("worker crashed")
            if city == "Paris":
                self.paris_done.set()
            return f"{city}: 14C"

        if self.second == "approved":

            @agent.tool_plain(requires_approval=True)
            def approved(city: str) -> str:
                self.runs.append(city)
                return f"{city}: 20C"

        elif self.second == "external":

            @agent.tool_plain
            def external(city: str) -> str:
                raise pydantic_ai.CallDeferred

        return agent, model


def stored(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """What a store gives back: the history through dump_json and load_json."""
    return histfix.load_json(histfix.dump_json(history))


def crashed_mid_tool() -> list[pai.ModelMessage]:
    """A real run whose Rome tool crashed the worker, as the release records it.

    Releases that mark it store ``[request, response(Paris, Rome), request(return Paris,
    state='interrupted')]``; the others ``[request, response(Paris, Rome)]``.
    """
    tools = Weather(crash=True)
    agent, _ = tools.agent("plain")
    with capture_run_messages() as messages, pytest.raises(RuntimeError, match="worker crashed"):
        agent.run_sync("go")
    return stored(messages)


def stored_before_tools_ran() -> list[pai.ModelMessage]:
    """What a worker killed after storing the response, before any tool ran, leaves behind."""
    return crashed_mid_tool()[:2]


def assert_valid_and_complete(result: Any) -> None:
    """The run's stored history is complete and, as every request sends it (merged), valid.

    (The model already checked what it received.) A plain resume with deferred results stores
    the new results as a second request, which pydantic-ai and ``repair`` merge.
    """
    stored_history = result.all_messages()
    assert histfix.classify(stored_history).kind == "complete"
    assert pairing_problems(histfix.repair(stored_history)) == []


# --- pending_calls: a plain resume runs them ---------------------------------------------------------


@pytest.mark.parametrize("wiring", WIRINGS)
def test_plain_resume_runs_the_pending_calls(wiring: str) -> None:
    history = stored_before_tools_ran()
    assert [type(m).__name__ for m in history] == ["ModelRequest", "ModelResponse"]
    state = histfix.classify(history)
    assert (state.kind, state.pending_call_ids) == ("pending_calls", ("c_paris", "c_rome"))
    tools = Weather()
    agent, model = tools.agent(wiring)
    result = agent.run_sync(None, message_history=histfix.repair(history, repair_last_response=False))
    assert sorted(tools.runs) == ["Paris", "Rome"]  # both calls ran now
    assert result.output == "done: c_paris=Paris: 14C, c_rome=Rome: 14C"
    assert len(model.received) == 1
    assert_valid_and_complete(result)
    MEASURED[f"resume pending calls, {wiring}"] = "ok (calls ran)"


# --- crash recovery: close the calls that will never run ---------------------------------------------


@pytest.mark.parametrize("wiring", WIRINGS)
@pytest.mark.parametrize("prompt", [None, "what now?"])
def test_crash_recovery_closes_the_pending_calls(wiring: str, prompt: str | None) -> None:
    history = crashed_mid_tool()
    state = histfix.classify(history)
    marks = isinstance(history[-1], pai.ModelRequest) and getattr(history[-1], "state", None) == "interrupted"
    MEASURED["a crash mid-tool is stored as"] = (
        "interrupted (trailing request state='interrupted')" if marks else "pending_calls (no mark)"
    )
    if marks:
        assert (state.kind, state.pending_call_ids) == ("interrupted", ("c_rome",))
        expected = "done: c_paris=Paris: 14C, c_rome=interrupted"
    else:
        assert (state.kind, state.pending_call_ids) == ("pending_calls", ("c_paris", "c_rome"))
        expected = "done: c_paris=interrupted, c_rome=interrupted"
    tools = Weather()
    agent, _ = tools.agent(wiring)
    result = agent.run_sync(prompt, message_history=histfix.repair(history))
    assert tools.runs == []  # nothing ran again
    assert result.output == expected
    assert_valid_and_complete(result)
    MEASURED[f"crash recovery ({'new prompt' if prompt else 'no prompt'}), {wiring}"] = "ok"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_new_prompt_needs_the_pending_calls_closed(wiring: str) -> None:
    history = stored_before_tools_ran()
    agent, _ = Weather().agent(wiring)
    with pytest.raises(
        UserError,
        match="Cannot provide a new user prompt when the message history contains unprocessed tool calls",
    ):
        agent.run_sync("next", message_history=history)  # what histfix.repair is for


# --- pending_request: the model never answered ------------------------------------------------------


def model_failed_after_tools() -> list[pai.ModelMessage]:
    """A real run whose model failed after both tools ran: [request, response, request(results)]."""
    calls = 0

    def flaky(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise ConnectionError("provider unreachable")
        return reply(messages, info)

    agent, _ = Weather().agent("plain", model=StrictModel(flaky))
    with capture_run_messages() as messages, pytest.raises(ConnectionError):
        agent.run_sync("go")
    return stored(messages)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_resume_a_pending_request(wiring: str) -> None:
    history = model_failed_after_tools()
    assert histfix.classify(history).kind == "pending_request"
    tools = Weather()
    agent, model = tools.agent(wiring)
    result = agent.run_sync(None, message_history=histfix.repair(history, repair_last_response=False))
    assert tools.runs == []
    assert result.output == "done: c_paris=Paris: 14C, c_rome=Rome: 14C"
    assert len(model.received) == 1
    assert_valid_and_complete(result)
    MEASURED[f"resume pending request, {wiring}"] = "ok"


# --- pending_calls answered with deferred results or approvals -----------------------------------------


def deferred_features(second: str) -> None:
    missing = [name for name in DEFERRED if not hasattr(pydantic_ai, name)]
    if second == "external" and not hasattr(pydantic_ai, "CallDeferred"):
        missing.append("CallDeferred")
    if second == "approved":
        import inspect

        if "requires_approval" not in inspect.signature(Agent.tool_plain).parameters:
            missing.append("tool_plain(requires_approval=)")
    if missing:
        pytest.skip(f"pydantic-ai {pydantic_ai.__version__} has no {', '.join(missing)}")


def deferred_run(second: str) -> list[pai.ModelMessage]:
    """A real run that ends in DeferredToolRequests: Paris ran, Rome awaits approval or an external result."""
    tools = Weather(second)
    agent, _ = tools.agent("plain", output_type=[str, pydantic_ai.DeferredToolRequests])
    result = agent.run_sync("go")
    assert isinstance(result.output, pydantic_ai.DeferredToolRequests)
    waiting = result.output.approvals if second == "approved" else result.output.calls
    assert [c.tool_call_id for c in waiting] == ["c_rome"]
    return stored(result.all_messages())


def answers(second: str) -> Any:
    if second == "approved":
        return pydantic_ai.DeferredToolResults(approvals={"c_rome": pydantic_ai.ToolApproved()})
    return pydantic_ai.DeferredToolResults(calls={"c_rome": "Rome: 17C (from outside)"})


@pytest.mark.parametrize("wiring", WIRINGS)
@pytest.mark.parametrize("second", ["approved", "external"])
def test_resume_with_deferred_results(wiring: str, second: str) -> None:
    deferred_features(second)
    history = deferred_run(second)
    assert [type(m).__name__ for m in history] == ["ModelRequest", "ModelResponse", "ModelRequest"]
    state = histfix.classify(history)
    assert (state.kind, state.pending_call_ids) == ("pending_calls", ("c_rome",))
    assert histfix.check(history, repair_last_response=False) == []
    tools = Weather(second)
    agent, model = tools.agent(wiring, output_type=[str, pydantic_ai.DeferredToolRequests])
    kept = histfix.repair(history, repair_last_response=False)
    assert kept == history
    result = agent.run_sync(None, message_history=kept, deferred_tool_results=answers(second))
    rome = "Rome: 20C" if second == "approved" else "Rome: 17C (from outside)"
    assert result.output == f"done: c_paris=Paris: 14C, c_rome={rome}"
    assert tools.runs == (["Rome"] if second == "approved" else [])
    assert len(model.received) == 1
    assert_valid_and_complete(result)
    MEASURED[f"resume with deferred results ({second}), {wiring}"] = "ok"


@pytest.mark.parametrize("second", ["approved", "external"])
def test_closing_the_frontier_makes_deferred_results_fail(second: str) -> None:
    """Why the resume keeps the frontier: repair(h) answers Rome, so pydantic-ai refuses the results."""
    deferred_features(second)
    history = deferred_run(second)
    agent, _ = Weather(second).agent("plain", output_type=[str, pydantic_ai.DeferredToolRequests])
    with pytest.raises(UserError, match="c_rome"):
        agent.run_sync(None, message_history=histfix.repair(history), deferred_tool_results=answers(second))


@pytest.mark.parametrize("wiring", WIRINGS)
@pytest.mark.parametrize("second", ["approved", "external"])
def test_a_new_prompt_instead_of_deferred_results(wiring: str, second: str) -> None:
    deferred_features(second)
    history = deferred_run(second)
    tools = Weather(second)
    agent, _ = tools.agent(wiring, output_type=[str, pydantic_ai.DeferredToolRequests])
    result = agent.run_sync("never mind", message_history=histfix.repair(history))
    assert result.output == "done: c_paris=Paris: 14C, c_rome=interrupted"
    assert tools.runs == []
    assert_valid_and_complete(result)


# --- interrupted: pydantic-ai marked the end; those calls never run ---------------------------------


def marked(where: str) -> list[pai.ModelMessage]:
    calls = real(
        call("weather", "c_paris", {"city": "Paris"}), call("weather", "c_rome", {"city": "Rome"}), at=2
    )
    if where == "request":
        history = [
            req(user("go")),
            calls,
            req(ret("weather", "c_paris", "Paris: 14C", at=3), state="interrupted"),
        ]
    else:
        history = [req(user("go")), {**calls, "state": "interrupted"}]
    loaded = stored(load(history))
    message = loaded[-1]
    if getattr(message, "state", None) != "interrupted":
        kind = "ModelRequest" if where == "request" else "ModelResponse"
        pytest.skip(
            f"pydantic-ai {pydantic_ai.__version__} has no {kind}.state='interrupted' (it loads as pending_calls)"
        )
    return loaded


@pytest.mark.parametrize("wiring", WIRINGS)
@pytest.mark.parametrize("where", ["request", "response"])
@pytest.mark.parametrize("prompt", [None, "what now?"])
def test_interrupted_is_recovered_by_repair(wiring: str, where: str, prompt: str | None) -> None:
    history = marked(where)
    state = histfix.classify(history)
    assert state.kind == "interrupted"
    assert state.pending_call_ids == (("c_rome",) if where == "request" else ("c_paris", "c_rome"))
    tools = Weather()
    agent, _ = tools.agent(wiring)
    result = agent.run_sync(prompt, message_history=histfix.repair(history))
    assert tools.runs == []
    paris = "Paris: 14C" if where == "request" else "interrupted"
    assert result.output == f"done: c_paris={paris}, c_rome=interrupted"
    assert_valid_and_complete(result)
    MEASURED[f"recover state='interrupted' {where}, {wiring}"] = "ok"


# --- the docs' resume pattern, as written -----------------------------------------------------------


@pytest.mark.parametrize("wiring", WIRINGS)
def test_docs_resume_pattern_runs(wiring: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``resume`` from docs/resume.md, its globals rebound to this file's agent and stored runs."""
    deferred_features("approved")
    crash = crashed_mid_tool()
    store = {
        "deferred": histfix.dump_json(deferred_run("approved")),
        "killed": histfix.dump_json(crash[:2]),
        "crashed": histfix.dump_json(crash),
        "unanswered": histfix.dump_json(model_failed_after_tools()),
    }
    tools = Weather("approved")
    agent, _ = tools.agent(wiring, output_type=[str, pydantic_ai.DeferredToolRequests])
    shutil.copytree(Path(__file__).parent.parent / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)  # the block reads its own example history first
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    exec(docs_block("def resume("), namespace)
    namespace.update(agent=agent, store=store)
    resume = namespace["resume"]
    assert resume("deferred", answers("approved")) == "done: c_paris=Paris: 14C, c_rome=Rome: 20C"
    assert resume("killed") == "done: c_paris=Paris: 14C, c_rome=Rome: 14C"  # pending calls run now
    assert resume("unanswered") == "done: c_paris=Paris: 14C, c_rome=Rome: 14C"
    resumed = ["deferred", "killed", "unanswered"]
    if histfix.classify(crash).kind == "interrupted":  # 2.0.0+: the crash is marked; nothing re-runs
        assert resume("crashed") == "done: c_paris=Paris: 14C, c_rome=interrupted"
        resumed.append("crashed")
    for conversation in resumed:
        assert histfix.classify(histfix.load_json(store[conversation])).kind == "complete"

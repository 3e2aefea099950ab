"""The seeds' scenario end to end: an Agent whose model rejects broken pairing like a strict provider.

No provider and no network: a FunctionModel plays the provider, checking what it receives with the
suite's shared strict checker and recording it.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from packaging.version import Version
from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.exceptions import UserError
from pydantic_ai.models.function import FunctionModel

import histfix

from conftest import FACTS, MEASURED, PYDANTIC_AI
from dsl import INTERRUPTED, MARKER, call, literal_values, load, req, resp, ret, text, user
from strict import StrictModel, StrictProviderError, assert_provider_valid

# What an aborted run leaves behind: a prompt, a tool call, and the user's next prompt.
ABORTED = [
    req(user("test")),
    resp(call("retrieve_documents", "call_1", {"search_query": "test"}), at=5),
    req(user("test")),
]
UNPROCESSED_CALLS = (
    "Cannot provide a new user prompt when the message history contains unprocessed tool calls."
)
# Before 2.10.0 pydantic-ai sends the history as stored; from 2.10.0 it repairs it on the wire.
UPSTREAM_REPAIRS_ON_THE_WIRE = Version("2.10.0") <= PYDANTIC_AI


def run(history: list[pai.ModelMessage], prompt: str | None) -> tuple[Any, StrictModel]:
    model = StrictModel()
    result = Agent(model.model).run_sync(prompt, message_history=history)
    return result, model


def test_plain_pydantic_ai_sends_the_broken_history_before_2_10() -> None:
    if UPSTREAM_REPAIRS_ON_THE_WIRE:
        _, model = run(load(ABORTED), None)
        assert len(model.received) == 1
        MEASURED["aborted mid-tool, plain"] = "ok (repaired on the wire)"
        FACTS["upstream repairs before each request"] = "yes"
    else:
        with pytest.raises(StrictProviderError, match="No tool output found for function call call_1"):
            run(load(ABORTED), None)
        MEASURED["aborted mid-tool, plain"] = "400 (call never answered)"
        FACTS["upstream repairs before each request"] = "no"


def test_repaired_history_passes_a_strict_provider() -> None:
    repaired = histfix.repair(load(ABORTED))
    result, model = run(repaired, None)
    assert result.output == "done"
    (sent,) = model.received
    closing = sent[2].parts[0]
    assert isinstance(closing, pai.ToolReturnPart)
    assert (closing.tool_call_id, closing.tool_name, closing.content) == (
        "call_1",
        "retrieve_documents",
        INTERRUPTED,
    )
    assert closing.metadata == {MARKER: True}
    assert closing.timestamp == sent[1].timestamp  # taken from the response, never the clock
    assert isinstance(sent[2].parts[1], pai.UserPromptPart)
    stored = result.all_messages()
    assert stored[:2] == repaired[:2]
    assert stored[2].parts == repaired[2].parts  # the run stamps its own run_id/timestamp on it
    MEASURED["aborted mid-tool, histfix"] = "ok"


def test_new_prompt_after_trailing_calls() -> None:
    trailing = load(ABORTED[:2])
    with pytest.raises(UserError, match=UNPROCESSED_CALLS):
        run(trailing, "new prompt")
    MEASURED["trailing calls + new prompt, plain"] = "UserError"
    result, model = run(histfix.repair(trailing), "new prompt")
    assert result.output == "done"
    (sent,) = model.received
    assert [type(p).__name__ for p in sent[-1].parts][-1] == "UserPromptPart"
    assert_provider_valid(result.all_messages())
    MEASURED["trailing calls + new prompt, histfix"] = "ok"


def test_slice_starting_on_a_tool_result() -> None:
    full = load(
        [
            req(user("q")),
            resp(call("get", "c9"), at=2, model_name="m"),
            req(ret("get", "c9", "42", at=3)),
            resp(text("it is 42"), at=4, model_name="m"),
        ]
    )
    sliced = full[2:]
    if UPSTREAM_REPAIRS_ON_THE_WIRE:
        _, plain = run(sliced, "next")
        assert not any(isinstance(p, pai.ToolReturnPart) for m in plain.received[0] for p in m.parts)
        MEASURED["slice starting on a tool result, plain"] = "ok (result silently dropped)"
    else:
        with pytest.raises(
            StrictProviderError, match="No tool call found for function call output with call_id c9"
        ):
            run(sliced, "next")
        MEASURED["slice starting on a tool result, plain"] = "400 (result without a call)"
    repaired = histfix.repair(sliced)  # the orphan's request empties and goes: [Resp, ...]
    assert isinstance(repaired[0], pai.ModelResponse)
    try:
        result, model = run(repaired, "next")
    except UserError as exc:
        # pydantic-ai-slim 1.21.0 alone refuses any history that starts with a response (found by
        # the sweep); upstream's newest repair leaves the slice starting on one, and so does histfix.
        assert "cannot start with a `ModelResponse`" in str(exc)
        MEASURED["slice starting on a tool result, histfix"] = "UserError (history starts with a response)"
        return
    MEASURED["slice starting on a tool result, histfix"] = "ok (orphan dropped)"
    assert result.output == "done"
    assert not any(isinstance(p, pai.ToolReturnPart) for m in model.received[0] for p in m.parts)


def _response_can_be_interrupted() -> bool:
    """``ModelResponse.state`` (1.92.0+) exists and allows ``'interrupted'``."""
    return "interrupted" in literal_values(pai.ModelResponse, "state")


def test_new_prompt_after_an_interrupted_response() -> None:
    """A cancelled stream leaves its response marked ``state='interrupted'``; then the user moves on."""
    scenario = "state='interrupted' response + new prompt"
    if not _response_can_be_interrupted():
        MEASURED[f"{scenario}, plain"] = "n/a (no ModelResponse.state)"
        MEASURED[f"{scenario}, histfix"] = "n/a"
        pytest.skip("ModelResponse.state arrived in 1.92.0")
    stored = load([req(user("test")), resp(call("retrieve_documents", "call_1"), at=5, state="interrupted")])
    assert stored[-1].state == "interrupted"  # type: ignore[union-attr]
    if UPSTREAM_REPAIRS_ON_THE_WIRE:
        result, _ = run(stored, "new prompt")
        closing = result.all_messages()[2].parts[0]
        assert (closing.tool_call_id, closing.content) == ("call_1", INTERRUPTED)
        MEASURED[f"{scenario}, plain"] = "ok (calls closed)"
    else:
        with pytest.raises(UserError, match=UNPROCESSED_CALLS):
            run(stored, "new prompt")
        MEASURED[f"{scenario}, plain"] = "UserError"
    result, _ = run(histfix.repair(stored), "new prompt")
    assert result.output == "done"
    assert_provider_valid(result.all_messages())
    MEASURED[f"{scenario}, histfix"] = "ok"


def _history_processors_keyword() -> str:
    """What the installed ``Agent`` does with ``history_processors=``: accepted, deprecated or TypeError."""
    model = FunctionModel(lambda messages, info: pai.ModelResponse(parts=[pai.TextPart("done")]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            Agent(model, history_processors=[histfix.repair])  # type: ignore[call-overload,unused-ignore]
        except TypeError:
            return "TypeError"
    return "deprecated" if any("deprecated" in str(w.message) for w in caught) else "accepted"


def test_record_processor_wiring() -> None:
    """Measure how a history processor is wired on this release, and that histfix picks a working way."""
    try:
        from pydantic_ai.capabilities import ProcessHistory  # noqa: F401  (1.87.0+)

        has_process_history = True
    except ImportError:
        has_process_history = False
    keyword = _history_processors_keyword()
    uses = "ProcessHistory" if "capabilities" in histfix.agent_options() else "history_processors="
    assert (uses == "ProcessHistory") == has_process_history
    assert uses == "ProcessHistory" or keyword == "accepted"
    FACTS["processor wiring"] = uses
    FACTS["history_processors="] = keyword

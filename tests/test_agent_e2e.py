"""The seeds' scenario end to end: an Agent whose model rejects broken pairing like a strict provider.

No provider and no network: a FunctionModel plays the provider, checking what it receives with the
suite's shared strict checker and recording it.
"""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version
from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.exceptions import UserError

import histfix

from conftest import MEASURED, PYDANTIC_AI
from dsl import INTERRUPTED, MARKER, call, load, req, resp, user
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
    else:
        with pytest.raises(StrictProviderError, match="No tool output found for function call call_1"):
            run(load(ABORTED), None)
        MEASURED["aborted mid-tool, plain"] = "400 (call never answered)"


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
            req(
                pai_return := {
                    "part_kind": "tool-return",
                    "tool_name": "get",
                    "tool_call_id": "c9",
                    "content": "42",
                    "timestamp": "2026-01-01T00:00:03Z",
                }
            ),
            resp({"part_kind": "text", "content": "it is 42"}, at=4, model_name="m"),
        ]
    )
    assert pai_return["tool_call_id"] == "c9"
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
    result, model = run(histfix.repair(sliced), "next")
    assert result.output == "done"
    assert not any(isinstance(p, pai.ToolReturnPart) for m in model.received[0] for p in m.parts)
    MEASURED["slice starting on a tool result, histfix"] = "ok (orphan dropped)"

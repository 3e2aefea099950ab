"""repair(..., orphans="note"): an orphaned result's content survives as a marked user note.

The default stays upstream's: drop it. With "note" each orphan is replaced, in place, by a
``UserPromptPart`` carrying the tool name, call id and content; no provider reads that as a tool
result, and the strict provider (a FunctionModel with the suite's checker) accepts the history.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai import messages as pai

import histfix

from dsl import Json, call, dump, load, real, req, ret, retry, text, user
from oracle import upstream_is_oracle
from strict import StrictModel, pairing_problems

PREFIX = "[histfix: orphaned tool result]"

# A slice that starts on a tool result: its call was cut away with the older messages.
SLICE = [
    req(ret("get_weather", "c_paris", {"city": "Paris", "temp_c": 14}, at=3)),
    real(text("It is 14C in Paris."), at=4),
    req(user("And tomorrow?", at=5)),
]
# An orphan between two real results, and a retry prompt whose call is gone too.
MIXED = [
    req(user("go")),
    real(call("a", "c_a"), call("b", "c_b"), at=2),
    req(ret("a", "c_a", "A", at=3), ret("lost", "c_lost", "LOST", at=3), ret("b", "c_b", "B", at=3)),
    real(text("ok"), at=4),
    req(retry("wrong args", "gone", "c_gone", at=5), user("next", at=5)),
]


def notes(messages: list[pai.ModelMessage]) -> list[str]:
    return [
        p.content
        for m in messages
        for p in m.parts
        if isinstance(p, pai.UserPromptPart) and isinstance(p.content, str) and p.content.startswith(PREFIX)
    ]


def test_default_drops_as_upstream_does() -> None:
    history = load(MIXED)
    assert histfix.repair(history, orphans="drop") == histfix.repair(history)
    assert not notes(histfix.repair(history))


def test_note_keeps_tool_name_id_and_content_in_place() -> None:
    history = load(SLICE)
    repaired = histfix.repair(history, orphans="note")
    assert len(repaired) == 3
    (note,) = repaired[0].parts
    assert isinstance(note, pai.UserPromptPart)
    assert note.content == (
        f"{PREFIX} Tool 'get_weather' (call 'c_paris') returned the following, but the call that asked "
        'for it is no longer in this history:\n{"city":"Paris","temp_c":14}'
    )
    assert note.timestamp == history[0].parts[0].timestamp  # the orphan's, never the clock
    assert repaired[1:] == history[1:]


def test_note_in_a_request_with_real_results_is_moved_after_them() -> None:
    history = load(MIXED)
    repaired = histfix.repair(history, orphans="note")
    kinds = [type(p).__name__ for p in repaired[2].parts]
    assert kinds == ["ToolReturnPart", "ToolReturnPart", "UserPromptPart"]  # results first, note after
    found = notes(repaired)
    assert len(found) == 2
    assert found[0].endswith("\nLOST") and "'lost' (call 'c_lost') returned" in found[0]
    assert "'gone' (call 'c_gone') asked for a retry" in found[1] and found[1].endswith("\nwrong args")
    assert pairing_problems(repaired) == []
    assert histfix.check(repaired) == []


@pytest.mark.parametrize("history", [SLICE, MIXED], ids=["slice", "mixed"])
def test_pure_deterministic_idempotent(history: list[Json]) -> None:
    loaded = load(history)
    before = copy.deepcopy(loaded)
    once = histfix.repair(loaded, orphans="note")
    assert loaded == before
    assert dump(histfix.repair(load(history), orphans="note")) == dump(once)
    assert histfix.repair(once, orphans="note") == once
    assert histfix.repair(once) == once  # a note is not a result: the default keeps it too
    for backend in ("histfix", "auto"):
        assert histfix.repair(loaded, orphans="note", backend=backend) == once  # type: ignore[arg-type]
    if upstream_is_oracle(loaded):  # 2.53-2.59's repair_messages is not the newest behaviour
        assert histfix.repair(loaded, orphans="note", backend="upstream") == once


@pytest.mark.parametrize("history", [SLICE, MIXED], ids=["slice", "mixed"])
def test_report_describes_exactly_what_repair_returns(history: list[Json]) -> None:
    loaded = load(history)
    report = histfix.repair_report(loaded, orphans="note")
    assert report.messages == histfix.repair(loaded, orphans="note")
    noted = [c for c in report.changes if c.kind == "noted_result"]
    assert len(noted) == len(notes(report.messages))
    assert all(c.preview for c in noted)
    assert not [c for c in report.changes if c.kind == "dropped_result"]
    dropped = histfix.repair_report(loaded)
    assert [c.tool_call_id for c in dropped.changes if c.kind == "dropped_result"] == [
        c.tool_call_id for c in noted
    ]
    assert [c.preview for c in dropped.changes if c.kind == "dropped_result"] == [c.preview for c in noted]


def test_the_model_sees_the_note_as_user_text() -> None:
    """Through a real Agent: the strict provider accepts it and receives the content as a user prompt."""
    model = StrictModel()
    history = histfix.repair(load(SLICE), orphans="note")
    result = Agent(model.model).run_sync("next", message_history=history)
    assert result.output == "done"
    (sent,) = model.received
    first = sent[0].parts[0]
    assert isinstance(first, pai.UserPromptPart) and "temp_c" in str(first.content)
    assert not any(isinstance(p, pai.ToolReturnPart | pai.RetryPromptPart) for m in sent for p in m.parts)
    # Stored and loaded again, the note is still the same note.
    assert notes(histfix.load_json(histfix.dump_json(result.all_messages()))) == notes(history)


def test_logging_lists_the_notes(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with caplog.at_level(logging.DEBUG, logger="histfix"):
        histfix.repair(load(SLICE), orphans="note")
    assert any(
        "kept orphaned result 'c_paris' (get_weather) as a user note" in r.message for r in caplog.records
    )


@pytest.mark.parametrize("value", ["keep", "", None, True, "NOTE"])
def test_unknown_mode_is_a_value_error_listing_the_valid_ones(value: Any) -> None:
    for function in (histfix.repair, histfix.repair_report):
        with pytest.raises(ValueError, match=r"orphans must be one of 'drop', 'note', got"):
            function([], orphans=value)


def test_bad_history_fails_as_without_notes() -> None:
    with pytest.raises(TypeError, match=r"messages\[1\] is a builtins\.int"):
        histfix.repair([*load(SLICE)[:1], 7], orphans="note")  # type: ignore[list-item]

"""histfix.classify and check(repair_last_response=): the frontier is judged, not treated as damage.

Every history is written as stored JSON and loaded on the installed release. A release that has
no ``state`` field ignores ``state='interrupted'`` on load (as pydantic-ai does), so there the same
JSON is the shape it can express: the calls still look pending.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import fields
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._check.classify import state_kind
from histfix._check.history import check_history

from conftest import FACTS
from corpus import CASES
from dsl import Json, call, load, real, req, resp, ret, retry, text, user


def can_mark_interrupted(message_class: type) -> bool:
    """Whether the installed release keeps ``state='interrupted'`` on this message class (probed by loading)."""
    if "state" not in {f.name for f in fields(message_class)}:
        return False
    kind = "request" if message_class is pai.ModelRequest else "response"
    loaded = pai.ModelMessagesTypeAdapter.validate_json(
        f'[{{"kind": "{kind}", "parts": [], "state": "interrupted"}}]'.encode()
    )
    return getattr(loaded[0], "state", None) == "interrupted"


REQUEST_STATE = can_mark_interrupted(pai.ModelRequest)
RESPONSE_STATE = can_mark_interrupted(pai.ModelResponse)

ASK = req(user("weather in Paris and Rome?"))
BOTH = real(call("weather", "c_paris", {"city": "Paris"}), call("weather", "c_rome", {"city": "Rome"}), at=2)
PARIS = req(ret("weather", "c_paris", "14C", at=3))

#: (name, stored JSON, kind, pending ids, kind where the release cannot store ``state``)
SHAPES: list[tuple[str, list[Json], str, tuple[str, ...], str | None]] = [
    ("empty", [], "complete", (), None),
    ("answered", [ASK, real(text("hi"), at=2)], "complete", (), None),
    (
        "tool_loop_done",
        [ASK, BOTH, req(ret("weather", "c_paris"), ret("weather", "c_rome")), real(text("ok"))],
        "complete",
        (),
        None,
    ),
    ("trailing_calls", [ASK, BOTH], "pending_calls", ("c_paris", "c_rome"), None),
    ("deferred_sibling_results", [ASK, BOTH, PARIS], "pending_calls", ("c_rome",), None),
    (
        "sibling_retry_and_result",
        [ASK, BOTH, req(retry("bad city", "weather", "c_paris"))],
        "pending_calls",
        ("c_rome",),
        None,
    ),
    ("only_a_prompt", [ASK], "pending_request", (), None),
    # A resume with deferred results stores its results as a second request (pydantic-ai merges it).
    (
        "deferred_results_split",
        [ASK, BOTH, PARIS, req(ret("weather", "c_rome"))],
        "pending_request",
        (),
        None,
    ),
    (
        "deferred_resume_done",
        [ASK, BOTH, PARIS, req(ret("weather", "c_rome")), real(text("ok"))],
        "complete",
        (),
        None,
    ),
    (
        "split_but_answered_elsewhere",
        [ASK, BOTH, PARIS, real(text("?")), req(ret("weather", "c_rome"))],
        "broken",
        (),
        None,
    ),
    (
        "results_never_answered",
        [ASK, BOTH, req(ret("weather", "c_paris"), ret("weather", "c_rome"))],
        "pending_request",
        (),
        None,
    ),
    ("prompt_after_answer", [ASK, real(text("hi")), req(user("and now?"))], "pending_request", (), None),
    (
        "interrupted_request",
        [ASK, BOTH, req(ret("weather", "c_paris"), state="interrupted")],
        "interrupted",
        ("c_rome",),
        "pending_calls",
    ),
    (
        "interrupted_response",
        [ASK, real(call("weather", "c_paris"), at=2, state="interrupted")],
        "interrupted",
        ("c_paris",),
        "pending_calls",
    ),
    (
        "interrupted_text_stream",
        [ASK, real(text("Par"), at=2, state="interrupted")],
        "interrupted",
        (),
        "complete",
    ),
    # The seeds' aborted run: the user moved on past an unanswered call, which will never run.
    (
        "aborted_mid_tool",
        [ASK, resp(call("retrieve", "call_1"), at=5), req(user("test"))],
        "broken",
        ("call_1",),
        None,
    ),
    (
        "orphan_before_frontier",
        [req(ret("weather", "gone")), real(text("hm")), ASK, BOTH],
        "broken",
        ("c_paris", "c_rome"),
        None,
    ),
    (
        "dangling_inside",
        [ASK, real(call("weather", "c_old")), req(user("next")), real(call("weather", "c_new"))],
        "broken",
        ("c_new",),
        None,
    ),
]


def expressible(history: list[Json]) -> bool:
    """Whether every ``state`` this stored history holds survives loading on the installed release."""
    for message in history:
        if "state" in message:
            can = REQUEST_STATE if message["kind"] == "request" else RESPONSE_STATE
            if not can:
                return False
    return True


@pytest.mark.parametrize(
    ("name", "history", "kind", "pending", "fallback"), SHAPES, ids=[s[0] for s in SHAPES]
)
def test_same_answer_wherever_the_release_can_express_it(
    name: str, history: list[Json], kind: str, pending: tuple[str, ...], fallback: str | None
) -> None:
    loaded = load(history)
    before = copy.deepcopy(loaded)
    state = histfix.classify(loaded)
    assert loaded == before  # never mutated
    expected = kind if expressible(history) else fallback
    assert state.kind == expected, (name, state)
    assert state.pending_call_ids == pending
    assert histfix.classify(loaded) == state  # deterministic
    if state.kind == "broken":
        assert state.problems
        assert set(state.problems) <= set(histfix.check(loaded))
    else:
        assert state.problems == ()
    assert state.resumable == (state.kind in ("pending_calls", "pending_request"))
    # JSON written by this release classifies the same once loaded back.
    assert histfix.classify(histfix.load_json(histfix.dump_json(loaded))) == state


def test_record_which_frontier_shapes_the_release_expresses() -> None:
    FACTS["frontier: state='interrupted' on the trailing request"] = "yes" if REQUEST_STATE else "no"
    FACTS["frontier: state='interrupted' on the last response"] = "yes" if RESPONSE_STATE else "no"
    from histfix._release import switches as _compat

    assert _compat.interrupted_state("request") == REQUEST_STATE
    assert _compat.interrupted_state("response") == RESPONSE_STATE


def test_broken_lists_the_problems_outside_the_frontier() -> None:
    history = load([req(ret("weather", "gone")), real(text("hm")), ASK, BOTH])
    state = histfix.classify(history)
    assert [(p.kind, p.message_index, p.tool_call_id) for p in state.problems] == [
        ("orphan_result", 0, "gone")
    ]
    assert "broken" in str(state) and "c_rome" in str(state)


def test_a_repaired_history_is_never_broken() -> None:
    for _, history, _, _, _ in SHAPES:
        loaded = load(history)
        repaired = histfix.repair(loaded)
        after = histfix.classify(repaired)
        if after.kind == "broken":  # only what repair keeps by design: a late or duplicate result
            assert {p.kind for p in after.problems} <= {"late_result", "duplicate_result"}
        else:
            assert after.kind in ("complete", "pending_request", "interrupted")
        kept = histfix.repair(loaded, repair_last_response=False)
        state = histfix.classify(loaded)
        if state.kind in ("pending_calls", "pending_request"):
            assert histfix.classify(kept) == state  # the documented resume keeps the frontier as it is


def test_state_is_a_frozen_record() -> None:
    state = histfix.classify(load([ASK, BOTH]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.kind = "complete"  # type: ignore[misc]
    assert hash(state) == hash(histfix.HistoryState("pending_calls", ("c_paris", "c_rome")))


@pytest.mark.parametrize("bad", [None, "history", b"{}", 42, {"kind": "request"}])
def test_bad_input_fails_like_repair(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"classify\(\) needs"):
        histfix.classify(bad)
    with pytest.raises(TypeError, match=r"repair\(\) needs"):
        histfix.repair(bad)


def test_wrong_element_names_index_and_type() -> None:
    history: list[Any] = [*load([ASK, BOTH]), {"kind": "request", "parts": []}]
    with pytest.raises(
        TypeError, match=r"messages\[2\] is a builtins\.dict.*ModelMessagesTypeAdapter"
    ) as got:
        histfix.classify(history)
    with pytest.raises(TypeError) as repaired:
        histfix.repair(history)
    assert str(got.value) == str(repaired.value)


# --- check(..., repair_last_response=) --------------------------------------------------------------


def test_check_can_leave_the_frontier_alone() -> None:
    history = load([ASK, BOTH, PARIS])
    assert [p.tool_call_id for p in histfix.check(history)] == ["c_rome"]
    assert histfix.check(history, repair_last_response=False) == []
    # problems before the frontier are still reported
    broken = load([req(ret("weather", "gone")), real(text("hm")), ASK, BOTH, PARIS])
    assert [p.kind for p in histfix.check(broken, repair_last_response=False)] == ["orphan_result"]


@pytest.mark.parametrize(
    ("name", "history", "kind", "pending", "fallback"), SHAPES, ids=[s[0] for s in SHAPES]
)
def test_check_agrees_with_repair_either_way(
    name: str, history: list[Json], kind: str, pending: tuple[str, ...], fallback: str | None
) -> None:
    loaded = load(history)
    for flag in (True, False):
        repaired = histfix.repair(loaded, repair_last_response=flag)
        if not histfix.check(loaded, repair_last_response=flag):
            assert repaired == loaded
        if repaired != loaded:
            assert histfix.check(loaded, repair_last_response=flag)


def test_check_rejects_a_non_bool_flag() -> None:
    with pytest.raises(TypeError, match="repair_last_response must be a bool"):
        histfix.check([], repair_last_response="no")  # type: ignore[arg-type]


def test_state_kind_is_classify_without_describing_problems() -> None:

    for case in CASES:
        try:
            history = histfix.load_json(json.dumps(case.history))
        except ValueError:
            continue  # not loadable on this release
        assert state_kind(history, check_history(history)) == histfix.classify(history).kind, case.name

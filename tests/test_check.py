"""histfix.check / is_provider_valid / repair_report: the validator and the report agree with repair.

The validator's answers on the corpus are snapshotted (data/check_snapshot.json, made on the newest
release) and must be the same on every release.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

import histfix

from corpus import CASES
from dsl import Case, call, load, load_history, real, req, resp, ret, retry, text, user
from strict import pairing_problems

SNAPSHOT = Path(__file__).parent / "data" / "check_snapshot.json"


def signature(problems: list[histfix.Problem]) -> list[list[object]]:
    return [[p.kind, p.message_index, p.part_index, p.tool_call_id, p.tool_name] for p in problems]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_same_answer_on_every_release(case: Case) -> None:
    expected = json.loads(SNAPSHOT.read_text())
    assert signature(histfix.check(load_history(case))) == expected[case.name]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_names_whatever_repair_changes(case: Case) -> None:
    history = load_history(case)
    problems = histfix.check(history)
    repaired = histfix.repair(history, backend="histfix")
    if not problems:
        assert repaired == history
        assert histfix.is_provider_valid(history)
    if repaired != history:
        assert problems
        assert not histfix.is_provider_valid(history)
    if not pairing_problems(repaired):
        assert histfix.check(repaired) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_report_describes_the_repair(case: Case) -> None:
    history = load_history(case)
    report = histfix.repair_report(history, repair_last_response=case.repair_last_response)
    repaired = histfix.repair(history, repair_last_response=case.repair_last_response)
    assert report.messages == repaired
    assert report.changed == (repaired != history)
    synthesized = sum(
        1
        for m in repaired
        for p in m.parts
        if (getattr(p, "metadata", None) or {}).get("pydantic_ai_synthesized_tool_return")
    ) - sum(
        1
        for m in history
        for p in m.parts
        if (getattr(p, "metadata", None) or {}).get("pydantic_ai_synthesized_tool_return")
    )
    assert sum(c.kind == "synthesized_return" for c in report.changes) == synthesized
    parts_before = sum(len(m.parts) for m in history)
    parts_after = sum(len(m.parts) for m in repaired)
    assert parts_before - sum(c.kind == "dropped_result" for c in report.changes) + synthesized == parts_after


def test_each_kind_is_located() -> None:
    history = load(
        [
            req(user("q"), ret("get", "early")),  # 0: result before its call
            real(call("get", "a"), call("get", "early"), at=1),  # 1: a answered late, early dangles
            req(user("meanwhile")),  # 2
            req(ret("get", "a"), user("x"), ret("get", "ghost")),  # 3: late; consecutive; orphan
            real(call("put", "s"), at=4),  # 4: s shadowed by 6
            req(ret("put", "a")),  # 5: duplicate (a already answered)
            resp(call("put", "s"), call("put", "t"), at=6),  # 6
            resp(text("more"), at=7),  # 7: consecutive synthetic responses
            req(ret("put", "s"), user("u"), retry("bad", name="put", id="t")),  # 8: parts between results
        ]
    )
    found = [(p.kind, p.message_index, p.part_index, p.tool_call_id) for p in histfix.check(history)]
    assert found == [
        ("result_before_call", 0, 1, "early"),
        ("dangling_call", 1, 1, "early"),
        ("consecutive_requests", 3, None, None),
        ("late_result", 3, 0, "a"),
        ("orphan_result", 3, 2, "ghost"),
        ("shadowed_call", 4, 0, "s"),
        ("duplicate_result", 5, 0, "a"),
        ("consecutive_responses", 7, None, None),
        ("late_result", 8, 0, "s"),  # response 7 sits between the call and its result
        ("parts_between_results", 8, 1, None),
        ("late_result", 8, 2, "t"),
    ]
    problem = histfix.check(history)[0]
    assert str(problem) == "messages[0].parts[1]: tool result 'early' (get) comes before its call"
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.kind = "dangling_call"  # type: ignore[misc]


def test_valid_history_has_no_problems() -> None:
    history = load(
        [req(user("q")), real(call("get", "a"), at=1), req(ret("get", "a")), real(text("ok"), at=2)]
    )
    assert histfix.check(history) == []
    assert histfix.is_provider_valid(history)
    assert histfix.check([]) == []


def test_check_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match=r"check\(\) needs"):
        histfix.check("nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[0\] is a builtins\.int"):
        histfix.is_provider_valid([1])  # type: ignore[list-item]


def test_repair_logs_each_change_at_debug_and_prints_nothing(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    history = load([req(user("q")), real(call("get", "a"), at=1), req(user("again"), ret("get", "ghost"))])
    with caplog.at_level(logging.INFO, logger="histfix"):
        histfix.repair(history)
    assert caplog.records == []
    with caplog.at_level(logging.DEBUG, logger="histfix"):
        histfix.repair(history)
    assert [r.getMessage() for r in caplog.records] == [
        "messages[1]: closed call 'a' (get) with a synthesized return",
        "messages[2]: dropped result 'ghost' (get): no earlier call has its id; its content was: ok",
    ]
    assert all(r.levelno == logging.DEBUG and r.name == "histfix" for r in caplog.records)
    assert capsys.readouterr() == ("", "")


def test_report_preview_and_summary() -> None:
    history = load([req(user("q")), req(ret("get", "ghost", "x" * 200))])
    report = histfix.repair_report(history)
    (merged, dropped) = report.changes
    assert merged.kind == "merged_requests" and merged.merged == (0, 1)
    assert dropped.kind == "dropped_result" and dropped.preview is not None and len(dropped.preview) == 60
    assert report.summary().count("\n") == 1
    assert histfix.repair_report([]).summary() == "nothing to repair"


if __name__ == "__main__":  # regenerate the snapshot (on the newest release): python tests/test_check.py
    snapshot = {}
    for case in CASES:
        snapshot[case.name] = signature(histfix.check(load(case.history)))
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1) + "\n")
    print(f"wrote {SNAPSHOT} ({len(snapshot)} cases)")

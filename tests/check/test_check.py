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
from pydantic_ai import messages as pai

import histfix
from histfix._check.history import check_history
from histfix._check.rejections import mark_rejections, rejected_kinds
from histfix._release.switches import upstream_repair_is_current

from corpus import CASES
from dsl import Case, call, load, load_history, loadable, real, req, resp, ret, retry, text, user
from generate import random_history
from strict import pairing_problems

CASES_BY_NAME = {case.name: case for case in CASES}

SNAPSHOT = Path(__file__).parent.parent / "data" / "check_snapshot.json"


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


def _synthesized(history: list[pai.ModelMessage]) -> int:
    return sum(
        1
        for m in history
        for p in m.parts
        if (getattr(p, "metadata", None) or {}).get("pydantic_ai_synthesized_tool_return")
    )


def assert_report_describes_repair(history: list[pai.ModelMessage], last: bool = True) -> None:
    """The report's history is exactly repair's, and its changes account for every part added or removed."""
    report = histfix.repair_report(history, repair_last_response=last)
    repaired = histfix.repair(history, repair_last_response=last)
    assert report.messages == repaired
    assert report.changed == (repaired != history)
    synthesized = _synthesized(repaired) - _synthesized(history)
    assert sum(c.kind == "synthesized_return" for c in report.changes) == synthesized
    parts_before = sum(len(m.parts) for m in history)
    parts_after = sum(len(m.parts) for m in repaired)
    assert parts_before - sum(c.kind == "dropped_result" for c in report.changes) + synthesized == parts_after


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_report_describes_the_repair(case: Case) -> None:
    assert_report_describes_repair(load_history(case), case.repair_last_response)


def in_memory_toolless_retries(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """``history`` with every tool-less retry as an in-memory ``RetryPromptPart`` (2.60+ loads a ``RetryFeedbackPart``)."""
    feedback = getattr(pai, "RetryFeedbackPart", ())
    return [
        dataclasses.replace(
            m,
            parts=[
                pai.RetryPromptPart(content=p.content, tool_call_id=f"fb{i}", timestamp=p.timestamp)
                if isinstance(p, feedback)
                else p
                for i, p in enumerate(m.parts)
            ],
        )
        for m in history
    ]


# Building a RetryPromptPart is deprecated from 2.60.0 (pydantic-ai's own warning class, not DeprecationWarning).
IN_MEMORY_RETRY_DEPRECATED = pytest.mark.filterwarnings(r"ignore:`RetryPromptPart` is deprecated")


@IN_MEMORY_RETRY_DEPRECATED
def test_report_is_repair_for_an_in_memory_toolless_retry() -> None:
    """Upstream 2.60+ hoists it in a merge and histfix's walk does not; the report must still be repair's."""
    history = in_memory_toolless_retries(
        load(CASES_BY_NAME["G3_toolless_retry_not_hoisted_in_merge"].history)
    )
    assert sum(isinstance(p, pai.RetryPromptPart) for m in history for p in m.parts) == 1
    walked = histfix.repair(history, backend="histfix")
    if upstream_repair_is_current():  # the one known difference between upstream and the walk
        assert walked != histfix.repair(history)
    else:
        assert walked == histfix.repair(history)
    assert_report_describes_repair(history)


@IN_MEMORY_RETRY_DEPRECATED
@pytest.mark.parametrize("block", range(4))
def test_report_is_repair_on_generated_histories_with_in_memory_retries(block: int) -> None:
    for seed in range(block * 50, block * 50 + 50):
        history = in_memory_toolless_retries(load(random_history(seed)))
        for last in (True, False):
            assert_report_describes_repair(history, last)


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


if (
    __name__ == "__main__"
):  # regenerate the snapshot (on the newest release): python tests/check/test_check.py
    snapshot = {}
    for case in CASES:
        snapshot[case.name] = signature(histfix.check(load(case.history)))
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1) + "\n")
    print(f"wrote {SNAPSHOT} ({len(snapshot)} cases)")


@IN_MEMORY_RETRY_DEPRECATED
def test_a_profile_starts_from_exactly_repairs_output_for_an_in_memory_toolless_retry() -> None:
    """The one input where upstream 2.60+ and the walk differ: a profile still starts from repair(h).

    The openai-responses profile changes nothing here (its only pass concerns thinking signatures),
    so its output is the default repair's, part order included.
    """
    history = in_memory_toolless_retries(
        load(CASES_BY_NAME["G3_toolless_retry_not_hoisted_in_merge"].history)
    )
    assert histfix.repair(history, provider="openai-responses") == histfix.repair(history)
    report = histfix.repair_report(history, provider="openai-responses")
    assert report.messages == histfix.repair(history)


def test_kept_by_repair_is_what_repair_keeps() -> None:
    """``KEPT_BY_REPAIR`` (what ``histfix check`` sends to a provider profile) is exactly the kinds
    check still finds after the default repair, over the corpus and a late result."""
    from histfix._records.problems import KEPT_BY_REPAIR

    late = load(
        [req(user("q")), real(call("get", "a"), at=1), real(text("meanwhile"), at=2), req(ret("get", "a"))]
    )
    histories = [history for _, history in loadable(CASES)] + [late]
    left = {problem.kind for history in histories for problem in histfix.check(histfix.repair(history))}
    assert left == KEPT_BY_REPAIR


def test_rejected_kinds_are_the_marked_ones() -> None:
    """The store's record counts the kinds some API rejects without marking: the same kinds."""
    seen = 0
    for _, history in loadable(CASES):
        found = check_history(history)
        seen += bool(found)
        marked = tuple(p.kind for p in mark_rejections(history, found) if p.rejected_by)
        assert rejected_kinds(history, found) == marked
    assert seen

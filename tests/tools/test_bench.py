"""The benchmark's lower bounds (``--bounds``): what they count, and that the option runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_repair


def test_new_objects_counts_what_the_adversarial_output_needs_built() -> None:
    # every six messages: the orphan's request without it, the merged request, the request of the
    # second return are new messages; the two synthesized returns are new parts
    history = bench_repair.adversarial(600)
    built, made = bench_repair.new_objects(history, bench_repair.forward_repair(history))
    assert (len(built), len(made)) == (300, 200)
    kept = bench_repair.least_objects(built, made)
    assert kept == [*built, *made]
    assert not any(copy is original for copy, original in zip(kept, [*built, *made], strict=True))
    # a message's copy has a parts list of its own, as a built message has
    assert not any(copy.parts is original.parts for copy, original in zip(kept, built, strict=False))  # type: ignore[attr-defined]


def test_new_objects_finds_nothing_to_build_in_a_clean_history() -> None:
    history = bench_repair.clean(300)
    assert bench_repair.new_objects(history, bench_repair.forward_repair(history)) == ([], [])


def test_least_pairing_finds_the_orphans_and_the_open_calls() -> None:
    # ten groups of six: each starts with an orphan, and no result answers either of its calls
    open_calls, orphans = bench_repair.least_pairing(bench_repair.adversarial(60))
    assert [part.tool_call_id for part in orphans] == [f"gone{n}" for n in range(1, 11)]  # type: ignore[attr-defined]
    assert list(open_calls) == [f"{name}{n}" for n in range(1, 11) for name in "ab"]


@pytest.mark.filterwarnings(r"ignore:`RetryPromptPart` is deprecated")  # from 2.60.0 (a UserWarning)
def test_least_pairing_closes_the_calls_results_and_retries_answer() -> None:
    # dense: every id is called once; results answer most calls, results of evicted calls none.
    # A tool retry built in memory answers its call too (newer releases load stored retries as
    # returns, so the shape alone may hold none).
    from pydantic_ai.messages import ModelRequest, ModelResponse, RetryPromptPart, ToolCallPart

    history = [
        *bench_repair.dense(3000),
        ModelResponse(parts=[ToolCallPart("get", {}, tool_call_id="retried")]),
        ModelRequest(parts=[RetryPromptPart("fix the args", tool_name="get", tool_call_id="retried")]),
    ]
    called = [
        part.tool_call_id
        for m in history
        if m.kind == "response"
        for part in m.parts
        if part.part_kind == "tool-call"
    ]
    answers = [
        part
        for m in history
        if m.kind == "request"
        for part in m.parts
        if part.part_kind in ("tool-return", "retry-prompt")
    ]
    answered = {part.tool_call_id for part in answers}
    open_calls, orphans = bench_repair.least_pairing(history)
    assert "retried" not in open_calls
    assert list(open_calls) == [call_id for call_id in called if call_id not in answered]
    assert [part.tool_call_id for part in orphans] == [
        part.tool_call_id for part in answers if part.tool_call_id not in called
    ]  # type: ignore[attr-defined]
    assert orphans and all(part.tool_call_id.startswith("evicted") for part in orphans)  # type: ignore[attr-defined]


def test_bounds_option_prints_one_row_per_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench_repair.main(["60", "120", "--shapes", "adversarial", "--bounds", "--runs", "1", "--clock", "cpu"])
    out = capsys.readouterr().out
    table = out[out.index("the least work of any repair") :].splitlines()
    assert table[1].split() == [
        "messages",
        "new",
        "msgs",
        "new",
        "parts",
        "floor",
        "ms",
        "pairing",
        "objects",
        "both",
        "histfix",
    ]
    assert [row.split()[0] for row in table[2:] if row and not row.startswith("{")] == ["60", "120"]
    # each row's ratios are its JSON line's times over the floor
    rows = [row.split() for row in table[2:] if row and not row.startswith("{")]
    measured = [json.loads(row)["min"] for row in table[2:] if row.startswith("{")]
    assert len(measured) == len(rows) == 2
    for row, low in zip(rows, measured, strict=True):
        unit = low["floor"]
        expected = [
            low["pairing"] / unit,
            low["objects"] / unit,
            (low["pairing"] + low["objects"]) / unit,
            low["histfix"] / unit,
        ]
        assert [float(cell.rstrip("x")) for cell in row[4:]] == pytest.approx(expected, abs=0.006)

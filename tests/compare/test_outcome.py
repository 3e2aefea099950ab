"""histfix._compare.outcome: one side of the probe on one release, as ``histfix compare`` and the
upgrade check compare and summarize it. Plain JSON data in, so the same on every release."""

from __future__ import annotations

from typing import Any

from histfix._compare.outcome import Outcome
from histfix._compare.probe import PLAIN, REPAIRED

REQUEST = {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi", "timestamp": "t1"}]}
CALLS = {
    "kind": "response",
    "parts": [{"part_kind": "tool-call", "tool_name": "get", "tool_call_id": "c1", "args": {"q": 1}}],
}


def observation(
    messages: list[Any] | None, raised: str | None = None, problems: list[str] | None = None
) -> Any:
    side = {"messages": messages, "raised": raised, "problems": problems or []}
    return {"release": "2.9.1", "backend": "histfix", PLAIN: side, REPAIRED: side}


def test_an_outcome_is_its_lines_count_and_verdict() -> None:
    outcome = Outcome.of(observation([REQUEST, CALLS], problems=["no result for c1"]), PLAIN)
    assert outcome.count == 2 and outcome.problems == ("no result for c1",)
    assert outcome.lines == (
        "  0 request   user-prompt    hi",
        '  1 response  tool-call      get(c1) {"q": 1}',
    )
    assert outcome.summary(PLAIN) == "sends 2 messages · strict provider: 400 (1 problem)"
    two = Outcome.of(observation([REQUEST], problems=["a", "b"]), REPAIRED)
    assert two.summary(REPAIRED) == "returns 1 messages · strict provider: 400 (2 problems)"
    assert Outcome.of(observation([REQUEST]), REPAIRED).summary(REPAIRED) == "returns 1 messages · valid"


def test_outcomes_compare_equal_exactly_when_the_parts_are_the_same() -> None:
    later = {**REQUEST, "parts": [{**REQUEST["parts"][0], "timestamp": "t2"}]}
    assert Outcome.of(observation([REQUEST]), PLAIN) == Outcome.of(observation([later]), PLAIN)
    other = {**REQUEST, "parts": [{**REQUEST["parts"][0], "content": "hello"}]}
    assert Outcome.of(observation([REQUEST]), PLAIN) != Outcome.of(observation([other]), PLAIN)


def test_what_was_raised_is_its_first_line_cut_to_the_cells_width() -> None:
    long = "UserError: " + "x" * 80 + "\nthe rest of the message"
    raised = Outcome.of(observation(None, raised=long), PLAIN)
    assert raised.lines is None and raised.count == 0
    text = raised.summary(PLAIN)
    assert text.startswith("raises UserError: xxx") and text.endswith("…") and "rest" not in text
    assert len(text) == len("raises ") + 48
    sent_then_raised = Outcome.of(observation([REQUEST], raised="UserError: no\nmore"), PLAIN)
    assert sent_then_raised.summary(PLAIN) == "sends 1 messages · valid · then raises UserError: no"

"""The one way a history becomes lines: ``histfix show`` prints them, ``histfix compare`` compares them."""

from __future__ import annotations

import json

import histfix
from histfix._records.lines import history_lines, part_line, short
from histfix._records.synthesized import SYNTHESIZED_CONTENT, SYNTHESIZED_TOOL_RETURN_METADATA_KEY

from dsl import call, load, real, req, ret, user

SYNTHESIZED = {
    "part_kind": "tool-return",
    "tool_name": "get",
    "tool_call_id": "c1",
    "content": SYNTHESIZED_CONTENT,
    "metadata": {SYNTHESIZED_TOOL_RETURN_METADATA_KEY: True},
    "outcome": "interrupted",
    "timestamp": "2026-01-01T00:00:00Z",
}


def test_a_part_shows_its_tool_its_id_and_its_marks() -> None:
    line = part_line(SYNTHESIZED, 48)
    assert line.startswith("tool-return    get(c1) The tool call was interrupted")
    assert line.endswith("…  [synthesized, outcome=interrupted]")
    assert part_line(SYNTHESIZED, 80).endswith(f"{SYNTHESIZED_CONTENT}  [synthesized, outcome=interrupted]")
    plain = {**SYNTHESIZED, "content": 1, "outcome": "success", "metadata": None}
    assert part_line(plain, 48) == "tool-return    get(c1) 1"
    marked_but_not_true = {**plain, "metadata": {SYNTHESIZED_TOOL_RETURN_METADATA_KEY: "yes"}}
    assert part_line(marked_but_not_true, 48) == "tool-return    get(c1) 1"


def test_values_are_json_on_one_line_cut_at_the_width() -> None:
    assert short({"b": 1, "a": [1, 2]}, 40) == '{"a": [1, 2], "b": 1}'
    assert short("two\n  lines", 40) == "two lines"
    assert short("x" * 10, 5) == "xxxx…" and len(short("x" * 10, 5)) == 5


def test_lines_number_messages_and_leave_out_timestamps() -> None:
    history = load([req(user("q")), real(call("get", "c1", {"k": 1})), req(ret("get", "c1", "ok"))])
    lines = history_lines(json.loads(histfix.dump_json(history)), 48)
    assert lines == [
        "  0 request   user-prompt    q",
        '  1 response  tool-call      get(c1) {"k": 1}',
        "  2 request   tool-return    get(c1) ok",
    ]
    assert history_lines([{"kind": "request", "parts": []}], 48) == ["  0 request   (no parts)"]

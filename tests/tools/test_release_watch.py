"""The release watch's report logic (tools/release_watch.py), on small schemas: no network, no release.

Two hand-written schemas in the shape of ``ModelMessagesTypeAdapter.json_schema()`` stand for an
old and a new release: the new one adds a part kind, a field, a literal value and a metadata key,
and drops one of each; the report must name each by itself.
"""

from __future__ import annotations

from typing import Any

from release_watch import SECTIONS, grouped, render, schema_changes
from schema_summary import summarize


def _part(kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"part_kind": {"const": kind, "default": kind, "type": "string"}, **fields},
        "required": ["part_kind"],
    }


def _schema(request_parts: list[dict[str, Any]], response_fields: dict[str, Any]) -> dict[str, Any]:
    defs = {
        "ModelRequest": {
            "type": "object",
            "properties": {
                "kind": {"const": "request", "type": "string"},
                "parts": {"type": "array", "items": {"oneOf": request_parts}},
                "metadata": {"anyOf": [{"type": "object", "additionalProperties": True}, {"type": "null"}]},
            },
        },
        "ModelResponse": {
            "type": "object",
            "properties": {
                "kind": {"const": "response", "type": "string"},
                "parts": {"type": "array", "items": {"oneOf": [_part("text", content={"type": "string"})]}},
                **response_fields,
            },
        },
        "Source": {"type": "object", "properties": {"authority": {"enum": ["operator", "user"]}}},
    }
    refs = [{"$ref": "#/$defs/ModelRequest"}, {"$ref": "#/$defs/ModelResponse"}]
    return {"$defs": defs, "type": "array", "items": {"oneOf": refs}}


OUTCOME = {"enum": ["success", "failed"], "default": "success"}
VISIBILITY = {"anyOf": [{"enum": ["public", "private"], "type": "string"}, {"type": "null"}]}
OLD = _schema(
    [_part("tool-return", outcome=OUTCOME), _part("legacy")],
    {"finish_reason": {"enum": ["stop", "length"]}, "vendor": {"type": "string"}},
)
NEW = _schema(
    [
        _part(
            "tool-return",
            outcome={**OUTCOME, "enum": ["success", "failed", "interrupted"]},
            ui_visibility=VISIBILITY,
        ),
        # two variants sharing one part_kind, one nesting an object with a literal
        {"oneOf": [_part("capability", source={"$ref": "#/$defs/Source"}), _part("capability", data={})]},
    ],
    {"finish_reason": {"enum": ["stop"]}},
)


def test_the_schema_section_names_each_change_by_itself() -> None:
    lines = schema_changes(summarize(OLD), summarize(NEW), ["__ns__", "gone"], ["__ns__", "pause"])
    assert lines == [
        "new part capability: fields part_kind, source, data",
        "dropped part legacy",
        "dropped field message response.vendor",
        "dropped value message response.finish_reason: 'length'",
        "new field part tool-return.ui_visibility (values 'public', 'private')",
        "new value part tool-return.outcome: 'interrupted'",
        "new metadata key: 'pause'",
        "dropped metadata key: 'gone'",
    ]


def test_a_release_against_itself_has_no_schema_changes() -> None:
    assert schema_changes(summarize(NEW), summarize(NEW), ["k"], ["k"]) == []


def test_nested_fields_are_summarized_with_their_literals() -> None:
    capability = summarize(NEW)["part capability"]
    assert capability["source.authority"] == ["operator", "user"]
    assert capability["part_kind"] == ["capability"]


def test_differences_are_grouped_by_path_without_indexes() -> None:
    found = {
        "drawn 1": [
            "[2].parts[0].ui_visibility: None != 'private'",
            "[4].parts[1].ui_visibility: None != 'public'",
        ],
        "drawn 7": ["[1].metadata.__ns__.pause: True != <missing>"],
        "drawn 9": ["[3].parts[0].ui_visibility: None != 'private'"],
    }
    assert grouped(found) == [
        "[].parts[].ui_visibility  (2 cases; e.g. drawn 1: [2].parts[0].ui_visibility: None != 'private')",
        "[].metadata.__ns__.pause  (1 cases; e.g. drawn 7: [1].metadata.__ns__.pause: True != <missing>)",
    ]


def test_the_verdict_is_1_when_any_section_holds_a_line() -> None:
    empty: list[list[str]] = [[] for _ in SECTIONS]
    text, status = render("2.68.0", "2.78.0", empty)
    assert status == 0
    assert text.endswith("nothing differs (exit 0)")
    assert "2.78.0 (newest) against 2.68.0 (newest pinned)" in text
    for section in range(len(SECTIONS)):
        one = [["a line"] if i == section else [] for i in range(len(SECTIONS))]
        text, status = render("2.68.0", "2.78.0", one)
        assert status == 1
        assert "   a line" in text and text.endswith("(exit 1)")

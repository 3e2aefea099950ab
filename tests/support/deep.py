"""Histories nested deeper than pydantic-ai reads, as real files hold them, and the line histfix says.

The limit is counted here one level at a time against the installed release's own loader, so
the tests do not take histfix's word for it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "cancelled_stream.json"


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@functools.cache
def reader_limit() -> int:
    """How deep a document pydantic-ai's reader reads (201 with pydantic-core 2.x)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    levels = 1
    while True:
        try:
            ModelMessagesTypeAdapter.validate_json(nested(levels + 1))
        except ValueError as exc:
            if "recursion limit" in str(exc):
                return levels
        levels += 1


def deep_history(levels: int) -> str:
    """examples/cancelled_stream.json, one line, with one tool call's arguments nested to
    ``levels`` in all (the arguments object is level 5: list, message, parts, part, args)."""
    data = json.loads(EXAMPLE.read_bytes())
    at = next(i for i, m in enumerate(data) if any(p["part_kind"] == "tool-call" for p in m["parts"]))
    data[at]["parts"][-1]["args"] = {"routes": "HOLE"}
    return json.dumps(data).replace('"HOLE"', nested(levels - 5))


def opening_column(text: str) -> int:
    """Where the first level past the reader's opens in one-line JSON ``text``, counted by hand."""
    depth = 0
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > reader_limit():
                return index + 1
        elif char in "]}":
            depth -= 1
    raise AssertionError("not that deep")


def too_deep(levels: int, column: int, line: int = 1) -> str:
    """The one line histfix gives for JSON text nested ``levels`` deep."""
    limit = reader_limit()
    return (
        f"nested {levels} levels deep, more than the {limit} a history may have (pydantic-ai's JSON "
        f"reader refuses deeper); level {limit + 1} opens at line {line}, column {column}"
    )

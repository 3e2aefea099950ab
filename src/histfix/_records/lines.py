"""A history as lines a person reads, one per part: what ``histfix show`` prints and what
``histfix compare`` compares across releases.

The lines are made from pydantic-ai's JSON data of the messages (what every release dumps and
loads), never from one release's objects, and hold no timestamp: two releases' lines are equal
exactly when their histories hold the same parts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .synthesized import is_synthesized_data

__all__ = ["history_lines", "part_line", "short"]


def short(value: Any, width: int) -> str:
    """``value`` on one line of at most ``width`` characters (JSON for what is not text, keys sorted)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def part_line(part: Mapping[str, Any], width: int) -> str:
    """One part: its kind, a call's or result's tool and id, its args or content, and its marks
    (synthesized, an outcome other than success)."""
    kind = part.get("part_kind", "?")
    if part.get("tool_call_id") is not None and part.get("tool_name") is not None:
        body = part["args"] if "args" in part else part.get("content")
        line = f"{kind:<14} {part['tool_name']}({part['tool_call_id']}) {short(body, width)}"
        marks = [f"outcome={part['outcome']}"] if part.get("outcome", "success") != "success" else []
        if is_synthesized_data(part):
            marks.insert(0, "synthesized")
        return line + (f"  [{', '.join(marks)}]" if marks else "")
    return f"{kind:<14} {short(part.get('content', ''), width)}"


def history_lines(messages: Sequence[Mapping[str, Any]], width: int) -> list[str]:
    """Every part of a history, numbered by message: ``  2 request   tool-return    get(c1) 42``."""
    lines = []
    for index, message in enumerate(messages):
        for n, part in enumerate(message.get("parts") or [None]):
            head = f"{index:>3} {message.get('kind', '?'):<9}" if n == 0 else " " * 13
            lines.append(f"{head} {'(no parts)' if part is None else part_line(part, width)}")
    return lines

"""What one side of the probe did on one release, reduced to what is compared across releases.

The part lines are the same on every release (no timestamps), so two releases' outcomes compare
equal exactly when they did the same; ``histfix compare`` renders them, and the store's upgrade
check reports their one-line summaries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._records.synthesized import SYNTHESIZED_TOOL_RETURN_METADATA_KEY
from .probe import PLAIN

__all__ = ["Outcome", "describe", "describe_part"]

Json = dict[str, Any]
#: Characters of a value shown on a part's line.
WIDTH = 48


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def _first_line(text: str | None) -> str:
    return _short(text.splitlines()[0] if text else "")


def describe_part(part: Json) -> str:
    """One line per part, the same on every release: kind, tool and id, content; no timestamps."""
    kind = part.get("part_kind", "?")
    if part.get("tool_call_id") is not None and part.get("tool_name") is not None:
        body = part["args"] if "args" in part else part.get("content")
        line = f"{kind:<14} {part['tool_name']}({part['tool_call_id']}) {_short(body)}"
        marks = [f"outcome={part['outcome']}"] if part.get("outcome", "success") != "success" else []
        if (part.get("metadata") or {}).get(SYNTHESIZED_TOOL_RETURN_METADATA_KEY):
            marks.insert(0, "synthesized")
        return line + (f"  [{', '.join(marks)}]" if marks else "")
    return f"{kind:<14} {_short(part.get('content', ''))}"


def describe(messages: list[Json]) -> list[str]:
    """A history (pydantic-ai JSON data) as numbered lines, one per part."""
    lines = []
    for index, message in enumerate(messages):
        for n, part in enumerate(message.get("parts") or [None]):
            head = f"{index:>3} {message.get('kind', '?'):<9}" if n == 0 else " " * 13
            lines.append(f"{head} {'(no parts)' if part is None else describe_part(part)}")
    return lines


@dataclass(frozen=True)
class Outcome:
    """What one side did on one release, reduced to what is compared across releases."""

    raised: str | None
    lines: tuple[str, ...] | None  # the messages, one line per part; None when nothing came out
    count: int
    problems: tuple[str, ...]

    @classmethod
    def of(cls, observation: Json, side: str) -> Outcome:
        data = observation[side]
        messages = data["messages"]
        problems = tuple(data["problems"])
        if messages is None:
            return cls(data["raised"], None, 0, problems)
        return cls(data["raised"], tuple(describe(messages)), len(messages), problems)

    def summary(self, side: str) -> str:
        """A short cell: how many messages, and whether a strict provider accepts them."""
        if self.lines is None:
            return f"raises {_first_line(self.raised)}"
        verb = "sends" if side == PLAIN else "returns"
        problems = f"{len(self.problems)} problem{'s' if len(self.problems) > 1 else ''}"
        verdict = f"strict provider: 400 ({problems})" if self.problems else "valid"
        text = f"{verb} {self.count} messages · {verdict}"
        return text + (f" · then raises {_first_line(self.raised)}" if self.raised else "")

"""What one side of the probe did on one release, reduced to what is compared across releases.

The part lines are the same on every release (no timestamps), so two releases' outcomes compare
equal exactly when they did the same; ``histfix compare`` renders them, and the store's upgrade
check reports their one-line summaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._oneline import first_line
from .._records.lines import history_lines, short
from .probe import PLAIN

__all__ = ["Outcome", "describe", "summary_line"]

Json = dict[str, Any]
#: Characters of a value shown on a part's line.
WIDTH = 48


def describe(messages: list[Json]) -> list[str]:
    """A history (pydantic-ai JSON data) as numbered lines, one per part."""
    return history_lines(messages, WIDTH)


def summary_line(side: str, raised: str | None, count: int | None, problems: Sequence[str]) -> str:
    """A short cell: how many messages (None: nothing came out), and whether a strict provider
    accepts them; what ``histfix compare`` shows and the upgrade check reports, worded once."""
    if count is None:
        return f"raises {short(first_line(raised), WIDTH)}"
    verb = "sends" if side == PLAIN else "returns"
    many = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
    verdict = f"strict provider: 400 ({many})" if problems else "valid"
    text = f"{verb} {count} messages · {verdict}"
    return text + (f" · then raises {short(first_line(raised), WIDTH)}" if raised else "")


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
        return summary_line(side, self.raised, None if self.lines is None else self.count, self.problems)

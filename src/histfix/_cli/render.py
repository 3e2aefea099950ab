"""``histfix show``'s view of a history: a title, then one line per part (:mod:`histfix._records.lines`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["render"]

#: Characters of a value shown on a part's line: wider than ``compare``'s, which sets lines side by side.
_WIDTH = 60


def render(title: str, messages: Sequence[Any]) -> str:
    """One line per part, numbered by message: ``    2 request   tool-return    get(c1) 42``."""
    import json

    from .._portable import dump_json
    from .._records.lines import history_lines

    lines = history_lines(json.loads(dump_json(messages)), _WIDTH)
    return "\n".join([f"{title} ({len(messages)} messages):", *(f"  {line}" for line in lines)])

"""A compact, readable rendering of a history for terminals (used by ``histfix show``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["render"]

_WIDTH = 60


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _describe_part(part: Any) -> str:
    kind = getattr(part, "part_kind", type(part).__name__)
    if hasattr(part, "tool_call_id") and hasattr(part, "tool_name"):
        label = f"{part.tool_name}({part.tool_call_id})"
        body = part.args if hasattr(part, "args") else getattr(part, "content", "")
        synthesized = (getattr(part, "metadata", None) or {}).get("pydantic_ai_synthesized_tool_return")
        return f"{kind:<14} {label} {_short(body)}" + ("  [synthesized]" if synthesized else "")
    return f"{kind:<14} {_short(getattr(part, 'content', ''))}"


def render(title: str, messages: Sequence[Any]) -> str:
    """One line per part, numbered by message: ``  2 request   tool-return    get(c1) 42``."""
    lines = [f"{title} ({len(messages)} messages):"]
    for index, message in enumerate(messages):
        kind = getattr(message, "kind", "?")
        parts = list(message.parts) or [None]
        for n, part in enumerate(parts):
            head = f"  {index:>3} {kind:<9}" if n == 0 else " " * 15
            lines.append(f"{head} {'(no parts)' if part is None else _describe_part(part)}")
    return "\n".join(lines)

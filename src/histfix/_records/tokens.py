"""Sizing messages for a token budget, without importing pydantic-ai."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["BudgetExceededError", "estimate_tokens"]

#: What the default estimator adds per part for roles, ids and framing.
_PART_OVERHEAD = 4


def _text_of(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        try:
            return json.dumps(value, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(value)
    except RecursionError:
        from .depth import PART_LEVELS, too_deep_value

        raise ValueError(too_deep_value(value, where, above=PART_LEVELS)) from None


def estimate_tokens(message: ModelMessage) -> int:
    """A dependency-free estimate of a message's size in tokens: about four characters each.

    Counts every part's content and tool arguments, plus a small overhead per part. Good enough
    to keep a history under a budget with a margin; pass a real tokenizer for exact counts.
    """
    total = 0
    for index, part in enumerate(message.parts):
        content = _text_of(getattr(part, "content", None), f"parts[{index}].content")
        chars = len(content) + len(_text_of(getattr(part, "args", None), f"parts[{index}].args"))
        total += _PART_OVERHEAD + (chars + 3) // 4
    return total


class BudgetExceededError(ValueError):
    """Even the last turn of the history does not fit the token budget."""

    def __init__(self, needed: int, max_tokens: int) -> None:
        super().__init__(
            f"the last turn alone needs an estimated {needed} tokens, more than max_tokens={max_tokens}: "
            "raise the budget, or summarize or shorten that turn"
        )
        self.needed = needed
        self.max_tokens = max_tokens

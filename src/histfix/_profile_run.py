"""Running a provider profile around the default repair (see :mod:`histfix._profiles`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ._changes import Change
from ._profiles import rules_for
from ._providers import ProviderTarget

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["nothing_sendable", "run_profile"]

DefaultRepair = Callable[["Sequence[ModelMessage]"], "tuple[list[ModelMessage], list[Change]]"]


def run_profile(
    history: Sequence[ModelMessage], target: ProviderTarget, default_repair: DefaultRepair
) -> tuple[list[ModelMessage], list[Change]]:
    """The ``before`` passes, the default repair, then the ``after`` passes; every change, in order.

    Raises ValueError when the result has nothing a provider could be sent (no message with a part
    other than a system prompt): every API rejects an empty conversation, and sending one would
    fail far from the cause.
    """
    current = list(history)
    changes: list[Change] = []
    for rule in rules_for(target, "before"):
        current, found = rule.fix(current, target)
        changes.extend(found)
    current, found = default_repair(current)
    changes.extend(found)
    for rule in rules_for(target, "after"):
        current, found = rule.fix(current, target)
        changes.extend(found)
    if nothing_sendable(current):
        raise ValueError(
            f"nothing in this history can be sent to {target.name}: it has no prompt, result or "
            "response (only system prompts, or no messages); add the user's prompt first"
        )
    return current, changes


def nothing_sendable(history: Sequence[ModelMessage]) -> bool:
    """Whether every message is empty or holds only system prompts."""
    from pydantic_ai.messages import SystemPromptPart

    return all(isinstance(part, SystemPromptPart) for message in history for part in message.parts)

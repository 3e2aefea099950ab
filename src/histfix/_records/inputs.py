"""Checks on what callers pass in, with errors that say what to do instead.

Kept free of pydantic-ai imports at module level so that the error paths stay cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["as_history", "check_messages", "not_a_message"]


def not_a_message(index: int, found: object) -> TypeError:
    """The error for a history element that is neither a ``ModelRequest`` nor a ``ModelResponse``."""
    hint = ""
    if isinstance(found, dict):
        hint = (
            " (it looks like stored JSON: load it with pydantic_ai.messages.ModelMessagesTypeAdapter first)"
        )
    return TypeError(
        f"messages[{index}] is a {type(found).__module__}.{type(found).__qualname__}, not a "
        f"pydantic_ai.messages.ModelRequest or ModelResponse{hint}"
    )


def as_history(messages: Any, *, function: str) -> Sequence[Any]:
    """Reject anything that is not a sequence of messages before any work starts.

    Strings, bytes and mappings are sequences or iterables of the wrong kind, so they are named
    explicitly; element types are checked by the caller's own walk, or by :func:`check_messages`.
    """
    if messages is None:
        raise TypeError(f"{function}() needs a list of ModelRequest/ModelResponse messages, got None")
    if isinstance(messages, str | bytes | bytearray):
        raise TypeError(
            f"{function}() needs a list of messages, got {type(messages).__name__}: load stored JSON "
            "with histfix.load_json() first (it reads what any pydantic-ai release wrote)"
        )
    if not isinstance(messages, Sequence):
        raise TypeError(
            f"{function}() needs a sequence (such as a list) of ModelRequest/ModelResponse messages, "
            f"got {type(messages).__name__}"
        )
    return messages


def check_messages(messages: Sequence[Any], request_type: type, response_type: type) -> None:
    """Raise :func:`not_a_message` for the first element of the wrong type."""
    for index, message in enumerate(messages):
        if not isinstance(message, request_type | response_type):
            raise not_a_message(index, message)

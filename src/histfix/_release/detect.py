"""How each ``"detected"`` entry of the release table is found on the imported pydantic-ai."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
from typing import Any

from . import table
from .installed import pydantic_ai_messages
from .probes import field_names, part_value_kept

__all__ = ["FIELDS", "detected"]

#: The entries that are a field of a message or part class: (class in ``pydantic_ai.messages``, field).
FIELDS: dict[table.Note, tuple[str, str]] = {
    table.REQUEST_METADATA: ("ModelRequest", "metadata"),
    table.REQUEST_TIMESTAMP: ("ModelRequest", "timestamp"),
    table.RETURN_OUTCOME: ("ToolReturnPart", "outcome"),
    table.RETURN_TOOL_KIND: ("ToolReturnPart", "tool_kind"),
    table.RETURN_UI_VISIBILITY: ("ToolReturnPart", "ui_visibility"),
}


@functools.cache
def detected() -> dict[str, Any]:
    """Inspect the imported pydantic-ai once: every detected entry's value by its name (a bool, and
    for ``TOOL_AVAILABILITY_DELTA`` the class or None). :func:`.switches.forget` clears it."""
    messages = pydantic_ai_messages()
    found: dict[str, Any] = {
        note.name: field in field_names(getattr(messages, cls)) for note, (cls, field) in FIELDS.items()
    }
    # Probed, not read from the Literal: typing.get_type_hints fails on Python 3.10 for these
    # dataclasses (their KW_ONLY marker field), which would hide every value there.
    found[table.OUTCOME_INTERRUPTED.name] = part_value_kept("tool-return", "outcome", "interrupted")
    found[table.OUTCOME_RETRIED.name] = part_value_kept("tool-return", "outcome", "retried")
    found[table.TOOL_AVAILABILITY_DELTA.name] = getattr(messages, "ToolAvailabilityDeltaPart", None)
    found[table.REPAIR_MESSAGES.name] = callable(getattr(messages, "repair_messages", None))
    found[table.RETRY_FEEDBACK_PART.name] = hasattr(messages, "RetryFeedbackPart")
    found[table.ARGS_AS_DICT_TOLERATES_INVALID.name] = (
        "raise_if_invalid" in inspect.signature(messages.ToolCallPart.args_as_dict).parameters
    )
    found[table.PROFILE_FITS_TOOL_CALL_IDS.name] = "tool_call_id_length" in _profile_keys()
    found[table.CONVERSATION_STORE.name] = (
        importlib.util.find_spec("pydantic_ai.conversation_store") is not None
    )
    return found


def _profile_keys() -> set[str]:
    """The settings ``ModelProfile`` has (a dataclass up to 1.x, a TypedDict later)."""
    from pydantic_ai.profiles import ModelProfile

    if dataclasses.is_dataclass(ModelProfile):
        return {f.name for f in dataclasses.fields(ModelProfile)}
    return {*getattr(ModelProfile, "__required_keys__", ()), *getattr(ModelProfile, "__optional_keys__", ())}

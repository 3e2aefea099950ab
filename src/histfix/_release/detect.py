"""How the switches declared in :mod:`.switches` are detected on the imported pydantic-ai."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
from typing import Any

from .backend import upstream_is_current
from .installed import VERSION_STRING, pydantic_ai_messages
from .probes import field_names, part_value_kept

__all__ = ["features", "switches"]


@functools.cache
def switches() -> dict[str, Any]:
    """Inspect the imported pydantic-ai once and return every detected switch by name."""
    messages = pydantic_ai_messages()
    returns = field_names(messages.ToolReturnPart)
    requests = field_names(messages.ModelRequest)
    # Probed, not read from the Literal: typing.get_type_hints fails on Python 3.10 for these
    # dataclasses (their KW_ONLY marker field), which would hide every value there.
    outcomes = {v for v in ("interrupted", "retried") if part_value_kept("tool-return", "outcome", v)}
    has_repair = callable(getattr(messages, "repair_messages", None))
    return {
        "HAS_REPAIR_MESSAGES": has_repair,
        "UPSTREAM_REPAIR_IS_CURRENT": upstream_is_current(VERSION_STRING, has_repair),
        "RETURN_HAS_OUTCOME": "outcome" in returns,
        "OUTCOME_INTERRUPTED": "interrupted" in outcomes,
        "RETURN_HAS_TOOL_KIND": "tool_kind" in returns,
        "RETURN_HAS_UI_VISIBILITY": "ui_visibility" in returns,
        "REQUEST_HAS_TIMESTAMP": "timestamp" in requests,
        "REQUEST_HAS_METADATA": "metadata" in requests,
        "TOOL_AVAILABILITY_DELTA": getattr(messages, "ToolAvailabilityDeltaPart", None),
        "HAS_RETRY_FEEDBACK_PART": hasattr(messages, "RetryFeedbackPart"),
        "OUTCOME_RETRIED": "retried" in outcomes,
        "ARGS_AS_DICT_TOLERATES_INVALID": "raise_if_invalid"
        in inspect.signature(messages.ToolCallPart.args_as_dict).parameters,
        "PROFILE_FITS_TOOL_CALL_IDS": "tool_call_id_length" in _profile_keys(),
        "HAS_CONVERSATION_STORE": importlib.util.find_spec("pydantic_ai.conversation_store") is not None,
    }


def _profile_keys() -> set[str]:
    """The settings ``ModelProfile`` has (a dataclass up to 1.x, a TypedDict later)."""
    from pydantic_ai.profiles import ModelProfile

    if dataclasses.is_dataclass(ModelProfile):
        return {f.name for f in dataclasses.fields(ModelProfile)}
    return {*getattr(ModelProfile, "__required_keys__", ()), *getattr(ModelProfile, "__optional_keys__", ())}


def features() -> dict[str, bool]:
    """The detected switches by name, for :func:`histfix.backend_info`."""
    detected = switches()
    return {
        "repair_messages": detected["HAS_REPAIR_MESSAGES"],
        "upstream_repair_is_current": detected["UPSTREAM_REPAIR_IS_CURRENT"],
        "tool_return_outcome": detected["RETURN_HAS_OUTCOME"],
        "outcome_interrupted": detected["OUTCOME_INTERRUPTED"],
        "tool_return_tool_kind": detected["RETURN_HAS_TOOL_KIND"],
        "tool_return_ui_visibility": detected["RETURN_HAS_UI_VISIBILITY"],
        "request_timestamp": detected["REQUEST_HAS_TIMESTAMP"],
        "request_metadata": detected["REQUEST_HAS_METADATA"],
        "tool_availability_delta_part": detected["TOOL_AVAILABILITY_DELTA"] is not None,
        "retry_feedback_part": detected["HAS_RETRY_FEEDBACK_PART"],
        "outcome_retried": detected["OUTCOME_RETRIED"],
    }

"""The marks of a synthesized tool return, as public names (no pydantic-ai import).

histfix and upstream pydantic-ai (2.10.0+) close a dangling call with the same return: this
content, and this metadata key set to True. Code that tells such placeholders apart from real
results (to hide them in a UI, or to re-run the call) can use these names instead of hard-coding
the strings.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "SYNTHESIZED_CONTENT",
    "SYNTHESIZED_TOOL_RETURN_METADATA_KEY",
    "is_synthesized",
    "is_synthesized_data",
]

#: The content of every synthesized return (upstream's ``INTERRUPTED_TOOL_RETURN_CONTENT``, 2.26.0+).
SYNTHESIZED_CONTENT = "The tool call was interrupted before a result was produced."
#: The ``ToolReturnPart.metadata`` key, set to True, that marks a synthesized return.
SYNTHESIZED_TOOL_RETURN_METADATA_KEY = "pydantic_ai_synthesized_tool_return"


def is_synthesized(part: object) -> bool:
    """Whether ``part`` is a tool return that histfix or pydantic-ai made up for a dangling call.

    True for a ``ToolReturnPart`` whose metadata carries the marker, on every release (the marker
    survives every release's JSON, and ``histfix.load_json`` keeps it). Any other object,
    including a native tool return or a real result, is False; never raises.
    """
    return _marked(getattr(part, "part_kind", None), getattr(part, "metadata", None))


def is_synthesized_data(part: Mapping[str, object]) -> bool:
    """:func:`is_synthesized` for a part's JSON data (``dump_json``'s, on any release)."""
    return _marked(part.get("part_kind"), part.get("metadata"))


def _marked(part_kind: object, metadata: object) -> bool:
    return (
        part_kind == "tool-return"
        and isinstance(metadata, Mapping)
        and metadata.get(SYNTHESIZED_TOOL_RETURN_METADATA_KEY) is True
    )

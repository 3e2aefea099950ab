"""The one rule for ``backend="auto"``: delegate to upstream ``repair_messages`` or run histfix's walk.

A pure function of the version string and one detected fact, so ``histfix info`` can apply it
from the installed source without importing pydantic-ai.
"""

from __future__ import annotations

from .installed import NEWEST_TESTED
from .versions import compare

__all__ = ["UPSTREAM_CURRENT_SINCE", "choose_backend", "upstream_is_current"]

#: ``repair_messages`` exists from 2.53.0 but matches the newest behaviour only from 2.60.0:
#: 2.53-2.54 synthesize duplicate ids non-idempotently (FIFO matching arrived in 2.55.0),
#: 2.53-2.57 do not copy ``tool_kind`` (2.58.0), 2.53-2.58 do not move parts from between
#: tool results (2.59.0), and 2.53-2.59 hoist tool-less retry prompts in merges (2.60.0 loads
#: those as ``RetryFeedbackPart``). A pre-release or dev build of 2.60.0 counts as older.
UPSTREAM_CURRENT_SINCE = "2.60.0"  # a string, unlike the switches' releases: info orders it without packaging


def upstream_is_current(version: str, has_repair_messages: bool) -> bool:
    """Whether the installed ``repair_messages`` behaves as the newest one: the rule ``auto`` follows
    (never for a version that is not PEP 440)."""
    order = compare(version, UPSTREAM_CURRENT_SINCE)
    return has_repair_messages and order is not None and order >= 0


def choose_backend(version_string: str, has_repair_messages: bool, forced: str = "") -> tuple[str, str]:
    """("upstream" | "histfix", why) for ``repair(..., backend="auto")``: the one decision rule."""
    if forced:
        return forced, f"forced by HISTFIX_BACKEND={forced}"
    if upstream_is_current(version_string, has_repair_messages):
        reason = f"pydantic-ai {version_string} has repair_messages with the newest behaviour (>= {UPSTREAM_CURRENT_SINCE})"
        if compare(version_string, NEWEST_TESTED) == 1:
            reason += f"; newer than the newest release histfix was measured on ({NEWEST_TESTED})"
        return "upstream", reason
    if not has_repair_messages:
        return "histfix", f"pydantic-ai {version_string} has no repair_messages (added in 2.53.0)"
    if compare(version_string, UPSTREAM_CURRENT_SINCE) is None:
        return (
            "histfix",
            f"pydantic-ai version {version_string!r} is not PEP 440, so histfix's own walk runs to be safe",
        )
    return "histfix", (
        f"pydantic-ai {version_string} has repair_messages, but it differs from the newest behaviour "
        f"before {UPSTREAM_CURRENT_SINCE}"
    )

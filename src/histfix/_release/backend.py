"""The one rule for ``backend="auto"``: delegate to upstream ``repair_messages`` or run histfix's walk.

A pure function of the version string and one detected fact, so ``histfix info`` can apply it
from the installed source without importing pydantic-ai.
"""

from __future__ import annotations

from .installed import NEWEST_TESTED
from .versions import compare

__all__ = ["UPSTREAM_CURRENT_SINCE", "UPSTREAM_FIXES", "choose_backend", "upstream_is_current"]

#: Each release that brought ``repair_messages`` (2.53.0) closer to the newest behaviour, oldest
#: first, with what the releases before it do instead: the reasons ``auto`` runs histfix's walk there.
UPSTREAM_FIXES: tuple[tuple[str, str], ...] = (
    ("2.55.0", "duplicate ids are matched by a dict, which is not idempotent"),
    ("2.58.0", "synthesized returns do not copy tool_kind"),
    ("2.59.0", "parts between the results of an unmerged request stay put"),
    ("2.60.0", "a merge hoists a tool-less retry prompt (2.60.0 loads it as RetryFeedbackPart)"),
    ("2.78.0", "a merge keeps deferred_pause when any merged request has it, not only when all do"),
)
#: ``repair_messages`` matches the newest behaviour from the last of those; a pre-release or dev
#: build of it counts as older.
UPSTREAM_CURRENT_SINCE = UPSTREAM_FIXES[-1][0]  # a string: info orders it without packaging


def upstream_is_current(version: str, has_repair_messages: bool) -> bool:
    """Whether the installed ``repair_messages`` behaves as the newest one: the rule ``auto`` follows
    (never for a version that is not PEP 440)."""
    order = compare(version, UPSTREAM_CURRENT_SINCE)
    return has_repair_messages and order is not None and order >= 0


def _lacks(version: str) -> str:
    """What ``repair_messages`` of ``version`` (older than the newest behaviour) does differently."""
    return "; ".join(what for fixed_in, what in UPSTREAM_FIXES if compare(version, fixed_in) == -1)


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
        f"before {UPSTREAM_CURRENT_SINCE}: {_lacks(version_string)}"
    )

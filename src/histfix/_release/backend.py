"""The one rule for ``backend="auto"``: delegate to upstream ``repair_messages`` or run histfix's walk.

A pure function of the version string and one detected fact, so ``histfix info`` can apply it
from the installed source without importing pydantic-ai. The releases it names are the release
table's (``table.REPAIR_FIXES``, ``table.UPSTREAM_REPAIR_CURRENT``).
"""

from __future__ import annotations

from .installed import NEWEST_TESTED
from .table import REPAIR_FIXES, REPAIR_MESSAGES, UPSTREAM_REPAIR_CURRENT
from .versions import compare

__all__ = ["choose_backend", "upstream_is_current"]

#: From this release ``repair_messages`` matches the newest behaviour; a pre-release or dev build of
#: it counts as older (a string: info orders it without packaging).
_CURRENT_SINCE = UPSTREAM_REPAIR_CURRENT.release


def upstream_is_current(version: str, has_repair_messages: bool) -> bool:
    """Whether the installed ``repair_messages`` behaves as the newest one: the rule ``auto`` follows
    (never for a version that is not PEP 440)."""
    order = compare(version, _CURRENT_SINCE)
    return has_repair_messages and order is not None and order >= 0


def _lacks(version: str) -> str:
    """What ``repair_messages`` of ``version`` (older than the newest behaviour) does differently."""
    return "; ".join(fix.before for fix in REPAIR_FIXES if compare(version, fix.release) == -1)


def choose_backend(version_string: str, has_repair_messages: bool, forced: str = "") -> tuple[str, str]:
    """("upstream" | "histfix", why) for ``repair(..., backend="auto")``: the one decision rule."""
    if forced:
        return forced, f"forced by HISTFIX_BACKEND={forced}"
    if upstream_is_current(version_string, has_repair_messages):
        reason = f"pydantic-ai {version_string} has repair_messages with the newest behaviour (>= {_CURRENT_SINCE})"
        if compare(version_string, NEWEST_TESTED) == 1:
            reason += f"; newer than the newest release histfix was measured on ({NEWEST_TESTED})"
        return "upstream", reason
    if not has_repair_messages:
        return (
            "histfix",
            f"pydantic-ai {version_string} has no repair_messages (added in {REPAIR_MESSAGES.release})",
        )
    if compare(version_string, _CURRENT_SINCE) is None:
        return (
            "histfix",
            f"pydantic-ai version {version_string!r} is not PEP 440, so histfix's own walk runs to be safe",
        )
    return "histfix", (
        f"pydantic-ai {version_string} has repair_messages, but it differs from the newest behaviour "
        f"before {_CURRENT_SINCE}: {_lacks(version_string)}"
    )

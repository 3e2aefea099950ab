"""The one rule for ``backend="auto"``: delegate to upstream ``repair_messages`` or run histfix's walk.

A pure function of the version string and one detected fact, so ``histfix info`` can apply it
from the installed source without importing pydantic-ai.
"""

from __future__ import annotations

from .installed import NEWEST_TESTED, parse
from .switches import UPSTREAM_CURRENT_SINCE

__all__ = ["choose_backend"]


def choose_backend(version_string: str, has_repair_messages: bool, forced: str = "") -> tuple[str, str]:
    """("upstream" | "histfix", why) for ``repair(..., backend="auto")``: the one decision rule."""
    version = parse(version_string)
    if forced:
        return forced, f"forced by HISTFIX_BACKEND={forced}"
    if has_repair_messages and version is not None and version >= UPSTREAM_CURRENT_SINCE:
        reason = f"pydantic-ai {version_string} has repair_messages with the newest behaviour (>= {UPSTREAM_CURRENT_SINCE})"
        if version > NEWEST_TESTED:
            reason += f"; newer than the newest release histfix was measured on ({NEWEST_TESTED})"
        return "upstream", reason
    if not has_repair_messages:
        return "histfix", f"pydantic-ai {version_string} has no repair_messages (added in 2.53.0)"
    if version is None:
        return (
            "histfix",
            f"pydantic-ai version {version_string!r} is not PEP 440, so histfix's own walk runs to be safe",
        )
    return "histfix", (
        f"pydantic-ai {version_string} has repair_messages, but it differs from the newest behaviour "
        f"before {UPSTREAM_CURRENT_SINCE}"
    )

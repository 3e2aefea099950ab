"""Where upstream ``repair_messages`` can judge histfix's walk on the installed release.

It is the newest behaviour from 2.78.0 (the library's own switch says so). 2.60.0-2.68.x repair
every history as 2.78.0 does but for one rule: their merge keeps the deferred-pause mark when any
merged request carries it, where 2.78.0 keeps it only when every one does. So there, upstream
still judges every history without such a mark.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version
from pydantic_ai import messages as pai

from histfix._release.switches import upstream_repair_is_current

from conftest import HAS_UPSTREAM_REPAIR, PYDANTIC_AI

__all__ = ["UPSTREAM_AGREES_BUT_FOR_PAUSES", "carries_pause_mark", "upstream_is_oracle"]

#: 2.60.0-2.68.x: repair_messages differs from the newest behaviour only on pause marks.
UPSTREAM_AGREES_BUT_FOR_PAUSES = (
    HAS_UPSTREAM_REPAIR and not upstream_repair_is_current() and Version("2.60.0") <= PYDANTIC_AI
)


def carries_pause_mark(history: list[pai.ModelMessage]) -> bool:
    """Whether some request's ``__pydantic_ai__`` namespace has a ``deferred_pause`` key."""
    for message in history:
        metadata: Any = getattr(message, "metadata", None)
        namespace = metadata.get("__pydantic_ai__") if isinstance(metadata, dict) else None
        if isinstance(namespace, dict) and "deferred_pause" in namespace:
            return True
    return False


def upstream_is_oracle(history: list[pai.ModelMessage]) -> bool:
    """Whether upstream's repair of ``history`` on this release is the newest behaviour."""
    if upstream_repair_is_current():
        return True
    return UPSTREAM_AGREES_BUT_FOR_PAUSES and not carries_pause_mark(history)

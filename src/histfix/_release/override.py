"""The one override of ``backend="auto"``: the ``HISTFIX_BACKEND`` environment variable.

Read by ``repair`` and by the command line's fast paths alike, so it imports nothing but ``os``.
"""

from __future__ import annotations

import os

__all__ = ["BACKEND_ENV", "forced_backend"]

#: Environment variable that makes ``backend="auto"`` take one path (for comparing releases).
BACKEND_ENV = "HISTFIX_BACKEND"


def forced_backend() -> str:
    """``"upstream"`` or ``"histfix"`` when the variable forces one, ``""`` when it is unset or blank;
    ValueError for any other value."""
    forced = os.environ.get(BACKEND_ENV, "").strip()
    if forced and forced not in ("upstream", "histfix"):
        raise ValueError(f"{BACKEND_ENV}={forced!r}: use 'upstream' or 'histfix', or leave it unset")
    return forced

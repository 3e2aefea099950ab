"""histfix: repair and trim pydantic-ai message histories on every release from 1.0.0 on.

``repair`` gives the newest upstream ``repair_messages`` behaviour in the installed release's own
types; ``keep_last_turns`` trims without splitting a tool call from its result. Importing histfix
does not import pydantic-ai; the first call does.
"""

from __future__ import annotations

from ._api import Backend, BackendInfo, backend_info, keep_last_turns, repair

__all__ = ["Backend", "BackendInfo", "__version__", "backend_info", "keep_last_turns", "repair"]

__version__ = "0.1.0"

"""The installed pydantic-ai release, found without importing pydantic-ai (which costs ~1 s).

Used by ``_compat`` and by the command line's ``info``, which must answer in well under 0.3 s.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path

from packaging.version import InvalidVersion, Version

__all__ = [
    "NEWEST_TESTED",
    "UPSTREAM_CURRENT_SINCE",
    "choose_backend",
    "installed_release",
    "parse",
    "source_defines",
]

#: The distributions that ship the ``pydantic_ai`` package, most specific first.
_DISTRIBUTIONS = ("pydantic-ai-slim", "pydantic-ai")

#: ``repair_messages`` exists from 2.53.0 but matches the newest behaviour only from 2.60.0:
#: 2.53-2.54 synthesize duplicate ids non-idempotently (FIFO matching arrived in 2.55.0),
#: 2.53-2.57 do not copy ``tool_kind`` (2.58.0), 2.53-2.58 do not move parts from between
#: tool results (2.59.0), and 2.53-2.59 hoist tool-less retry prompts in merges (2.60.0 loads
#: those as ``RetryFeedbackPart``). A pre-release or dev build of 2.60.0 counts as older.
UPSTREAM_CURRENT_SINCE = Version("2.60.0")
#: The newest release histfix has been measured against (the test matrix's newest pin).
NEWEST_TESTED = Version("2.68.0")


def installed_release() -> tuple[str, str]:
    """(distribution name, version string) of the installed pydantic-ai.

    The full ``pydantic-ai`` distribution depends on ``pydantic-ai-slim`` of the same version,
    so the slim one is asked first and the full one only covers unusual installs.
    """
    for name in _DISTRIBUTIONS:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "pydantic_ai (no distribution metadata)", "0"


def parse(version: str) -> Version | None:
    """The version, or None when it is not PEP 440."""
    try:
        return Version(version)
    except InvalidVersion:
        return None


def source_defines(module: str, name: str) -> bool | None:
    """Whether the installed ``pydantic_ai.<module>`` source defines ``name`` (None: can't tell).

    Feature detection by reading the source instead of importing it, for fast paths only;
    the library itself detects features on the imported module.
    """
    spec = importlib.util.find_spec("pydantic_ai")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / f"{module}.py"
        if path.exists():
            return f"\ndef {name}(" in path.read_text(encoding="utf-8")
    return None


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

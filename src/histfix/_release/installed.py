"""The installed pydantic-ai release: which distribution, which version, and its messages module.

Nothing here imports pydantic-ai at import time, so ``histfix info`` answers at once; reading the
installed source (:func:`source_defines`) answers feature questions without the import.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path
from types import ModuleType

from packaging.version import InvalidVersion, Version

__all__ = [
    "DISTRIBUTION",
    "NEWEST_TESTED",
    "VERSION",
    "VERSION_STRING",
    "installed_release",
    "parse",
    "pydantic_ai_messages",
    "source_defines",
]

#: The distributions that ship the ``pydantic_ai`` package, most specific first.
_DISTRIBUTIONS = ("pydantic-ai-slim", "pydantic-ai")
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
    return "pydantic_ai (no distribution metadata)", "unknown"


def parse(version: str) -> Version | None:
    """The version, or None when it is not PEP 440."""
    try:
        return Version(version)
    except InvalidVersion:
        return None


DISTRIBUTION, VERSION_STRING = installed_release()
#: The installed release, or None when its version string is not PEP 440.
VERSION: Version | None = parse(VERSION_STRING)


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


def pydantic_ai_messages() -> ModuleType:
    """``pydantic_ai.messages``, or an ImportError that says what to install."""
    try:
        from pydantic_ai import messages
    except ImportError as exc:
        raise ImportError(
            "histfix needs pydantic-ai, which is not installed: run `pip install pydantic-ai-slim` "
            "(any release from 1.0.0 on) in the same environment."
        ) from exc
    return messages

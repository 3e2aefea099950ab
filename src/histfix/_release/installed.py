"""The installed pydantic-ai release: which distribution, which version, and its messages module.

Nothing here imports pydantic-ai at import time, so ``histfix info`` answers at once; reading the
installed source (:func:`source_defines`) answers feature questions without the import.
"""

from __future__ import annotations

import os
import re
import sys

from .pinned import NEWEST
from .versions import satisfies

# Neither typing nor packaging is imported at run time: `histfix info` imports this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType


__all__ = [
    "NEWEST_TESTED",
    "current",
    "forget",
    "import_failure",
    "installed_release",
    "pydantic_ai_messages",
    "source_defines",
    "unmet_pins",
]

#: The distributions that ship the ``pydantic_ai`` package, most specific first.
_DISTRIBUTIONS = ("pydantic-ai-slim", "pydantic-ai")
#: The newest release histfix has been measured against (the test matrix's newest pin).
NEWEST_TESTED = NEWEST


def installed_release() -> tuple[str, str]:
    """(distribution name, version string) of the installed pydantic-ai.

    The full ``pydantic-ai`` distribution depends on ``pydantic-ai-slim`` of the same version,
    so the slim one is asked first and the full one only covers unusual installs.
    """
    for name in _DISTRIBUTIONS:
        version = dist_info_version(name)
        if version is None:
            from importlib import metadata

            try:
                version = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return name, version
    return "pydantic_ai (no distribution metadata)", "unknown"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def dist_info_version(distribution: str) -> str | None:
    """The ``Version:`` of the one ``.dist-info`` folder for ``distribution`` in the first ``sys.path``
    folder that has metadata for it: what ``importlib.metadata.version`` finds, read without importing
    importlib.metadata (a third of ``histfix info``'s time). None where that is not plain: no such
    folder, several, an ``.egg-info`` beside it, or a zip on the path first (importlib.metadata decides)."""
    wanted = _normalized(distribution)
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:
            if os.path.isfile(entry):  # a zip: importlib.metadata reads inside it
                return None
            continue
        found = [
            child
            for child in children
            if child.lower().endswith((".dist-info", ".egg-info"))
            and _normalized(child.rpartition(".")[0].partition("-")[0]) == wanted
        ]
        if not found:
            continue
        if len(found) > 1 or not found[0].lower().endswith(".dist-info"):
            return None
        try:
            with open(os.path.join(entry or ".", found[0], "METADATA"), encoding="utf-8") as lines:
                for line in lines:
                    if not line.strip():  # the headers end at the first blank line
                        break
                    if line.startswith("Version:"):
                        return line[len("Version:") :].strip()
        except OSError:
            return None
        return None
    return None


#: What :func:`current` read, once pydantic-ai was there to read (``switches.forget()`` empties it).
_current: tuple[str, str] | None = None


def current() -> tuple[str, str]:
    """:func:`installed_release`, read on first need and kept for the process once pydantic-ai is
    imported (which then cannot change under it); before, a release found is kept too, and "none
    found" is not, so a process that installs pydantic-ai later reads it then."""
    global _current  # the one cache of the installed release: forget() resets it
    if _current is None:
        found = installed_release()
        if found[1] == "unknown" and "pydantic_ai" not in sys.modules:
            return found
        _current = found
    return _current


def forget() -> None:
    """Read the installed release again on next need."""
    global _current
    _current = None


def source_defines(module: str, name: str) -> bool | None:
    """Whether the installed ``pydantic_ai.<module>`` source defines ``name`` (None: can't tell).

    Feature detection by reading the source instead of importing it, for fast paths only;
    the library itself detects features on the imported module.
    """
    wanted = f"\ndef {name}(".encode()
    for location in _package_folders():
        path = os.path.join(location, f"{module}.py")
        if os.path.exists(path):
            with open(path, "rb") as source:  # bytes: decoding 400 kB would cost more than the search
                return wanted in source.read()
    return None


def _package_folders() -> list[str]:
    """Where ``import pydantic_ai`` finds its package: the first ``sys.path`` folder that holds it as a
    regular package, as the path finder picks it, or else what ``importlib.util.find_spec`` says (an
    editable install's finder, a namespace package, a zip)."""
    for entry in sys.path:
        folder = os.path.join(entry or ".", "pydantic_ai")
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return [folder]
        if os.path.isfile(entry):  # a zip: the import system may find the package inside it
            break
    import importlib.util

    spec = importlib.util.find_spec("pydantic_ai")
    return list(spec.submodule_search_locations or ()) if spec is not None else []


def pydantic_ai_messages() -> ModuleType:
    """``pydantic_ai.messages``, or an ImportError that says what is wrong and what to do."""
    try:
        from pydantic_ai import messages
    except ImportError as exc:
        raise ImportError(import_failure(exc)) from exc
    return messages


def import_failure(exc: ImportError) -> str:
    """What to tell a person whose ``import pydantic_ai`` raised ``exc``: not installed, or installed
    and broken (the real error, and the pin that fixes it when histfix knows one)."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == "pydantic_ai":
        return (
            "histfix needs pydantic-ai, which is not installed: run `pip install pydantic-ai-slim` "
            "(any release from 1.0.0 on) in the same environment."
        )
    error = f"{type(exc).__name__}: {exc}"
    distribution, version = installed_release()
    unmet = unmet_pins()
    if unmet:
        wanted = " ".join(f"'{pin}'" for pin, _, _ in unmet)
        found = ", ".join(f"{name} {have}" for _, name, have in unmet)
        return (
            f"{distribution} {version} is installed but cannot be imported ({error}): "
            f"it needs {wanted} (found {found}); run `pip install {wanted}` in the same environment"
        )
    return f"{distribution} {version} is installed but cannot be imported ({error}); repair that install"


def unmet_pins() -> list[tuple[str, str, str]]:
    """(requirement, distribution, installed version) of each pin the installed release needs to import
    (``pinned.release_pins``) that the environment does not satisfy. Reads metadata only."""
    from .pinned import release_pins

    try:
        pins = release_pins(installed_release()[1])
    except ValueError:  # not PEP 440: no pin is known for it
        return []
    unmet = []
    for pin in pins:
        name = re.split(r"[<>=!~]", pin, maxsplit=1)[0].strip()  # the pins are "name<version" and alike
        have = _installed_version(name)
        if have is not None and not satisfies(have, pin[len(name) :]):
            unmet.append((pin, name, have))
    return unmet


def _installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed."""
    found = dist_info_version(distribution)
    if found is not None:
        return found
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None  # not installed: whatever needs it says so itself

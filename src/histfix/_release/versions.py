"""Ordering release strings as PEP 440 orders them, without packaging for plain final releases.

``histfix info`` and ``--version`` answer before anything else is imported, and packaging's
``Version`` and specifiers (with the ``typing`` they import) are most of their own time. A plain final release
("2.60.0") orders by its numbers, trailing zeros dropped (PEP 440 pads the shorter release with
zeros); every other version (a pre-, post- or dev release, a local or epoch part, a ``v``
prefix) is left to packaging.
"""

from __future__ import annotations

import re

__all__ = ["compare", "satisfies"]

_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]+)*")


def _plain(version: str) -> tuple[int, ...] | None:
    if _PLAIN.fullmatch(version) is None:
        return None
    numbers = [int(number) for number in version.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def compare(version: str, other: str) -> int | None:
    """-1, 0 or 1 as ``version`` comes before, equals or comes after ``other`` under PEP 440;
    None when either is not a PEP 440 version."""
    mine, theirs = _plain(version), _plain(other)
    if mine is not None and theirs is not None:
        return (mine > theirs) - (mine < theirs)
    from packaging.version import InvalidVersion, Version

    try:
        first, second = Version(version), Version(other)
    except InvalidVersion:
        return None
    return (first > second) - (first < second)


def satisfies(version: str, specifier: str) -> bool:
    """Whether ``version`` meets ``specifier`` (such as ``"<1.39"``), pre-releases allowed, as
    packaging's ``SpecifierSet.contains`` decides; a plain final release under a ``<`` bound is
    ordered here."""
    if specifier.startswith("<") and not specifier.startswith("<="):
        mine, bound = _plain(version), _plain(specifier[1:].strip())
        if mine is not None and bound is not None:
            return mine < bound
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(specifier).contains(version, prereleases=True)

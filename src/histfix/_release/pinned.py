"""The pinned pydantic-ai-slim releases and the pins each needs: the one list noxfile.py and
``histfix compare --pinned`` share (no pydantic-ai import, so the noxfile can load it)."""

from __future__ import annotations

from .versions import compare

__all__ = ["NEWEST", "PINNED_RELEASES", "release_pins", "release_requirements"]

#: A release on each side of every behaviour boundary histfix switches on, and the newest release tested.
PINNED_RELEASES = [
    "1.0.0",  # first 1.x; no _clean_message_history at all
    "1.0.7",  # _clean_message_history (merge only) appears
    "1.67.0",  # ToolReturnPart.outcome appears, without a neutral value
    "1.95.0",  # tool_kind and Native* parts appear
    "1.107.10",  # newest 1.x
    "2.0.0",  # ModelRequest.state; history_processors= rejected
    "2.9.1",  # last release that repairs nothing
    "2.10.0",  # internal repair before each request; outcome='interrupted'
    "2.52.0",  # last release without public repair_messages
    "2.53.0",  # public repair_messages (dict matching, not idempotent on duplicate ids)
    "2.55.0",  # FIFO matching of duplicate ids
    "2.59.0",  # parts between results moved; repair_messages differs from the newest in more than the pause mark
    "2.60.0",  # repair_messages as 2.68.0's: a merge keeps deferred_pause when either request has it
    "2.68.0",  # last release of that merge rule; histfix's own walk runs by default up to here
    "2.78.0",  # merge keeps deferred_pause only when all merged requests have it: histfix delegates; newest measured
]
NEWEST = PINNED_RELEASES[-1]


def release_pins(release: str) -> list[str]:
    """Extra requirements an old release needs to import with today's dependencies."""
    order = compare(release, "1.32.0")
    if order is None:
        raise ValueError(f"{release!r} is not a PEP 440 version")
    pins = []
    if order < 0:
        # 1.0.0-1.31.0 import opentelemetry._events, which opentelemetry-api 1.44.0 removed and
        # 1.39.0-1.43.0 deprecate (warning at import); 1.38.0 is the last quiet release.
        # Measured on all 223 releases 1.0.0-2.68.0, and on 2.78.0: no other release needs any pin.
        pins.append("opentelemetry-api<1.39")
    return pins


def release_requirements(release: str, *extra: str) -> list[str]:
    """One release of pydantic-ai-slim with its pins, plus ``extra`` (histfix itself not included)."""
    return [f"pydantic-ai-slim=={release}", *release_pins(release), *extra]

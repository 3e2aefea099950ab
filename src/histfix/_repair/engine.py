"""The default repair by one engine: upstream ``repair_messages``, or histfix's own walk.

A call's plan (``_profiles.plan``) names the engine once; this module only runs it. For histfix's
engine it takes the fastest route to the walk's output: the general walk where it records the
changes or reuses a pairing already made, the forward walk (one pass, handing over to the general
walk where it stops) otherwise. All routes give the same messages (tests/repair/test_forward.py).

A history the repair would leave as it is costs a check: where a pairing is at hand (or upstream's
repair would otherwise run) and it found nothing to change, the input comes back as a new list of
the same messages, and neither the building walk nor upstream's repair runs (:func:`leaves_as_is`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from .._records.changes import Change
from .._release import table
from .._release.switches import has, upstream_repair_is_current

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .pairing import Pairing

__all__ = [
    "Engine",
    "default_repair",
    "event_free_as_is",
    "leaves_as_is",
    "upstream_missing",
    "upstream_repair",
]

#: Whose repair makes the default messages: upstream's ``repair_messages`` or histfix's walk.
Engine = Literal["upstream", "histfix"]


def default_repair(
    history: Sequence[ModelMessage],
    repair_last_response: bool,
    engine: Engine,
    *,
    changes_wanted: bool,
    pairing: Pairing | None = None,
) -> tuple[list[ModelMessage], list[Change]]:
    """The default repair of a checked history by ``engine``: its messages, and the changes histfix's
    walk records (``[]`` unless ``changes_wanted``; upstream records none, and its messages differ
    from the walk's only as ``repair_report`` says). ``pairing``: one already made of these very
    messages with this ``repair_last_response``, to reuse."""
    from .report import repair_with_changes

    if pairing is None and (changes_wanted or (engine == "upstream" and upstream_repair_is_current())):
        from .pairing import pair

        pairing = pair(history, repair_last_response)
    if pairing is not None and leaves_as_is(pairing, engine):
        return list(history), []
    if changes_wanted:
        report = repair_with_changes(history, repair_last_response, pairing)
        messages = upstream_repair(history, repair_last_response) if engine == "upstream" else report.messages
        return messages, list(report.changes)
    if engine == "upstream":
        return upstream_repair(history, repair_last_response), []
    if pairing is not None:
        from .walk import repair_walk

        return repair_walk(history, repair_last_response=repair_last_response, pairing=pairing), []
    from .forward import repair as forward_repair

    return forward_repair(history, repair_last_response), []


def leaves_as_is(pairing: Pairing, engine: Engine) -> bool:
    """Whether ``engine``'s repair returns the paired history message for message as it is.

    The walk passes every message outside ``pairing.events`` through untouched (the invariant
    ``walk.repair_walk`` states), so without an event its output is its input. Upstream's repair
    is the walk's where it is the newest behaviour (the one input on which they differ, a
    tool-less retry prompt, moves only in a merge, which is an event); on a release whose
    ``repair_messages`` is older, only running it says what it does.
    """
    return not pairing.events and event_free_as_is(engine)


def event_free_as_is(engine: Engine) -> bool:
    """Whether ``engine``'s repair returns a history whose pairing finds no event as it is (see
    :func:`leaves_as_is`): False only for an upstream ``repair_messages`` older than the newest."""
    return engine == "histfix" or upstream_repair_is_current()


def upstream_missing(version: str) -> str:
    """Why the upstream path cannot run on ``version`` (a release without ``repair_messages``)."""
    return f"pydantic-ai {version} has no pydantic_ai.messages.repair_messages (it arrived in {table.REPAIR_MESSAGES.release})"


def upstream_repair(history: Sequence[ModelMessage], repair_last_response: bool) -> list[ModelMessage]:
    """Upstream ``repair_messages`` on a checked history, or a clear error where it does not exist."""
    from .._records.inputs import check_messages
    from .._release.installed import current

    if not has(table.REPAIR_MESSAGES):
        raise RuntimeError(
            f"backend='upstream' cannot run: {upstream_missing(current()[1])}; "
            "use backend='auto' or 'histfix'"
        )
    from pydantic_ai import messages as pai

    check_messages(history, pai.ModelRequest, pai.ModelResponse)
    return pai.repair_messages(history, repair_last_response=repair_last_response)  # type: ignore[attr-defined,no-any-return,unused-ignore]

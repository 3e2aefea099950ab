"""Whether the installed pydantic-ai release has a change of the release table: one question, :func:`has`.

A presence (``"detected"``) is looked up on the imported pydantic-ai, inspected once on first need
(:mod:`.detect`); a behaviour under an unchanged name (``"compared"``) is the installed release's
number compared with the entry's, and where that number is not PEP 440 the answer is the newest
release's. Both the detection and the installed release are read on first need and kept in the
two caches :func:`forget` clears: nothing is read when ``histfix`` is imported, so installing
pydantic-ai after that import is seen by the first call that needs it.
"""

from __future__ import annotations

import functools

from . import installed, table
from .backend import choose_backend, upstream_is_current
from .detect import detected
from .installed import current
from .probes import message_value_kept, return_tool_kind_loads
from .versions import compare

__all__ = [
    "delta_part",
    "features",
    "forget",
    "has",
    "holds",
    "installed_engine",
    "interrupted_state",
    "return_tool_kind_loads",
    "run_adds_surplus_results",
    "upstream_repair_is_current",
]


def holds(note: table.Note, version: str) -> bool:
    """Whether release ``version`` has ``note``'s change, by its number: from :attr:`~.table.Note.release`
    on (up to :attr:`~.table.Note.until`, where it has one). A version that is not PEP 440 answers as
    the newest release does."""
    order = compare(version, note.release)
    if order is None:
        return not note.until
    return order >= 0 and (not note.until or compare(version, note.until) == -1)


def has(note: table.Note) -> bool:
    """Whether the installed release has ``note``'s change: detected, or compared (see the module)."""
    if note.how == "detected":
        return bool(detected()[note.name])
    if note.how == "noted":
        raise ValueError(f"{note.name} is noted, not switched on: the same repair runs on every release")
    return _held(note, current()[1])


#: ``holds`` remembered per entry and release: the profile passes ask it per message, and parsing the
#: two numbers each time was about a tenth of a profile run under cProfile.
_held = functools.cache(holds)


def delta_part() -> type | None:
    """``ToolAvailabilityDeltaPart`` where the installed release has it (``table.TOOL_AVAILABILITY_DELTA``)."""
    found: type | None = detected()[table.TOOL_AVAILABILITY_DELTA.name]
    return found


def run_adds_surplus_results() -> bool:
    """Whether the installed release's run repairs the history by a dict (``table.RUN_REPAIRS_HISTORY``
    up to ``table.REPAIR_MATCHES_FIFO``): each of its repair passes before a request answers only the
    last call of an id called twice in one response and synthesizes a surplus result for the others."""
    return has(table.RUN_REPAIRS_HISTORY) and not has(table.REPAIR_MATCHES_FIFO)


def upstream_repair_is_current() -> bool:
    """Whether the installed ``repair_messages`` behaves as the newest one (``table.UPSTREAM_REPAIR_CURRENT``:
    the backend rule, :func:`.backend.upstream_is_current`)."""
    return upstream_is_current(current()[1], has(table.REPAIR_MESSAGES))


@functools.cache
def installed_engine() -> str:
    """The engine ``backend="auto"`` means on the installed release (``"upstream"`` or ``"histfix"``),
    by the backend rule; ``HISTFIX_BACKEND`` is the caller's to read."""
    chosen, _ = choose_backend(current()[1], has(table.REPAIR_MESSAGES))
    return chosen


def forget() -> None:
    """Read the installed release and detect its features again on next need: for a process that
    installs another release (a test, a tool) and has not imported pydantic-ai yet."""
    installed.forget()
    detected.cache_clear()
    installed_engine.cache_clear()
    _held.cache_clear()


def interrupted_state(message_kind: str) -> bool:
    """``state='interrupted'`` on a ``ModelResponse`` (first in 1.92.0) or ``ModelRequest`` (2.0.0),
    probed per value: the release's own loader says (:mod:`.probes`)."""
    return message_value_kept(message_kind, "state", "interrupted")


def features() -> dict[str, bool]:
    """The detected features by the names :func:`histfix.backend_info` reports them under."""
    return {
        "repair_messages": has(table.REPAIR_MESSAGES),
        "upstream_repair_is_current": upstream_repair_is_current(),
        "tool_return_outcome": has(table.RETURN_OUTCOME),
        "outcome_interrupted": has(table.OUTCOME_INTERRUPTED),
        "tool_return_tool_kind": has(table.RETURN_TOOL_KIND),
        "tool_return_ui_visibility": has(table.RETURN_UI_VISIBILITY),
        "request_timestamp": has(table.REQUEST_TIMESTAMP),
        "request_metadata": has(table.REQUEST_METADATA),
        "tool_availability_delta_part": has(table.TOOL_AVAILABILITY_DELTA),
        "retry_feedback_part": has(table.RETRY_FEEDBACK_PART),
        "outcome_retried": has(table.OUTCOME_RETRIED),
    }

"""The plan of one repair call: everything about it decided before a message is read.

``repair`` and ``repair_report`` check their arguments, make a :class:`Plan` with :func:`plan_call`
and hand it to :func:`.run.repair_by_plan`; nothing after that decides again. In particular the
engine (whose repair makes the default messages) is chosen here, once, and a profile runs over the
repair of that engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .._repair.engine import Engine
    from .targets import ProviderTarget

__all__ = ["Plan", "auto_engine", "plan_call"]


@dataclass(frozen=True)
class Plan:
    """One call of ``repair`` or ``repair_report``, its arguments checked and resolved."""

    #: close the last response's open calls too (``repair_last_response``)
    repair_last_response: bool
    #: whose repair makes the default messages: upstream's ``repair_messages`` or histfix's walk
    engine: Engine
    #: what becomes of a result whose call is not in the history: dropped, or kept as a user note
    orphans: Literal["drop", "note"]
    #: whether the call reports its changes (``repair_report``, or ``repair`` logging at DEBUG);
    #: without, the fastest route that gives the same messages runs, and no change is kept
    changes_wanted: bool
    #: the provider profile that runs around the default repair, or None: the default repair alone
    target: ProviderTarget | None = None


def plan_call(
    *,
    backend: Literal["auto", "upstream", "histfix"],
    repair_last_response: bool,
    orphans: Literal["drop", "note"],
    changes_wanted: bool,
    target: ProviderTarget | None,
) -> Plan:
    """The plan of a call with these (checked) arguments; ``backend="auto"`` is resolved here."""
    engine: Engine = auto_engine() if backend == "auto" else backend
    return Plan(repair_last_response, engine, orphans, changes_wanted, target)


def auto_engine() -> Engine:
    """The engine ``backend="auto"`` means now: ``HISTFIX_BACKEND`` when set, else the release's."""
    from .._release.override import forced_backend
    from .._release.switches import installed_engine

    forced = forced_backend()
    return forced or installed_engine()  # type: ignore[return-value]  # "upstream" or "histfix"

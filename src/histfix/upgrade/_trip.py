"""The JSON round trip: a history loaded on A (the installed release), dumped on B, loaded on A again.

:func:`round_trip` runs it for real, on A, for the histories whose trip B's probe could not
prove (:class:`~._fields.TripProof`); :func:`trip_result` words what either found, sorted into
losses that change behaviour and bookkeeping (:mod:`._meaning`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._errors import loader_error
from ._meaning import differences, sort

__all__ = ["LOSSLESS", "round_trip", "trip_result"]

Json = dict[str, Any]


def trip_result(lost: Iterable[tuple[str, Any, Any]], error: str | None = None) -> Json:
    """A round trip as a record shows it: the error loading B's dump on A, or what it lost."""
    return {"error": error, **sort(lost, "lost")}


#: What a trip that loses nothing says.
LOSSLESS: Json = trip_result([])


def round_trip(history: bytes, dumped: bytes) -> Json:
    """What the installed release loses of ``history`` (which it loads) when it loads ``dumped``,
    another release's dump of it, instead."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    mine = ModelMessagesTypeAdapter.dump_python(ModelMessagesTypeAdapter.validate_json(history), mode="json")
    try:
        back = ModelMessagesTypeAdapter.validate_json(dumped)
    except Exception as exc:
        return trip_result([], loader_error(exc))
    return trip_result(differences(mine, ModelMessagesTypeAdapter.dump_python(back, mode="json")))

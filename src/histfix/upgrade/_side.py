"""One release's side of the upgrade check: the requests a probe answers, as plain functions.

A probe process (:mod:`._probe`) runs one :class:`ReleaseSide` in a release's environment; a Dask
worker runs the installed release's in its own process. Requests and answers are a JSON header
and byte blobs (:mod:`._frames`):

- ``setup``: the run's ``provider``, and the checking release's field table (``fields``) when this
  side is to prove round trips;
- ``observe``: blobs ``[history, other release's repair output or None, the parts its loader
  translated (JSON) or None] * n``, header ``want_repaired``; answers ``found`` (one observation
  per history, its fields in :data:`~._observe.FIELDS` order), ``trip`` (1: lossless, 0: a dump
  follows, None: not loaded) and blobs ``[repaired or None, dump or None, the parts this
  loader translated (JSON) or None] * n``;
- ``trip``: blobs ``[history, another release's dump] * n``; answers ``trips``, one round trip each.
"""

from __future__ import annotations

import json
from concurrent.futures import Future
from typing import Any

from ._fields import TripProof, field_table
from ._observe import FIELDS, Observation, Observer
from ._trip import round_trip

__all__ = ["InProcess", "ReleaseSide", "compact", "expand"]

Header = dict[str, Any]
Blobs = list[bytes | None]


def compact(found: Observation) -> list[Any]:
    """An observation as a list of its values (the field names travel once, in FIELDS)."""
    values = [found[name] for name in FIELDS]
    if "loads_other_repair" in found:
        values.append(found["loads_other_repair"])
    return values


def expand(values: list[Any]) -> Observation:
    """:func:`compact` undone: the observation, its fields in order."""
    found = dict(zip(FIELDS, values, strict=False))
    if len(values) > len(FIELDS):
        found["loads_other_repair"] = values[len(FIELDS)]
    return found


class ReleaseSide:
    """The installed release, answering the check's requests."""

    def __init__(self) -> None:
        self.fields = field_table()
        self._observer = Observer()
        self._proof: TripProof | None = None

    def hello(self) -> Header:
        """Which release answers, and what its message types hold (for the other side's proofs)."""
        import histfix

        info = histfix.backend_info()
        return {"release": info.version, "backend": info.backend, "fields": self.fields}

    def answer(self, header: Header, blobs: Blobs) -> tuple[Header, Blobs]:
        op = header.get("op")
        if op == "setup":
            self._observer = Observer(header.get("provider"))
            checking = header.get("fields")
            self._proof = None if checking is None else TripProof(checking, self.fields)
            return {}, []
        if op == "observe":
            return self._observe(blobs, bool(header.get("want_repaired")))
        if op == "trip":
            trips = [round_trip(_bytes(blobs[i]), _bytes(blobs[i + 1])) for i in range(0, len(blobs), 2)]
            return {"trips": trips}, []
        raise ValueError(f"no such request: {op!r}")

    def _observe(self, blobs: Blobs, want_repaired: bool) -> tuple[Header, Blobs]:
        found, trips, out = [], [], []
        for index in range(0, len(blobs), 3):
            translated = blobs[index + 2]
            observed = self._observer.observe(
                _bytes(blobs[index]),
                other_repaired=blobs[index + 1],
                want_repaired=want_repaired,
                proof=self._proof,
                translated=None if translated is None else json.loads(translated),
            )
            found.append(compact(observed.found))
            trip = observed.trip
            trips.append(None if trip is None else int(trip is True))
            made = observed.translated
            out += [
                observed.repaired,
                trip if isinstance(trip, bytes) else None,
                json.dumps(made).encode() if made else None,
            ]
        return {"found": found, "trip": trips}, out


def _bytes(blob: bytes | None) -> bytes:
    if blob is None:
        raise ValueError("a request without the history it is about")
    return blob


class InProcess:
    """A :class:`ReleaseSide` of this process behind a probe's interface (``send``, ``answer``),
    for where the installed release runs beside the check itself (a Dask worker)."""

    def __init__(self, side: ReleaseSide) -> None:
        self.side = side

    def send(self, header: Header, blobs: Blobs) -> Future[tuple[Header, Blobs]]:
        done: Future[tuple[Header, Blobs]] = Future()
        done.set_result(self.side.answer(header, blobs))
        return done

    def answer(self, sent: Future[tuple[Header, Blobs]], what: str) -> tuple[Header, Blobs]:
        return sent.result()

    def request(self, header: Header, blobs: Blobs, what: str) -> tuple[Header, Blobs]:
        return self.answer(self.send(header, blobs), what)

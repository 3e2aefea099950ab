"""One release's side of the upgrade check: the requests a probe answers, as plain functions.

A probe process (:mod:`._probe`) runs one :class:`ReleaseSide` in a release's environment; a Dask
worker runs the installed release's in its own process. Requests and answers are a JSON header
and byte blobs (:mod:`._frames`):

- ``setup``: the run's ``provider``; for a release checked against, the checking release's field
  table (``fields``: this side then proves round trips) and whether it has ``repair_messages``
  (``upstream``: this side then compares its own);
- ``observe``, by the checking release (header ``want_repaired``, and ``translations`` when a
  release checked against translates parts, see its hello): blobs ``[history] * n``; answers
  ``found`` (one observation per history: its FIELDS values, then a dict of the rest) and blobs
  ``[repair output, repair_messages output, translated parts (JSON)] * n`` (None for what there
  is none of, :class:`~._observe.FromA`);
- ``observe``, by a release checked against: blobs ``[history, the three blobs above] * n``;
  answers ``found``, ``trip`` (per history: None not loaded, 1 lossless, a round trip's result,
  or 0: the blob is this release's dump, for the real trip) and blobs ``[dump or None] * n``;
- ``trip``: blobs ``[history, another release's dump] * n``; answers ``trips``, one round trip each.
"""

from __future__ import annotations

import json
from concurrent.futures import Future
from typing import Any

from ._fields import TripProof, field_table, translates
from ._observe import FIELDS, FromA, Observation, Observer
from ._trip import LOSSLESS, round_trip

__all__ = ["InProcess", "ReleaseSide", "compact", "expand"]

Header = dict[str, Any]
Blobs = list[bytes | None]


def compact(found: Observation) -> list[Any]:
    """An observation as a list: its FIELDS values (their names travel once), then the rest."""
    return [*(found[name] for name in FIELDS), {k: v for k, v in found.items() if k not in FIELDS}]


def expand(values: list[Any]) -> Observation:
    """:func:`compact` undone: the observation, its fields in order."""
    found: Observation = dict(zip(FIELDS, values, strict=False))
    rest: Observation = values[len(FIELDS)]
    return found | rest


class ReleaseSide:
    """The installed release, answering the check's requests."""

    def __init__(self) -> None:
        self.fields = field_table()
        self._observer = Observer()
        self._proof: TripProof | None = None

    def hello(self) -> Header:
        """Which release answers, what its message types hold and whether its loader translates
        parts (for the other side's proofs), and whether it has ``repair_messages``."""
        import histfix

        from ._observe import _upstream_repair

        info = histfix.backend_info()
        return {
            "release": info.version,
            "backend": info.backend,
            "fields": self.fields,
            "translates": translates(),
            "upstream": _upstream_repair() is not None,
        }

    def answer(self, header: Header, blobs: Blobs) -> tuple[Header, Blobs]:
        op = header.get("op")
        if op == "setup":
            self._observer = Observer(header.get("provider"), upstream_on_a=bool(header.get("upstream")))
            checking = header.get("fields")
            self._proof = None if checking is None else TripProof(checking, self.fields)
            return {}, []
        if op == "observe" and header.get("want_repaired"):
            return self._observe_checking(blobs, translations=bool(header.get("translations")))
        if op == "observe":
            return self._observe_against(blobs)
        if op == "trip":
            trips = [round_trip(_bytes(blobs[i]), _bytes(blobs[i + 1])) for i in range(0, len(blobs), 2)]
            return {"trips": trips}, []
        raise ValueError(f"no such request: {op!r}")

    def _observe_checking(self, blobs: Blobs, *, translations: bool) -> tuple[Header, Blobs]:
        found: list[Any] = []
        out: Blobs = []
        for history in blobs:
            observed = self._observer.observe(_bytes(history), want_repaired=True, translations=translations)
            found.append(compact(observed.found))
            made = observed.translated
            out += [observed.repaired, observed.upstream, json.dumps(made).encode() if made else None]
        return {"found": found}, out

    def _observe_against(self, blobs: Blobs) -> tuple[Header, Blobs]:
        found: list[Any] = []
        trips: list[Any] = []
        out: Blobs = []
        for index in range(0, len(blobs), 4):
            translated = blobs[index + 3]
            against = FromA(
                blobs[index + 1], blobs[index + 2], None if translated is None else json.loads(translated)
            )
            observed = self._observer.observe(_bytes(blobs[index]), against=against, proof=self._proof)
            found.append(compact(observed.found))
            trip = observed.trip
            if isinstance(trip, bytes):
                trips.append(0)
                out.append(trip)
            else:
                trips.append(1 if trip == LOSSLESS else trip)
                out.append(None)
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

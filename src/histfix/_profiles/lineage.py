"""Where each message of a list a profile run hands on came from in the caller's list.

Each stage of a run (a pass, the default repair) reports its changes by the indices of the list it
received; a ``Change`` promises indices into the caller's list. A stage drops, merges, splits and
inserts messages but never reorders them, and it hands on every message it leaves alone as the
same object, and every part it keeps (in a merged, shortened or split message) as the same object.
So each message of a stage's output is traced back to its input by identity: the same message, else
the earliest message holding one of its parts (the first member of a merge), else (a message made
only of new parts) the message of its kind in its place between two traced ones. A message with
none of those the stage made up (the request of a response's synthesized returns, a prompt put
before a history, a request holding results moved forward to their call): it has no input
message, and is named by the one it was made for, the message before it (after it, at the start). The trace is made only for lists whose changes are asked for,
once each.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_
from typing import TYPE_CHECKING

from .._records.changes import renumbered

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._records.changes import Change

__all__ = ["Lineage", "traced"]


class Lineage:
    """The lists one run handed from stage to stage, the caller's first, to renumber changes."""

    __slots__ = ("_lists", "_traces")

    def __init__(self, first: Sequence[ModelMessage]) -> None:
        self._lists: list[Sequence[ModelMessage]] = [first]
        #: step -> the trace of that list into the one before it (:func:`traced`)
        self._traces: dict[int, tuple[list[int], set[int]]] = {}

    @property
    def step(self) -> int:
        """The step of the list handed on last (0: the caller's)."""
        return len(self._lists) - 1

    def hand_on(self, later: Sequence[ModelMessage]) -> None:
        """Note the list the next stage receives (nothing, when it is the one handed on last)."""
        if later is not self._lists[-1]:
            self._lists.append(later)

    def in_input(self, step: int, changes: Sequence[Change]) -> list[Change]:
        """``changes`` found in the list of ``step``, with every index renumbered into the caller's."""
        if step == 0 or not changes:
            return list(changes)
        return [
            renumbered(
                change,
                lambda index: self._to_input(step, index)[0],
                lambda index: self._to_input(step, index)[1],
            )
            for change in changes
        ]

    def _to_input(self, step: int, index: int) -> tuple[int, bool]:
        """The caller's index for message ``index`` of the list of ``step``, and whether some stage
        made that message up (then the index is of the message it was made for)."""
        made_up = False
        while step > 0:
            trace = self._traces.get(step)
            if trace is None:
                trace = self._traces[step] = traced(self._lists[step], self._lists[step - 1])
            origins, invented = trace
            if index >= len(origins):  # one past the end (where a stage appends) stays past the end
                index = len(self._lists[step - 1])
            else:
                made_up = made_up or index in invented
                index = origins[index]
            step -= 1
        return index, made_up


def traced(newer: Sequence[ModelMessage], older: Sequence[ModelMessage]) -> tuple[list[int], set[int]]:
    """For each message of ``newer`` (a stage's output), the index in ``older`` (its input) of the
    message it comes from, and the indices of the messages the stage made up (see the module);
    every index is in range when ``older`` is not empty."""
    if not older:
        return [0] * len(newer), set(range(len(newer)))
    place_of = {id(message): at for at, message in enumerate(older)}
    found: list[int | None]
    if len(place_of) == len(older):  # each message once, as ever but in a list built by hand
        found = list(map(place_of.get, map(id, newer)))
    else:
        found = _by_identity(newer, older)
    invented: set[int] = set()
    if None in found and _in_place(newer, older, found):  # each changed message replaced in its place
        return list(range(len(newer))), invented
    if None in found:
        _by_parts(newer, older, found)
    if None in found:
        _by_place(newer, older, found, invented)
    return found, invented  # type: ignore[return-value]  # no None is left


def _by_identity(newer: Sequence[ModelMessage], older: Sequence[ModelMessage]) -> list[int | None]:
    """Each message of ``newer`` that ``older`` holds, by its place there, for an ``older`` holding
    some message object twice: each is taken at its next place, the order being kept."""
    positions: dict[int, list[int]] = {}
    for at, message in enumerate(older):
        positions.setdefault(id(message), []).append(at)
    found: list[int | None] = []
    floor = 0
    for message in newer:
        places = positions.get(id(message))
        if places is None:
            found.append(None)
            continue
        place = places[min(bisect_left(places, floor), len(places) - 1)]
        found.append(place)
        floor = place
    return found


def _in_place(newer: Sequence[ModelMessage], older: Sequence[ModelMessage], found: list[int | None]) -> bool:
    """Whether ``newer`` is ``older`` with some messages replaced in their places, by messages of
    their kind (what the passes before the default repair do: they rename ids)."""
    if len(newer) != len(older) or any(at is not None and at != index for index, at in enumerate(found)):
        return False
    return all(newer[index].kind == older[index].kind for index in _untraced(found))


def _untraced(found: list[int | None]) -> list[int]:
    """The indices still untraced (C-level: a history of thousands has a handful)."""
    return list(compress(range(len(found)), map(is_, found, repeat(None))))


def _by_parts(newer: Sequence[ModelMessage], older: Sequence[ModelMessage], found: list[int | None]) -> None:
    """Trace each untraced message to the earliest message of ``older`` holding one of its parts,
    unless that message comes after the next one traced in ``newer``: then the stage moved those
    parts forward (a late result put right after its call), into a message it made up."""
    holder: dict[int, int] = {}
    for at in sorted(set(range(len(older))).difference(found)):  # a message handed on whole lent none
        for part in older[at].parts:
            holder.setdefault(id(part), at)
    by_parts = []
    for index in _untraced(found):
        held = [holder[id(part)] for part in newer[index].parts if id(part) in holder]
        if held:
            found[index] = min(held)
            by_parts.append(index)
    for index in by_parts:
        after = index + 1
        while after < len(found) and found[after] is None:
            after += 1
        origin, later = found[index], found[after] if after < len(found) else len(older)
        if origin is not None and later is not None and origin > later:
            found[index] = None  # placed by :func:`_by_place`, as made up


def _by_place(
    newer: Sequence[ModelMessage], older: Sequence[ModelMessage], found: list[int | None], invented: set[int]
) -> None:
    """Trace each message made only of new parts by its place: the untraced messages of ``older``
    between the traced ones around it, taken in order, each by the next of the same kind (request
    or response; a message made of several takes the first). One with none left was made up: it is
    the message before its run (after it, at the start), which it was made for."""
    untraced = _untraced(found)
    while untraced:
        index = end = untraced[0]
        while untraced and untraced[0] == end:  # one run of untraced places
            untraced.pop(0)
            end += 1
        before = found[index - 1] if index else -1
        after = found[end] if end < len(found) else len(older)
        assert before is not None and after is not None  # the neighbours of a run are traced
        made_for = before if before >= 0 else min(after, len(older) - 1)
        candidate = before + 1
        for at in range(index, end):
            kind = newer[at].kind
            while candidate < after and older[candidate].kind != kind:
                candidate += 1
            if candidate < after:
                found[at] = candidate
                candidate += 1
            else:
                found[at] = made_for
                invented.add(at)

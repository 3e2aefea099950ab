"""Tool call ids the wire cannot pair or a provider rejects, renamed (the profiles' before-stage).

Every rename here keeps the pairing the default repair computes (a result answers the oldest
open call with its id; a call reusing an id still open from an earlier response leaves those
older calls dangling; a result no open call wants is a duplicate, or an orphan if its id was never
called) and only changes which id the call and its results carry, so that the wire pairs exactly
what the repair paired. Nothing is added, dropped or moved. Fresh ids are 9 base62 characters
(valid for Anthropic's pattern, Mistral's format and OpenAI's 40-character limit), derived from
the history alone (deterministic), never equal to an id the history already holds (unique).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

from .._records.parts import is_result
from .._repair.folding import with_call_id, with_parts
from .scan import Scan

__all__ = [
    "ANTHROPIC_FORMAT",
    "ANTHROPIC_ID",
    "MISTRAL_FORMAT",
    "MISTRAL_ID",
    "IdFormat",
    "IdMap",
    "Mapped",
    "Renamed",
    "Renames",
    "apply_renames",
    "calls_and_ids",
    "empty_id_renames",
    "hashed_id",
    "id_map",
    "mistral_ids",
    "reused_id_renames",
    "with_ids_mapped",
]


def _patterns(body: str) -> tuple[re.Pattern[str], Callable[[Sequence[str]], bool]]:
    """The pattern of one id in a format (``body``: a regular expression without anchors that
    matches no line break), and a test of a list of ids made from the same body: whether every one is
    in the format, by one match of them joined by line breaks (one C-level pass; a Python call per id
    costs twice as much), an id holding a line break itself tested alone, as the one pattern does."""
    one = re.compile(f"^{body}$")
    lines = re.compile(f"(?:{body})(?:\n(?:{body}))*")

    def all_fit(ids: Sequence[str]) -> bool:
        if not ids:
            return True
        joined = "\n".join(ids)
        if joined.count("\n") != len(ids) - 1:  # some id holds a line break
            return all(map(one.match, ids))
        return lines.fullmatch(joined) is not None

    return one, all_fit


#: Anthropic's ``tool_use.id`` pattern (earendil-works/pi#9048), and the test of many ids at once.
ANTHROPIC_ID, _ANTHROPIC_ALL = _patterns("[a-zA-Z0-9_-]+")
#: Mistral's tool call id: exactly nine ASCII letters or digits (error code 3280), and the test of many.
MISTRAL_ID, _MISTRAL_ALL = _patterns("[a-zA-Z0-9]{9}")
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LENGTH = 9

#: (message index, part index) -> the id that part carries from now on.
Renames = dict[tuple[int, int], str]
#: (old id, new id) -> [index of the renamed call's response, its tool name, how many results follow
#: it], in the order of the calls: what a rename pass reports, noted while the renames are made.
Renamed = dict[tuple[str, str], list[Any]]


#: Every pair of base62 digits, least significant first (``_PAIRS[a + 62 * b]`` is digit a, then b).
_PAIRS = tuple(low + high for high in _BASE62 for low in _BASE62)
_PAIR = 62 * 62


def hashed_id(seed: str, taken: set[str], also: Collection[str] = ()) -> str:
    """A 9-character base62 id from a 64-bit BLAKE2b hash of ``seed``, in neither ``taken`` nor
    ``also`` (then added to ``taken``); a collision rehashes with a counter."""
    attempt = 0
    while True:
        found = _digits(f"{seed}#{attempt}" if attempt else seed)
        if found not in taken and found not in also:
            taken.add(found)
            return found
        attempt += 1


# The same ids come back at every request of an agent run (its history repaired again each time),
# and a hash costs about ten times a lookup; 8192 ids (a 30,000-message history's calls) take about 2 MB.
@functools.lru_cache(maxsize=8192)
def _digits(text: str) -> str:
    """The nine least significant base62 digits of ``text``'s 64-bit BLAKE2b hash, least
    significant first (taken two at a time)."""
    number = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    number, a = divmod(number, _PAIR)
    number, b = divmod(number, _PAIR)
    number, c = divmod(number, _PAIR)
    number, d = divmod(number, _PAIR)
    return _PAIRS[a] + _PAIRS[b] + _PAIRS[c] + _PAIRS[d] + _BASE62[number % 62]


def _id_parts(history: Sequence[ModelMessage]) -> Iterator[tuple[int, int, Any]]:
    """(message, part, part) for every part that has a ``tool_call_id`` (native parts too)."""
    for i, message in enumerate(history):
        for j, part in enumerate(message.parts):
            if isinstance(getattr(part, "tool_call_id", None), str):
                yield i, j, part


def all_ids(history: Sequence[ModelMessage], scan: Scan) -> set[str]:
    """Every tool call id the history holds anywhere: a fresh id must be none of them (the parts
    of the classes that have one, from the survey: C-level pipelines, no loop per part)."""
    facts = scan.survey(history)
    if not all(map(_field_names, facts.part_classes)):  # a part that is not a dataclass: every part read
        return {part.tool_call_id for _, _, part in _id_parts(history)}
    named = frozenset(kind for kind in facts.part_classes if "tool_call_id" in _field_names(kind))
    values = set(map(attrgetter("tool_call_id"), compress(facts.flat, facts.selected(named))))
    return {value for value in values if isinstance(value, str)}


def _field_names(kind: type) -> frozenset[str]:
    """A part class's dataclass fields (none for any other class)."""
    fields = getattr(kind, "__dataclass_fields__", None)
    return frozenset(fields) if isinstance(fields, dict) else frozenset()


def _pairing_renames(
    history: Sequence[ModelMessage],
    scan: Scan,
    fresh_call: Callable[[str, bool], bool],
    seed: str,
    renamed: Renamed | None = None,
) -> Renames:
    """Renames that give every call ``fresh_call(id, reused)`` picks a fresh id, with its results.

    Walks the history as the default repair pairs it (see the module docstring); each result
    takes the id of the call it answers, and a duplicate that of the call answered last with its
    id (so it stays a duplicate); an orphan keeps its id (it stays an orphan). ``renamed``, when
    given, gets what each renamed call is (see :data:`Renamed`).
    """
    if renamed is None:
        renamed = {}
    taken: set[str] | None = None
    renames: Renames = {}
    open_calls: dict[str, list[str]] = {}  # id as stored -> wire ids of its open calls, oldest first
    owner: dict[str, int] = {}  # id as stored -> the response those open calls are in
    answered_last: dict[str, str] = {}
    times_called: dict[str, int] = {}
    for i, message in enumerate(history):
        if isinstance(message, ModelResponse):
            for j, part in enumerate(message.parts):
                if not isinstance(part, ToolCallPart):
                    continue
                call_id = part.tool_call_id
                if open_calls.get(call_id) and owner[call_id] != i:
                    open_calls[call_id] = []  # shadowed: those calls dangle, as the repair leaves them
                count = times_called.get(call_id, 0)
                wire = call_id
                if fresh_call(call_id, count > 0):
                    if taken is None:
                        taken = all_ids(history, scan)
                    wire = hashed_id(f"{seed}\x00{call_id}\x00{count}", taken)
                    renames[(i, j)] = wire
                    renamed[(call_id, wire)] = [i, part.tool_name, 0]
                times_called[call_id] = count + 1
                open_calls.setdefault(call_id, []).append(wire)
                owner[call_id] = i
        elif isinstance(message, ModelRequest):
            for j, piece in enumerate(message.parts):
                if not is_result(piece):
                    continue
                call_id = piece.tool_call_id
                waiting = open_calls.get(call_id)
                if waiting:
                    wire = waiting.pop(0)
                    answered_last[call_id] = wire
                elif call_id in times_called:
                    wire = answered_last.get(call_id, call_id)
                else:
                    continue
                if wire != call_id:
                    renames[(i, j)] = wire
                    renamed[(call_id, wire)][2] += 1
    return renames


def reused_id_renames(history: Sequence[ModelMessage], scan: Scan, renamed: Renamed | None = None) -> Renames:
    """A fresh id for every call whose id an earlier call (same or earlier response) already had."""
    if not scan.call_id_facts(history).reused:
        return {}
    return _pairing_renames(history, scan, lambda call_id, reused: reused, "reused", renamed)


def empty_id_renames(history: Sequence[ModelMessage], scan: Scan, renamed: Renamed | None = None) -> Renames:
    """A fresh id for every call with an empty id, shared with the results the repair pairs it with."""
    if not scan.call_id_facts(history).empty:
        return {}
    return _pairing_renames(history, scan, lambda call_id, reused: not call_id, "empty", renamed)


#: old id -> new id, for every call id a format pass changes (a bijection onto fresh ids: every
#: call and result with an old id takes the new one).
IdMap = dict[str, str]


class IdFormat(NamedTuple):
    """A tool call id format a pass fits ids to: which ids are in it, and what another becomes.
    Every new id is a function of the id and the two sets ``fitted`` reads alone, so ids can be
    fitted one at a time, as a walk meets them."""

    #: whether an id is in the format (a compiled pattern's ``match``: no Python frame per id)
    fits: Callable[[str], object]
    #: (an id not in it, the new ids given so far, the ids no new one may be) -> its new id, in the
    #: format, added to the given ones
    fitted: Callable[[str, set[str], Collection[str]], str]
    #: whether every id of a list is in the format (as ``fits`` of each, in one pass)
    all_fit: Callable[[Sequence[str]], bool]


def id_map(calls: Iterable[str], every: Collection[str], form: IdFormat) -> IdMap:
    """One id-to-id mapping for the calls' ids (``calls`` in history order, ``every``: every id of
    a call, result or retry prompt): each id outside ``form``, to its new id, which is neither in
    ``every`` nor given to an earlier id. An id that fits keeps itself (a fresh id is never one of
    ``every``, so it is never taken), and is left out of the mapping."""
    mapping: IdMap = {}
    taken: set[str] = set()
    fits, fitted, _ = form
    for call_id in calls:
        if call_id not in mapping and not fits(call_id):
            mapping[call_id] = fitted(call_id, taken, every)
    return mapping


def calls_and_ids(history: Sequence[ModelMessage]) -> tuple[list[str], set[str]]:
    """The ids of the regular calls (a ``ToolCallPart`` in a response) in history order, and every
    id a mapping may not take: those and the ids of every result and retry prompt in a request."""
    calls: list[str] = []
    every: set[str] = set()
    for message in history:
        if isinstance(message, ModelResponse):
            calls += [part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart)]
        else:
            every.update(
                [
                    part.tool_call_id
                    for part in message.parts
                    if isinstance(part, (ToolReturnPart, RetryPromptPart))
                ]
            )
    every.update(calls)
    return calls, every


def _anthropic_fitted(call_id: str, taken: set[str], every: Collection[str]) -> str:
    """An id outside Anthropic's pattern with its bad characters made ``_``, with a hash suffix where
    that would equal another id of the history."""
    readable = re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)
    if readable and readable not in taken and readable not in every:
        taken.add(readable)
        return readable
    suffix = hashed_id(call_id, taken, every)
    taken.add(f"{readable}_{suffix}")
    return f"{readable}_{suffix}" if readable else suffix


#: Mistral's format: an id that is not 9 ASCII letters or digits gets a hashed one that is.
MISTRAL_FORMAT = IdFormat(MISTRAL_ID.match, hashed_id, _MISTRAL_ALL)
#: Anthropic's pattern ``^[a-zA-Z0-9_-]+$`` (see :func:`_anthropic_fitted`).
ANTHROPIC_FORMAT = IdFormat(ANTHROPIC_ID.match, _anthropic_fitted, _ANTHROPIC_ALL)


def mistral_ids(history: Sequence[ModelMessage]) -> IdMap:
    """The mapping of ``history``'s calls into :data:`MISTRAL_FORMAT`."""
    return id_map(*calls_and_ids(history), MISTRAL_FORMAT)


class Mapped(NamedTuple):
    """A history with an :data:`IdMap` applied, and the first part it renamed."""

    messages: list[ModelMessage]
    #: (message index, old id, new id) of the first part renamed, in history order (None: none was)
    first: tuple[int, str, str] | None


def with_ids_mapped(history: Sequence[ModelMessage], mapping: IdMap, scan: Scan) -> Mapped:
    """``history`` with every call (in a response) and every result and retry prompt (in a request)
    whose id ``mapping`` changes given the new id (untouched messages are the same objects).

    The parts that hold a mapped id are found from ``history``'s survey (C-level pipelines), and only
    their messages are read one by one; the output's survey is that one with the renamed parts in
    their places, kept in ``scan`` for the passes that read the output next."""
    survey = scan.survey(history)
    named = survey.classes(*_NAMED_KINDS)
    chosen = survey.selected(named)
    ids = list(map(_ids_of, compress(survey.flat, chosen)))
    hits = list(map(mapping.__contains__, ids))
    out = list(history)
    if not any(hits):
        return Mapped(out, None)
    starts = survey.starts()
    owners = compress(survey.owners(), chosen)
    first: tuple[int, str, str] | None = None
    replaced: dict[int, Any] = {}
    for i in dict.fromkeys(compress(owners, hits)):
        message: Any = history[i]
        kinds = _CALL_KINDS if isinstance(message, ModelResponse) else _RESULT_KINDS
        parts: list[Any] = list(message.parts)
        renamed = False
        for j, part in enumerate(parts):
            if isinstance(part, kinds):
                old = part.tool_call_id
                new = mapping.get(old)
                if new is not None:
                    parts[j] = replaced[starts[i] + j] = with_call_id(part, new)
                    renamed = True
                    if first is None:
                        first = (i, old, new)
        if renamed:
            out[i] = with_parts(message, parts)
    scan.remember_survey(out, survey.with_parts_replaced(out, replaced))
    return Mapped(out, first)


_parts_of = attrgetter("parts")
_ids_of = attrgetter("tool_call_id")
_NAMED_KINDS = (ToolCallPart, ToolReturnPart, RetryPromptPart)
_CALL_KINDS = (ToolCallPart,)
_RESULT_KINDS = (ToolReturnPart, RetryPromptPart)


def apply_renames(history: list[ModelMessage], renames: Renames) -> list[ModelMessage]:
    """A copy of ``history`` with the renamed parts replaced (untouched messages are the same objects)."""
    if not renames:
        return history
    out = list(history)
    by_message: dict[int, dict[int, str]] = {}
    for (i, j), new in renames.items():
        by_message.setdefault(i, {})[j] = new
    for i, changed in by_message.items():
        message: Any = out[i]  # a request or a response: with_parts keeps its class
        parts: list[Any] = list(message.parts)
        for j, new in changed.items():
            parts[j] = with_call_id(parts[j], new)
        out[i] = with_parts(message, parts)
    return out

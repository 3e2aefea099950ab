"""One survey of a history that tells every profile pass whether it has anything to do.

Every profile repair runs every rule of its profile, and on a history with nothing to fix each
rule's cost is its early exit. Reading a message's attributes is what costs (100k messages are
100k scattered objects), so the facts the early exits need come from one survey, built with
C-level pipelines (``map``/``compress``/``chain``, no Python loop per part), and kept by the
run's :class:`Scan` for the last history surveyed. Facts only some passes need are computed on
first use and kept in the survey.

The id passes run first, on the input, and ask only about its calls (an empty id, a reused one,
their formats): the runner pairs the input before them (the default repair needs that walk anyway)
and hands its calls over (:meth:`Scan.remember_pairing`), so on a history the default repair
changes only one survey is made, of the repaired list.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, chain, compress, repeat
from operator import and_, attrgetter, eq, is_
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._repair.pairing import Pairing

__all__ = ["CallIdFacts", "Scan", "Survey", "ToolParts"]

_T = TypeVar("_T")
_parts_of = attrgetter("parts")
_ids_of = attrgetter("tool_call_id")
_kind_of = attrgetter("kind")
_instructions_of = attrgetter("instructions")
_content_of = attrgetter("content")
#: For each part count below 256, 1 where it is more than one part (``bytes.translate``'s table).
_SEVERAL = bytes(count > 1 for count in range(256))


class Survey:
    """What the early exits of the profile passes need to know about one history (read-only)."""

    __slots__ = (
        "_cache",
        "_parts",
        "flat",
        "history",
        "part_classes",
        "types",
    )

    def __init__(self, history: Sequence[ModelMessage]) -> None:
        parts_of = list(map(_parts_of, history))
        self.history = history
        #: each message's parts (as it holds them: read once)
        self._parts = parts_of
        #: every part, in order, and its class
        self.flat: list[Any] = []
        # extending one list by each message's parts (consumed at C speed) costs about two thirds of
        # ``chain.from_iterable``, whose iterator steps once per part
        deque(map(self.flat.extend, parts_of), maxlen=0)
        self.types: list[type] = list(map(type, self.flat))
        #: the classes of every part
        self.part_classes: frozenset[type] = frozenset(self.types)
        self._cache: dict[str, Any] = {}

    def with_parts_replaced(self, history: Sequence[ModelMessage], replaced: dict[int, Any]) -> Survey:
        """The survey of ``history``: this one's history with the parts at the places of ``replaced``
        (in :attr:`flat`) replaced by parts of their classes, in clones of their messages (the same
        classes, the same part counts). Nothing is read again; no fact computed on first use is kept."""
        clone = object.__new__(Survey)
        clone.history = history
        clone._parts = self._parts  # read for the part counts alone, which are the same
        flat = list(self.flat)
        for place, part in replaced.items():
            flat[place] = part
        clone.flat = flat
        clone.types = self.types
        clone.part_classes = self.part_classes
        # the same message classes and part counts: what depends on them alone carries over
        shared = ("lens", "starts", "owners", "message_types", "alternation", "plain")
        clone._cache = {key: self._cache[key] for key in shared if key in self._cache}
        return clone

    def _once(self, key: str, compute: Callable[[], _T]) -> _T:
        if key not in self._cache:
            self._cache[key] = compute()
        found: _T = self._cache[key]
        return found

    def message_types(self) -> list[type]:
        """The class of every message."""
        return self._once("message_types", lambda: list(map(type, self.history)))

    def alternation(self) -> tuple[type, type] | None:
        """(the class of every message at an even index, of every one at an odd index) where each is
        one class (two slices counted at C speed: the usual history alternates its roles), else None;
        a history of fewer than two messages has none."""

        def compute() -> tuple[type, type] | None:
            classes = self.message_types()
            if len(classes) < 2:
                return None
            evens, odds = classes[::2], classes[1::2]
            if evens.count(evens[0]) != len(evens) or odds.count(odds[0]) != len(odds):
                return None
            return evens[0], odds[0]

        return self._once("alternation", compute)

    def plain(self) -> bool:
        """Every message is exactly a ModelRequest or a ModelResponse (the class pipelines rely on it)."""

        def compute() -> bool:
            from pydantic_ai.messages import ModelRequest, ModelResponse

            alternation = self.alternation()
            classes = self.message_types() if alternation is None else alternation
            return set(classes) <= {ModelRequest, ModelResponse}

        return self._once("plain", compute)

    def classes(self, *bases: type) -> frozenset[type]:
        """The history's part classes that are subclasses of ``bases`` (isinstance, by class)."""
        return frozenset(kind for kind in self.part_classes if issubclass(kind, bases))

    def selected(self, kinds: frozenset[type]) -> list[bool]:
        """For every part, whether its class is one of ``kinds`` (one class: by identity, cheaper than
        a set's lookup)."""
        if len(kinds) == 1:
            (only,) = kinds
            return list(map(is_, self.types, repeat(only)))
        return list(map(kinds.__contains__, self.types))

    def call_ids(self) -> list[str]:
        """The ids of every regular call (a ``ToolCallPart`` in a response), in order."""
        from pydantic_ai.messages import ModelResponse, ToolCallPart

        def compute() -> list[str]:
            if not self.plain():
                return [
                    part.tool_call_id
                    for message in self.history
                    if isinstance(message, ModelResponse)
                    for part in message.parts
                    if isinstance(part, ToolCallPart)
                ]
            calls = self.classes(ToolCallPart)
            if not calls:
                return []
            responses = compress(self.history, map(is_, self.message_types(), repeat(ModelResponse)))
            parts = list(chain.from_iterable(map(_parts_of, responses)))
            return list(map(_ids_of, compress(parts, map(calls.__contains__, map(type, parts)))))

        return self._once("call_ids", compute)

    def tool_parts(self) -> ToolParts:
        """Every tool call, tool return and retry prompt part, in any message (see :class:`ToolParts`)."""
        from pydantic_ai.messages import RetryPromptPart, ToolCallPart, ToolReturnPart

        def compute() -> ToolParts:
            chosen = self.selected(self.classes(ToolCallPart, ToolReturnPart, RetryPromptPart))
            parts = list(compress(self.flat, chosen))
            return ToolParts(chosen, parts, list(map(_ids_of, parts)), list(compress(self.types, chosen)))

        return self._once("tool_parts", compute)

    def tool_call_ids(self) -> set[object]:
        """The ``tool_call_id`` of every tool call, tool return and retry prompt part, in any message,
        as stored (a part built by hand may hold None): every id the id rules read, and more (their
        early exits need only a superset)."""
        return self._once("tool_call_ids", lambda: set(self.tool_parts().ids))

    def requests(self) -> Iterable[Any]:
        """Every message that is exactly a ``ModelRequest``, in order (on a plain history: see
        :meth:`plain`): where the classes alternate, a slice of every other message."""
        from pydantic_ai.messages import ModelRequest

        alternation = self.alternation()
        if alternation is None or not isinstance(self.history, list):
            return compress(self.history, map(is_, self.message_types(), repeat(ModelRequest)))
        if ModelRequest not in alternation:
            return ()
        if alternation[0] is alternation[1]:
            return self.history
        return self.history[alternation.index(ModelRequest) :: 2]

    def request_parts(self) -> Iterator[Any]:
        """Every part of every request (a message whose ``kind`` is ``"request"``), in order."""

        if self.plain():  # the classes are at hand: no attribute read per message
            return chain.from_iterable(map(_parts_of, self.requests()))
        requests = map(eq, map(_kind_of, self.history), repeat("request"))
        return chain.from_iterable(map(_parts_of, compress(self.history, requests)))

    def requests_hold_only(self, kinds: frozenset[type]) -> bool:
        """Whether every part of :meth:`request_parts` is of one of ``kinds``. Read message by message
        until a request holds another part (on a real history, its first prompt settles it): a
        message that is a ``ModelRequest`` by class and by ``kind`` alike is a request however the
        history is read (:meth:`plain`); only where none answers are the rest of the facts read."""
        from pydantic_ai.messages import ModelRequest

        holds = kinds.__contains__
        for message in self.history:
            request = type(message) is ModelRequest and message.kind == "request"
            if request and not all(map(holds, map(type, message.parts))):
                return False
        return all(map(holds, map(type, self.request_parts())))

    def text_contents(self) -> Iterator[object]:
        """The ``content`` of every text part and user prompt, in order, read as it is iterated (a
        test of each string right after reading it finds it still in the CPU's caches; the caller
        keeps what it concludes: :meth:`memo`)."""
        from pydantic_ai.messages import TextPart, UserPromptPart

        return map(_content_of, compress(self.flat, self.selected(self.classes(TextPart, UserPromptPart))))

    def lens(self) -> list[int]:
        """How many parts each message has."""
        return self._once("lens", lambda: list(map(len, self._parts)))

    def empty_message(self) -> bool:
        """Some message has no parts (read from the part counts, which most profiles read anyway)."""
        return 0 in self.lens()

    def several_parts(self) -> list[int]:
        """Indices of the messages with more than one part (found by C-level byte searches: a loop
        step per such message, not per message, where they are few)."""

        def compute() -> list[int]:
            lens = self.lens()
            try:
                counts = bytes(lens)
            except ValueError:  # a message of 256 parts or more: as many as 255 for this
                counts = bytes(map(min, lens, repeat(255)))
            several = counts.translate(_SEVERAL)
            if several.count(1) * 8 > len(several):  # many (parallel calls): one C-level pass instead
                return list(compress(range(len(several)), several))
            found: list[int] = []
            at = several.find(1)
            while at >= 0:
                found.append(at)
                at = several.find(1, at + 1)
            return found

        return self._once("several", compute)

    def consecutive_responses(self) -> bool:
        """Two responses in a row (by ``kind``)."""

        from pydantic_ai.messages import ModelResponse

        def compute() -> bool:
            if self.plain():  # the classes are at hand: no attribute read per message
                alternation = self.alternation()
                if alternation is not None:  # they alternate, unless every message is a response
                    return alternation[0] is alternation[1] is ModelResponse
                classes = self.message_types()
                if not any(map(is_, classes, classes[1:])):  # no two neighbours of one class
                    return False
                responses = list(map(is_, classes, repeat(ModelResponse)))
            else:
                responses = list(map(eq, map(_kind_of, self.history), repeat("response")))
            return any(map(and_, responses, responses[1:]))

        return self._once("consecutive", compute)

    def empty_instructions(self) -> bool:
        """Some request carries ``instructions=''`` (what the Bedrock pass drops; on a history not
        plain, any message)."""

        def compute() -> bool:
            if self.plain():  # the requests alone, by class: a response has no such field to read
                return "" in map(_instructions_of, self.requests())
            return "" in map(getattr, self.history, repeat("instructions"), repeat(None))

        return self._once("empty_instructions", compute)

    def starts(self) -> list[int]:
        """Where each message's parts start in :attr:`flat` (and, last, how many parts there are)."""
        return self._once("starts", lambda: list(accumulate(self.lens(), initial=0)))

    def owners(self) -> list[int]:
        """For every part of :attr:`flat`, the index of its message."""
        return self._once(
            "owners", lambda: list(chain.from_iterable(map(repeat, range(len(self.history)), self.lens())))
        )

    def position(self, place: int) -> tuple[int, int]:
        """(message index, part index) of the part at ``place`` in :attr:`flat`."""
        starts = self.starts()
        message = bisect_right(starts, place) - 1  # a message without parts starts where the next does
        return message, place - starts[message]

    def memo(self, key: str, compute: Callable[[], _T]) -> _T:
        """A pass's own fact about this history, computed once (``key`` names it)."""
        return self._once(f"pass:{key}", compute)


class ToolParts(NamedTuple):
    """Every tool call, tool return and retry prompt part of a history, in order (read once for the
    id rules' early exits and the id-format count alike)."""

    #: for every part of :attr:`Survey.flat`, whether it is one of them
    chosen: list[bool]
    #: those parts
    parts: list[Any]
    #: the ``tool_call_id`` of each, as stored
    ids: list[Any]
    #: the class of each
    classes: list[type]


class CallIdFacts(NamedTuple):
    """What the id passes' early exits ask about the regular calls (``ToolCallPart`` in a response)."""

    #: some call has the id ``""``
    empty: bool
    #: some call has an id an earlier call had
    reused: bool
    #: every call's id, once
    ids: set[str]


class Scan:
    """What one profile run, or one ``check``, has learned about the lists it hands its passes.

    The runner (and ``check``) makes one for that call and hands it to every pass (and detect) as
    an argument. The passes of one run hand each other the same list object whenever they change
    nothing, so a survey made by one serves the next: the last list surveyed is kept, matched by
    identity and length. Every list a scan sees is the runner's (or ``check``'s) own copy, which
    nothing mutates, so a later pass never reads stale facts. Nothing outlives the call.
    """

    __slots__ = ("_ids", "_in_place", "_last", "_pinned")

    def __init__(self, pinned: Sequence[ModelMessage] | None = None) -> None:
        #: ``check``'s own list, surveyed once for every detect
        self._pinned = None if pinned is None else (pinned, Survey(pinned))
        self._last: tuple[Sequence[ModelMessage], int, Survey] | None = None
        #: the call ids of the list the runner paired (or settled) before its passes
        self._ids: tuple[Sequence[ModelMessage], int, CallIdFacts] | None = None
        #: the default repair's output, when it holds no duplicate or late result
        self._in_place: Sequence[ModelMessage] | None = None

    def survey(self, history: Sequence[ModelMessage]) -> Survey:
        """The survey of ``history``: the last one's, for the same list object of the same length."""
        pinned = self._pinned
        if pinned is not None and pinned[0] is history:
            return pinned[1]
        last = self._last
        if last is not None and last[0] is history and last[1] == len(history):
            return last[2]
        found = Survey(history)
        self._last = (history, len(history), found)
        return found

    def remember_survey(self, history: Sequence[ModelMessage], survey: Survey) -> None:
        """Keep ``survey`` as ``history``'s (a list the caller made and surveyed as it made it)."""
        self._last = (history, len(history), survey)

    def pinned_survey(self, history: Sequence[ModelMessage]) -> Survey | None:
        """The survey of ``history`` if it is ``check``'s own list (else None)."""
        pinned = self._pinned
        return pinned[1] if pinned is not None and pinned[0] is history else None

    def remember_pairing(self, history: Sequence[ModelMessage], pairing: Pairing) -> None:
        """Keep what the pairing walk saw of ``history``'s calls, for :meth:`call_id_facts`: the
        runner pairs its own copy of the input first (the default repair reuses that pairing when
        the before-stage changes nothing), so the id passes need no survey of the input at all."""
        seen = pairing.call_ids_seen()
        self.remember_call_ids(history, CallIdFacts("" in seen, pairing.call_count != len(seen), seen))

    def remember_call_ids(self, history: Sequence[ModelMessage], facts: CallIdFacts) -> None:
        """Keep ``facts`` about ``history``'s calls (from the runner's pairing walk, or from the
        forward walk where it settles the runner's copy of the input)."""
        self._ids = (history, len(history), facts)

    def call_id_facts(self, history: Sequence[ModelMessage]) -> CallIdFacts:
        """Whether any call's id is empty or reused, and every call's id (the id passes' early
        exits): the pairing's for that very list object, else read from its survey."""
        paired = self._ids
        if paired is not None and paired[0] is history and paired[1] == len(history):
            return paired[2]
        facts = self.survey(history)

        def compute() -> CallIdFacts:
            ids = facts.call_ids()
            seen = set(ids)
            return CallIdFacts("" in seen, len(seen) != len(ids), seen)

        return facts.memo("call_id_facts", compute)

    def remember_results_in_place(self, repaired: Sequence[ModelMessage]) -> None:
        """Note that ``repaired`` holds no duplicate or late result, so the passes (and detects) skip
        their walk of it: ``check`` says so of its list when the validator found none there, and the
        runner of the default repair's output when the repair's own pairing found none in its input.
        The repair never makes one: it drops orphans, adds one return per dangling call in the
        request right after the call, and merges neighbours, which only ever brings a late result
        next to its call. The fact holds for any list of the same messages in the same order
        (the runner goes on with its input's copy when the repair changed nothing)."""
        self._in_place = repaired

    def results_in_place(self, history: Sequence[ModelMessage]) -> bool:
        """Whether ``history`` holds the very messages :meth:`remember_results_in_place` was told of."""
        known = self._in_place
        if known is history:  # the runner goes on with the repair's own output: nothing to compare
            return True
        return known is not None and len(known) == len(history) and all(map(is_, known, history))

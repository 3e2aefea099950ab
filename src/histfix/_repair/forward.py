"""histfix's repair in one forward walk: the fast path, for every history it can settle alone.

The general repair (``pairing`` then ``walk``) reads the history twice, because whether a call
dangles depends on the future. This walk reads it once and builds the output as it goes, by
settling each response's open calls when the next response arrives: a call still open then
dangles, unless a result further on answers it across that response (a late result). Its returns
go into the first request after the calling response, which the walk still holds for folding.

Where that guess, or the order upstream gives several returns, could be wrong, the walk stops and
returns None, and the caller runs the general repair (:func:`repair`). It stops on the following
(the ledger finds the two about ids in bulk, so the walk may stop only at its end):

- an id called twice, in one response or in two (upstream orders the returns a response closes by
  the first call of each id, so a repeat can reorder them);
- a result it took for an orphan whose id a response calls after all (a late result for a call it
  already closed, a second result for an answered call, which upstream keeps, or a result before
  its call);
- a request run split by other instructions before the calls it follows are closed.

Its building loop starts at the first message it would not pass through as it is: a check-only loop
with the same rules reads the messages before it, so a history that needs nothing costs a check,
and comes back as a new list of its own messages.

Output equals the general repair's on every history it does not stop on (tests/test_forward.py,
on the corpus, generated and fuzzed histories, and every pinned release). For a profile whose
id-format pass renames call ids, the walk can rename them as it goes (``settled_with_ids``), so
each renamed part is copied once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, NamedTuple

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

from .._records.inputs import not_a_message
from .._records.parts import after_results
from .._release import switches as _compat
from .folding import is_synthetic, merged_request, new_request, results_gathered, with_call_id, with_parts
from .walk import repair_walk, return_maker

__all__ = ["Rename", "Settled", "forward_walk", "repair", "settled_with_ids"]

_DELTA = _compat.delta_part()


class _Unsettled(Exception):
    """The walk cannot settle this history alone: the general repair must (see the module)."""


#: How many messages the walk reads between two checks of the ledger's newest calls for a repeat.
_CHECK_EVERY = 512
#: The first check comes after this many messages, each next window twice as long until
#: ``_CHECK_EVERY``: a history that reuses ids (such ids repeat within a conversation or two) is
#: given up within its first hundred messages or so, not after 512, which on a short history was
#: half of it read for nothing.
_FIRST_CHECK = 32


class _Ledger:
    """The ids the walk has called and the ids of the results it dropped, checked in bulk.

    The walk settles only histories that call no id twice, and drops a result as an orphan only
    where no response calls its id. Looking each id up in a set as it arrives costs a cache miss
    an id once the set outgrows the cache; appending it to a list costs none. So the newest calls
    are checked for a repeat every ``_CHECK_EVERY`` messages (the first windows shorter, from
    ``_FIRST_CHECK`` messages, doubling), while they are still in the cache (a history that reuses
    ids is given up early), and everything at the end, in one C-level pass.
    """

    __slots__ = ("built_from", "called", "checked", "dropped", "ids", "renamed", "results_apart", "unpaired")

    def __init__(self) -> None:
        self.called: list[str] = []
        self.checked = 0  # called[:checked] holds no id twice
        self.dropped: list[str] = []
        self.ids: set[str] = set()  # every id called, once the end check passed
        #: some result answers its call from a request that does not fold into the one right after
        #: the call (a run split by other instructions): the output keeps it there, apart
        self.results_apart = False
        #: the index the building loop started reading at: every message before it only checked
        #: (``len(messages)`` where none needed building)
        self.built_from = 0
        #: while renaming: every id it renamed -> its new id
        self.renamed: dict[str, str] = {}
        #: while renaming: the ids of the retry prompts without a tool it left as they were (it
        #: pairs none of them; each takes its new id where its call came before it)
        self.unpaired: list[str] = []

    def forget_checked(self) -> None:
        """Drop what the check-only loop noted (its calls, how many are checked, the tool-less retry
        prompts it passed), so that it can read the messages again from the start."""
        self.called.clear()
        self.checked = 0
        self.unpaired.clear()

    def check_newest(self) -> None:
        """Raises ``_Unsettled`` where a call since the last check repeats an id among them."""
        newest = self.called[self.checked :]
        if len(set(newest)) != len(newest):
            raise _Unsettled
        self.checked = len(self.called)

    def check_all(self) -> None:
        """Raises ``_Unsettled`` where an id is called twice, or a dropped result's id is called."""
        called = set(self.called)
        if len(called) != len(self.called) or not called.isdisjoint(self.dropped):
            raise _Unsettled
        self.ids = called


def repair(messages: Sequence[ModelMessage], repair_last_response: bool = True) -> list[ModelMessage]:
    """The newest upstream repair of ``messages``: the forward walk, or the general repair where it stops."""
    repaired = forward_walk(messages, repair_last_response)
    if repaired is None:
        return repair_walk(messages, repair_last_response=repair_last_response)
    return repaired


def forward_walk(
    messages: Sequence[ModelMessage], repair_last_response: bool = True
) -> list[ModelMessage] | None:
    """The repair in one walk, or None where the general repair must decide (see the module)."""
    settled = settled_with_ids(messages, repair_last_response)
    return None if settled is None else settled.messages


class Settled(NamedTuple):
    """What the forward walk hands the profile runner where it settles a history alone."""

    messages: list[ModelMessage]
    #: the id of every call it read, each once (a settled history calls no id twice)
    ids: set[str]
    #: every result in the output is in the request right after its call: a settled history holds no
    #: duplicate result, and this says no request run split by other instructions kept one apart
    results_in_place: bool
    #: those ids in history order
    calls: list[str]
    #: the id of every result it dropped (an orphan's: no response calls it)
    dropped: list[str]
    #: the index its building loop started reading at: the messages before it were only checked and
    #: are in the output as they are (``len(messages)`` and no dangling call left: none was built)
    built_from: int
    #: while renaming (see :func:`settled_with_ids`): every id renamed -> its new id
    renamed: dict[str, str]
    #: while renaming: the ids of the retry prompts without a tool that kept their id
    unpaired: list[str]


class Rename(NamedTuple):
    """How the walk renames call ids as it meets them."""

    #: whether an id stays as it is (a compiled pattern's ``match``: no Python frame per call)
    fits: Callable[[str], object]
    #: the new id of any other
    fitted: Callable[[str], str]
    #: whether every id of a list stays as it is (``fits`` of each; one C-level pass where given)
    all_fit: Callable[[Sequence[str]], bool] | None = None


def settled_with_ids(
    messages: Sequence[ModelMessage], repair_last_response: bool = True, rename: Rename | None = None
) -> Settled | None:
    """The forward walk's repair with the facts the profiles' passes read (:class:`Settled`), or None
    where it stops. The id passes need just those facts, so a settled history needs no pairing walk.

    ``rename``: each call (a ``ToolCallPart`` in a response) whose id does not fit takes the id it
    gives, and so do the results the walk pairs with the call, the return it adds for it and a
    retry prompt without a tool after it with its id: the repair of the renamed history, where every
    new id is new to the history, unique, and no such retry prompt comes before its call (the repair
    pairs by id alone), with every part copied once; ``renamed`` and ``unpaired`` tell the caller
    whether that holds. The ledger's ids stay the ids as stored."""
    ledger = _Ledger()
    try:
        out = _walk_forward(messages, repair_last_response, ledger, rename)
    except _Unsettled:
        return None
    return Settled(
        out,
        ledger.ids,
        not ledger.results_apart,
        ledger.called,
        ledger.dropped,
        ledger.built_from,
        ledger.renamed,
        ledger.unpaired,
    )


#: How many messages the renaming walk reads for a call whose id it can test before it reads the
#: rest: where that call's ids fit, the check-only loop tests the rest in bulk at its end.
_PROBE = 8


def _unchanged_until(
    messages: Sequence[ModelMessage], ledger: _Ledger, rename: Rename | None = None
) -> tuple[int, dict[str, ToolCallPart], int, int]:
    """:func:`_checked_until`; while renaming, where the first calls' ids fit, with every id
    tested in one C-level pass at the end instead of one Python call per call (the ids of a history
    are nearly always of one kind); only where some id does not fit is the loop run again, testing
    each call as it goes, to stop at the first response that holds one."""
    if rename is None:
        return _checked_until(messages, ledger, None, False)
    fits = rename.fits
    if not _first_calls_fit(messages, fits):
        return _checked_until(messages, ledger, fits, True)
    found = _checked_until(messages, ledger, None, True)
    # its calls are every call the loop read: it started the ledger
    if all(map(fits, ledger.called)) if rename.all_fit is None else rename.all_fit(ledger.called):
        return found
    ledger.forget_checked()
    return _checked_until(messages, ledger, fits, True)


def _first_calls_fit(messages: Sequence[ModelMessage], fits: Callable[[str], object]) -> bool:
    """Whether the ids of the first response with calls among the first :data:`_PROBE` messages fit
    (True where none has calls): where they do not, the loop tests each call as it goes, and stops
    at that response without reading the rest."""
    for message in islice(messages, _PROBE):
        if isinstance(message, ModelResponse):
            ids = [part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart)]
            if ids:
                return all(map(fits, ids))
    return True


def _checked_until(
    messages: Sequence[ModelMessage],
    ledger: _Ledger,
    fits: Callable[[str], object] | None,
    renaming: bool,
) -> tuple[int, dict[str, ToolCallPart], int, int]:
    """Where the building walk must start: the index of the first message it would not pass through
    as it is (``len(messages)`` where there is none), and its state there: the open calls, the
    response that made them, the next ledger check's index. Every message before that index is
    passed through in the building walk's output.

    A check only, with the building walk's rules: it stops at a response that leaves calls
    dangling or follows a response, a request that follows a request, a result that answers no
    open call, and a result after a part that would move; and at a message of no known class, which
    the building walk names. It notes the calls in the ledger, which it checks as the walk does.
    Given ``fits`` (:attr:`Rename.fits`) it also stops at a response with a call whose id does not
    fit; ``renaming``: it notes the retry prompts without a tool it passes as the renaming walk does.
    """
    open_calls: dict[str, ToolCallPart] = {}
    owner_index = -1
    note_call = ledger.called.append
    check_at = _FIRST_CHECK
    after_request: bool | None = None  # None before the first message
    message: Any  # told apart by exact class below, which mypy does not narrow on
    for index, message in enumerate(messages):
        kind = type(message)  # not ``__class__``: the generic attribute lookup, per message
        if kind is ModelResponse or (kind is not ModelRequest and isinstance(message, ModelResponse)):
            if open_calls or after_request is False:  # dangling calls, or a merge
                return index, open_calls, owner_index, check_at
            if fits is not None:  # to take this response's calls back (no calls are open here)
                noted, owner_before = len(ledger.called), owner_index
            after_request = False
            for part in message.parts:
                if type(part) is ToolCallPart or isinstance(part, ToolCallPart):
                    call_id = part.tool_call_id
                    if fits is not None and not fits(call_id):  # the building loop renames it
                        del ledger.called[noted:]
                        return index, {}, owner_before, check_at
                    note_call(call_id)
                    open_calls[call_id] = part
                    owner_index = index
            if index > check_at:
                ledger.check_newest()
                check_at = index + min(index, _CHECK_EVERY)
        elif kind is ModelRequest or isinstance(message, ModelRequest):
            if after_request:  # a request run: it folds, or splits by instructions
                return index, open_calls, owner_index, check_at
            after_request = True
            position = 0  # as in the building walk
            unpaired: list[str] = []  # noted once the request passes whole
            for piece in message.parts:
                if (
                    type(piece) is ToolReturnPart
                    or isinstance(piece, ToolReturnPart)
                    or (isinstance(piece, RetryPromptPart) and piece.tool_name is not None)
                ):
                    if position == 2 or open_calls.pop(piece.tool_call_id, None) is None:
                        # an orphan, or results to gather: the calls as they were before this request
                        # (those of the response before it, which closed every earlier one)
                        calls = {} if index == 0 else _calls_of(messages[index - 1])
                        return index, calls, owner_index, check_at
                    position = 1
                else:
                    if renaming and isinstance(piece, RetryPromptPart):  # without a tool
                        unpaired.append(piece.tool_call_id)  # no call was renamed before it
                    if position == 1 and not (_DELTA is not None and isinstance(piece, _DELTA)):
                        position = 2
            if unpaired:
                ledger.unpaired += unpaired
        else:
            return index, open_calls, owner_index, check_at
    return len(messages), open_calls, owner_index, check_at


def _calls_of(response: Any) -> dict[str, ToolCallPart]:
    """A response's calls by id, in call order, as the walks note them open."""
    return {part.tool_call_id: part for part in response.parts if isinstance(part, ToolCallPart)}


# One flat loop on purpose, as in ``pairing.pair``: a function call per message or part is the walk's main cost.
def _walk_forward(  # noqa: PLR0915
    messages: Sequence[ModelMessage],
    repair_last_response: bool,
    ledger: _Ledger,
    rename: Rename | None = None,
) -> list[ModelMessage]:
    size = len(messages)
    excluded = -1  # the last response, whose calls stay open when it is not repaired
    if not repair_last_response:
        for at in range(size - 1, -1, -1):
            if isinstance(messages[at], ModelResponse):
                excluded = at
                break
    # The building loop reads only what follows the first message it would change: up to there a
    # check-only loop reads (``_unchanged_until``), so a history passed through as it is costs a check.
    #: the calls of the last calling response that no result answered yet, by id, in call order
    open_calls: dict[str, ToolCallPart]
    # owner_index: the response that made them; check_at: the message index after which the
    # ledger's newest calls are checked
    fits = None if rename is None else rename.fits
    start, open_calls, owner_index, check_at = _unchanged_until(messages, ledger, rename)
    ledger.built_from = start
    if start == size and not (open_calls and owner_index != excluded):
        ledger.check_all()
        return list(messages)
    make_returns = return_maker()
    note_dropped = ledger.dropped.append
    note_call = ledger.called.append
    # The request run since the last response, held for folding: its first member, that member's
    # parts when the walk changed them (None: its own), whether its results are scattered, the
    # run's first non-empty instructions, and the later members as ``folding.Member`` tuples.
    held: Any = None
    held_parts: list[Any] | None = None
    held_scattered = False
    held_instructions: str | None = None
    joined: list[Any] | None = None
    split = False  # the run after the calling response was already flushed (other instructions)
    response_last = False  # the last message in ``out`` is a response and nothing is held
    renamed_results: dict[int, Any] = {}  # while renaming: id() of a message's part -> its renamed copy
    renamed_ids = ledger.renamed
    message: Any  # told apart by exact class below, which mypy does not narrow on
    # The messages before ``start`` passed through: a request among them just before it is held.
    # (islice, not a slice: a Sequence such as a deque need not take one.)
    if start and not isinstance(messages[start - 1], ModelResponse):
        held = messages[start - 1]
        held_instructions = held.instructions
        out = list(islice(messages, start - 1))
    else:
        out = list(islice(messages, start))
        response_last = start > 0
    append = out.append
    for index, message in enumerate(islice(messages, start, None) if start else messages, start):
        kind = type(message)
        if kind is ModelResponse or (kind is not ModelRequest and isinstance(message, ModelResponse)):
            if open_calls and owner_index != excluded:  # the previous response's calls dangle
                if split:  # their request is already out: the general repair places them
                    raise _Unsettled
                stamp = messages[owner_index].timestamp  # the calling response's
                closing = make_returns(open_calls.values(), stamp)
                open_calls = {}
                response_last = False  # the returns' request goes before this response
                if held is None:  # no request followed the calls: a request of the returns' own
                    append(new_request(closing))
                elif joined is None:  # after the held request's results (it is flushed below)
                    held_parts = after_results(held.parts if held_parts is None else held_parts, closing)
                else:  # the run merges, and the merge puts them after its first member's results
                    append(merged_request(held, held_parts, joined, held_scattered, closing))
                    held = held_parts = joined = None
                    held_scattered = False
            if fits is None:
                for part in message.parts:
                    # the exact class first (an isinstance that fails walks the bases), then subclasses
                    if type(part) is ToolCallPart or isinstance(part, ToolCallPart):
                        call_id = part.tool_call_id
                        # a repeat, here or since an earlier response: the ledger's to find
                        note_call(call_id)
                        open_calls[call_id] = part
                        owner_index = index
            else:  # as above, and its calls take their new ids before it goes out
                renamed_parts: list[Any] | None = None  # its parts, each call renamed in its place
                for at, part in enumerate(message.parts):
                    if type(part) is ToolCallPart or isinstance(part, ToolCallPart):
                        call_id = part.tool_call_id
                        note_call(call_id)
                        if fits(call_id):
                            open_calls[call_id] = part
                        else:  # by its id as stored: its results carry that
                            new_id = renamed_ids[call_id] = rename.fitted(call_id)  # type: ignore[union-attr]
                            open_calls[call_id] = copy = with_call_id(part, new_id)
                            if renamed_parts is None:
                                renamed_parts = list(message.parts)
                            renamed_parts[at] = copy
                        owner_index = index
                if renamed_parts is not None:
                    message = with_parts(message, renamed_parts)  # noqa: PLW2901
            if held is not None:
                if joined is None and not held_scattered:  # one request, as it came or less its orphans
                    append(held if held_parts is None else with_parts(held, held_parts))
                    held_parts = None
                else:
                    append(_request_run(held, held_parts, held_scattered, joined))
                    joined = held_parts = None
                    held_scattered = False
                held = None  # and held_scattered is False: nothing is held
                append(message)
            elif response_last and is_synthetic(message) and is_synthetic(previous := out[-1]):  # type: ignore[arg-type]
                out[-1] = with_parts(previous, [*previous.parts, *message.parts])  # type: ignore[type-var]
            else:
                append(message)
            response_last = True
            split = False
            if index > check_at:  # find a repeated id early: all work after it is wasted
                ledger.check_newest()
                check_at = index + min(index, _CHECK_EVERY)  # windows of 32, 64 ... 512 messages
        elif kind is ModelRequest or isinstance(message, ModelRequest):
            # orphans, results whose id no earlier response called: the first, and any others (set
            # with the first, so that a request without one pays for one variable only)
            orphan: Any = None
            answered = False  # some result here answers an open call
            position = 0  # 0: no result yet, 1: among results, 2: a movable part after a result
            scattered = False
            for piece in message.parts:
                if isinstance(piece, ToolReturnPart) or (
                    isinstance(piece, RetryPromptPart) and piece.tool_name is not None
                ):
                    call_id = piece.tool_call_id
                    if call_id in open_calls:
                        if renamed_ids and (wire_id := renamed_ids.get(call_id)) is not None:
                            renamed_results[id(piece)] = with_call_id(piece, wire_id)
                        del open_calls[call_id]
                        answered = True
                    else:  # an orphan (the ledger checks that no response calls its id): dropped
                        note_dropped(call_id)
                        if orphan is None:
                            orphan = piece
                            more_orphans: list[Any] | None = None
                        elif more_orphans is None:
                            more_orphans = [piece]
                        else:
                            more_orphans.append(piece)
                        continue
                    if position == 2:
                        scattered = True
                    position = 1
                else:
                    if fits is not None and isinstance(piece, RetryPromptPart):  # without a tool
                        given = renamed_ids.get(piece.tool_call_id)
                        if given is None:
                            ledger.unpaired.append(piece.tool_call_id)
                        else:
                            renamed_results[id(piece)] = with_call_id(piece, given)
                    if position == 1 and not (_DELTA is not None and isinstance(piece, _DELTA)):
                        position = 2
            parts: list[Any] | None = None
            if orphan is not None:
                if more_orphans is None:  # the usual case, without a set of ids
                    parts = [part for part in message.parts if part is not orphan]
                else:
                    gone = {id(orphan), *map(id, more_orphans)}
                    parts = [part for part in message.parts if id(part) not in gone]
                if not parts and index != size - 1:
                    continue  # an emptied interior request disappears; its neighbours may fold
            if renamed_results:  # only ever filled while renaming
                own = message.parts if parts is None else parts
                parts = list(map(renamed_results.get, map(id, own), own))
                renamed_results.clear()
            response_last = False
            if held is None:
                held, held_parts, held_scattered = message, parts, scattered
                held_instructions = message.instructions
                continue
            instructions = message.instructions
            if held_instructions and instructions and held_instructions != instructions:
                if answered:  # its results stay in a later request than the one after their call
                    ledger.results_apart = True
                if open_calls:
                    split = True
                append(_request_run(held, held_parts, held_scattered, joined))
                joined = None
                held, held_parts, held_scattered, held_instructions = message, parts, scattered, instructions
                continue
            if not held_instructions:
                held_instructions = instructions
            if joined is None:
                joined = [(message, parts, index)]
            else:
                joined.append((message, parts, index))
            if answered and split:  # folds into a run that is not the one right after the call
                ledger.results_apart = True
        else:
            raise not_a_message(index, message)
    if open_calls and owner_index != excluded:
        if split:
            raise _Unsettled
        stamp = messages[owner_index].timestamp
        closing = make_returns(open_calls.values(), stamp)
        # as in the loop (spelled out there, not shared: see the loop's note), with the run then
        # flushed below
        if held is None:
            held = new_request(closing)
        elif joined is None:
            held_parts = after_results(held.parts if held_parts is None else held_parts, closing)
        else:
            held = merged_request(held, held_parts, joined, held_scattered, closing)
            held_parts = joined = None
            held_scattered = False
    if held is not None:
        append(_request_run(held, held_parts, held_scattered, joined))
    ledger.check_all()
    return out


def _request_run(first: Any, parts: list[Any] | None, scattered: bool, joined: list[Any] | None) -> Any:
    """One request from a held run: ``first`` with its ``parts`` (None: its own), merged with the
    ``joined`` members if any, results gathered when ``scattered`` (as ``Folder.flush`` does)."""
    if joined is not None:
        return merged_request(first, parts, joined, scattered)
    own = first.parts if parts is None else parts
    if scattered:
        own = results_gathered(own) or own
    return first if own is first.parts else with_parts(first, own)

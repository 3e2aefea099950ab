"""A prototype, not the library: the repair as one forward walk, to measure what a single pass buys.

Issue 13 reports that a one-pass walk, building its output while each message is at hand, reached
more than 3.5x upstream on the dense shape. This is our own such walk, timed by
``bench_repair.py --prototype`` beside histfix's two walks (pairing, then building) and upstream,
with its output asserted equal to theirs wherever it does not give up.

A single pass cannot know whether a call is ever answered (that needs the future), so it
speculates: calls still open when the next response arrives (or the history ends) dangle, and
their returns go into the first request after their response, which is still held for folding
at that point. It gives up (``None``: the caller runs the general walk) wherever the speculation
or its bookkeeping could be wrong:

- a result answers a call already closed by a synthesized return (a late result);
- a call reuses an id that is open or was closed by a synthesized return (shadowing: upstream
  orders those returns differently), or an id repeats within one response;
- a response has two or more dangling calls and one of their ids was called before (upstream
  orders returns by each id's first call);
- a request run splits on instructions while calls wait for results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

# Private names on purpose: the prototype folds and inserts returns exactly as the walk does, so a
# change there changes what this benchmark measures too.
from histfix import _compat
from histfix._folding import _merged_request, is_synthetic, new_request, results_gathered, with_parts
from histfix._walk import _with_closing_returns, return_maker

_DELTA = _compat.TOOL_AVAILABILITY_DELTA


class _GiveUp(Exception):
    """The history needs the general walk (see the module docstring)."""


def one_pass(
    messages: Sequence[ModelMessage], repair_last_response: bool = True
) -> list[ModelMessage] | None:
    """The newest upstream repair of ``messages`` in one walk, or None where it gives up."""
    try:
        return _one_pass_walk(messages, repair_last_response)
    except _GiveUp:
        return None


def _flush(
    out: list[ModelMessage],
    held: Any,
    parts: list[Any] | None,
    scattered: bool,
    joined: list[Any] | None,
    *,
    held_index: int,
) -> None:
    """Append the held request run as one request (merged, or with its parts changed); ``joined``
    holds the later members as ``_folding.Member`` tuples, ``held_index`` the first one's index.

    What ``Folder.flush`` does for a request run, without a ``Folder`` per run: built through one,
    the prototype took 232 ms instead of 191-198 ms on adversarial at 100k (every run there changes)."""
    if joined is None:
        own = held.parts if parts is None else parts
        if scattered:
            own = results_gathered(own) or own
        out.append(held if own is held.parts else with_parts(held, own))
    else:
        out.append(_merged_request([(held, parts, held_index), *joined], scattered))


def _one_pass_walk(messages: Sequence[ModelMessage], repair_last_response: bool) -> list[ModelMessage]:  # noqa: PLR0915
    size = len(messages)
    excluded = -1  # the last response, whose calls stay open when it is not repaired
    if not repair_last_response:
        excluded = next((i for i in range(size - 1, -1, -1) if isinstance(messages[i], ModelResponse)), -1)
    make = return_maker()
    out: list[ModelMessage] = []
    append = out.append
    open_calls: dict[str, ToolCallPart] = {}  # the latest calling response's calls awaiting a result
    owner = -1  # that response's index
    answered: set[str] = set()  # ids whose calls were all answered (a miss then is a duplicate)
    closed: set[str] = set()  # ids closed by a synthesized return
    # The request run since the last response, held for folding: its first member, that member's
    # parts when changed, whether its results are scattered, the run's instructions, later members.
    held: Any = None
    held_index = -1  # its input index (-1: a request of synthesized returns)
    held_parts: list[Any] | None = None
    held_scattered = False
    held_instructions: str | None = None
    joined: list[Any] | None = None
    after_response = False  # the last message kept was a response

    def close_open_calls() -> None:
        nonlocal open_calls, held, held_parts, held_index
        calls = list(open_calls.values())
        if len(calls) > 1 and not answered.isdisjoint(open_calls):
            raise _GiveUp
        stamp = messages[owner].timestamp
        returns = [make(call, stamp) for call in calls]
        closed.update(open_calls)
        open_calls = {}
        if held is None:
            held, held_index = new_request(returns), -1
        else:
            held_parts = _with_closing_returns(held.parts if held_parts is None else held_parts, returns)

    for index, message in enumerate(messages):
        kind = message.__class__
        if kind is ModelResponse or (kind is not ModelRequest and isinstance(message, ModelResponse)):
            if open_calls and owner != excluded:
                close_open_calls()
            if held is not None:
                if joined is None and held_parts is None and not held_scattered:
                    append(held)
                else:
                    _flush(out, held, held_parts, held_scattered, joined, held_index=held_index)
                    joined = held_parts = None
                    held_scattered = False
                held = None
                append(message)
            elif after_response and is_synthetic(message) and is_synthetic(out[-1]):  # type: ignore[arg-type]
                out[-1] = with_parts(out[-1], [*out[-1].parts, *message.parts])
            else:
                append(message)
            after_response = True
            for part in message.parts:
                if part.__class__ is ToolCallPart or isinstance(part, ToolCallPart):
                    call_id = part.tool_call_id
                    if call_id in open_calls or call_id in closed:
                        raise _GiveUp
                    open_calls[call_id] = part
                    owner = index
        elif kind is ModelRequest or isinstance(message, ModelRequest):
            dropped: list[Any] | None = None  # orphans: results whose id no earlier call had
            position = 0  # 0: no result yet, 1: among results, 2: a movable part after a result
            scattered = False
            for piece in message.parts:
                if isinstance(piece, ToolReturnPart) or (
                    isinstance(piece, RetryPromptPart) and piece.tool_name is not None
                ):
                    call_id = piece.tool_call_id
                    if call_id in open_calls:
                        del open_calls[call_id]
                        answered.add(call_id)
                    elif call_id in closed:
                        raise _GiveUp
                    elif call_id not in answered:
                        dropped = [piece] if dropped is None else [*dropped, piece]
                        continue
                    if position == 2:
                        scattered = True
                    position = 1
                elif position == 1 and not (_DELTA is not None and isinstance(piece, _DELTA)):
                    position = 2
            parts: list[Any] | None = None
            if dropped is not None:
                gone = set(map(id, dropped))
                parts = [part for part in message.parts if id(part) not in gone]
                if not parts and index != size - 1:
                    continue  # an emptied interior request disappears
            after_response = False
            if held is None:
                held, held_parts, held_scattered, held_index = message, parts, scattered, index
                held_instructions = message.instructions
                continue
            instructions = message.instructions
            if held_instructions and instructions and held_instructions != instructions:
                if open_calls:
                    raise _GiveUp
                _flush(out, held, held_parts, held_scattered, joined, held_index=held_index)
                joined = None
                held, held_parts, held_scattered, held_instructions = message, parts, scattered, instructions
                held_index = index
                continue
            if not held_instructions:
                held_instructions = instructions
            if joined is None:
                joined = []
            joined.append((message, parts, index))
        else:
            raise TypeError(f"messages[{index}] is not a ModelRequest or ModelResponse")
    if open_calls and owner != excluded:
        close_open_calls()
    if held is not None:
        _flush(out, held, held_parts, held_scattered, joined, held_index=held_index)
    return out


def _check(seeds: int) -> None:
    """Compare with histfix's walk on every corpus history and ``seeds`` generated ones, both ways
    of ``repair_last_response``; print how often the prototype gave up."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from pydantic_core import ValidationError

    from histfix._walk import repair_walk

    from corpus import CASES
    from dsl import load
    from generate import random_history

    histories = []
    for case in CASES:
        try:
            histories.append(load(case.history))
        except ValidationError:
            continue  # the installed release cannot load this case (its ``needs``)
    corpus_size = len(histories)
    for seed in range(seeds):
        try:
            histories.append(load(random_history(seed, 14)))
        except ValidationError:
            continue
    equal = gave_up = 0
    for history in histories:
        for last in (True, False):
            single = one_pass(history, last)
            if single is None:
                gave_up += 1
                continue
            assert single == repair_walk(history, repair_last_response=last), (history, last)
            equal += 1
    print(
        f"{corpus_size} corpus and {len(histories) - corpus_size} generated histories, both ways: "
        f"{equal} repairs equal to histfix's walk, {gave_up} given up"
    )


if __name__ == "__main__":
    _check(4000)

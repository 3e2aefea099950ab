"""The processor's memory: a request that extends the last healthy history walks only its new messages.

Two properties carry it. The pairing walk read in stretches learns what it learns in one pass
(``Pairing.advance``/``copy``/``finish`` beside ``pair``). And ``RepairProcessor`` with its memory
returns what the repair without memory returns (dump-equal, and the very messages where that
repair returns them as they are) whatever happens to the history between two requests: grown,
cut, interleaved with another conversation, its messages or their parts lists replaced or edited
in place, on the corpus, generated histories and concurrent threads. ``memory.walked`` proves the
fast path is taken.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import messages as pai
from pydantic_core import PydanticSerializationError, ValidationError

import histfix
from histfix._repair.pairing import Pairing, pair

from corpus import CASES
from dsl import Case, call, dump, load, load_history, loadable, req, resp, ret, system, text, user
from generate import random_history
from volume import sized


def facts(pairing: Pairing) -> tuple[Any, ...]:
    """Everything a pairing holds (the ids of parts: the same history, the same objects)."""
    return tuple(getattr(pairing, name) for name in Pairing.__slots__)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_walk_read_in_stretches_learns_what_one_pass_does(case: Case) -> None:
    history = load_history(case)
    for last in (True, False):
        whole = facts(pair(history, last))
        for cut in range(len(history) + 1):
            first = Pairing().advance(history, cut)
            kept = facts(first)
            resumed = first.copy().advance(history).finish(history, last)
            assert facts(resumed) == whole, cut
            assert facts(first) == kept  # the copy read on, not the walk it was made from


def test_a_finished_walk_reads_no_more() -> None:
    history = load([req(user("hi")), resp(text("hello"))])
    done = pair(history, True)
    with pytest.raises(ValueError, match="finished"):
        done.advance(history + history)
    with pytest.raises(ValueError, match="every message read"):
        Pairing().advance(history, 1).finish(history, True)


def assert_as_without_memory(processor: histfix.RepairProcessor, history: list[pai.ModelMessage]) -> None:
    """The processor (memory and all) returns what the repair without memory returns."""
    fresh = histfix.RepairProcessor().process(history, None)
    got = processor(history)
    assert got is not history
    if len(got) == len(fresh) and all(map(operator.is_, got, fresh)):
        return  # the very messages (the usual case, and the cheap one to tell)
    try:
        assert dump(got) == dump(fresh)
    except PydanticSerializationError:  # content the release cannot write (a schema-drawn image URL)
        assert got == fresh
    given = {id(m) for m in history}
    # the input's own messages where the repair passes them through, new ones where it builds them
    assert [id(m) in given and id(m) for m in got] == [id(m) in given and id(m) for m in fresh]


def grown(history: list[pai.ModelMessage]) -> Iterator[list[pai.ModelMessage]]:
    """The history as a processor meets it request after request: longer each time, the same objects."""
    for size in range(1, len(history) + 1):
        yield history[:size]


def memory_is_exact(history: list[pai.ModelMessage]) -> None:
    """The property on one drawn history (tests/repair/test_fuzz.py checks every draw): grown through
    one processor over its last six steps (kept from the second on, where healthy), every answer as
    without memory; and the walk resumed at the middle learns what one pass does, both ways."""
    processor = histfix.RepairProcessor()
    for step in list(grown(history))[-6:]:
        assert_as_without_memory(processor, step)
    for last in (True, False):
        resumed = Pairing().advance(history, len(history) // 2).copy().advance(history).finish(history, last)
        assert facts(resumed) == facts(pair(history, last))


def test_the_memory_is_exact_on_the_corpus() -> None:
    """Every loadable case grown message by message through one processor, which also meets the cases
    one after another (each a new conversation: the memory misses and reads it in full)."""
    processor = histfix.RepairProcessor()
    served = 0
    for _case, history in loadable(CASES):
        for step in grown(history):
            assert_as_without_memory(processor, step)
            served += processor.memory.walked < len(step)
    assert served >= 20  # the memory served requests (38 on 1.0.0: most cases are damaged at once)


def test_the_memory_is_exact_on_generated_histories_interleaved() -> None:
    """Generated histories (damaged ones too) grown in turn, two conversations interleaved on one
    processor: each request is answered as without memory, whichever conversation came before."""
    histories = []
    for seed in range(sized(600)):
        try:
            histories.append(load(random_history(seed, 10)))
        except ValidationError:
            continue  # the release cannot load what this seed drew
    processor = histfix.RepairProcessor()
    for one, other in zip(histories[::2], histories[1::2], strict=False):
        for a, b in zip(grown(one), grown(other), strict=False):
            assert_as_without_memory(processor, a)
            assert_as_without_memory(processor, a)  # the same request twice: served from memory
            assert_as_without_memory(processor, b)


def tool_turns(turns: int, first: int = 0) -> list[pai.ModelMessage]:
    raw = []
    for turn in range(first, first + turns):
        raw += [
            req(user(f"question {turn}")),
            resp(call("lookup", f"call_{turn}", {"q": turn}), model_name="m"),
            req(ret("lookup", f"call_{turn}", f"result {turn}")),
            resp(text(f"answer {turn}"), model_name="m"),
        ]
    return load(raw)


def prompt(content: str) -> pai.ModelRequest:
    return pai.ModelRequest(parts=[pai.UserPromptPart(content)])


def test_the_fast_path_is_taken_within_a_run_and_across_runs() -> None:
    history = tool_turns(50)
    processor = histfix.RepairProcessor()
    processor([*history, prompt("next")])
    assert processor.memory.walked == len(history) + 1  # nothing kept yet: all of it
    first = processor([*history, prompt("again")])  # read in full again, and now kept
    assert processor.memory.walked == len(history) + 1
    # the next run of the same conversation: its stored messages plus a new prompt
    assert_as_without_memory(processor, [*history, prompt("once more")])
    assert processor.memory.walked == 1
    # within a run: the returned history, the model's call, its result
    answer = tool_turns(1, first=99)
    within = [*first, answer[1], answer[2]]
    assert_as_without_memory(processor, within)
    assert processor.memory.walked == 3
    processor.forget()
    assert_as_without_memory(processor, within)
    assert processor.memory.walked == len(within)


def test_a_history_read_once_is_not_kept() -> None:
    """A history reloaded for every run (new objects each time) is read in full each time, and the
    memory keeps none of them alive; one that comes back is kept."""
    processor = histfix.RepairProcessor()
    for _ in range(3):
        assert_as_without_memory(processor, [*tool_turns(5), prompt("next")])
        assert processor.memory.walked == 21
        assert processor.memory._healthy is None
    history = tool_turns(5)
    processor([*history, prompt("next")])
    processor([*history, prompt("next")])
    assert processor.memory._healthy is not None


def after_healthy_request(edit: Any) -> None:
    """Remember a healthy history, ``edit`` it, and ask again with one more prompt."""
    history = tool_turns(6)
    processor = histfix.RepairProcessor()
    for _ in range(2):  # the second time kept
        processor([*history, prompt("next")])
    assert processor.memory.walked == len(history) + 1
    edited = edit(history)
    assert_as_without_memory(processor, [*edited, prompt("again")])


def result_request(history: list[pai.ModelMessage]) -> pai.ModelMessage:
    return history[6]  # turn 1's result


def test_a_parts_list_edited_in_place_is_seen() -> None:
    def drop_the_result(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        result_request(history).parts.pop()  # the call before it now dangles
        return history

    after_healthy_request(drop_the_result)

    def swap_the_result(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        result_request(history).parts[0] = pai.UserPromptPart("summary of the lookup")  # same length
        return history

    after_healthy_request(swap_the_result)


def test_a_parts_list_replaced_is_seen() -> None:
    def without_results(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        request = result_request(history)
        request.parts = [part for part in request.parts if not isinstance(part, pai.ToolReturnPart)]
        return history

    after_healthy_request(without_results)

    def reordered(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        first = history[0]
        first.parts = [pai.SystemPromptPart("be brief"), *first.parts]  # a dynamic prompt re-evaluated
        return history

    after_healthy_request(reordered)


def test_messages_moved_removed_or_copied_are_seen() -> None:
    after_healthy_request(lambda h: [*h[:5], *h[6:]])  # a result request removed: its call dangles
    after_healthy_request(lambda h: [*h[:4], h[5], h[4], *h[6:]])  # two swapped
    after_healthy_request(lambda h: h[4:])  # the oldest turn dropped: a new start
    after_healthy_request(lambda h: [*h[:3], copy.deepcopy(h[3]), *h[4:]])  # an equal copy
    after_healthy_request(lambda h: [*h[:3], dataclasses.replace(h[3], model_name="other"), *h[4:]])
    after_healthy_request(lambda h: [h[0], *copy.deepcopy(h[1:])])  # all copied but the first


class Unequal:
    """Tool output whose ``==`` fails, as a numpy array's truth value does."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("ambiguous")

    __hash__ = object.__hash__


def test_a_copy_that_cannot_be_compared_is_read_again() -> None:
    history = load(
        [
            req(user("q")),
            resp(call("lookup", "c1"), model_name="m"),
            req(ret("lookup", "c1")),
            resp(text("a"), model_name="m"),
        ]
    )
    odd = dataclasses.replace(history[2].parts[0], content=Unequal())
    history[2] = pai.ModelRequest(parts=[odd])
    processor = histfix.RepairProcessor()
    processor([*history, prompt("next")])
    processor([*history, prompt("next")])
    copied = [
        *history[:2],
        pai.ModelRequest(parts=[dataclasses.replace(odd, content=Unequal())]),
        history[3],
        prompt("again"),
    ]
    got = processor(copied)  # comparing the copy with the kept request raises: the memory misses
    assert processor.memory.walked == len(copied)
    assert len(got) == len(copied) and all(map(lambda a, b: a is b, got, copied))


def test_a_shared_processor_is_exact_under_concurrent_conversations() -> None:
    """Four threads grow four conversations (one with damage in it) through one processor, switching
    threads as often as the interpreter allows: every answer is the one without memory."""
    conversations = [tool_turns(30, first=100 * n) for n in range(3)] + [
        load([req(system("s"), user("q")), resp(call("t", "x"), model_name="m"), req(user("lost"))] * 10)
    ]
    processor = histfix.RepairProcessor()
    failures: list[BaseException] = []

    def converse(history: list[pai.ModelMessage]) -> None:
        try:
            for step in grown(history):
                assert_as_without_memory(processor, step)
        except BaseException as exc:  # reported below, in the test's own thread
            failures.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=converse, args=(h,)) for h in conversations]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures[0]


def test_a_processor_with_a_profile_or_a_trim_is_still_exact() -> None:
    """The memory serves the default repair after trimming; a profile's repair goes without it."""
    history = [*tool_turns(8), prompt("next")]
    for options in ({"keep_last_turns": 3}, {"max_tokens": 200}, {"provider": "anthropic"}):
        processor = histfix.RepairProcessor(**options)
        fresh = histfix.RepairProcessor(**options)
        for step in grown(history):
            if isinstance(step[-1], pai.ModelRequest):
                assert dump(processor(step)) == dump(fresh.process(step, fresh.provider))

"""The forward walk (``histfix._repair.forward``): equal to the general repair wherever it settles a history.

``repair()`` runs the forward walk first where upstream is not current and the general repair
(pairing, then building) where the walk stops. The general repair's every-index walk is the
reference here: on every corpus, generated and fuzzed history the forward walk either stops
(None) or gives exactly what the reference gives. Each reason the walk stops has a history that
needs it, and a test that the walk does stop there: a walk that guessed instead would differ.
"""

from __future__ import annotations

import collections
import copy
import operator
from collections.abc import Iterator

import pytest
from pydantic_ai import messages as pai
from pydantic_core import ValidationError

import histfix
from histfix._repair.forward import _CHECK_EVERY, _FIRST_CHECK, forward_walk, settled_with_ids
from histfix._repair.forward import repair as forward_repair
from histfix._repair.walk import repair_walk

from corpus import CASES
from dsl import Case, call, load, load_history, req, resp, ret, retry, system, text, user
from generate import random_history
from volume import sized


def assert_forward_equals_reference(history: list[pai.ModelMessage], last: bool) -> bool:
    """The forward walk stops or equals the every-index walk; True when it settled the history."""
    snapshot = copy.deepcopy(history)
    walked = forward_walk(history, last)
    reference = repair_walk(history, repair_last_response=last, every_index=True)
    assert forward_repair(history, last) == reference
    assert history == snapshot  # never mutates
    if walked is None:
        return False
    assert walked == reference
    return True


def forward_walk_equals_reference(history: list[pai.ModelMessage]) -> None:
    """The property on one generated history, both ways (tests/repair/test_fuzz.py checks every drawn one)."""
    assert_forward_equals_reference(history, True)
    assert_forward_equals_reference(history, False)


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_forward_walk_equals_the_reference_on_the_corpus(case: Case, last: bool) -> None:
    assert_forward_equals_reference(load_history(case), last)


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
def test_forward_walk_equals_the_reference_on_generated_histories(last: bool) -> None:
    """600 generated histories (few ids, so repeats, duplicates and late results are common). The
    walk must settle most of those that call no id twice (else the test above proves little, and
    repair() would run two walks): measured, 266 of the 320 such histories (83%), 266 of all 600."""
    settled = total = once = 0
    for seed in range(sized(600)):
        try:
            history = load(random_history(seed, 14))
        except ValidationError:
            continue  # the release cannot load what this seed drew
        total += 1
        ids = [
            p.tool_call_id
            for m in history
            if isinstance(m, pai.ModelResponse)
            for p in m.parts
            if isinstance(p, pai.ToolCallPart)
        ]
        calls_each_id_once = len(set(ids)) == len(ids)
        once += calls_each_id_once
        if assert_forward_equals_reference(history, last):
            assert calls_each_id_once  # a repeated id always stops the walk
            settled += 1
    assert settled >= once * 0.75, f"the forward walk settled only {settled} of {once} ({total} in all)"


def test_forward_walk_settles_what_repair_meets_most() -> None:
    """Clean conversations, a lost result request, an evicted head, and merges: all settled."""
    cases = [
        [req(user("q")), resp(call("get", "a")), req(ret("get", "a")), resp(text("done"))],
        [req(user("q")), resp(call("get", "a"), call("put", "b")), req(user("next"))],  # both dangle
        [req(ret("get", "gone"), user("q")), resp(text("hi"))],  # an orphan
        [req(user("q")), resp(call("get", "a")), req(user("more")), req(user("and more"))],  # a merge
    ]
    for raw in cases:
        history = load(raw)
        assert assert_forward_equals_reference(history, True), raw


#: One history for each reason the walk stops (see ``histfix._repair.forward``): in each, settling the
#: calls at the next response, or keeping call order, would give another output than upstream's.
STOPS = {
    "late result": [
        req(user("q")),
        resp(call("get", "a")),
        req(user("wait")),
        resp(text("still working")),
        req(ret("get", "a")),
    ],
    # the last response repeats an id and nothing reads the ledger before the end of the walk
    "id repeated in one response": [req(user("q")), resp(call("get", "a"), call("get", "a")), req(user("x"))],
    # upstream orders the two returns by each id's first call: b before a
    "batch with an id called before": [
        req(user("q")),
        resp(call("get", "b")),
        req(ret("get", "b")),
        resp(call("get", "a"), call("get", "b")),
        req(user("next")),
    ],
    # upstream orders the first batch's returns by when each id was called again
    "id called again after a batch": [
        req(user("q")),
        resp(call("get", "a"), call("get", "b")),
        req(user("next")),
        resp(call("get", "b")),
        req(user("more")),
    ],
    # upstream keeps a second result for an answered call; the walk took it for an orphan (the same
    # holds where the second result shares the first one's request)
    "second result for an answered call": [
        req(user("q")),
        resp(call("get", "a")),
        req(ret("get", "a")),
        resp(text("ok")),
        req(ret("get", "a"), user("again")),
    ],
    # dropped as an orphan either way, but the walk cannot tell this from the case above
    "result before its call": [req(ret("get", "a"), user("q")), resp(call("get", "a")), req(ret("get", "a"))],
    "run split while calls wait": [
        req(user("q")),
        resp(call("get", "a"), call("get", "b")),
        req(ret("get", "a"), instructions="one"),
        req(user("next"), instructions="two"),
        resp(text("ok")),
    ],
}


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
@pytest.mark.parametrize("name", STOPS)
def test_forward_walk_stops_where_it_cannot_settle(name: str, last: bool) -> None:
    history = load(STOPS[name])
    assert forward_walk(history, last) is None
    assert forward_repair(history, last) == repair_walk(history, repair_last_response=last)
    assert histfix.repair(history, repair_last_response=last, backend="histfix") == repair_walk(
        history, repair_last_response=last
    )


def _turns(count: int, tag: str) -> list[dict]:
    """``count`` clean tool turns, each calling an id of its own."""
    raw: list[dict] = []
    for turn in range(count):
        raw += [
            req(user("q")),
            resp(call("get", f"{tag}{turn}")),
            req(ret("get", f"{tag}{turn}")),
            resp(text("ok")),
        ]
    return raw


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_repeated_id_stops_the_walk_however_far_apart(where: str) -> None:
    """The ledger checks for repeats in bulk, the newest calls every ``_CHECK_EVERY`` messages and all at the end: a repeat
    read between two checks, or after the last one, still stops the walk, and repair() is right."""
    raw = _turns(3 * _CHECK_EVERY // 4, "t")
    repeat = [req(user("again")), resp(call("get", "t0")), req(ret("get", "t0")), resp(text("ok"))]
    history = load(repeat + raw if where == "first" else raw + repeat)  # "t0" twice, far apart
    assert len(history) > 2 * _CHECK_EVERY
    assert forward_walk(history) is None
    assert forward_repair(history) == repair_walk(history)
    assert forward_walk(load(raw)) == repair_walk(load(raw))  # without the repeat: settled


def test_a_healthy_history_is_only_checked() -> None:
    """The building loop does not run where the walk would pass every message through: the output
    is a new list of the input's very messages, equal to the reference's; with
    ``repair_last_response=False`` the last response's open calls leave it so too."""
    raw = [
        req(system("be brief"), user("q")),
        resp(call("get", "p1"), call("put", "p2")),
        req(ret("get", "p1"), ret("put", "p2"), user("and then")),  # a part after the results stays
        resp(call("get", "r1")),
        req(retry("try again", name="get", id="r1")),
        resp(text("ok")),
        *_turns(_CHECK_EVERY // 2, "h"),  # past several of the ledger's checks
    ]
    for last, history in (
        (True, load(raw)),
        (False, load([*raw, req(user("go")), resp(call("get", "open"))])),
    ):
        settled = settled_with_ids(history, last)
        assert settled is not None
        assert settled.built_from == len(history)
        assert settled.messages is not history
        assert all(map(operator.is_, settled.messages, history))
        assert len(settled.messages) == len(history)
        assert_forward_equals_reference(history, last)


#: A stretch of history holding one event, and the index in it where the building loop must start
#: when turns follow it, and when it ends the history (its length: after the last message).
EVENTS = {
    "orphan": ([req(ret("get", "gone"), user("q"))], 0, 0),
    "request run": ([req(user("q")), req(user("more"))], 1, 1),
    "results to gather": (
        [
            req(user("q")),
            resp(call("get", "x"), call("get", "y")),
            req(ret("get", "x"), user("n"), ret("get", "y")),
        ],
        2,
        2,
    ),
    # a dangling call is found where the next response comes, or at the end
    "dangling call": ([req(user("q")), resp(call("get", "d")), req(user("next")), resp(text("ok"))], 3, 3),
    "last call dangling": ([req(user("q")), resp(call("get", "d"))], 3, 2),
    "two responses": ([req(user("q")), resp(text("a")), resp(text("b"))], 2, 2),
}


@pytest.mark.parametrize("where", ["start", "middle", "last"])
@pytest.mark.parametrize("kind", EVENTS)
def test_the_building_loop_starts_at_the_first_event(kind: str, where: str) -> None:
    """Where the check-only loop hands over to the building loop, the output is the reference's,
    the first event in the first message, in the middle, or in the last (or after it: a dangling
    call the building loop closes at the end), and the messages before it are passed through."""
    stretch, followed, ending = EVENTS[kind]
    before = {"start": 0, "middle": 6, "last": 12}[where]
    history = load([*_turns(before, "b"), *stretch, *_turns(12 - before, "a")])
    settled = settled_with_ids(history)
    assert settled is not None
    assert settled.built_from == 4 * before + (ending if where == "last" else followed)
    assert assert_forward_equals_reference(history, True)
    assert all(map(operator.is_, settled.messages[: 4 * before], history))


@pytest.mark.parametrize("sequence", [tuple, collections.deque], ids=["tuple", "deque"])
def test_the_handover_reads_any_sequence(sequence: type) -> None:
    """The messages passed through before the first event are copied without a slice, which a
    Sequence need not take (a deque does not)."""
    history = load([*_turns(3, "b"), *EVENTS["request run"][0], *_turns(3, "a")])
    assert forward_repair(sequence(history)) == forward_repair(history) == repair_walk(history)


class _Counted(list[pai.ModelMessage]):
    """A history that counts the messages a walk reads through it."""

    read = 0

    def __iter__(self) -> Iterator[pai.ModelMessage]:
        for message in super().__iter__():
            self.read += 1
            yield message


def test_a_history_reusing_ids_is_given_up_early() -> None:
    """The first checks for a repeat come after ``_FIRST_CHECK`` messages and twice as many each
    time, so a repeat early in a long history stops the walk within about four times that, not
    after ``_CHECK_EVERY`` messages or at the end."""
    raw = _turns(3, "t") + _turns(3, "t") + _turns(_CHECK_EVERY, "u")  # "t0".."t2" twice, early
    history = _Counted(load(raw))
    assert forward_walk(history) is None
    assert history.read <= 4 * _FIRST_CHECK < _CHECK_EVERY
    assert forward_repair(history) == repair_walk(history)


def test_a_bad_element_is_named_as_by_the_general_repair() -> None:
    history = [*load([req(user("q"))]), {"kind": "request"}]
    with pytest.raises(TypeError, match=r"messages\[1\] is a builtins.dict"):
        forward_walk(history)  # type: ignore[arg-type]

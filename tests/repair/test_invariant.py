"""The fast path's invariant: copying the stretches between events changes nothing.

``repair_walk`` copies every stretch of the history outside ``pairing.events`` wholesale and works
message by message only around the events; ``every_index=True`` works through every message
instead. The two must agree on every corpus and generated history, on every release. A repair
rule that forgets to record its events must make them disagree: the last test forgets each
rule's events in turn and checks that the property notices on the corpus.
"""

from __future__ import annotations

import pytest
from pydantic_ai import messages as pai
from pydantic_core import ValidationError

from histfix._repair.pairing import Pairing, pair
from histfix._repair.walk import repair_walk

from corpus import CASES
from dsl import Case, load, load_history


def rule_events(history: list[pai.ModelMessage], pairing: Pairing) -> dict[str, set[int]]:
    """Each repair rule's events, worked out from what the pairing found, not from its events."""
    return {
        "merge": {i for i in range(1, len(history)) if type(history[i]) is type(history[i - 1])},
        "orphan": set(pairing.orphans),
        "scattered": set(pairing.scattered),
        "dangling": {i for response in pairing.dangling for i in (response, response + 1)},
    }


def assert_fast_path_holds(history: list[pai.ModelMessage], last: bool) -> None:
    fast = repair_walk(history, repair_last_response=last)
    slow = repair_walk(history, repair_last_response=last, every_index=True)
    assert fast == slow
    pairing = pair(history, last)
    assert set().union(*rule_events(history, pairing).values()) == pairing.events


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fast_path_equals_every_index_walk_on_the_corpus(case: Case, last: bool) -> None:
    assert_fast_path_holds(load_history(case), last)


def fast_path_equals_every_index_walk(history: list[pai.ModelMessage]) -> None:
    """The property on one generated history; tests/repair/test_fuzz.py checks it on every drawn one
    (one draw serves all the fuzz properties)."""
    assert_fast_path_holds(history, True)
    assert_fast_path_holds(history, False)


@pytest.mark.parametrize("rule", ["merge", "orphan", "scattered", "dangling"])
def test_a_rule_that_forgets_its_events_is_caught(rule: str) -> None:
    """Drop one rule's events from the pairing (as a rule that forgot to record them would):
    the fast path then passes damage through, and the property above must see it."""
    caught = []
    for case in CASES:
        try:
            history = load(case.history)
        except ValidationError:
            continue  # the release cannot load this case (its ``needs``)
        for last in (True, False):
            pairing = pair(history, last)
            others = [found for name, found in rule_events(history, pairing).items() if name != rule]
            pairing.events = set().union(*others)
            fast = repair_walk(history, repair_last_response=last, pairing=pairing)
            slow = repair_walk(history, repair_last_response=last, pairing=pairing, every_index=True)
            if fast != slow:
                caught.append(case.name)
    assert caught, f"forgetting the {rule!r} events went unnoticed on the whole corpus"

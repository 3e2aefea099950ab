"""Upstream is the oracle: histfix's own walk against upstream ``repair_messages``, side by side.

On 2.78.0+ (where upstream matches the newest behaviour) the two must agree on every corpus
history and on thousands of generated ones; on 2.60.0-2.68.x too, but for the histories that
carry a deferred-pause mark (their merge keeps it where 2.78.0 drops it). On 2.53.0-2.68.x each
known upstream divergence is recorded as a case that must still differ there, so the list cannot
silently go stale.
"""

from __future__ import annotations

import pytest
from packaging.version import Version
from pydantic_ai import messages as pai

import histfix
from histfix._release.switches import upstream_repair_is_current

from conftest import HAS_UPSTREAM_REPAIR, PYDANTIC_AI
from corpus import CASES
from dsl import Case, dump, load, load_history
from generate import random_history
from json_diff import differences
from oracle import UPSTREAM_AGREES_BUT_FOR_PAUSES, upstream_is_oracle
from strict import pairing_problems

pytestmark = pytest.mark.skipif(not HAS_UPSTREAM_REPAIR, reason="repair_messages arrived in 2.53.0")

#: The library's own switch: a pre-release of 2.78.0 counts as older, as it does for backend="auto".
CURRENT = upstream_repair_is_current()

#: Corpus cases where upstream repair_messages differs from the newest behaviour, and the release
#: that fixed each one (upstream-behaviour.md §3.1).
_FIFO = ("2.55.0", "before 2.55 duplicate ids are matched by a dict, not first-in first-out")
_MOVE = ("2.59.0", "before 2.59 parts between the results of an unmerged request stay put")
_PAUSE = ("2.78.0", "before 2.78 a merge keeps deferred_pause when any merged request has it")
KNOWN_DIVERGENCES: dict[str, tuple[str, str]] = {
    "E_duplicate_ids_one_return": _FIFO,
    "E2_duplicate_ids_two_returns": _FIFO,
    "F4_synth_order_follows_first_appearance_of_id": _FIFO,
    # 2.53-2.57 do not copy tool_kind either (2.58.0 started to), but there a core kind's return
    # cannot load back from the release's own JSON, so histfix leaves it off too and both agree
    # (M2_core_tool_kind_copied); custom kinds do not load at all before 2.58.0.
    "G2_toolless_retry_between_results_moved": _MOVE,
    "J3e_instructions_different_not_merged": _MOVE,
    "L_parts_between_results_moved": _MOVE,
    "L2_part_before_first_result_stays_synth_then_moved": _MOVE,
    "X_long_multi_turn_mixed": _MOVE,
    "G3_toolless_retry_not_hoisted_in_merge": (
        "2.60.0",
        "before 2.60 a tool-less retry prompt loads as RetryPromptPart and the merge hoists it",
    ),
    "P_pause_dropped_when_a_new_prompt_merges": _PAUSE,
    "P2_pause_dropped_open_frontier_kept": _PAUSE,
    "P4_pause_three_way_fold_needs_all": _PAUSE,
    "P6_pause_mark_must_be_exactly_true": _PAUSE,
    "P7_pause_beside_a_namespace_not_a_dict": _PAUSE,
}


def upstream(history: list[pai.ModelMessage], last: bool) -> list[pai.ModelMessage]:
    return pai.repair_messages(history, repair_last_response=last)  # type: ignore[attr-defined,no-any-return]


def ours(history: list[pai.ModelMessage], last: bool) -> list[pai.ModelMessage]:
    return histfix.repair(history, repair_last_response=last, backend="histfix")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_corpus_against_upstream(case: Case) -> None:
    history = load_history(case)
    theirs = upstream(history, case.repair_last_response)
    mine = ours(history, case.repair_last_response)
    fixed_in = KNOWN_DIVERGENCES.get(case.name)
    if fixed_in and Version(fixed_in[0]) > PYDANTIC_AI:
        assert dump(mine) != dump(theirs), f"upstream {PYDANTIC_AI} no longer differs: {fixed_in[1]}"
    else:  # no known divergence, or one this release already fixed
        assert dump(mine) == dump(theirs)
        assert mine == theirs


@pytest.mark.skipif(
    not (CURRENT or UPSTREAM_AGREES_BUT_FOR_PAUSES),
    reason="upstream matches the newest behaviour from 2.78.0, and but for pause marks from 2.60.0",
)
@pytest.mark.parametrize("block", range(20))
def test_generated_histories_against_upstream(block: int) -> None:
    for seed in range(block * 100, block * 100 + 100):
        history = load(random_history(seed))
        if not upstream_is_oracle(history):
            continue
        for last in (True, False):
            theirs = upstream(history, last)
            mine = ours(history, last)
            assert mine == theirs, (seed, last, dump(history))
            if last and not pairing_problems(theirs):
                assert not pairing_problems(mine)


#: Histories drawn from the installed release's own schema (tests/support/schema_strategies.py):
#: every part kind, field and literal the release declares, its own metadata keys; in blocks.
SCHEMA_BLOCKS = 4


@pytest.mark.skipif(
    not (CURRENT or UPSTREAM_AGREES_BUT_FOR_PAUSES),
    reason="upstream matches the newest behaviour from 2.78.0, and but for pause marks from 2.60.0",
)
@pytest.mark.parametrize("block", range(SCHEMA_BLOCKS))
def test_schema_generated_histories_against_upstream(block: int) -> None:
    """Each drawn history, both ``repair_last_response`` values: the same dump and the same messages.
    A failure names the first paths that differ (``[2].parts[0].ui_visibility: None != 'private'``)."""
    import schema_strategies

    histories = schema_strategies.sample()
    per_block = -(-len(histories) // SCHEMA_BLOCKS)
    failures = []
    for index in range(block * per_block, min(len(histories), (block + 1) * per_block)):
        history = schema_strategies.load(histories[index])
        if not upstream_is_oracle(history):
            continue
        for last in (True, False):
            theirs, mine = upstream(history, last), ours(history, last)
            found = differences(dump(mine), dump(theirs))
            if found or mine != theirs:
                failures.append(f"history {index}, repair_last_response={last}: {found or 'equal dumps'}")
    assert not failures, "\n".join(failures)


def test_known_divergences_name_corpus_cases() -> None:
    names = {case.name for case in CASES}
    assert set(KNOWN_DIVERGENCES) <= names

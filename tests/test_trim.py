"""keep_last_turns: cuts only where a user turn starts, never between a call and its result."""

from __future__ import annotations

import copy

import pytest
from pydantic_ai import messages as pai

import histfix

from dsl import call, dump, load, real, req, ret, retry, system, text, user
from generate import random_conversation
from strict import pairing_problems
from volume import sized


def conversation(turns: int) -> list[dict]:
    history = []
    for t in range(turns):
        at = 10 * t
        first = [system("you are helpful", at)] if t == 0 else []
        history += [
            req(*first, user(f"question {t}", at)),
            real(call("search", f"s{t}", {"q": t}), call("fetch", f"f{t}"), at=at + 1),  # parallel calls
            req(ret("search", f"s{t}", at=at + 2), ret("fetch", f"f{t}", at=at + 2)),
            real(text(f"answer {t}"), at=at + 3),
        ]
    return history


def test_keeps_last_turns_and_carries_system_prompt() -> None:
    history = load(conversation(4))
    out = histfix.keep_last_turns(history, 2)
    assert len(out) == 8
    assert out[1:] == history[9:]
    first = out[0]
    assert isinstance(first, pai.ModelRequest)
    assert [type(p).__name__ for p in first.parts] == ["SystemPromptPart", "UserPromptPart"]
    assert first.parts[0] == history[0].parts[0]
    assert first.parts[1:] == history[8].parts
    assert not pairing_problems(out)


def test_system_prompt_can_be_dropped() -> None:
    history = load(conversation(3))
    assert histfix.keep_last_turns(history, 1, keep_system_prompt=False) == history[8:]


def test_fewer_turns_than_asked_keeps_everything() -> None:
    history = load(conversation(2))
    out = histfix.keep_last_turns(history, 5)
    assert out == history
    assert out is not history
    assert histfix.keep_last_turns([], 1) == []


def test_never_starts_on_a_tool_result_or_splits_a_retry() -> None:
    # turn 2's prompt sits in the same request as the return of turn 1's call: not a turn start
    history = load(
        [
            req(user("one")),
            real(call("get", "a"), at=1),
            req(retry("bad args", name="get", id="a")),
            real(call("get", "a2"), at=2),
            req(ret("get", "a2"), user("two")),
            real(text("done"), at=3),
            req(user("three")),
            real(text("ok"), at=4),
        ]
    )
    assert histfix.keep_last_turns(history, 1) == history[6:]
    assert histfix.keep_last_turns(history, 2) == history  # only two turn starts exist


def test_call_answered_after_a_later_prompt_is_not_split() -> None:
    # a call answered only after the next user prompt: cutting at that prompt would orphan the result
    history = load(
        [
            req(user("one")),
            real(call("slow", "x"), at=1),
            req(user("two")),
            real(text("waiting"), at=2),
            req(ret("slow", "x")),
            real(text("done"), at=3),
            req(user("three")),
        ]
    )
    assert histfix.keep_last_turns(history, 2) == history
    assert histfix.keep_last_turns(history, 1) == history[6:]


def test_does_not_mutate_input() -> None:
    history = load(conversation(3))
    before = copy.deepcopy(history)
    histfix.keep_last_turns(history, 1)
    assert history == before


@pytest.mark.parametrize("seed", range(sized(200)))
def test_trimming_a_valid_conversation_keeps_it_valid(seed: int) -> None:
    """Property: every trim of a valid conversation is valid, a suffix, and starts a turn."""
    history = load(random_conversation(seed))
    assert not pairing_problems(history)
    for turns in range(1, 10):
        trimmed = histfix.keep_last_turns(history, turns)
        assert not pairing_problems(trimmed), dump(trimmed)
        start = len(history) - len(trimmed)
        assert trimmed[1:] == history[start + 1 :]
        first = trimmed[0]
        assert isinstance(first, pai.ModelRequest)
        assert any(isinstance(p, pai.UserPromptPart) for p in first.parts)
        if start:
            assert isinstance(first.parts[0], pai.SystemPromptPart)  # carried over from the head
            assert first.parts[1:] == history[start].parts


# --- trim_to_budget -----------------------------------------------------------------------------------


def parts_count(message: pai.ModelMessage) -> int:
    """A toy tokenizer: one token per part (any callable of a message works)."""
    return len(message.parts)


def test_budget_keeps_everything_that_fits() -> None:
    history = load(conversation(3))
    total = sum(histfix.estimate_tokens(m) for m in history)
    out = histfix.trim_to_budget(history, total)
    assert out == history
    assert out is not history


def test_budget_cuts_only_at_turn_starts_with_a_real_counter() -> None:
    history = load(conversation(4))  # each turn: 1 + 2 + 2 + 1 parts (turn 0 has a system prompt too)
    out = histfix.trim_to_budget(history, 13, count_tokens=parts_count)
    # two whole turns (6 parts each) + the carried system prompt (1) = 13
    assert len(out) == 8
    assert out[1:] == history[9:]
    assert isinstance(out[0].parts[0], pai.SystemPromptPart)
    assert sum(parts_count(m) for m in out) == 13
    out = histfix.trim_to_budget(history, 12, count_tokens=parts_count)
    assert len(out) == 4  # the carried system prompt makes two turns one part too many


def test_budget_without_system_prompt_carry() -> None:
    history = load(conversation(4))
    out = histfix.trim_to_budget(history, 12, count_tokens=parts_count, keep_system_prompt=False)
    assert out == history[8:]


def test_budget_too_small_for_the_last_turn_says_so() -> None:
    history = load(conversation(2))
    with pytest.raises(
        histfix.BudgetExceededError, match=r"needs an estimated 7 tokens, more than max_tokens=3"
    ) as info:
        histfix.trim_to_budget(history, 3, count_tokens=parts_count)
    assert isinstance(info.value, ValueError)
    assert (info.value.needed, info.value.max_tokens) == (7, 3)  # 6 parts + the carried system prompt


def test_budget_arguments() -> None:
    for bad in (0, -3, 2.5, "10", None, True):
        with pytest.raises(ValueError, match="max_tokens must be a positive int"):
            histfix.trim_to_budget([], bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="count_tokens must be callable"):
        histfix.trim_to_budget([], 10, count_tokens="len")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"trim_to_budget\(\) needs"):
        histfix.trim_to_budget("history", 10)  # type: ignore[arg-type]


def test_estimate_tokens_counts_content_and_args() -> None:
    (request,) = load([req(user("x" * 400))])
    assert histfix.estimate_tokens(request) == 4 + 100
    # a started group of four characters counts whole: an estimate that errs high keeps under budget
    for chars, tokens in ((0, 0), (1, 1), (401, 101), (403, 101), (404, 101), (405, 102)):
        (request,) = load([req(user("x" * chars))])
        assert histfix.estimate_tokens(request) == 4 + tokens, chars
    (response,) = load([real(call("get", "c1", {"q": "y" * 100}))])
    assert histfix.estimate_tokens(response) > 25


@pytest.mark.parametrize("seed", range(sized(150)))
def test_budget_trim_is_the_longest_valid_suffix(seed: int) -> None:
    """Property: the trimmed history is valid, fits, starts a turn, and one more turn would not fit."""
    history = load(random_conversation(seed))
    total = sum(parts_count(m) for m in history)
    for budget in range(1, total + 2, 3):
        try:
            trimmed = histfix.trim_to_budget(history, budget, count_tokens=parts_count)
        except histfix.BudgetExceededError:
            last_turn = histfix.keep_last_turns(history, 1)
            assert sum(parts_count(m) for m in last_turn) > budget
            continue
        assert sum(parts_count(m) for m in trimmed) <= budget
        assert not pairing_problems(trimmed)
        start = len(history) - len(trimmed)
        assert trimmed[1:] == history[start + 1 :]
        if start:
            turns = sum(
                1
                for m in trimmed
                if isinstance(m, pai.ModelRequest)
                and any(isinstance(p, pai.UserPromptPart) for p in m.parts)
                and not any(isinstance(p, pai.ToolReturnPart | pai.RetryPromptPart) for p in m.parts)
            )
            longer = histfix.keep_last_turns(history, turns + 1)
            assert len(longer) == len(history) or sum(parts_count(m) for m in longer) > budget


# --- what comes before the first turn (issue 12, defect 4) ----------------------------------------------


def sliced(turns: int) -> list[dict]:
    """A slice that opens on an orphaned result (the rest of a cut-off turn), then whole turns."""
    history = [req(ret("search", "gone", "late result")), real(text("answer to a lost question"), at=1)]
    for t in range(turns):
        history += [req(user(f"question {t}", 10 * t)), real(text(f"answer {t}"), at=10 * t + 1)]
    return history


@pytest.mark.parametrize("turns", range(1, 6))
def test_asking_for_as_many_turns_as_there_are_drops_the_stray_head(turns: int) -> None:
    """The same rule at every count: N of N turns cuts where N of N+1 would, at the first turn."""
    for asked in (turns, turns + 1):
        history = load(sliced(turns))
        out = histfix.keep_last_turns(history, asked)
        assert out == history[2:], asked
        assert not pairing_problems(out)
        assert histfix.check(out) == []


def test_a_history_with_no_turn_start_is_kept_whole() -> None:
    history = load([req(ret("search", "gone")), real(text("x"), at=1)])
    assert histfix.keep_last_turns(history, 3) == history  # no safe cut exists: nothing is dropped


def test_budget_drops_the_stray_head_too() -> None:
    history = load(sliced(3))
    total = sum(parts_count(m) for m in history)
    assert histfix.trim_to_budget(history, total, count_tokens=parts_count) == history[2:]
    assert histfix.trim_to_budget(history, total + 100, count_tokens=parts_count) == history[2:]

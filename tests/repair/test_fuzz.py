"""Property-based fuzzing of histfix's own walk (hypothesis), on every pinned release.

CI runs a fixed, derandomized set (HISTFIX_FUZZ_EXAMPLES, default 500 per property on
``FULL_FUZZ_RELEASES``, 150 on the other pinned releases). A long
campaign: ``HISTFIX_FUZZ_EXAMPLES=100000 HISTFIX_FUZZ_RANDOM=1 nox -s "tests(2.68.0)" -- tests/repair/test_fuzz.py``.
A failure is shrunk by hypothesis to a minimal history; add it to corpus.py as a named case.
"""

from __future__ import annotations

import copy
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic_ai import messages as pai
from test_forward import forward_walk_equals_reference
from test_invariant import fast_path_equals_every_index_walk
from test_leaves_as_is import shortcut_is_exact
from test_memory import memory_is_exact

import histfix
from histfix._release.pinned import NEWEST
from histfix._release.switches import upstream_repair_is_current

from conftest import PYDANTIC_AI
from dsl import MARKER, Json, load
from emulators import PROVIDER_APIS
from fuzz_strategies import histories
from oracle import UPSTREAM_AGREES_BUT_FOR_PAUSES, upstream_is_oracle
from schema_strategies import histories as schema_histories
from schema_strategies import quiet
from strict import pairing_problems

#: The releases that run the full derandomized set in CI: the oracle releases (2.60.0, the first whose
#: repair_messages is the newest behaviour but for the pause rule, and the newest) and the oldest; the others run a smaller fixed set
#: (the walk is the same code on every release; what differs is the types it builds, which the
#: smaller set and the corpus cover). HISTFIX_FUZZ_EXAMPLES overrides both.
FULL_FUZZ_RELEASES = frozenset({"1.0.0", "2.60.0", NEWEST})
EXAMPLES = int(
    os.environ.get("HISTFIX_FUZZ_EXAMPLES", "500" if str(PYDANTIC_AI) in FULL_FUZZ_RELEASES else "150")
)
fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("HISTFIX_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Upstream judges the walk on 2.78.0+ (the library's own switch: a pre-release counts as older, as it
#: does for backend="auto"), and on 2.60.0-2.68.x every history without a pause mark (``oracle``).
UPSTREAM_IS_ORACLE = upstream_repair_is_current() or UPSTREAM_AGREES_BUT_FOR_PAUSES


def ours(history: list[pai.ModelMessage], last: bool = True) -> list[pai.ModelMessage]:
    return histfix.repair(history, repair_last_response=last, backend="histfix")


def is_result(part: object) -> bool:
    return isinstance(part, pai.ToolReturnPart) or (
        isinstance(part, pai.RetryPromptPart) and part.tool_name is not None
    )


def synthesized(part: object) -> bool:
    """A return marked as made up; its metadata is any JSON value a stored history holds (a bool too)."""
    metadata = part.metadata if isinstance(part, pai.ToolReturnPart) else None
    return isinstance(metadata, dict) and metadata.get(MARKER) is True


def made_up(history: list[pai.ModelMessage], out: list[pai.ModelMessage]) -> list[pai.ToolReturnPart]:
    """The returns repair added to ``history``: marked, and not among its parts (a stored history
    may hold marked returns of its own, which repair keeps as they are)."""
    given = {id(p) for m in history for p in m.parts}
    return [
        p
        for m in out
        for p in m.parts
        if isinstance(p, pai.ToolReturnPart) and id(p) not in given and synthesized(p)
    ]


def orphan_results(history: list[pai.ModelMessage]) -> set[int]:
    """Identities of results no earlier response called (worked out independently of histfix)."""
    called: set[str] = set()
    orphans: set[int] = set()
    for message in history:
        for part in message.parts:
            if isinstance(message, pai.ModelResponse) and isinstance(part, pai.ToolCallPart):
                called.add(part.tool_call_id)
            elif (
                isinstance(message, pai.ModelRequest) and is_result(part) and part.tool_call_id not in called
            ):  # type: ignore[attr-defined]
                orphans.add(id(part))
    return orphans


def idempotent_deterministic_and_pure(history: list[pai.ModelMessage]) -> None:
    snapshot = copy.deepcopy(history)
    for last in (True, False):
        once = ours(history, last)
        assert ours(history, last) == once
        assert ours(once, last) == once
    assert history == snapshot


def calls_and_content_survive(history: list[pai.ModelMessage]) -> None:
    """Repair never adds or changes a call and never drops anything but orphaned results."""
    out = ours(history)
    calls_in = [id(p) for m in history for p in m.parts if isinstance(p, pai.ToolCallPart)]
    calls_out = [id(p) for m in out for p in m.parts if isinstance(p, pai.ToolCallPart)]
    assert calls_out == calls_in
    orphans = orphan_results(history)
    kept_in = Counter(id(p) for m in history for p in m.parts if id(p) not in orphans)
    added = {id(p) for p in made_up(history, out)}
    kept_out = Counter(id(p) for m in out for p in m.parts if id(p) not in added)
    assert kept_out == kept_in  # every non-orphan part survives, nothing else appears


def synthesized_returns_answer_unanswered_calls(history: list[pai.ModelMessage]) -> None:
    out = ours(history)
    calls = Counter(
        (p.tool_call_id, p.tool_name) for m in history for p in m.parts if isinstance(p, pai.ToolCallPart)
    )
    added = made_up(history, out)
    made = Counter((p.tool_call_id, p.tool_name) for p in added)
    for key, count in made.items():
        assert count <= calls[key]
    if not made:
        return
    # each one follows the response that made its call
    added_ids = {id(p) for p in added}
    called_so_far: set[tuple[str, str]] = set()
    for message in out:
        for part in message.parts:
            if isinstance(part, pai.ToolCallPart):
                called_so_far.add((part.tool_call_id, part.tool_name))
            elif id(part) in added_ids:
                assert (part.tool_call_id, part.tool_name) in called_so_far  # type: ignore[attr-defined]


def equals_upstream(history: list[pai.ModelMessage]) -> None:
    """Where repair_messages is the newest behaviour for this history, our walk returns exactly what it returns."""
    if not upstream_is_oracle(history):
        return
    for last in (True, False):
        theirs = pai.repair_messages(history, repair_last_response=last)  # type: ignore[attr-defined]
        mine = ours(history, last)
        assert mine == theirs
        if last and not pairing_problems(theirs):
            assert not pairing_problems(mine)


def check_agrees_with_repair(history: list[pai.ModelMessage]) -> None:
    """check(h) is empty only when repair changes nothing, and names something whenever it does."""
    problems = histfix.check(history)
    repaired = ours(history)
    if not problems:
        assert repaired == history
    if repaired != history:
        assert problems
    if not pairing_problems(repaired):
        assert histfix.check(repaired) == []


#: The profiles a drawn history is repaired for, one per example: each API's, "any", and a model
#: whose profile has a pass of its own (Bedrock's non-Claude models: tool_results_alone).
TARGETS = (*PROVIDER_APIS, "any", "bedrock:us.meta.llama3-3-70b-instruct-v1:0")
_targets = st.sampled_from(TARGETS)


def profile_idempotent_deterministic_and_pure(history: list[pai.ModelMessage], target: str) -> None:
    """``repair(h, provider=P)``: the same twice, a fixed point, and the input untouched; or, for a
    history with nothing sendable, the same ValueError every time."""
    snapshot = copy.deepcopy(history)
    try:
        once = histfix.repair(history, provider=target)
    except ValueError as refused:
        with pytest.raises(ValueError) as again:
            histfix.repair(history, provider=target)
        assert str(again.value) == str(refused)
    else:
        assert histfix.repair(history, provider=target) == once
        assert histfix.repair(once, provider=target) == once
    assert history == snapshot


#: Every property above, checked on each drawn history (the oracle only where it is current).
PROPERTIES = [
    idempotent_deterministic_and_pure,
    calls_and_content_survive,
    synthesized_returns_answer_unanswered_calls,
    check_agrees_with_repair,
    fast_path_equals_every_index_walk,  # the walk's copy-between-events invariant (test_invariant.py)
    forward_walk_equals_reference,  # the one-walk fast path of repair() (test_forward.py)
    shortcut_is_exact,  # a history the repair leaves as it is, returned without it (test_leaves_as_is.py)
    memory_is_exact,  # the processor's memory, request after request (test_memory.py)
    *([equals_upstream] if UPSTREAM_IS_ORACLE else []),
]


@fuzz
@given(histories, _targets)
def test_properties(raw: list[Json], target: str) -> None:
    """Each property on the same EXAMPLES histories: drawing a history costs more than checking it,
    so one draw serves every property (and one drawn provider profile, of TARGETS, the profile
    property); a failure names its property in the traceback and is shrunk as usual."""
    history = load(raw)
    for check_property in PROPERTIES:
        check_property(history)
    profile_idempotent_deterministic_and_pure(history, target)


#: Histories drawn from the installed release's own schema (tests/support/schema_strategies.py):
#: every part kind and field it declares, which the histories above name only as far as someone
#: wrote them. A draw costs about ten times one of those, hence a fifth as many examples: 100 on
#: the full fuzz releases, 30 elsewhere.
SCHEMA_EXAMPLES = max(1, EXAMPLES // 5)
_REQUEST: Json = {"kind": "request", "parts": []}


@settings(fuzz, max_examples=SCHEMA_EXAMPLES)
@given(schema_histories, _targets)
# what this test found, shrunk (it runs them first, on every release): a signed thinking response
# merged into a provider's response after the signature rules ran (``any`` was no fixed point),
# and a return whose metadata is a bool
@example(
    [
        _REQUEST,
        {"kind": "response", "parts": [{"content": "a", "signature": "a", "part_kind": "thinking"}]},
        {"kind": "response", "provider_name": "a", "parts": [{"tool_name": "a", "part_kind": "tool-call"}]},
    ],
    "any",
)
@example(
    [
        _REQUEST,
        {
            "kind": "response",
            "parts": [
                {"tool_name": "a", "part_kind": "tool-call"},
                {"tool_name": "a", "tool_call_id": "c", "part_kind": "tool-call"},
            ],
        },
        {
            "kind": "request",
            "parts": [
                {
                    "tool_name": "a",
                    "content": None,
                    "tool_call_id": "c",
                    "metadata": True,
                    "part_kind": "tool-return",
                }
            ],
        },
    ],
    "openai-chat",
)
def test_properties_on_schema_histories(raw: list[Json], target: str) -> None:
    """The same properties on histories of every part kind and field the release declares."""
    with quiet():
        history = load(raw)
        for check_property in PROPERTIES:
            check_property(history)
        profile_idempotent_deterministic_and_pure(history, target)

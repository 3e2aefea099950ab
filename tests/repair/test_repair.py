"""histfix.repair on the named corpus: the expected history, on every release, by every path.

The expected outputs are the newest upstream release's (checked against upstream itself in
test_differential.py on 2.60.0+). Here each is loaded in the installed release's own types.
"""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._release import table
from histfix._release.switches import has, upstream_repair_is_current
from histfix._repair.pairing import pair

from corpus import CASES
from dsl import Case, call, dump, load, load_history, req, resp, ret, text, user
from generate import random_history
from strict import pairing_problems
from volume import sized

BACKENDS = ["auto", "histfix"]
CASES_BY_NAME = {case.name: case for case in CASES}


def load_case(case: Case) -> tuple[list[pai.ModelMessage], list[pai.ModelMessage]]:
    """History and expected output; skipped where the release cannot represent them (``needs``)."""
    return load_history(case), load_history(dataclasses.replace(case, history=case.expected))


def test_corpus_is_large_and_uniquely_named() -> None:
    names = [case.name for case in CASES]
    assert len(names) >= 40
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_expected_output(case: Case, backend: histfix.Backend) -> None:
    history, expected = load_case(case)
    out = histfix.repair(history, repair_last_response=case.repair_last_response, backend=backend)
    assert dump(out) == dump(expected)
    assert out == expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_idempotent_deterministic_pure(case: Case, backend: histfix.Backend) -> None:
    history, _ = load_case(case)
    snapshot = copy.deepcopy(history)
    identities = [id(m) for m in history]
    parts = [list(m.parts) for m in history]
    once = histfix.repair(history, repair_last_response=case.repair_last_response, backend=backend)
    assert history == snapshot  # nothing mutated, not even inside the messages
    assert [id(m) for m in history] == identities
    assert [list(m.parts) for m in history] == parts
    assert once is not history
    again = histfix.repair(history, repair_last_response=case.repair_last_response, backend=backend)
    assert json.dumps(dump(again)) == json.dumps(dump(once))  # byte-identical
    twice = histfix.repair(once, repair_last_response=case.repair_last_response, backend=backend)
    assert twice == once


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_output_loads_back_on_this_release(case: Case, backend: histfix.Backend) -> None:
    """Never write what the installed release cannot read back from its own JSON."""
    history = load_history(case)
    out = histfix.repair(history, repair_last_response=case.repair_last_response, backend=backend)
    adapter = pai.ModelMessagesTypeAdapter
    assert adapter.validate_json(adapter.dump_json(out)) == out


#: Cases whose input repeats a result for an answered call: repair keeps those (so does upstream).
KEEPS_DUPLICATES = {
    "F2_duplicate_return_for_answered_call_kept",
    "F2b_duplicate_return_in_later_request_kept",
    "F2c_stale_duplicate_does_not_answer_reused_id",
    "X_retry_and_return_for_one_call",
}


@pytest.mark.parametrize("case", [c for c in CASES if c.repair_last_response], ids=lambda c: c.name)
def test_output_passes_strict_pairing(case: Case) -> None:
    history, _ = load_case(case)
    problems = pairing_problems(histfix.repair(history))
    if case.name in KEEPS_DUPLICATES:
        assert problems and all(p.startswith("Duplicate tool result") for p in problems)
    else:
        assert problems == []


@pytest.mark.parametrize("seed", range(sized(400)))
def test_random_histories_idempotent_and_pure(seed: int) -> None:
    history = load(random_history(seed))
    snapshot = copy.deepcopy(history)
    for last in (True, False):
        once = histfix.repair(history, repair_last_response=last, backend="histfix")
        assert histfix.repair(once, repair_last_response=last, backend="histfix") == once
    assert history == snapshot


def test_auto_delegates_exactly_where_upstream_is_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` calls upstream ``repair_messages`` on 2.78.0+ (once per repair of a history the
    pairing finds something to change in; one it leaves as it is costs a check) and never before."""
    upstream = getattr(pai, "repair_messages", None)
    calls: list[int] = []

    def counting(history: list[pai.ModelMessage], **options: bool) -> list[pai.ModelMessage]:
        calls.append(len(history))
        return upstream(history, **options)  # type: ignore[misc,no-any-return]

    if upstream is not None:
        monkeypatch.setattr(pai, "repair_messages", counting)
    histories = [load(random_history(seed)) for seed in range(50)]
    for history in histories:
        assert histfix.repair(history) == histfix.repair(history, backend="histfix")
    changed = [history for history in histories if pair(history, True).events]
    assert 0 < len(changed) < len(histories)  # both ways are taken
    assert len(calls) == (len(changed) if upstream_repair_is_current() else 0)
    if upstream is not None and not upstream_repair_is_current():
        # 2.53-2.68: a history this release's repair_messages gets wrong comes out as the walk's
        history = load_history(CASES_BY_NAME["P_pause_dropped_when_a_new_prompt_merges"])
        assert dump(histfix.repair(history)) != dump(upstream(history))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_new_request_is_the_constructors_request(case: Case) -> None:
    """``_folding.new_request`` skips the constructor for checked parts: on every request of the
    corpus, its request equals the constructor's, field by field, with the same fields set."""
    from histfix._repair.folding import new_request

    for message in load_history(case):
        if not isinstance(message, pai.ModelRequest):
            continue
        fields = {"instructions": message.instructions or "be brief"}
        if has(table.REQUEST_TIMESTAMP):
            fields["timestamp"] = message.timestamp
        made = new_request(list(message.parts), **fields)
        built = pai.ModelRequest(parts=list(message.parts), **fields)
        assert made == built
        assert vars(made) == vars(built)


@pytest.mark.skipif(not has(table.REQUEST_METADATA), reason="ModelRequest.metadata arrived in 1.20.0")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namespace_json_cannot_hold_merges_as_any_dict(backend: histfix.Backend) -> None:
    """In memory a namespace may have keys that are not strings: upstream counts any dict as a
    namespace (2.42.0-2.78.0 alike), so the merge keeps those keys, and the pause mark where every
    request carries it. No JSON history can say this, so it is no corpus case."""
    ns = "__pydantic_ai__"
    first, second, third, answer = load(
        [req(user("a")), req(user("b")), req(user("c")), resp(text("ok"), at=10)]
    )
    history = [
        dataclasses.replace(first, metadata={ns: {1: "one", "deferred_pause": True}}),
        dataclasses.replace(second, metadata={ns: {(2, 3): "pair", "deferred_pause": True}}),
        answer,
        dataclasses.replace(third, metadata={ns: {4: "four", "deferred_pause": True}}),
        dataclasses.replace(third, metadata={"app": 5}),
    ]
    out = histfix.repair(history, backend=backend)
    assert [message.metadata for message in out] == [  # type: ignore[union-attr]
        {ns: {1: "one", "deferred_pause": True, (2, 3): "pair"}},
        None,
        {ns: {4: "four"}},
    ]
    if upstream_repair_is_current():
        assert out == pai.repair_messages(history)  # type: ignore[attr-defined]


def test_calls_open_at_the_end_are_listed_by_first_call() -> None:
    """A response's dangling calls are listed in the order their ids were first called, as upstream
    synthesizes their returns: ``a``, answered once and called again, goes before ``c``, although
    ``c`` stayed open longer. The pairing reads the history again for ``a``'s first call and stops
    there; ``b`` and ``c``, never answered, keep the order they were opened in, after it."""
    history = load(
        [
            req(user("q")),
            resp(call("get", "a")),
            req(ret("get", "a", "r")),
            resp(call("get", "b")),
            req(user("more")),
            resp(call("get", "c"), call("get", "a")),
        ]
    )
    dangling = pair(history, True).dangling
    assert [d.call_id for d in dangling[3]] == ["b"]
    assert [d.call_id for d in dangling[5]] == ["a", "c"]
    out = histfix.repair(history, backend="histfix")
    assert [part.tool_call_id for part in out[-1].parts] == ["a", "c"]

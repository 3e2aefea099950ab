"""A history the repair would leave as it is costs a check: the repair returns it without running.

Where the pairing walk finds no event (``engine.leaves_as_is``), ``repair`` and ``repair_report``
return a new list of the input's messages and run neither the building walk nor upstream's
``repair_messages``. That is exact only if the repair they skip would return the input too: the
property below runs that repair (histfix's every-index walk, and upstream's where the shortcut
stands in for it) on every corpus, generated and fuzzed history (tests/repair/test_fuzz.py), both
ways of ``repair_last_response``, and compares dumps. The last tests check that the shortcut is taken.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import messages as pai
from pydantic_core import ValidationError

import histfix
from histfix._release import table
from histfix._release.switches import has, upstream_repair_is_current
from histfix._repair.engine import leaves_as_is
from histfix._repair.pairing import pair
from histfix._repair.report import repair_with_changes
from histfix._repair.walk import repair_walk

from corpus import CASES
from dsl import Case, call, dump, load, load_history, req, resp, ret, text, user
from generate import random_history
from volume import sized

#: The engines a ``backend=`` can name on this release.
ENGINES = ("histfix", "upstream") if has(table.REPAIR_MESSAGES) else ("histfix",)


def full_repair(history: list[pai.ModelMessage], engine: str, last: bool) -> list[pai.ModelMessage]:
    """The repair the shortcut skips: the walk working through every index, or upstream's own."""
    if engine == "histfix":
        return repair_walk(history, repair_last_response=last, every_index=True)
    return pai.repair_messages(history, repair_last_response=last)  # type: ignore[attr-defined,no-any-return]


def assert_shortcut_exact(history: list[pai.ModelMessage], last: bool) -> bool:
    """Where ``leaves_as_is`` holds for an engine, its full repair returns the input (dump-equal),
    and ``repair``/``repair_report`` return a new list of the very messages with no change.
    True when it held for histfix's engine."""
    pairing = pair(history, last)
    taken = False
    for engine in ENGINES:
        if not leaves_as_is(pairing, engine):  # type: ignore[arg-type]
            continue
        taken = taken or engine == "histfix"
        assert dump(full_repair(history, engine, last)) == dump(history), engine
        for orphans in ("drop", "note"):
            options: Any = {"repair_last_response": last, "backend": engine, "orphans": orphans}
            repaired = histfix.repair(history, **options)
            report = histfix.repair_report(history, **options)
            for messages in (repaired, report.messages):
                assert messages is not history
                assert len(messages) == len(history)
                assert all(map(lambda a, b: a is b, messages, history))
            assert report.changes == ()
    if taken:
        assert repair_with_changes(history, last).changes == ()
    return taken


def shortcut_is_exact(history: list[pai.ModelMessage]) -> None:
    """The property on one drawn history, both ways (tests/repair/test_fuzz.py checks every draw)."""
    assert_shortcut_exact(history, True)
    assert_shortcut_exact(history, False)


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_shortcut_is_exact_on_the_corpus(case: Case, last: bool) -> None:
    assert_shortcut_exact(load_history(case), last)


def test_shortcut_is_exact_on_generated_histories() -> None:
    """1,000 generated histories (this session's share of them), both ways; the shortcut must be
    taken on a fair share of them, else the property proves little (measured on 1.0.0: 164 of
    1,955 loaded ones)."""
    taken = total = 0
    for seed in range(sized(1000)):
        try:
            history = load(random_history(seed, 8))
        except ValidationError:
            continue  # the release cannot load what this seed drew
        for last in (True, False):
            total += 1
            taken += assert_shortcut_exact(history, last)
    assert taken >= total // 20, f"the shortcut held on only {taken} of {total}"


def healthy() -> list[pai.ModelMessage]:
    return load(
        [
            req(user("weather?")),
            resp(call("weather", "call_1", {"city": "Paris"}), model_name="m"),
            req(ret("weather", "call_1", "sunny")),
            resp(text("Sunny."), model_name="m"),
        ]
    )


def broken() -> list[pai.ModelMessage]:
    return load([req(user("weather?")), resp(call("weather", "call_1"), model_name="m"), req(user("and?"))])


def test_a_healthy_history_runs_no_building_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """repair_report (whose changes need the general walk) and repair with upstream's engine on a
    release where it is current: neither walk nor upstream's repair runs on a healthy history."""
    import histfix._repair.report as report_module

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the repair ran on a history it leaves as it is")

    monkeypatch.setattr(report_module, "repair_with_changes", never)
    history = healthy()
    assert histfix.repair_report(history).messages == history
    assert histfix.repair_report(history, backend="histfix").changes == ()
    with pytest.raises(AssertionError, match="the repair ran"):
        histfix.repair_report(broken())


@pytest.mark.skipif(not upstream_repair_is_current(), reason="upstream's repair is the newest from 2.78.0")
def test_upstreams_repair_runs_only_where_it_changes_something(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a release whose repair_messages is current, ``backend="auto"`` delegates to it: on a healthy
    history it is not called (by repair, repair_report, a profile or the processor), on a broken one it is."""
    calls: list[int] = []
    upstream = pai.repair_messages  # type: ignore[attr-defined]

    def counted(messages: Any, **kwargs: Any) -> Any:
        calls.append(len(messages))
        return upstream(messages, **kwargs)

    monkeypatch.setattr(pai, "repair_messages", counted)
    history = healthy()
    assert histfix.backend_info().backend == "upstream"
    histfix.repair(history)
    histfix.repair_report(history)
    histfix.repair(history, provider="anthropic")
    histfix.RepairProcessor()(history)
    assert calls == []
    histfix.repair(broken())
    assert calls == [3]

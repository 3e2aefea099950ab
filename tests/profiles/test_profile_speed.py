"""The shortcuts the profiles take for speed give exactly what the plain reading gives, on the
installed release (issue 10 item 8): the survey's facts, the fast clones, the fast id hash and the
runner's hand-off of an unchanged list. Not timed: the benchmark measures speed."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import itertools
import operator
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles import call_ids as _call_ids
from histfix._profiles import targets as _providers
from histfix._profiles.scan import Scan, Survey
from histfix._records.parts import is_result
from histfix._repair import forward as _forward
from histfix._repair.folding import with_call_id, with_parts
from histfix._repair.pairing import pair

from corpus import CASES
from dsl import call, dump, load, loadable, req, resp, ret, text, user
from emulators import PROVIDER_APIS as EMULATED_APIS
from generate import random_conversation, random_history
from volume import sized


def histories() -> list[list[pai.ModelMessage]]:
    """Every corpus case the release loads, and generated histories (damaged and valid)."""
    found = [history for _, history in loadable(CASES)]
    found += [load(random_history(seed)) for seed in range(sized(150))]
    found += [load(random_conversation(seed)) for seed in range(sized(30))]
    return found


HISTORIES = histories()


def test_the_profiles_name_the_same_apis_as_the_emulators() -> None:
    assert _providers.PROVIDER_APIS == EMULATED_APIS


def plain_call_ids(history: list[pai.ModelMessage]) -> list[str]:
    return [
        part.tool_call_id
        for message in history
        if isinstance(message, pai.ModelResponse)
        for part in message.parts
        if isinstance(part, pai.ToolCallPart)
    ]


def test_the_survey_reads_what_a_plain_loop_reads() -> None:
    for history in HISTORIES:
        facts = Survey(history)
        parts = [part for message in history for part in message.parts]
        assert facts.part_classes == {type(part) for part in parts}
        assert facts.empty_message() == any(not message.parts for message in history)
        assert facts.call_ids() == plain_call_ids(history)
        texts = [p.content for p in parts if isinstance(p, (pai.TextPart, pai.UserPromptPart))]
        tool = [
            p for p in parts if isinstance(p, (pai.ToolCallPart, pai.ToolReturnPart, pai.RetryPromptPart))
        ]
        found = facts.tool_parts()
        assert len(found.parts) == len(tool) and all(map(operator.is_, found.parts, tool))
        assert found.ids == [p.tool_call_id for p in tool] and found.classes == [type(p) for p in tool]
        assert [
            facts.flat[k] for k in itertools.compress(range(len(facts.flat)), found.chosen)
        ] == found.parts
        assert list(facts.text_contents()) == texts
        assert facts.several_parts() == [i for i, m in enumerate(history) if len(m.parts) > 1]
        request_parts = [part for message in history if message.kind == "request" for part in message.parts]
        assert list(facts.request_parts()) == request_parts
        for kinds in (
            {pai.SystemPromptPart},
            {pai.SystemPromptPart, pai.UserPromptPart},
            set(),
            facts.part_classes,
        ):
            expected = all(type(part) in kinds for part in request_parts)
            assert facts.requests_hold_only(frozenset(kinds)) == expected
        places = [(i, j) for i, message in enumerate(history) for j in range(len(message.parts))]
        assert [facts.position(k) for k in range(len(facts.flat))] == places
        assert facts.consecutive_responses() == any(
            a.kind == b.kind == "response" for a, b in itertools.pairwise(history)
        )
        assert facts.empty_instructions() == any(
            isinstance(message, pai.ModelRequest) and message.instructions == "" for message in history
        )
        every_id = {
            part.tool_call_id for part in parts if isinstance(getattr(part, "tool_call_id", None), str)
        }
        assert _call_ids.all_ids(list(history), Scan()) == every_id


def test_the_pairing_walk_sees_the_calls_a_plain_loop_reads() -> None:
    """What the profile runner hands the id passes instead of a survey of the input (and what
    decides whether upstream must run too), on every history, both ways of the last response."""
    for history, last in itertools.product(HISTORIES, (True, False)):
        pairing = pair(history, last)
        ids = plain_call_ids(history)
        assert pairing.call_ids_seen() == set(ids)
        assert (pairing.call_count, "" in pairing.call_ids_seen()) == (len(ids), "" in ids)
        toolless = any(
            isinstance(part, pai.RetryPromptPart) and part.tool_name is None
            for message in history
            if isinstance(message, pai.ModelRequest)
            for part in message.parts
        )
        assert pairing.toolless_retry == toolless
        mine, scan = list(history), Scan()
        scan.remember_pairing(mine, pairing)
        from_pairing = scan.call_id_facts(mine)
        from_survey = scan.call_id_facts(list(history))  # another list: read from its survey
        assert from_pairing == from_survey
        assert from_pairing.reused == (len(set(ids)) != len(ids))


def test_the_pairing_is_kept_for_the_same_list_only() -> None:
    history = load([req(user("q")), resp(call("f", "a"), call("f", "a"))])
    mine, scan = list(history), Scan()
    scan.remember_pairing(mine, pair(load([req(user("q")), resp(call("f", "b"))]), True))  # another's
    assert scan.call_id_facts(mine).ids == {"b"}  # trusted for that very list object...
    assert scan.call_id_facts(list(mine)) == (False, True, {"a"})  # ...and no other
    mine.append(history[0])  # nor the same list changed in place
    assert scan.call_id_facts(mine) == (False, True, {"a"})


def test_the_survey_is_kept_for_the_same_list_only() -> None:
    history = load([req(user("q")), resp(call("f", "a"))])
    mine, scan = list(history), Scan()
    assert scan.survey(mine) is scan.survey(mine)
    assert scan.survey(list(mine)) is not scan.survey(mine)
    assert Scan().survey(mine) is not scan.survey(mine)  # a scan's facts are its run's alone
    mine.append(history[0])  # a list changed in place (never by the passes) is surveyed again
    assert len(scan.survey(mine).lens()) == 3


class _CountedParts(list[Any]):
    """A message's parts that note each time they are iterated."""

    reads: ClassVar[list[int]] = []

    def __iter__(self) -> Iterator[Any]:
        self.reads.append(id(self))
        return super().__iter__()


def test_sends_nothing_stops_at_the_first_request_that_sends_something() -> None:
    """The runner's last verdict reads the requests' parts only until one sends something (on a
    real history the first prompt): the survey's ``request_parts`` is lazy. And it gives the plain
    reading's verdict on every history."""
    from histfix._profiles.unsent import sends_nothing, unsent_request_part

    first = _CountedParts([pai.UserPromptPart("q")])
    later = _CountedParts([pai.UserPromptPart("again")])
    history = [
        pai.ModelRequest(parts=first),
        pai.ModelResponse(parts=[pai.TextPart("a")]),
        pai.ModelRequest(parts=later),
    ]
    scan, target = Scan(), _providers.resolve_provider("any")
    scan.survey(history)  # the survey itself reads every part once
    _CountedParts.reads.clear()
    assert not sends_nothing(history, target, scan)
    assert _CountedParts.reads == [id(first)]  # the later request was never read
    for history in HISTORIES:
        quiet = all(
            unsent_request_part(part)
            for message in history
            if message.kind == "request"
            for part in message.parts
        )
        if not quiet:  # what the lazy read decides alone
            assert not sends_nothing(history, target, Scan())


def test_the_detects_take_their_passes_early_exits() -> None:
    """``check``'s detects for thinking signatures, late results and alternating roles answer from
    the survey where their passes do (no thinking class, no request of several parts, no two
    responses in a row): no message's parts are read again. On every history they find what a
    plain reading finds (the checks' own tests hold them to the passes)."""
    from histfix._profiles.rules import order, thinking

    first = _CountedParts([pai.UserPromptPart("q")])
    later = _CountedParts([pai.TextPart("a")])
    history = [pai.ModelRequest(parts=first), pai.ModelResponse(parts=later)]
    scan, target = Scan(), _providers.resolve_provider("any")
    scan.survey(history)
    _CountedParts.reads.clear()
    assert thinking.detect_thinking_transfers(history, target, scan) == []
    assert order.detect_results_first(history, target, scan) == []
    assert order.detect_alternating_roles(history, target, scan) == []
    assert _CountedParts.reads == []
    for history in HISTORIES:
        late = [
            i
            for i, m in enumerate(history)
            if isinstance(m, pai.ModelRequest) and order._results_late(m, is_result)
        ]
        found = order.detect_results_first(history, target, Scan())
        assert [f.problem.message_index for f in found] == late


def test_the_mistral_empty_pass_reads_only_the_last_message() -> None:
    """For Mistral alone, no_empty_content drops only an empty last request (it does not refuse empty
    text), so it reads no text and makes no survey; what it returns is the general pass's answer."""
    from histfix._profiles.rules.empty import no_empty_content

    target = _providers.resolve_provider("mistral")
    blank = _CountedParts([pai.TextPart("")])
    history = [
        pai.ModelRequest(parts=_CountedParts([pai.UserPromptPart("q")])),
        pai.ModelResponse(parts=blank),
        pai.ModelRequest(parts=[pai.UserPromptPart("")]),
    ]
    _CountedParts.reads.clear()
    assert no_empty_content(history, target, Scan()) == (history, [])
    assert _CountedParts.reads == []
    emptied = [*history, pai.ModelResponse(parts=[pai.TextPart("a")]), pai.ModelRequest(parts=[])]
    out, changes = no_empty_content(emptied, target, Scan())
    assert out == emptied[:-1] and [c.kind for c in changes] == ["dropped_empty"]


def part_samples() -> list[object]:
    """One part of every class with a ``tool_call_id`` the release loads from the corpus and the
    generated histories, plus native parts when the release has them."""
    found: dict[type, object] = {}
    for history in HISTORIES:
        for message in history:
            for part in message.parts:
                if hasattr(part, "tool_call_id"):
                    found.setdefault(type(part), part)
    return list(found.values())


@pytest.mark.parametrize("part", part_samples(), ids=lambda part: type(part).__name__)
def test_the_fast_id_clone_equals_dataclasses_replace(part: object) -> None:
    clone = with_call_id(part, "fresh1234")
    expected = dataclasses.replace(part, tool_call_id="fresh1234")  # type: ignore[type-var]
    assert clone == expected and type(clone) is type(expected)
    assert vars(clone) == vars(expected)
    assert part.tool_call_id != "fresh1234"  # type: ignore[attr-defined]  # the original is untouched


def test_the_fast_message_clone_equals_dataclasses_replace() -> None:
    for history in HISTORIES:
        for message in history:
            parts = [with_call_id(p, "x") if hasattr(p, "tool_call_id") else p for p in message.parts]
            assert with_parts(message, parts) == dataclasses.replace(message, parts=parts)


def test_every_part_class_keeps_its_fields_in_its_dict() -> None:
    """What the fast clones rest on, for every part class of the release: a dataclass, unfrozen,
    with no field stored outside ``__dict__`` (no slot holds a value)."""
    for name, kind in vars(pai).items():
        if not (inspect.isclass(kind) and kind.__module__ == pai.__name__ and name.endswith("Part")):
            continue
        if not dataclasses.is_dataclass(kind) or inspect.isabstract(kind):
            continue
        assert not kind.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
        slots = [slot for base in kind.__mro__ for slot in vars(base).get("__slots__", ())]
        assert not slots, (name, slots)


def reference_hashed_id(seed: str, taken: set[str]) -> str:
    """The fresh id as first written: nine base62 digits of the hash, one divmod at a time."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    attempt = 0
    while True:
        text = f"{seed}#{attempt}" if attempt else seed
        number = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        chars = []
        for _ in range(9):
            number, digit = divmod(number, 62)
            chars.append(alphabet[digit])
        found = "".join(chars)
        if found not in taken:
            taken.add(found)
            return found
        attempt += 1


def test_the_fast_id_hash_equals_the_digit_by_digit_one() -> None:
    for n in range(5000):
        seed = f"reused\x00call_{n % 97}\x00{n}"
        assert _call_ids.hashed_id(seed, set()) == reference_hashed_id(seed, set())
    taken: set[str] = set()
    first = _call_ids.hashed_id("s", taken)
    assert _call_ids.hashed_id("s", taken) == reference_hashed_id("s", {first}) != first


@pytest.mark.parametrize("provider", [*_providers.PROVIDER_APIS, "any"])
def test_a_clean_history_comes_back_equal_and_as_a_new_list(provider: str) -> None:
    """The runner goes on with the before-stage's list when the default repair changed nothing:
    still a list of its own, never the caller's."""
    history = load(
        [req(user("q")), resp(call("f", "call12345")), req(ret("f", "call12345", "r")), resp(text("done"))]
    )
    out = histfix.repair(history, provider=provider)
    assert out == history and out is not history
    report = histfix.repair_report(history, provider=provider)
    assert report.messages == history and not report.changes


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
def test_a_repair_whose_pairing_finds_no_misplaced_result_makes_none(last: bool) -> None:
    """The profile runner skips the misplaced-result walk of the default repair's output when the
    repair's pairing found no duplicate or late result in its input
    (``Scan.remember_results_in_place``): the repair must never make one. Checked on every
    history (a third of them at least qualify)."""
    from histfix._profiles.call_results import misplaced_results
    from histfix._repair.walk import repair_walk

    qualified = 0
    for history in HISTORIES:
        pairing = pair(history, last)
        repaired = repair_walk(history, repair_last_response=last, pairing=pairing)
        if not pairing.duplicates and not pairing.late:
            qualified += 1
            assert misplaced_results(repaired) == []
    assert qualified > len(HISTORIES) // 3


def test_the_remembered_list_skips_the_walk_for_the_same_messages_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``misplaced_for_pass`` answers [] without walking for a list of the remembered messages (the
    runner goes on with its input's copy when the repair changed nothing), and walks any other."""
    from histfix._profiles import call_results as _call_results

    late = load([req(user("q")), resp(call("f", "a"), at=1), resp(text("t"), at=2), req(ret("f", "a"))])
    walked = []
    real = _call_results.misplaced_results
    monkeypatch.setattr(_call_results, "misplaced_results", lambda h: walked.append(h) or real(h))
    scan = Scan()
    scan.remember_results_in_place(late)
    assert _call_results.misplaced_for_pass(list(late), scan) == [] and walked == []  # taken: no walk
    assert [m.kind for m in _call_results.misplaced_for_pass(list(late), Scan())] == ["late"]  # not told
    scan.remember_results_in_place(late[:3])
    assert [m.kind for m in _call_results.misplaced_for_pass(late, scan)] == ["late"]  # other messages
    scan.remember_results_in_place([*late[:3], load([req(ret("f", "a"))])[0]])
    assert [m.kind for m in _call_results.misplaced_for_pass(list(late), scan)] == ["late"]
    assert len(walked) == 3


def _profile_outputs(history: list[pai.ModelMessage], provider: str, last: bool) -> object:
    """repair's output, or the ValueError's text where the history has nothing sendable."""
    try:
        return histfix.repair(history, provider=provider, repair_last_response=last)
    except ValueError as error:
        return str(error)


def _report_outputs(history: list[pai.ModelMessage], provider: str, last: bool) -> object:
    try:
        return histfix.repair_report(history, provider=provider, repair_last_response=last).messages
    except ValueError as error:
        return str(error)


def split_run_histories() -> list[list[pai.ModelMessage]]:
    """Results answering their call from a request that does not fold into the one right after the
    call (other instructions split the run): the forward walk settles them and keeps the result
    apart, which the profiles must then move (found by a review of the one-walk default stage)."""
    call_a, ret_a = call("f", "call_a"), ret("f", "call_a")
    return [
        load(
            [req(user("q")), resp(call_a), req(user("note"), instructions="x"), req(ret_a, instructions="y")]
        ),
        load([req(user("q")), resp(call_a), req(ret_a, user("n"), instructions="y")]),  # in place
        load(
            [
                req(user("q")),
                resp(call_a, call("g", "call_b")),
                req(ret_a, instructions="x"),
                req(user("note"), instructions="y"),
                req(ret("g", "call_b"), instructions="y"),
                resp(text("done")),
            ]
        ),
        load(
            [
                req(user("q")),
                resp(call_a),
                req(user("a"), instructions="x"),
                req(user("b"), instructions="y"),
                req(ret_a, instructions="y"),
            ]
        ),
    ]


PROFILED = [*HISTORIES, *split_run_histories()]


@pytest.mark.parametrize("last", [True, False], ids=["repair_last", "keep_last"])
def test_a_settled_history_says_where_its_results_are_in_place(last: bool) -> None:
    """Where the forward walk says every result is in place, the profiles skip their walk for
    duplicate and late results (``remember_results_in_place``): its output must hold none. Where it
    says not, some must really be apart (or the shortcut is lost for nothing)."""
    from histfix._profiles.call_results import classified
    from histfix._repair.forward import settled_with_ids

    in_place = apart = 0
    for history in PROFILED:
        settled = settled_with_ids(history, last)
        if settled is None:
            continue
        if settled.results_in_place:
            in_place += 1
            assert classified(settled.messages) == [], history
        else:
            apart += 1
            assert classified(settled.messages) != [], history
    assert in_place > len(PROFILED) // 4 and apart >= 2


@pytest.mark.parametrize("provider", [*_providers.PROVIDER_APIS, "any"])
def test_the_before_stage_keeps_a_history_the_default_repair_leaves_as_is(provider: str) -> None:
    """What lets the runner skip the default repair after the id passes renamed something: on every
    history the input's pairing finds no event in, the renamed list's finds none either, nor a
    duplicate or late result the input did not have. Some histories must be renamed (or this
    tests nothing)."""
    from histfix._profiles.registry import rules_for

    target = _providers.resolve_provider(provider)
    renamed = 0
    for history, last in itertools.product(PROFILED, (True, False)):
        before = pair(history, last)
        current = list(history)
        for rule in rules_for(target, "before"):
            current, _ = rule.fix(current, target, Scan())
        if before.events or current == history:
            continue
        renamed += 1
        after = pair(current, last)
        assert not after.events, dump(history)
        assert (bool(after.duplicates), bool(after.late)) == (bool(before.duplicates), bool(before.late))
    assert renamed, "no history was renamed"


def plain_profile(history: list[pai.ModelMessage], provider: str, last: bool) -> list[pai.ModelMessage]:
    """A profile's repair read plainly: each pass on a fresh ``Scan`` (no fact handed on), the
    default repair as the walk that works through every index, the after passes again while a
    round changes something, nothing skipped."""
    from histfix._profiles.registry import rules_for
    from histfix._profiles.run import AFTER_ROUNDS
    from histfix._repair.walk import repair_walk

    target = _providers.resolve_provider(provider)
    current = list(history)
    for rule in rules_for(target, "before"):
        current, _ = rule.fix(current, target, Scan())
    current = repair_walk(current, repair_last_response=last, every_index=True)
    for _ in range(AFTER_ROUNDS):
        handed = current
        for rule in rules_for(target, "after"):
            current, _ = rule.fix(current, target, Scan())
        if current is handed:
            break
    return current


@pytest.mark.parametrize("provider", [*_providers.PROVIDER_APIS, "any"])
@pytest.mark.parametrize("backend", ["auto", "histfix"])
def test_repair_without_changes_gives_the_report_s_messages(
    provider: str, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``repair(h, provider=P)`` records no change of the default repair and, where histfix's walk
    is the default, settles the input in one walk when it can; ``repair_report`` records every
    change through the general repair. Both must give the same messages on every history, and
    where histfix's walk is the default the one walk must settle some of them (or this tests
    nothing). ``backend="histfix"`` (HISTFIX_BACKEND) makes histfix's walk the default on every
    release, so the one walk is tried on 2.60.0+ too. With the release's own default, both must
    also dump as :func:`plain_profile` does: every shortcut of the runner at once (the pairing and
    the forward walk handed to the passes, a default repair skipped where the input needs none)."""
    from histfix._release.switches import installed_engine

    if backend == "histfix":
        if installed_engine() == "histfix":
            pytest.skip("auto is histfix's walk on this release: the auto case runs the same")
        monkeypatch.setenv("HISTFIX_BACKEND", "histfix")
    settled: list[bool] = []
    real = _forward.settled_with_ids

    def spy(
        messages: list[pai.ModelMessage], repair_last_response: bool = True, rename: object = None
    ) -> object:
        found = real(messages, repair_last_response, rename)  # type: ignore[arg-type]
        settled.append(found is not None)
        return found

    monkeypatch.setattr(_forward, "settled_with_ids", spy)
    for history in PROFILED:
        for last in (True, False):
            repaired = _profile_outputs(history, provider, last)
            assert repaired == _report_outputs(history, provider, last)
            if backend == "auto" and not isinstance(repaired, str):  # str: nothing sendable, refused
                assert dump(repaired) == dump(plain_profile(history, provider, last)), (last, dump(history))
    if histfix.backend_info().backend == "histfix":
        assert settled and sum(settled) >= len(settled) // 4, (sum(settled), len(settled))
    else:  # upstream's repair is the default: repair never tries the one walk
        assert settled == []


def test_repair_with_debug_logging_records_every_change(caplog: pytest.LogCaptureFixture) -> None:
    """With DEBUG on, ``repair`` logs the default repair's changes too (the general repair runs)."""
    history = load([req(user("q")), resp(call("f", "call12345")), req(user("next"))])
    with caplog.at_level("DEBUG", logger="histfix"):
        out = histfix.repair(history, provider="anthropic")
    assert out == histfix.repair_report(history, provider="anthropic").messages
    assert any("call12345" in record.getMessage() for record in caplog.records)


def test_a_fresh_id_a_tool_less_retry_prompt_already_holds_sends_the_pass_to_the_input() -> None:
    """Where the one walk settles the input, the id-format pass renames the repair's output from the
    walk's ledger, which reads no tool-less retry prompt: one holding the id the mapping would give
    (``a_b`` for ``a.b``) must send the pass back to the input, whose every id it sees, so the
    call gets an id of its own, as ``repair_report`` gives it."""
    history = [
        pai.ModelRequest(parts=[pai.UserPromptPart("go")]),
        pai.ModelResponse(parts=[pai.ToolCallPart("f", {}, tool_call_id="a.b")]),
        pai.ModelRequest(parts=[pai.ToolReturnPart("f", "r", tool_call_id="a.b")]),
        pai.ModelResponse(parts=[pai.TextPart("again")]),
        pai.ModelRequest(parts=[pai.RetryPromptPart("try again", tool_call_id="a_b")]),
    ]
    repaired = histfix.repair(history, provider="anthropic", backend="histfix")
    report = histfix.repair_report(history, provider="anthropic", backend="histfix")
    assert dump(repaired) == dump(report.messages)
    (renamed,) = [p for m in repaired for p in m.parts if isinstance(p, pai.ToolCallPart)]
    assert renamed.tool_call_id.startswith("a_b_")  # "a_b" is the retry prompt's


def _format_renamed(
    history: list[pai.ModelMessage], monkeypatch: pytest.MonkeyPatch
) -> list[pai.ModelMessage]:
    """``repair(history, provider="anthropic")`` with histfix's walk as the engine, checked equal to
    ``repair_report``'s messages, which run the id-format pass on the input."""
    repaired = histfix.repair(history, provider="anthropic", backend="histfix")
    monkeypatch.undo()
    report = histfix.repair_report(history, provider="anthropic", backend="histfix")
    assert dump(repaired) == dump(report.messages)
    return repaired


def _calls_and_results(ids: list[str]) -> list[pai.ModelMessage]:
    history: list[pai.ModelMessage] = [pai.ModelRequest(parts=[pai.UserPromptPart("go")])]
    for call_id in ids:
        history += [
            pai.ModelResponse(parts=[pai.ToolCallPart("f", {}, tool_call_id=call_id)]),
            pai.ModelRequest(parts=[pai.ToolReturnPart("f", "r", tool_call_id=call_id)]),
        ]
    return [*history, pai.ModelResponse(parts=[pai.ToolCallPart("f", {}, tool_call_id=ids[0] + "!")])]


def test_the_one_walk_renames_ids_as_it_repairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the one walk settles the input, the id-format pass's renames are made by that walk (each
    call, its result and the return added for a dangling call): the pass's own renaming never runs."""
    used: list[object] = []
    monkeypatch.setattr(_call_ids, "with_ids_mapped", lambda *args: used.append(args))
    repaired = _format_renamed(_calls_and_results(["a.b", "c.d", "ok"]), monkeypatch)
    assert used == []
    ids = [p.tool_call_id for m in repaired for p in m.parts if hasattr(p, "tool_call_id")]
    assert ids == ["a_b", "a_b", "c_d", "c_d", "ok", "ok", "a_b_", "a_b_"]


def test_the_one_walk_renames_each_call_in_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A response holding text, a call that keeps its id and calls that do not: the walk copies the
    response once, each renamed call in its own place, the others as they were."""
    used: list[object] = []
    monkeypatch.setattr(_call_ids, "with_ids_mapped", lambda *args: used.append(args))
    text_part, kept = pai.TextPart("two calls"), pai.ToolCallPart("f", {}, tool_call_id="ok")
    history: list[pai.ModelMessage] = [
        pai.ModelRequest(parts=[pai.UserPromptPart("go")]),
        pai.ModelResponse(
            parts=[
                text_part,
                pai.ToolCallPart("f", {}, tool_call_id="a.b"),
                kept,
                pai.ToolCallPart("f", {}, tool_call_id="c.d"),
            ]
        ),
        pai.ModelRequest(parts=[pai.ToolReturnPart("f", "r", tool_call_id=i) for i in ("a.b", "ok", "c.d")]),
    ]
    repaired = _format_renamed(history, monkeypatch)
    assert used == []
    parts = repaired[1].parts
    assert parts[0] is text_part and parts[2] is kept
    assert [getattr(p, "tool_call_id", None) for p in parts] == [None, "a_b", "ok", "c_d"]
    assert [p.tool_call_id for p in repaired[2].parts] == ["a_b", "ok", "c_d"]  # type: ignore[union-attr]


def test_a_fresh_id_the_history_holds_later_sends_the_pass_to_the_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk gives ``a.b`` the id ``a_b`` before it meets the call ``a_b``: its output is not
    used, and the pass, which sees every id, gives ``a.b`` an id of its own."""
    used: list[object] = []
    real = _call_ids.with_ids_mapped
    monkeypatch.setattr(_call_ids, "with_ids_mapped", lambda *args: used.append(args) or real(*args))
    repaired = _format_renamed(_calls_and_results(["a.b", "a_b"]), monkeypatch)
    assert used  # the pass ran
    first = repaired[1].parts[0]
    assert isinstance(first, pai.ToolCallPart) and first.tool_call_id.startswith("a_b_")


@pytest.mark.parametrize("after", [True, False], ids=["after_its_call", "before_its_call"])
def test_a_tool_less_retry_prompt_takes_its_call_s_new_id(
    after: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass renames a retry prompt without a tool that holds a renamed call's id: the walk does
    so where the call came first, and leaves a prompt before its call to the pass."""
    history = _calls_and_results(["a.b"])
    prompt = pai.ModelRequest(parts=[pai.RetryPromptPart("try again", tool_call_id="a.b")])
    history.insert(len(history) - 1 if after else 1, prompt)
    history.insert(len(history) - 1 if after else 2, pai.ModelResponse(parts=[pai.TextPart("ok")]))
    repaired = _format_renamed(history, monkeypatch)
    retried = [p for m in repaired for p in m.parts if isinstance(p, pai.RetryPromptPart)]
    assert [p.tool_call_id for p in retried] == ["a_b"]


def test_a_tool_less_retry_prompt_the_check_only_stretch_passes_still_takes_its_call_s_new_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk reads the stretch before the first call it renames without building; a retry prompt
    without a tool there, holding the id of a call renamed later, still leaves the history to the pass."""
    history: list[pai.ModelMessage] = [
        pai.ModelRequest(parts=[pai.UserPromptPart("go")]),
        pai.ModelResponse(parts=[pai.ToolCallPart("f", {}, tool_call_id="ok")]),
        pai.ModelRequest(parts=[pai.ToolReturnPart("f", "r", tool_call_id="ok")]),
        pai.ModelResponse(parts=[pai.TextPart("fine")]),
        pai.ModelRequest(parts=[pai.RetryPromptPart("try again", tool_call_id="a.b")]),
        pai.ModelResponse(parts=[pai.ToolCallPart("f", {}, tool_call_id="a.b")]),
        pai.ModelRequest(parts=[pai.ToolReturnPart("f", "r", tool_call_id="a.b")]),
    ]
    repaired = _format_renamed(history, monkeypatch)
    ids = [p.tool_call_id for m in repaired for p in m.parts if hasattr(p, "tool_call_id")]
    assert ids == ["ok", "ok", "a_b", "a_b", "a_b"]
    # the stretch before the call it renames was only checked
    rename = _forward.Rename(_call_ids.ANTHROPIC_ID.match, lambda call_id: call_id.replace(".", "_"))
    settled = _forward.settled_with_ids(history, True, rename)
    assert settled is not None and settled.built_from == 5 and settled.unpaired == ["a.b"]


def test_the_check_only_stretch_tests_the_ids_in_bulk_where_the_first_calls_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the first calls' ids fit, the check-only loop runs without testing each call and every
    id is tested at its end; where a later id does not fit, the loop runs again testing each call,
    and stops where the eager loop alone stops (the same state handed to the building loop)."""
    runs: list[bool] = []
    real = _forward._checked_until

    def noted(messages: Any, ledger: Any, fits: Any, renaming: bool) -> Any:
        runs.append(fits is not None)
        return real(messages, ledger, fits, renaming)

    monkeypatch.setattr(_forward, "_checked_until", noted)
    rename = _forward.Rename(_call_ids.ANTHROPIC_ID.match, lambda call_id: call_id.replace(".", "_"))
    fitting = _calls_and_results(["a", "b", "c"])[:-1]  # without its last call, whose id does not fit
    assert _forward.settled_with_ids(fitting, True, rename) is not None
    assert runs == [False]  # one loop, no call tested in it
    runs.clear()
    late = _calls_and_results(["a", "b", "c.d"])[:-1]
    settled = _forward.settled_with_ids(late, True, rename)
    assert runs == [False, True]  # the bulk test failed: the eager loop found where to start
    monkeypatch.undo()
    eager_ledger = _forward._Ledger()
    eager = _forward._checked_until(late, eager_ledger, rename.fits, True)
    assert settled is not None and settled.built_from == eager[0] == 5
    ids = [p.tool_call_id for m in settled.messages for p in m.parts if hasattr(p, "tool_call_id")]
    assert ids == ["a", "a", "b", "b", "c_d", "c_d"]
    runs.clear()
    monkeypatch.setattr(_forward, "_checked_until", noted)
    first = _calls_and_results(["c.d", "a"])[:-1]
    assert _forward.settled_with_ids(first, True, rename) is not None
    assert runs == [True]  # the first call does not fit: each call tested as the loop goes


@pytest.mark.parametrize(
    "shape",
    ["", "q", "a", "qa", "aa", "qq", "qaq", "aaa", "qqq", "qaaq", "qaqq", "aqa", "qaqa"],
)
def test_the_survey_s_class_facts_read_what_a_plain_loop_reads(shape: str) -> None:
    """The facts read from the message classes' alternation (slices of every other message) on
    short shapes of requests (q) and responses (a), with instructions '' and a message of more parts
    than a byte counts."""
    history: list[pai.ModelMessage] = []
    for at, role in enumerate(shape):
        if role == "q":
            history.append(pai.ModelRequest(parts=[pai.UserPromptPart("p")], instructions="" if at else None))
        else:
            history.append(pai.ModelResponse(parts=[pai.TextPart("t")] * (300 if at == 1 else 1 + at % 2)))
    facts = Survey(history)
    assert facts.plain() == all(type(m) in (pai.ModelRequest, pai.ModelResponse) for m in history)
    assert facts.consecutive_responses() == any(
        a.kind == b.kind == "response" for a, b in itertools.pairwise(history)
    )
    assert facts.empty_instructions() == any(
        isinstance(message, pai.ModelRequest) and message.instructions == "" for message in history
    )
    assert list(facts.requests()) == [m for m in history if isinstance(m, pai.ModelRequest)]
    assert facts.several_parts() == [i for i, m in enumerate(history) if len(m.parts) > 1]
    assert facts.alternation() == (
        (type(history[0]), type(history[1]))
        if len(history) > 1
        and all(type(m) is type(history[0]) for m in history[::2])
        and all(type(m) is type(history[1]) for m in history[1::2])
        else None
    )


class _Text(str):
    """A string of a subclass, as a caller's own types may hand one."""


def test_a_blank_string_of_a_subclass_is_found_as_a_string_is() -> None:
    """The early exit of the blank-text pass reads strings of a subclass as the pass does (it drops them)."""
    history: list[pai.ModelMessage] = [
        pai.ModelRequest(parts=[pai.UserPromptPart("go")]),
        pai.ModelResponse(parts=[pai.TextPart(_Text("  ")), pai.TextPart("ok")]),
    ]
    repaired = histfix.repair(history, provider="anthropic")
    assert [p.content for p in repaired[1].parts] == ["ok"]  # type: ignore[union-attr]


@pytest.mark.parametrize("form", ["ANTHROPIC_FORMAT", "MISTRAL_FORMAT"])
def test_a_format_s_test_of_many_ids_is_its_test_of_each(form: str) -> None:
    """``all_fit`` (one match of the ids joined) says what ``fits`` of each says, ids holding line
    breaks (which the one pattern's ``$`` lets end an id) and characters outside the format too."""
    fits, _, all_fit = getattr(_call_ids, form)
    pool = [
        "abcdefghi",
        "call_0001",
        "toolu_01AB",
        "a-b",
        "",
        "a\n",
        "abcdefgh\n",
        "a\nb",
        "\n",
        "é",
        "ABCDEFGHI",
        "x" * 64,
    ]
    for size in range(4):
        for ids in itertools.product(pool, repeat=size):
            assert all_fit(list(ids)) == all(map(fits, ids)), ids


def test_the_runner_hands_the_walk_its_format_s_test_of_many_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The renaming walk the runner starts tests the ids it passed through with the format's
    ``all_fit`` (one match of them all), not one call of the pattern per id."""
    seen: list[object] = []
    real = _forward.settled_with_ids

    def noted(messages: Any, last: bool = True, rename: Any = None) -> Any:
        seen.append(None if rename is None else rename.all_fit)
        return real(messages, last, rename)

    monkeypatch.setattr(_forward, "settled_with_ids", noted)
    histfix.repair(_calls_and_results(["a", "b"]), provider="anthropic", backend="histfix")
    assert seen == [_call_ids.ANTHROPIC_FORMAT.all_fit]

"""The profile rules about tool calls, ids and results (histfix._profiles.rules.calls), on real types.

Each rule on the history it is for, what it reports (with the removed content), what ``detect``
says in the provider's own words (the emulator's message text), and the guarantees every profile
keeps: idempotent, deterministic, never mutating, ids valid for the API's format and unique.
"""

from __future__ import annotations

import copy
import re

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.registry import rules_for
from histfix._profiles.rules.call_results import classified, misplaced_results
from histfix._profiles.rules.calls import call_rules
from histfix._profiles.scan import Scan
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider
from histfix._release import switches as _compat

from corpus import CASES
from dsl import call, load, loadable, real, req, resp, ret, text, user
from emulators import anthropic as em_anthropic
from emulators import bedrock as em_bedrock
from emulators import gemini as em_gemini
from emulators import mistral as em_mistral
from emulators import openai_chat as em_openai_chat
from emulators import openai_responses as em_openai_responses
from generate import random_history

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
PROVIDERS = [*PROVIDER_APIS, "any"]
CALL_RULES = call_rules()
RULES = {rule.name: rule for rule in CALL_RULES}


def dumped(history: list[pai.ModelMessage]) -> bytes:
    return pai.ModelMessagesTypeAdapter.dump_json(history)


def calls(history: list[pai.ModelMessage]) -> list[pai.ToolCallPart]:
    return [
        p
        for m in history
        if isinstance(m, pai.ModelResponse)
        for p in m.parts
        if isinstance(p, pai.ToolCallPart)
    ]


def results(message: pai.ModelMessage) -> list[pai.ToolReturnPart | pai.RetryPromptPart]:
    return [
        p
        for p in message.parts
        if isinstance(p, pai.ToolReturnPart)
        or (isinstance(p, pai.RetryPromptPart) and p.tool_name is not None)
    ]


def assert_paired_on_the_wire(history: list[pai.ModelMessage]) -> None:
    """Every call is answered exactly once, in the request right after its response, by id."""
    for i, message in enumerate(history):
        if isinstance(message, pai.ModelResponse):
            wanted = sorted(p.tool_call_id for p in message.parts if isinstance(p, pai.ToolCallPart))
            following = history[i + 1] if i + 1 < len(history) else None
            if wanted:
                assert isinstance(following, pai.ModelRequest), (i, wanted)
                assert sorted(p.tool_call_id for p in results(following)) == wanted, (i, following)


def kinds(report: histfix.RepairReport) -> list[str]:
    return [c.kind for c in report.changes]


# --- the rules, one by one ---------------------------------------------------------------------------


def test_rules_are_used_only_by_the_apis_that_enforce_them() -> None:
    def names(api: str) -> set[str]:
        target = resolve_provider(api)
        return {
            r.name for r in (*rules_for(target, "before"), *rules_for(target, "after")) if r in CALL_RULES
        }

    assert names("openai-responses") == {"call_ids_present", "unique_call_ids", "one_result_per_call"}
    assert names("openai-chat") == {
        "call_ids_present",
        "unique_call_ids",
        "one_result_per_call",
        "results_follow_their_call",
    }
    assert "unique_call_ids" in names("anthropic") and "call_id_format" not in names("openai-chat")
    assert "call_id_format" in names("mistral") and "call_id_format" not in names("gemini")
    assert "one_result_per_call" in names("gemini") and "results_follow_their_call" not in names(
        "openai-responses"
    )
    assert names("any") == set(RULES)
    for rule in CALL_RULES:
        assert rule.why and rule.detect is not None and set(rule.wording) == set(rule.apis)


def test_same_id_twice_in_one_response_gets_a_fresh_id_for_the_second_call_and_its_result() -> None:
    history = load(
        [req(user("go")), real(call("a", "x"), call("b", "x"), at=10), req(ret("a", "x"), ret("b", "x"))]
    )
    # OpenAI too: 2.10.0-2.54.x's own repair would send a surplus result for the shared id
    for api in ("anthropic", "openai-chat", "openai-responses"):
        report = histfix.repair_report(history, provider=api)
        first, second = calls(report.messages)
        assert first.tool_call_id == "x" and second.tool_call_id != "x"
        assert [(r.tool_name, r.tool_call_id) for r in results(report.messages[2])] == [
            ("a", "x"),
            ("b", second.tool_call_id),
        ]
        assert kinds(report) == ["renamed_call_id"]
        assert_paired_on_the_wire(report.messages)


def test_id_reused_by_a_later_response_renames_the_later_call_and_the_results_after_it() -> None:
    history = load(
        [
            req(user("go")),
            real(call("a", "x"), at=10),
            req(user("again")),
            real(call("b", "x"), at=20),
            req(ret("b", "x", "b's result")),
        ]
    )
    out = histfix.repair(history, provider="anthropic")
    old, new = calls(out)
    assert old.tool_call_id == "x" and new.tool_call_id != "x"
    # the shadowed older call is closed by the default repair under its own id, the later result follows its call
    assert [(r.tool_call_id, histfix.is_synthesized(r)) for r in results(out[2])] == [("x", True)]
    assert [(r.tool_call_id, r.content) for r in results(out[4])] == [(new.tool_call_id, "b's result")]
    assert_paired_on_the_wire(out)


def test_empty_ids_get_one_shared_id_per_call_and_return() -> None:
    history = load(
        [
            req(user("go")),
            real(call("a", ""), call("b", ""), at=10),
            req(ret("a", "", "A"), ret("b", "", "B")),
            real(call("c", ""), at=20),
            req(user("next")),
        ]
    )
    for provider in ("openai-chat", "bedrock", "anthropic", "any"):
        out = histfix.repair(history, provider=provider)
        ids = [p.tool_call_id for p in calls(out)]
        assert all(ids) and len(set(ids)) == 3
        assert [(r.tool_name, r.content) for r in results(out[2])] == [("a", "A"), ("b", "B")]
        assert [r.tool_call_id for r in results(out[2])] == ids[:2]
        assert [r.tool_call_id for r in results(out[4])] == ids[2:]  # the synthesized return shares it
        assert_paired_on_the_wire(out)
    (first, *_) = calls(histfix.repair(history, provider="gemini"))
    assert first.tool_call_id == ""  # Gemini pairs by position: no id needed there


def test_mistral_ids_are_nine_letters_or_digits_and_stay_paired() -> None:
    history = load(
        [
            req(user("go")),
            real(call("f", "call_1"), call("g", "abcdefghi"), at=10),
            req(ret("f", "call_1"), ret("g", "abcdefghi")),
            real(call("h", "functions.lookup:0"), at=20),
            req(ret("h", "functions.lookup:0")),
        ]
    )
    out = histfix.repair(history, provider="mistral")
    ids = [p.tool_call_id for p in calls(out)]
    if _compat.PROFILE_FITS_TOOL_CALL_IDS:  # MistralModel fits them itself (test_provider_truth sends them)
        assert ids == ["call_1", "abcdefghi", "functions.lookup:0"]
        return
    assert all(MISTRAL_ID.match(i) for i in ids) and len(set(ids)) == 3
    assert ids[1] == "abcdefghi"  # an id that fits is kept
    assert_paired_on_the_wire(out)
    assert histfix.repair(out, provider="mistral") == out


def test_anthropic_ids_outside_the_pattern_are_made_readable_and_never_collide() -> None:
    history = load(
        [
            req(user("go")),
            real(call("f", "a.b"), call("g", "a_b"), call("h", "a:b"), at=10),
            req(ret("f", "a.b"), ret("g", "a_b"), ret("h", "a:b")),
        ]
    )
    report = histfix.repair_report(history, provider="anthropic")
    ids = [p.tool_call_id for p in calls(report.messages)]
    assert all(ANTHROPIC_ID.match(i) for i in ids) and len(set(ids)) == 3
    assert ids[1] == "a_b"  # valid, kept; the others may not take it
    assert ids[0].startswith("a_b_") and ids[2].startswith("a_b_")
    assert [r.tool_call_id for r in results(report.messages[2])] == ids
    (change,) = report.changes
    assert change.kind == "renamed_call_id" and "renamed 2 tool call ids" in str(change)


def test_two_results_for_one_call_keep_the_first_and_report_the_others_content() -> None:
    history = load(
        [req(user("go")), real(call("f", "c1"), at=10), req(ret("f", "c1", "first"), ret("f", "c1", "again"))]
    )
    for provider in ("openai-chat", "openai-responses", "anthropic", "gemini", "bedrock", "mistral", "any"):
        report = histfix.repair_report(history, provider=provider)
        assert [r.content for r in results(report.messages[2])] == ["first"]
        (dropped,) = [c for c in report.changes if c.kind == "dropped_duplicate_result"]
        assert dropped.preview == "again" and "again" in str(dropped)


def test_a_late_copy_of_an_answered_result_is_dropped_with_its_content() -> None:
    history = load(
        [
            req(user("go")),
            real(call("f", "c1"), at=10),
            req(ret("f", "c1", "first")),
            real(text("done"), at=20),
            req(ret("f", "c1", "late copy"), user("more")),
        ]
    )
    for provider in ("openai-chat", "anthropic", "gemini", "bedrock", "mistral", "any"):
        report = histfix.repair_report(history, provider=provider)
        assert [type(p).__name__ for p in report.messages[4].parts] == ["UserPromptPart"]
        (dropped,) = [c for c in report.changes if c.kind == "dropped_late_result"]
        assert dropped.preview == "late copy" and dropped.message_index == 4
    # OpenAI Responses takes a result anywhere after its call, but one per call (unverified; the
    # first kept): the late copy goes as a second result
    report = histfix.repair_report(history, provider="openai-responses")
    assert [type(p).__name__ for p in report.messages[4].parts] == ["UserPromptPart"]
    (dropped,) = [c for c in report.changes if c.kind == "dropped_duplicate_result"]
    assert dropped.preview == "late copy" and dropped.message_index == 4


def test_a_calls_only_result_arriving_late_is_moved_to_right_after_the_call() -> None:
    history = load(
        [
            req(user("go")),
            real(call("f", "c1"), at=10),
            req(user("still there?")),
            real(text("waiting"), at=20),
            req(ret("f", "c1", "the result"), user("here it is")),
        ]
    )
    report = histfix.repair_report(history, provider="anthropic")
    out = report.messages
    assert [type(p).__name__ for p in out[2].parts] == ["ToolReturnPart", "UserPromptPart"]
    assert results(out[2])[0].content == "the result"
    assert [type(p).__name__ for p in out[4].parts] == ["UserPromptPart"]
    assert "moved_late_result" in kinds(report)
    assert_paired_on_the_wire(out)


def test_a_request_left_empty_is_removed_and_synthetic_neighbours_merge_as_repair_would() -> None:
    history = load(
        [
            req(user("go")),
            resp(call("f", "c1"), at=10),
            req(ret("f", "c1", "first")),
            resp(text("a"), at=20),
            req(ret("f", "c1", "late copy")),
            resp(text("b"), at=30),
            req(user("next")),
        ]
    )
    out = histfix.repair(history, provider="anthropic")
    assert len(out) == 5 and [p.content for p in out[3].parts] == ["a", "b"]  # type: ignore[union-attr]
    assert histfix.repair(out, provider="anthropic") == out
    last = load(
        [
            req(user("go")),
            real(call("f", "c1"), at=10),
            req(ret("f", "c1")),
            real(text("a"), at=20),
            req(ret("f", "c1")),
        ]
    )
    # The pass alone (the profile's shape rules then deal with an empty last request):
    out, _ = RULES["results_follow_their_call"].fix(histfix.repair(last), resolve_provider("bedrock"), Scan())
    tail = out[-1]
    assert (
        isinstance(tail, pai.ModelRequest) and tail.parts == []
    )  # the last request stays, as repair keeps it


def test_truncated_args_are_kept_whole_where_the_release_cannot_send_them() -> None:
    raw = '{"q": "unfinished'
    history = load([req(user("search")), real(text("searching"), call("search", "c1", raw), at=10)])
    for provider in ("anthropic", "gemini", "bedrock", "any"):
        report = histfix.repair_report(history, provider=provider)
        (part,) = calls(report.messages)
        part.args_as_dict()  # what the release's AnthropicModel/GoogleModel/BedrockModel calls: never raises now
        if _compat.ARGS_AS_DICT_TOLERATES_INVALID:
            assert part.args == raw and "wrapped_tool_args" not in kinds(report)
        else:
            assert part.args == {"INVALID_JSON": raw}
            (change,) = [c for c in report.changes if c.kind == "wrapped_tool_args"]
            assert change.preview == raw
    (as_sent,) = calls(histfix.repair(history, provider="openai-chat"))
    assert as_sent.args == raw  # sent as a string there: untouched


# --- detect: what each API rejects, in its own words ---------------------------------------------------


def detected(history: list[pai.ModelMessage], provider: str, rule: str) -> list[histfix.Problem]:
    found = RULES[rule].detect
    assert found is not None
    return [finding.problem for finding in found(history, resolve_provider(provider), Scan())]


def test_detect_words_problems_as_the_emulators_do() -> None:
    duplicate = load([req(user("go")), real(call("f", "c1"), at=10), req(ret("f", "c1"), ret("f", "c1"))])
    (problem,) = detected(duplicate, "anthropic", "one_result_per_call")
    assert problem.kind == "duplicate_result" and problem.rejected_by == ("anthropic",)
    assert problem.provider_error == em_anthropic.MULTIPLE.message.format(id="c1")
    assert (problem.message_index, problem.part_index) == (2, 1)
    (problem,) = detected(duplicate, "gemini", "one_result_per_call")
    assert problem.provider_error == em_gemini.COUNT.message
    (problem,) = detected(duplicate, "mistral", "one_result_per_call")
    assert problem.provider_error == em_mistral.COUNT.message
    (problem,) = detected(duplicate, "openai-chat", "one_result_per_call")
    assert problem.provider_error == em_openai_chat.NO_CALL.message
    (problem,) = detected(duplicate, "openai-responses", "one_result_per_call")
    assert problem.provider_error == em_openai_responses.DUPLICATE_OUTPUT.message.format(call_id="c1")
    (problem,) = detected(duplicate, "any", "one_result_per_call")
    assert problem.rejected_by == (
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "bedrock",
        "mistral",
    )
    assert em_bedrock.TOO_MANY.message.replace("{n}", "N") in (problem.provider_error or "")

    late = load(
        [
            req(user("go")),
            real(call("f", "c1"), at=10),
            req(ret("f", "c1")),
            real(text("ok"), at=20),
            req(ret("f", "c1")),
        ]
    )
    (problem,) = detected(late, "openai-chat", "results_follow_their_call")
    assert problem.kind == "duplicate_result" and problem.provider_error == em_openai_chat.NO_CALL.message

    reused = load(
        [req(user("go")), real(call("a", "x"), call("b", "x"), at=10), req(ret("a", "x"), ret("b", "x"))]
    )
    (problem,) = detected(reused, "anthropic", "unique_call_ids")
    assert problem.kind == "reused_call_id" and problem.provider_error == em_anthropic.UNIQUE.message.replace(
        "{n}", "N"
    ).replace("{m}", "M")
    gemini = detected(reused, "gemini", "unique_call_ids")
    chat = detected(reused, "openai-chat", "unique_call_ids")
    responses = detected(reused, "openai-responses", "unique_call_ids")
    if _compat.run_repair_adds_surplus_results():
        assert [p.provider_error for p in gemini] == [em_gemini.COUNT.message]
        assert [p.provider_error for p in chat] == [em_openai_chat.NO_CALL.message]
        assert [p.provider_error for p in responses] == [
            em_openai_responses.DUPLICATE_OUTPUT.message.format(call_id="x")
        ]
    else:
        assert gemini == chat == responses == []

    odd = load([req(user("go")), real(call("f", "a.b"), at=10), req(ret("f", "a.b"))])
    (problem,) = detected(odd, "anthropic", "call_id_format")
    assert (
        problem.kind == "invalid_call_id"
        and problem.provider_error == em_anthropic.PATTERN.message.replace("{n}", "N").replace("{m}", "M")
    )
    mistral = detected(odd, "mistral", "call_id_format")
    if _compat.PROFILE_FITS_TOOL_CALL_IDS:
        assert mistral == []  # MistralModel fits ids itself on this release
    else:
        assert [p.provider_error for p in mistral] == [em_mistral.ID_FORMAT.message.format(id="a.b")] * 2

    empty = load([req(user("go")), real(call("f", ""), at=10), req(ret("f", ""))])
    assert [p.kind for p in detected(empty, "bedrock", "call_ids_present")] == ["missing_call_id"] * 2
    # a part built by hand with no id at all is missing one too, and no id rule chokes on it
    none = [*empty[:1], pai.ModelResponse([pai.ToolCallPart("f", {}, tool_call_id=None)])]  # type: ignore[arg-type]
    none.append(pai.ModelRequest([pai.ToolReturnPart("f", "x", tool_call_id=None)]))  # type: ignore[arg-type]
    for api in ("anthropic", "mistral", "any"):
        assert [p.kind for p in histfix.check(none, provider=api)] == ["missing_call_id"] * 2, api

    truncated = load([req(user("go")), real(call("f", "c1", '{"q": "x'), at=10)])
    found = detected(truncated, "anthropic", "tool_args_sendable")
    assert [p.kind for p in found] == (
        [] if _compat.ARGS_AS_DICT_TOLERATES_INVALID else ["invalid_tool_args"]
    )
    if found:
        assert "EOF while parsing" in (found[0].provider_error or "")


# --- guarantees, on the corpus and on generated histories ---------------------------------------------


def _histories() -> list[tuple[str, list[pai.ModelMessage]]]:
    found = [(case.name, history) for case, history in loadable(CASES)]
    # A few generated ones beside the corpus: tests/repair/test_fuzz.py's shared draw checks the same three
    # properties for a drawn profile on 500 generated histories per release.
    found += [(f"random {seed}", load(random_history(seed))) for seed in range(60)]
    return found


HISTORIES = _histories()


def _profile(history: list[pai.ModelMessage], provider: str) -> list[pai.ModelMessage] | None:
    try:
        return histfix.repair(history, provider=provider)
    except ValueError:
        return None  # nothing sendable (only system prompts): the runner's clear error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_profiles_are_idempotent_deterministic_and_never_mutate(provider: str) -> None:
    for name, history in HISTORIES:
        before = copy.deepcopy(history)
        out = _profile(history, provider)
        assert dumped(history) == dumped(before), name
        if out is None:
            continue
        assert dumped(_profile(load_dump(history), provider) or []) == dumped(out), name
        assert dumped(histfix.repair(out, provider=provider)) == dumped(out), name


def load_dump(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """A fresh copy of ``history`` through the release's own JSON (a second, independent input)."""
    return pai.ModelMessagesTypeAdapter.validate_json(dumped(history))


@pytest.mark.parametrize("provider", ["anthropic", "mistral", "any"])
def test_profile_ids_are_valid_for_the_api_and_unique(provider: str) -> None:
    pattern = (
        MISTRAL_ID if provider != "anthropic" and not _compat.PROFILE_FITS_TOOL_CALL_IDS else ANTHROPIC_ID
    )
    if provider == "mistral" and _compat.PROFILE_FITS_TOOL_CALL_IDS:
        pattern = re.compile(".*", re.DOTALL)  # ids as stored: the release fits them on the wire
    for name, history in HISTORIES:
        out = _profile(history, provider)
        if out is None:
            continue
        ids = [p.tool_call_id for p in calls(out)]
        assert all(pattern.match(i) for i in ids), (name, ids)
        if provider != "mistral":
            assert len(set(ids)) == len(ids), (name, ids)
        for message in out:
            for part in results(message):
                assert pattern.match(part.tool_call_id), (name, part)


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "bedrock", "mistral", "any"])
def test_after_a_profile_no_result_is_misplaced_and_detect_finds_nothing(provider: str) -> None:
    target = resolve_provider(provider)
    for name, history in HISTORIES:
        out = _profile(history, provider)
        if out is None:
            continue
        assert misplaced_results(out) == [], name
        for rule in CALL_RULES:
            if rule.detect is not None and set(target.apis) & rule.apis:
                assert rule.detect(out, target, Scan()) == [], (name, rule.name)
        if provider == "anthropic":
            assert_paired_on_the_wire(out)


def test_the_cheap_in_place_test_never_hides_a_misplaced_result() -> None:
    for name, history in HISTORIES:
        assert misplaced_results(history) == classified(history), name
        repaired = histfix.repair(history)
        assert misplaced_results(repaired) == classified(repaired), name


def test_detect_sees_a_list_changed_in_place_between_two_checks() -> None:
    history = load([req(user("go")), real(call("f", "c1"), at=10), req(ret("f", "c1"), ret("f", "c1"))])
    assert len(detected(history, "anthropic", "one_result_per_call")) == 1
    history[2] = load([req(ret("f", "c1"))])[0]
    assert detected(history, "anthropic", "one_result_per_call") == []

"""The tool call id rules (histfix._profiles.rules.ids), on the installed release's types.

Empty, reused and ill-formed ids, renamed before the default repair so that the wire pairs what the
repair pairs: each rule on the history it is for, what it reports, what ``detect`` says in the
provider's own words (the emulator's message text), and, after every profile, ids valid for the
API's format and unique.
"""

from __future__ import annotations

import re

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.call_ids import mistral_ids, with_ids_mapped
from histfix._profiles.registry import rules_for
from histfix._profiles.rules import ids
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import table
from histfix._release.switches import has, run_adds_surplus_results

from dsl import call, load, real, req, ret, user
from emulators import anthropic as em_anthropic
from emulators import gemini as em_gemini
from emulators import mistral as em_mistral
from emulators import openai_chat as em_openai_chat
from emulators import openai_responses as em_openai_responses
from profile_support import assert_paired_on_the_wire, kinds, named_histories, profile_or_none, results

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
RULES = {rule.name: rule for rule in ids.RULES}


def calls(history: list[pai.ModelMessage]) -> list[pai.ToolCallPart]:
    return [
        p
        for m in history
        if isinstance(m, pai.ModelResponse)
        for p in m.parts
        if isinstance(p, pai.ToolCallPart)
    ]


def detected(history: list[pai.ModelMessage], provider: str, rule: str) -> list[histfix.Problem]:
    found = RULES[rule].detect
    assert found is not None
    return [finding.problem for finding in found(history, resolve_provider(provider), Scan())]


HISTORIES = named_histories()


def test_each_rule_is_used_only_by_the_apis_that_enforce_it() -> None:
    def names(api: str) -> set[str]:
        target = resolve_provider(api)
        return {r.name for r in (*rules_for(target, "before"), *rules_for(target, "after")) if r in ids.RULES}

    assert names("openai-responses") == names("openai-chat") == {"call_ids_present", "unique_call_ids"}
    assert "unique_call_ids" in names("anthropic") and "call_id_format" not in names("openai-chat")
    assert "call_id_format" in names("mistral") and "call_id_format" not in names("gemini")
    assert names("any") == set(RULES)
    for rule in ids.RULES:
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
    if has(
        table.PROFILE_FITS_TOOL_CALL_IDS
    ):  # MistralModel fits them itself (test_provider_truth sends them)
        assert ids == ["call_1", "abcdefghi", "functions.lookup:0"]
        return
    assert all(MISTRAL_ID.match(i) for i in ids) and len(set(ids)) == 3
    assert ids[1] == "abcdefghi"  # an id that fits is kept
    assert_paired_on_the_wire(out)
    assert histfix.repair(out, provider="mistral") == out


@pytest.mark.parametrize("call_id", ["abcdefgh", "abcdefghij", "abcd_fghi"])
def test_an_id_one_letter_short_long_or_off_is_renamed_for_mistral(call_id: str) -> None:
    """Mistral wants exactly nine letters or digits (error code 3280): eight or ten are refused too.
    Asked of the renaming itself, which runs on every release (the pass calls it only where the
    release sends ids as stored, before ``table.PROFILE_FITS_TOOL_CALL_IDS``)."""
    history = load([req(user("go")), real(call("f", call_id), at=10), req(ret("f", call_id))])
    mapping = mistral_ids(history)
    (fresh,) = mapping.values()
    assert list(mapping) == [call_id]
    assert MISTRAL_ID.match(fresh) and len(fresh) == 9 and fresh != call_id
    mapped = with_ids_mapped(history, mapping, Scan())
    assert mapped is not None and mapped.first == (1, call_id, fresh)
    assert [p.tool_call_id for p in calls(mapped.messages)] == [fresh]  # the call and its result
    assert [r.tool_call_id for r in results(mapped.messages[2])] == [fresh]
    assert mistral_ids(load([req(user("go")), real(call("f", "abcdefghi"), at=10)])) == {}


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


def test_detect_words_id_problems_as_the_emulators_do() -> None:
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
    if run_adds_surplus_results():
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
    if has(table.PROFILE_FITS_TOOL_CALL_IDS):
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


@pytest.mark.parametrize("provider", ["anthropic", "mistral", "any"])
def test_profile_ids_are_valid_for_the_api_and_unique(provider: str) -> None:
    pattern = (
        MISTRAL_ID if provider != "anthropic" and not has(table.PROFILE_FITS_TOOL_CALL_IDS) else ANTHROPIC_ID
    )
    if provider == "mistral" and has(table.PROFILE_FITS_TOOL_CALL_IDS):
        pattern = re.compile(".*", re.DOTALL)  # ids as stored: the release fits them on the wire
    for name, history in HISTORIES:
        out = profile_or_none(history, provider)
        if out is None:
            continue
        ids = [p.tool_call_id for p in calls(out)]
        assert all(pattern.match(i) for i in ids), (name, ids)
        if provider != "mistral":
            assert len(set(ids)) == len(ids), (name, ids)
        for message in out:
            for part in results(message):
                assert pattern.match(part.tool_call_id), (name, part)

"""The tool result rules (histfix._profiles.rules.results), on the installed release's types.

A second result for one call, a result outside the request right after its call, and results beside
other user content in one turn for Bedrock's models other than Claude: each rule on the history it
is for, what it reports (with the removed content), what ``detect`` says in the provider's own
words, and, after every profile, no misplaced result.
"""

from __future__ import annotations

import copy

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.call_results import classified, misplaced_results
from histfix._profiles.registry import rules_for
from histfix._profiles.rules import results as result_rules
from histfix._profiles.rules.results import SEPARATOR_TEXT
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import table
from histfix._release.switches import has

from corpus import CASES
from dsl import call, dump, load, loadable, real, req, resp, ret, system, text, thinking, user
from emulators import anthropic as em_anthropic
from emulators import bedrock as em_bedrock
from emulators import gemini as em_gemini
from emulators import mistral as em_mistral
from emulators import openai_chat as em_openai_chat
from emulators import openai_responses as em_openai_responses
from profile_support import assert_paired_on_the_wire, kinds, named_histories, profile_or_none, results
from wire import BEDROCK_LLAMA

RULES = {rule.name: rule for rule in result_rules.RULES}


def detected(history: list[pai.ModelMessage], provider: str, rule: str) -> list[histfix.Problem]:
    found = RULES[rule].detect
    assert found is not None
    return [finding.problem for finding in found(history, resolve_provider(provider), Scan())]


HISTORIES = named_histories()


CLAUDE = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"

#: A dangling call followed by a new prompt: the default repair puts its synthesized return in the
#: prompt's request (the seeds' "aborted mid-tool").
ABORTED = [req(user("find it")), resp(call("find", "c1", {"q": "it"}), at=5), req(user("never mind"), at=6)]


def test_each_rule_is_used_only_by_the_apis_that_enforce_it() -> None:
    def names(api: str) -> set[str]:
        target = resolve_provider(api)
        return {r.name for r in rules_for(target, "after") if r in result_rules.RULES}

    assert names("openai-responses") == {"one_result_per_call"}
    assert names("openai-chat") == {"one_result_per_call", "results_follow_their_call"}
    assert "one_result_per_call" in names("gemini") and "tool_results_alone" in names("bedrock")
    assert names("any") == set(RULES)
    for rule in result_rules.RULES:
        assert rule.why and rule.detect is not None and set(rule.wording) == set(rule.apis)


def test_detect_words_result_problems_as_the_emulators_do() -> None:
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


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "bedrock", "mistral", "any"])
def test_after_a_profile_no_result_is_misplaced_and_detect_finds_nothing(provider: str) -> None:
    target = resolve_provider(provider)
    for name, history in HISTORIES:
        out = profile_or_none(history, provider)
        if out is None:
            continue
        assert misplaced_results(out) == [], name
        for rule in result_rules.RULES:
            if rule.detect is not None and rule.applies_to(target):
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


def test_a_results_and_prompt_request_is_split_around_a_period() -> None:
    history = load(ABORTED)
    before = copy.deepcopy(dump(history))
    default = histfix.repair(history)
    assert isinstance(default[-1], pai.ModelRequest) and len(default[-1].parts) == 2  # return + prompt
    report = histfix.repair_report(history, provider=BEDROCK_LLAMA)
    out = report.messages
    assert [m.kind for m in out] == ["request", "response", "request", "response", "request"]
    results, separator, rest = out[2:]
    assert [p.part_kind for p in results.parts] == ["tool-return"]
    assert [(p.part_kind, p.content) for p in separator.parts] == [("text", SEPARATOR_TEXT)]
    assert [p.part_kind for p in rest.parts] == ["user-prompt"]
    assert separator.model_name is None and separator.provider_name is None  # no provider produced it
    assert separator.timestamp == results.parts[0].timestamp or separator.timestamp == getattr(
        default[-1], "timestamp", None
    )
    assert [c.kind for c in report.changes if c.kind == "separated_results"] == ["separated_results"]
    assert dump(history) == before  # the input is untouched
    assert dump(histfix.repair(history, provider=BEDROCK_LLAMA)) == dump(out)  # deterministic
    assert dump(histfix.repair(out, provider=BEDROCK_LLAMA)) == dump(out)  # idempotent
    assert histfix.check(out, provider=BEDROCK_LLAMA) == []


def test_check_names_the_mixed_turn_in_bedrocks_words() -> None:
    repaired = histfix.repair(load(ABORTED))
    (found,) = [p for p in histfix.check(repaired, provider=BEDROCK_LLAMA) if p.kind == "results_not_alone"]
    assert found.rejected_by == ("bedrock",) and found.message_index == len(repaired) - 1
    assert found.provider_error is not None
    assert (
        "Conversation blocks and tool result blocks cannot be provided in the same turn"
        in found.provider_error
    )


@pytest.mark.parametrize("target", ["bedrock", CLAUDE, "any", "anthropic"])
def test_claude_and_unnamed_models_keep_the_prompt_beside_the_results(target: str) -> None:
    """Claude takes text beside its results; ``"bedrock"`` and ``"any"`` name no model."""
    history = load(ABORTED)
    out = histfix.repair(history, provider=target)
    assert not any(
        c.kind == "separated_results" for c in histfix.repair_report(history, provider=target).changes
    )
    assert [m.kind for m in out][-2:] == ["response", "request"]


def test_nothing_is_dropped_on_any_corpus_history() -> None:
    """Every part of the Bedrock profile's output is in the Llama profile's, which adds only ``"."``
    responses; and the output is settled (idempotent, check clean)."""
    for case, history in loadable(CASES):
        try:
            plain = histfix.repair_report(history, provider="bedrock")
        except ValueError:
            continue  # nothing sendable: tests/profiles/test_provider_generated.py covers those
        out = histfix.repair(history, provider=BEDROCK_LLAMA)
        parts = [p for m in out for p in m.parts]
        added = [p for p in parts if isinstance(p, pai.TextPart) and p.content == SEPARATOR_TEXT]
        # Claude (which "bedrock" may be) refuses thinking that Llama is never sent (1.0.0-1.0.2)
        claude_only = sum(c.kind == "dropped_thinking" for c in plain.changes)
        assert len(parts) - len(added) == sum(len(m.parts) for m in plain.messages) + claude_only, case.name
        assert dump(histfix.repair(out, provider=BEDROCK_LLAMA)) == dump(out), case.name
        assert [p for p in histfix.check(out, provider=BEDROCK_LLAMA) if p.kind == "results_not_alone"] == []


@pytest.mark.uses_sdk("bedrock", "openai-chat")
def test_a_fallback_model_holding_a_non_claude_bedrock_model_gets_the_split() -> None:
    """``agent_options(provider="auto")`` hands the run's FallbackModel over: its Bedrock member
    decides, not the other members' names."""
    from pydantic_ai.models.fallback import FallbackModel

    from wire import client_for

    built = {name: client_for(name) for name in ("openai-chat", BEDROCK_LLAMA, "bedrock")}
    if any(isinstance(found, str) for found in built.values()):
        pytest.skip(f"no client: {built}")
    models = {name: client.build("http://127.0.0.1:9")[0] for name, client in built.items()}  # type: ignore[union-attr]
    history = load(ABORTED)
    with_llama = FallbackModel(models["openai-chat"], models[BEDROCK_LLAMA])
    with_claude = FallbackModel(models["openai-chat"], models["bedrock"])
    assert [m.kind for m in histfix.repair(history, provider=with_llama)][-3:] == [
        "request",
        "response",
        "request",
    ]
    assert dump(histfix.repair(history, provider=with_llama)) == dump(
        histfix.repair(history, provider=BEDROCK_LLAMA)
    )
    assert len(histfix.repair(history, provider=with_claude)) == len(
        histfix.repair(history, provider="bedrock")
    )
    assert len(histfix.repair(history, provider=models[BEDROCK_LLAMA])) == len(histfix.repair(history)) + 2


def test_system_prompts_beside_results_move_to_the_first_request() -> None:
    """Found by the generated histories on 1.107.10 and 2.0.0, which send a system prompt outside
    the first request as ``<system>`` user text, in the results' turn: moved to the first request,
    whose system prompts every release sends as system text, the request keeps its results."""
    history = load(
        [
            req(system("sys"), user("go")),
            resp(call("f", "c1"), at=2),
            req(ret("f", "c1", at=3), system("late system")),
            resp(call("f", "c2"), at=4),
        ]
    )
    report = histfix.repair_report(history, provider=BEDROCK_LLAMA, repair_last_response=False)
    out = report.messages
    assert [(p.part_kind, p.content) for p in out[0].parts] == [
        ("system-prompt", "sys"),
        ("system-prompt", "late system"),
        ("user-prompt", "go"),
    ]
    assert [p.part_kind for p in out[2].parts] == ["tool-return"]
    assert len(out) == len(history)  # nothing to split: no user content beside the results
    assert [c.kind for c in report.changes] == ["moved_system_prompt"]
    assert dump(histfix.repair(out, provider=BEDROCK_LLAMA, repair_last_response=False)) == dump(out)
    assert histfix.check(history, provider=BEDROCK_LLAMA, repair_last_response=False) != []


def test_a_prompt_whose_turn_would_meet_the_results_on_the_wire_gets_a_period_before_it() -> None:
    """Found by the generated histories on 1.67.0: two requests the default repair keeps apart
    (different instructions) go out as one user turn, results and prompt together."""
    history = load(
        [
            req(user("go"), instructions="a"),
            resp(call("f", "c1"), at=2, model_name="m"),
            req(ret("f", "c1", at=3), instructions="a"),
            req(user("next"), instructions="b"),
        ]
    )
    out = histfix.repair(history, provider=BEDROCK_LLAMA)
    assert [m.kind for m in out] == ["request", "response", "request", "response", "request"]
    assert [(p.part_kind, p.content) for p in out[3].parts] == [("text", SEPARATOR_TEXT)]
    assert [m.kind for m in histfix.repair(history, provider=CLAUDE)] == [
        "request",
        "response",
        "request",
        "request",
    ]
    assert dump(histfix.repair(out, provider=BEDROCK_LLAMA)) == dump(out)
    (found,) = histfix.check(history, provider=BEDROCK_LLAMA)
    assert (found.kind, found.message_index) == ("results_not_alone", 3)


@pytest.mark.skipif(has(table.THINKING_SENT), reason="from 1.0.3 BedrockConverseModel sends thinking")
def test_thinking_only_responses_go_where_the_release_drops_thinking_for_non_claude_models() -> None:
    """1.0.0-1.0.2 send thinking to Bedrock for Claude only: for another model a response of only
    thinking goes out empty (Bedrock empty_content; found through Llama on 1.0.0)."""
    history = load([req(user("go")), resp(thinking("hm"), at=2, model_name="m"), req(user("next", 3))])
    # Claude is sent that thinking, unsigned, and refuses it ('thinking.signature: Field required')
    claude = histfix.repair_report(history, provider=CLAUDE)
    assert [c.preview for c in claude.changes if c.kind == "dropped_thinking"] == ["hm"]
    assert histfix.check(claude.messages, provider=CLAUDE) == []
    out = histfix.repair(history, provider=BEDROCK_LLAMA)
    assert not any(isinstance(p, pai.ThinkingPart) for m in out for p in m.parts)
    assert histfix.check(out, provider=BEDROCK_LLAMA) == []

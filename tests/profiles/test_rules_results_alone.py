"""The ``tool_results_alone`` pass (``src/histfix/_rules_results_alone.py``) on the installed release.

Bedrock refuses a turn of tool results and anything else for models other than Claude; the default
repair makes that turn whenever a synthesized return joins the next prompt. For a named non-Claude
Bedrock model the profile splits such a request around a ``"."`` response. The wire proof is in
tests/profiles/test_provider_prefixes.py (``wire.BEDROCK_LLAMA``, every corpus and generated history); here:
what the pass changes, what it leaves, and its guarantees.
"""

from __future__ import annotations

import copy

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules.results_alone import SEPARATOR_TEXT
from histfix._release import switches as _compat

from corpus import CASES
from dsl import call, dump, load, loadable, req, resp, ret, system, thinking, user
from wire import BEDROCK_LLAMA

NOVA = "bedrock:us.amazon.nova-pro-v1:0"
CLAUDE = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
#: A dangling call followed by a new prompt: the default repair puts its synthesized return in the
#: prompt's request (the seeds' "aborted mid-tool").
ABORTED = [req(user("find it")), resp(call("find", "c1", {"q": "it"}), at=5), req(user("never mind"), at=6)]


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


@pytest.mark.skipif(_compat.thinking_sent(), reason="from 1.0.3 BedrockConverseModel sends thinking")
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

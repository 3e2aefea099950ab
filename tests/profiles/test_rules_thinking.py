"""The thinking rules (histfix._profiles.rules.thinking), on the installed release's types.

A signature only its own provider verifies (Anthropic, OpenAI Responses), and the thinking Claude on
Bedrock refuses where 1.0.0-1.0.2's BedrockConverseModel sends it: what goes, what stays, for which
targets, and what ``check(provider=)`` says in the provider's words.
"""

from __future__ import annotations

import copy

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import thinking as thinking_rules
from histfix._profiles.rules.thinking import detect_bedrock_thinking_signed
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import table
from histfix._release.switches import has

from dsl import dump, load, real, req, resp, text, thinking, user


def kinds(report: histfix.RepairReport) -> list[str]:
    return [change.kind for change in report.changes]


def _signed_by(provider: str) -> list[pai.ModelMessage]:
    return load(
        [
            req(user("think")),
            resp(thinking("let me see", signature="sig-x"), text("done"), at=4, provider_name=provider),
            req(user("next")),
        ]
    )


CLAUDE = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"

LLAMA = "bedrock:us.meta.llama3-3-70b-instruct-v1:0"

SENDS_EVERY_THINKING = not has(table.BEDROCK_SENDS_ONLY_OWN_THINKING)


def _history(signature: str | None, provider_name: str | None) -> list[pai.ModelMessage]:
    return load(
        [
            req(user("think")),
            real(
                thinking("let me see", signature=signature), text("done"), at=4, provider_name=provider_name
            ),
            req(user("next")),
        ]
    )


REFUSED = [(None, "bedrock"), (None, None), ("gAAAAAB-reasoning", "openai"), ("sig", "google-gla")]

ACCEPTED = [("sig", "bedrock"), ("sig", "anthropic"), ("sig", None)]  # own, or of unknown origin


def test_a_foreign_signature_goes_and_the_thinking_text_stays() -> None:
    report = histfix.repair_report(_signed_by("openai"), provider="anthropic")
    part = report.messages[1].parts[0]
    assert isinstance(part, pai.ThinkingPart) and part.content == "let me see" and part.signature is None
    (change,) = report.changes
    assert change.kind == "dropped_signature" and change.preview == "sig-x"
    assert histfix.repair(report.messages, provider="anthropic") == report.messages
    ((found, _),) = thinking_rules.detect_thinking_transfers(
        _signed_by("openai"), resolve_provider("anthropic"), Scan()
    )
    assert found.provider_error == "messages.1.content.0: Invalid signature in thinking block"


@pytest.mark.parametrize(("provider", "api"), [("anthropic", "anthropic"), ("openai", "openai-responses")])
def test_a_signature_stays_with_its_own_provider(provider: str, api: str) -> None:
    history = _signed_by(provider)
    assert histfix.repair(history, provider=api) == histfix.repair(history)


def test_any_keeps_no_signature_of_a_known_provider_but_every_thinking_text_bedrock_can_send() -> None:
    """From 1.0.3 no known provider's signature verifies with both Anthropic and OpenAI Responses, and
    the thinking text stays. 1.0.0-1.0.2 send OpenAI Responses no thinking, so Anthropic's signature
    stays there; Bedrock's Claude refuses the unsigned thinking they send it, so ``"any"`` drops the
    thinking it stripped of a signature, and says so."""
    for provider in ("anthropic", "openai", "google-gla"):
        report = histfix.repair_report(_signed_by(provider), provider="any")
        part = report.messages[1].parts[0]
        if has(table.BEDROCK_SENDS_ONLY_OWN_THINKING):
            assert (
                isinstance(part, pai.ThinkingPart) and part.signature is None and part.content == "let me see"
            )
        elif provider == "anthropic":
            assert isinstance(part, pai.ThinkingPart) and part.signature == "sig-x"
            assert not report.changes
        else:
            assert [(p.part_kind, p.content) for p in report.messages[1].parts] == [("text", "done")]
            assert [c.preview for c in report.changes if c.kind == "dropped_thinking"] == ["let me see"]


@pytest.mark.parametrize("provider", ["anthropic", "google-gla"])
def test_openai_responses_drops_a_signature_only_where_it_is_sent_thinking(provider: str) -> None:
    report = histfix.repair_report(_signed_by(provider), provider="openai-responses")
    dropped = [c.preview for c in report.changes if c.kind == "dropped_signature"]
    assert dropped == (["sig-x"] if has(table.THINKING_SENT) else [])
    assert report.messages[1].parts[0].content == "let me see"


def test_a_signature_of_unknown_origin_is_kept() -> None:
    history = load([req(user("t")), real(thinking("x", signature="sig"), text("y"), at=4), req(user("n"))])
    assert histfix.repair(history, provider="any")[1].parts[0].signature == "sig"


@pytest.mark.parametrize("target", ["bedrock", CLAUDE, "any"])
@pytest.mark.parametrize(("signature", "origin"), REFUSED)
def test_refused_thinking_is_dropped_where_the_release_sends_it_to_claude(
    target: str, signature: str | None, origin: str | None
) -> None:
    history = _history(signature, origin)
    before = copy.deepcopy(history)
    report = histfix.repair_report(history, provider=target)
    assert dump(history) == dump(before)
    kinds = [type(part) for part in report.messages[1].parts]
    dropped = [change for change in report.changes if change.kind == "dropped_thinking"]
    if SENDS_EVERY_THINKING:
        assert kinds == [pai.TextPart]
        assert [(c.message_index, c.preview) for c in dropped] == [(1, "let me see")]
        assert histfix.repair(report.messages, provider=target) == report.messages
        assert [p for p in histfix.check(report.messages, provider=target) if "thinking" in p.kind] == []
    else:
        assert dropped == []
        assert pai.ThinkingPart in kinds  # 1.0.3+ send it as text: it stays


@pytest.mark.parametrize(("signature", "origin"), ACCEPTED)
def test_own_and_unknown_signatures_stay(signature: str, origin: str | None) -> None:
    history = _history(signature, origin)
    assert histfix.repair(history, provider=CLAUDE) == histfix.repair(history)


@pytest.mark.parametrize(("signature", "origin"), REFUSED)
def test_models_other_than_claude_and_other_apis_keep_their_thinking(
    signature: str | None, origin: str | None
) -> None:
    """BedrockConverseModel sends thinking to Claude only; Anthropic's own rule is thinking_transfers."""
    history = _history(signature, origin)
    for target in (LLAMA, "openai-chat", "gemini", "mistral"):
        fixed = histfix.repair(history, provider=target)
        assert any(isinstance(p, pai.ThinkingPart) for p in fixed[1].parts), target


def test_a_response_of_only_refused_thinking_goes_with_it() -> None:
    history = load([req(user("go")), real(thinking("hm"), at=2), req(user("next"))])
    fixed = histfix.repair(history, provider=CLAUDE)
    if SENDS_EVERY_THINKING:  # the emptied response goes (no_empty_content), the requests merge
        assert [m.kind for m in fixed] == ["request"]
        assert [p.content for p in fixed[0].parts] == ["go", "next"]
    else:
        assert fixed == histfix.repair(history)


def test_check_words_each_refusal_as_bedrock_does() -> None:
    unsigned = detect_bedrock_thinking_signed(_history(None, "bedrock"), resolve_provider(CLAUDE), Scan())
    foreign = detect_bedrock_thinking_signed(
        _history("gAAAAAB", "openai"), resolve_provider("bedrock"), Scan()
    )
    if not SENDS_EVERY_THINKING:
        assert unsigned == foreign == []
        return
    ((missing, _),) = unsigned
    assert (missing.kind, missing.message_index, missing.rejected_by) == (
        "unsigned_thinking",
        1,
        ("bedrock",),
    )
    assert missing.provider_error == (
        "The model returned the following errors: messages.1.content.0.thinking.signature: Field required"
    )
    ((invalid, _),) = foreign
    assert invalid.kind == "foreign_signature"
    assert invalid.provider_error == "messages.1.content.0: Invalid signature in thinking block"
    assert detect_bedrock_thinking_signed(_history(None, "bedrock"), resolve_provider(LLAMA), Scan()) == []

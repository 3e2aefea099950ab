"""bedrock_thinking_signed (histfix._profiles.rules.bedrock_thinking), on the installed release's types.

BedrockConverseModel 1.0.0-1.0.2 sends Claude every thinking part as a reasoning block; Claude
refuses one without a signature or with another provider's. There the Bedrock profile drops those
parts (reported, with their text); from 1.0.3 the release sends them as text and nothing changes.
The emulator half of the proof is tests/profiles/test_provider_truth.py (X_thinking_signed_by_another_provider,
X_long_multi_turn_mixed through BedrockConverseModel on 1.0.0).
"""

from __future__ import annotations

import copy

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules.bedrock_thinking import detect_bedrock_thinking_signed
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import switches as _compat

from dsl import dump, load, real, req, text, thinking, user

CLAUDE = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LLAMA = "bedrock:us.meta.llama3-3-70b-instruct-v1:0"
SENDS_EVERY_THINKING = not _compat.bedrock_sends_only_own_thinking()


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

"""The response-file passes (``src/histfix/_rules_files.py``) on the installed release.

From ``FilePart``'s arrival to 1.79.0, BedrockConverseModel asserts on a file in a response before
sending; 1.80.0+ leaves it out. OpenAIChatModel and MistralModel never send one, so a response of
only files goes out empty or not at all (found by the long campaign on 2.9.1, seed 2775383531323787). Measured here through the release's own BedrockConverseModel against
the Bedrock emulator (``tests/support/provider_bench.py``): the default repair's output fails exactly on
those releases, ``repair(h, provider="bedrock")`` and ``provider="any"`` are accepted everywhere, and
the pass drops files only where the release fails on them, reporting what each held.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from packaging.version import Version
from pydantic_ai import messages as pai
from test_provider_generated import generated_history

import histfix
from histfix._release import table
from histfix._release.switches import has

from conftest import PYDANTIC_AI
from dsl import Json, call, load, req, resp, ret, text, user
from provider_bench import Bench

FILE_PART = getattr(pai, "FilePart", None)
needs_file_part = pytest.mark.skipif(FILE_PART is None, reason="FilePart arrived after 1.0.7")
FAILS_ON_FILES = FILE_PART is not None and not has(table.BEDROCK_SKIPS_RESPONSE_FILES)
#: The generated histories that found the gaps (tests/profiles/test_provider_generated.py: 1.67.0's seeds,
#: and 2.9.1's in the long campaign, HISTFIX_PROVIDER_GENERATED=500).
FOUND_ON_1_67 = 2562699975196673
FOUND_ON_2_9_1 = 2775383531323787

FILE: Json = {"part_kind": "file", "content": {"data": "aGk=", "media_type": "image/png", "kind": "binary"}}
CASES: dict[str, list[Json]] = {
    "file beside text": [req(user("draw a cat")), resp(text("here it is"), FILE), req(user("thanks"))],
    "file only": [req(user("draw a cat")), resp(FILE), req(user("thanks"))],
    "file beside a call": [
        req(user("draw and save")),
        resp(FILE, call("save", "c1", {"name": "cat"})),
        req(ret("save", "c1", "saved", at=2)),
        resp(text("done"), at=3),
    ],
}


def _files(history: list[pai.ModelMessage]) -> int:
    assert FILE_PART is not None
    return sum(isinstance(part, FILE_PART) for message in history for part in message.parts)


def test_the_switch_is_the_measured_boundary() -> None:
    """1.79.0 is the last release whose BedrockConverseModel fails on a response file (read in its
    models/bedrock.py and measured below on the installed release)."""
    assert table.BEDROCK_SKIPS_RESPONSE_FILES.release == "1.80.0"
    assert has(table.BEDROCK_SKIPS_RESPONSE_FILES) == (Version("1.80.0") <= PYDANTIC_AI)


@needs_file_part
@pytest.mark.uses_sdk("bedrock")
@pytest.mark.parametrize("name", CASES)
def test_bedrock_accepts_the_profiles_and_fails_only_where_measured(name: str, provider_bench: Bench) -> None:
    history = load(CASES[name])
    seconds: dict[str, float] = {}
    default = provider_bench.send("bedrock", histfix.repair(history), seconds)
    if FAILS_ON_FILES:
        assert default.kind == "raised" and default.rule == "AssertionError", default
    else:
        assert default.kind != "raised", default
    for target in ("bedrock", "any"):
        outcome = provider_bench.send("bedrock", histfix.repair(history, provider=target), seconds)
        assert outcome.kind == "accepted", (target, outcome)


@needs_file_part
@pytest.mark.parametrize("name", CASES)
def test_files_are_dropped_only_where_bedrock_fails_and_reported(name: str) -> None:
    raw = CASES[name]
    history = load(raw)
    before = copy.deepcopy(history)
    report = histfix.repair_report(history, provider="bedrock")
    assert history == before  # never mutates
    dropped = [c for c in report.changes if c.kind == "dropped_file"]
    if FAILS_ON_FILES:
        assert _files(report.messages) == 0
        assert len(dropped) == 1 and dropped[0].preview == "file: image/png, 2 bytes"
        assert "image/png" in str(dropped[0])
    else:
        assert not dropped and _files(report.messages) == _files(histfix.repair(history)) == 1
    assert histfix.repair(report.messages, provider="bedrock") == report.messages  # idempotent
    # every text, call and result stays
    kept = [p for m in report.messages for p in m.parts if not isinstance(p, pai.UserPromptPart)]
    assert {getattr(p, "content", None) for p in kept if isinstance(p, pai.TextPart)} >= {
        p["content"] for m in raw for p in m["parts"] if p["part_kind"] == "text"
    }


@needs_file_part
def test_other_profiles_keep_the_files() -> None:
    """Only Bedrock's model class fails on them: other profiles (and ``any`` from 1.80.0) keep them."""
    history = load(CASES["file beside text"])
    for target in ("openai-responses", "anthropic", "gemini", "openai-chat", "mistral"):
        assert _files(histfix.repair(history, provider=target)) == 1, target
    assert _files(histfix.repair(history, provider="any")) == (0 if FAILS_ON_FILES else 1)


@needs_file_part
def test_check_names_the_file_only_where_bedrock_fails() -> None:
    history = histfix.repair(load(CASES["file beside text"]))
    found = [p for p in histfix.check(history, provider="bedrock") if p.kind == "unsendable_file"]
    if FAILS_ON_FILES:
        assert [(p.message_index, p.part_index, p.rejected_by) for p in found] == [(1, 1, ("bedrock",))]
    else:
        assert not found


@pytest.mark.uses_sdk("bedrock")
def test_the_generated_history_that_found_the_gap_is_accepted(provider_bench: Bench) -> None:
    """Seed 2562699975196673 (1.67.0's generated histories: a response file) on this release."""
    history = load(generated_history(FOUND_ON_1_67))
    seconds: dict[str, Any] = {}
    for target in ("bedrock", "any"):
        outcome = provider_bench.send("bedrock", histfix.repair(history, provider=target), seconds)
        assert outcome.kind == "accepted", (target, outcome)


@needs_file_part
@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", ["openai-chat", "mistral"])
def test_a_response_of_only_files_is_emptied_where_files_are_never_sent(
    api: str, provider_bench: Bench
) -> None:
    """OpenAI Chat and Mistral never send a response file: a response of nothing else goes (reported)
    and the history stays accepted; a file beside text stays (the wire loses nothing either way)."""
    history = load(CASES["file only"])
    report = histfix.repair_report(history, provider=api)
    assert _files(report.messages) == 0
    assert [c.preview for c in report.changes if c.kind == "dropped_file"] == ["file: image/png, 2 bytes"]
    if api == "openai-chat":  # no_empty_content drops the emptied response (MistralModel omits it)
        assert all(m.parts for m in report.messages if m.kind == "response")
    assert histfix.repair(report.messages, provider=api) == report.messages
    outcome = provider_bench.send(api, report.messages, {})
    assert outcome.kind == "accepted", outcome
    assert _files(histfix.repair(load(CASES["file beside text"]), provider=api)) == 1
    assert _files(histfix.repair(history, provider="gemini")) == 1  # Gemini sends them


#: 1.67.0's campaign: a response of a native call and a file, which OpenAIChatModel sent empty.
FOUND_ON_1_67_CAMPAIGN = (2562699975196752, 2562699975196808, 2562699975196947, 2562699975197056)


@needs_file_part
@pytest.mark.uses_sdk("openai-chat", "mistral", "gemini", "anthropic")
@pytest.mark.parametrize("seed", [FOUND_ON_2_9_1, *FOUND_ON_1_67_CAMPAIGN])
def test_the_campaign_histories_with_files_are_accepted_or_refused_clearly(
    seed: int, provider_bench: Bench
) -> None:
    """Seed 2775383531323787 (2.9.1's campaign): orphaned results, a response of only a file and an
    empty request: OpenAI Chat and Mistral sent no message at all (request_schema). 1.67.0's: a
    response of files and native calls went out empty (content_or_tool_calls). Now every profile
    either gets them accepted or refuses them as having nothing sendable, never an empty request."""
    history = load(generated_history(seed))
    for api in ("openai-chat", "mistral", "gemini", "anthropic"):
        for target in (api, "any"):
            try:
                repaired = histfix.repair(history, provider=target)
            except ValueError as exc:
                assert "nothing in this history can be sent" in str(exc)
                continue
            outcome = provider_bench.send(api, repaired, {})
            assert outcome.kind == "accepted", (api, target, outcome)

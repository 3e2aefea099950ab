"""The native (server) tool part rule (histfix._profiles.rules.native), on the installed release's types.

Anthropic refuses a server tool call without its result block (code execution; other server tools
in flight are accepted) and, before 1.0.9, a return under its tool's name; the APIs that never send
native parts get a response of only those dropped (``responses_send_something``).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import native
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import table
from histfix._release.switches import has

from dsl import load, native_call, native_return, real, req, text, user

RESULTS = [{"type": "web_search_result", "url": "https://ai.pydantic.dev", "title": "Pydantic AI"}]

IN_FLIGHT = [req(user("search")), real(native_call("web_search", "n1", {"q": "pydantic"}), text("hm"), at=4)]


def test_a_code_execution_call_without_its_result_is_dropped_and_reported() -> None:
    history = load(
        [req(user("run")), real(native_call("code_execution", "n1", {"code": "print(1)"}), text("hm"), at=4)]
    )
    report = histfix.repair_report(history, provider="anthropic")
    assert [p.part_kind for p in report.messages[1].parts] == ["text"]
    (change,) = report.changes
    assert change.kind == "dropped_native" and change.tool_call_id == "n1" and "print(1)" in str(change)
    ((found, _),) = native.detect_native_calls_paired(history, resolve_provider("anthropic"), Scan())
    assert found.provider_error == (
        "code_execution tool use with id n1 was found without a corresponding code_execution_tool_result block"
    )


def test_another_server_tool_in_flight_is_kept_for_anthropic() -> None:
    """The API takes a server tool call with no result yet (recorded: web_search under pause_turn)."""
    history = load(IN_FLIGHT)
    assert histfix.repair(history, provider="anthropic") == histfix.repair(history)
    assert native.detect_native_calls_paired(history, resolve_provider("anthropic"), Scan()) == []


@pytest.mark.uses_sdk("anthropic")
def test_anthropic_accepts_a_server_tool_in_flight_after_its_profile(provider_bench: Any) -> None:
    seconds: dict[str, float] = {"anthropic": 0.0}
    fixed = histfix.repair(load(IN_FLIGHT), provider="anthropic")
    assert provider_bench.send("anthropic", fixed, seconds).kind == "accepted"


def test_a_native_pair_the_api_accepts_is_kept() -> None:
    pair = [native_call("web_search", "n1"), native_return("web_search", "n1", RESULTS), text("found")]
    history = load([req(user("search")), real(*pair, at=4), req(user("thanks"))])
    fixed = histfix.repair(history, provider="anthropic")
    kinds_ = [p.part_kind for p in fixed[1].parts]
    assert kinds_ == ["builtin-tool-call", "builtin-tool-return", "text"]
    expected = "web_search" if has(table.NATIVE_RETURN_NAMED_BY_TOOL) else "web_search_tool_result"
    assert fixed[1].parts[1].tool_name == expected
    assert histfix.repair(fixed, provider="anthropic") == fixed


def test_a_native_pair_whose_result_no_release_sends_goes_whole() -> None:
    pair = [native_call("web_search", "n1"), native_return("web_search", "n1", "results"), text("found")]
    report = histfix.repair_report(load([req(user("search")), real(*pair, at=4)]), provider="any")
    assert [p.part_kind for p in report.messages[1].parts] == ["text"]
    assert [c.preview for c in report.changes] == ["{}", "results"]


@pytest.mark.parametrize("api", ["openai-chat", "gemini", "bedrock"])
def test_a_response_of_native_parts_only_goes_where_they_are_never_sent(api: str) -> None:
    pair = [native_call("web_search", "n1"), native_return("web_search", "n1", RESULTS)]
    history = load([req(user("search")), real(*pair, at=4), req(user("again")), real(text("ok"), at=5)])
    report = histfix.repair_report(history, provider=api)
    assert [type(m) for m in report.messages] == [pai.ModelRequest, pai.ModelResponse]
    assert "web_search_result" in str(report.changes[1])  # the results are in the report
    kept = histfix.repair(history, provider="anthropic")[1].parts  # Anthropic sends them: kept
    assert [p.part_kind for p in kept] == ["builtin-tool-call", "builtin-tool-return"]


def test_other_apis_keep_native_parts() -> None:
    history = load([req(user("search")), real(native_call("web_search", "n1"), text("hm"), at=4)])
    assert histfix.repair(history, provider="openai-responses") == histfix.repair(history)

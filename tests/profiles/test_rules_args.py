"""The tool args rule (histfix._profiles.rules.args), on the installed release's types.

Before 1.95.0 the Anthropic, Gemini and Bedrock model classes raise on args that are not a JSON
object (a cut stream) before sending: the profile keeps them whole as ``{'INVALID_JSON': raw}``.
"""

from __future__ import annotations

from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rules import args
from histfix._profiles.scan import Scan
from histfix._profiles.targets import resolve_provider
from histfix._release import table
from histfix._release.switches import has

from dsl import call, load, real, req, text, user


def calls(history: list[pai.ModelMessage]) -> list[pai.ToolCallPart]:
    return [
        p
        for m in history
        if isinstance(m, pai.ModelResponse)
        for p in m.parts
        if isinstance(p, pai.ToolCallPart)
    ]


def kinds(report: histfix.RepairReport) -> list[str]:
    return [c.kind for c in report.changes]


def test_truncated_args_are_kept_whole_where_the_release_cannot_send_them() -> None:
    raw = '{"q": "unfinished'
    history = load([req(user("search")), real(text("searching"), call("search", "c1", raw), at=10)])
    for provider in ("anthropic", "gemini", "bedrock", "any"):
        report = histfix.repair_report(history, provider=provider)
        (part,) = calls(report.messages)
        part.args_as_dict()  # what the release's AnthropicModel/GoogleModel/BedrockModel calls: never raises now
        if has(table.ARGS_AS_DICT_TOLERATES_INVALID):
            assert part.args == raw and "wrapped_tool_args" not in kinds(report)
        else:
            assert part.args == {"INVALID_JSON": raw}
            (change,) = [c for c in report.changes if c.kind == "wrapped_tool_args"]
            assert change.preview == raw
    (as_sent,) = calls(histfix.repair(history, provider="openai-chat"))
    assert as_sent.args == raw  # sent as a string there: untouched


def test_the_rule_is_for_the_apis_whose_model_class_raises() -> None:
    (rule,) = args.RULES
    assert rule.apis == {"anthropic", "gemini", "bedrock"} and set(rule.wording) == rule.apis


def test_detect_words_the_releases_own_error() -> None:
    (rule,) = args.RULES
    assert rule.detect is not None
    truncated = load([req(user("go")), real(call("f", "c1", '{"q": "x'), at=10)])
    found = [f.problem for f in rule.detect(truncated, resolve_provider("anthropic"), Scan())]
    assert [p.kind for p in found] == (
        [] if has(table.ARGS_AS_DICT_TOLERATES_INVALID) else ["invalid_tool_args"]
    )
    if found:
        assert "EOF while parsing" in (found[0].provider_error or "")

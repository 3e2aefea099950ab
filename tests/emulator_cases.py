"""Hand-written requests for the emulator selftests: per API one valid body, and per rule a body
that breaks that rule and no earlier one (so the verdict must name exactly that rule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["GOOD", "PATHS", "VIOLATIONS", "Violation"]


@dataclass(frozen=True)
class Violation:
    """A request that must be rejected by `rule` (`path` names the model where the API needs one)."""

    rule: str
    body: dict[str, Any]
    path: str = ""
    expect: str = ""  # a fragment the error message must contain


def _chat_call(call_id: str = "call_1", name: str = "get_time") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


#: The JSON path each API's valid request is sent to (streaming forms are derived in the tests).
PATHS: dict[str, str] = {
    "openai-chat": "/v1/chat/completions",
}

GOOD: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "time?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_chat_call("call_1"), _chat_call("call_2")],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "noon"},
            {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            {"role": "assistant", "content": "It is noon."},
            {"role": "user", "content": "thanks"},
        ],
    },
}

_USER = {"role": "user", "content": "hi"}

VIOLATIONS: list[Violation] = [
    # --- OpenAI Chat Completions
    Violation("openai-chat.request_schema", {"model": "gpt-4o", "messages": []}, expect="too short"),
    Violation(
        "openai-chat.request_schema", {"model": "gpt-4o", "messages": [{"role": "robot", "content": "x"}]}
    ),
    Violation(
        "openai-chat.tool_calls_without_response",
        {
            "model": "gpt-4o",
            "messages": [
                _USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_chat_call("call_1"), _chat_call("call_2")],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "noon"},
                _USER,
            ],
        },
        expect="did not have response messages: call_2",
    ),
    Violation(
        "openai-chat.tool_calls_without_response",  # answered, but only after an intervening user turn
        {
            "model": "gpt-4o",
            "messages": [
                _USER,
                {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
                _USER,
                {"role": "tool", "tool_call_id": "call_1", "content": "noon"},
            ],
        },
        expect="call_1",
    ),
    Violation(
        "openai-chat.tool_without_tool_calls",
        {"model": "gpt-4o", "messages": [_USER, {"role": "tool", "tool_call_id": "call_9", "content": "x"}]},
        expect="preceeding",
    ),
    Violation(
        "openai-chat.tool_without_tool_calls",  # a second answer to a call already answered is fine; an unknown id is not
        {
            "model": "gpt-4o",
            "messages": [
                _USER,
                {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
                {"role": "tool", "tool_call_id": "call_1", "content": "noon"},
                {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            ],
        },
    ),
    Violation(
        "openai-chat.content_or_tool_calls",
        {"model": "deepseek-chat", "messages": [_USER, {"role": "assistant", "content": ""}, _USER]},
    ),
    Violation(
        "openai-chat.missing_reasoning_content",
        {
            "model": "deepseek-reasoner",
            "messages": [
                _USER,
                {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
                {"role": "tool", "tool_call_id": "call_1", "content": "noon"},
            ],
        },
        expect="index 1",
    ),
    Violation(
        "openai-chat.roles_alternate",
        {"model": "llama", "messages": [{"role": "system", "content": "s"}, _USER, _USER]},
    ),
]

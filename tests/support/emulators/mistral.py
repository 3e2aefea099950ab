"""Mistral chat: POST /v1/chat/completions; SDK server_url: base_url (mistralai.Mistral(server_url=...)).

Rules enforced, all verified, in this order (wording from shared/spec/providers.md, "Mistral"):
- request_schema: `messages` is a non-empty list of objects with a known role (schema validation;
  wording ours, in the API's style).
- tool_call_id_format (code 3280): every tool call id, and every tool message's tool_call_id, is
  nine characters of a-z, A-Z, 0-9.
- user_after_tool (code 3230): an assistant message sits between a tool result and the next user
  message.
- unexpected_tool_role: a tool message follows an assistant message with tool calls or another
  tool message (the quoted "after role 'user'" form, filled with the actual previous role).
- call_response_count: an assistant message with N tool calls is followed by exactly N tool
  messages.
- trailing_assistant (0xPlaygrounds/rig#1130): the last message is not an assistant message,
  unless it has `prefix: true`.
Errors: status 400, `{"object": "error", "message": ..., "type": ..., "param": null, "code": ...}`.
Streaming (`stream: true`): SSE `data: {chunk}` lines ending `data: [DONE]`, usage on the last chunk.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from ._base import ApiSpec, Check, Reply, Route, Rule, json_reply, model_of, sse

__all__ = ["SPEC"]

API = "mistral"
ROLES = ("system", "user", "assistant", "tool")
ID = re.compile(r"^[a-zA-Z0-9]{9}$")


def _rule(name: str, message: str) -> Rule:
    return Rule(f"{API}.{name}", API, True, message)


SCHEMA = _rule("request_schema", "Invalid messages: {detail}")
ID_FORMAT = _rule(
    "tool_call_id_format", "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."
)
USER_AFTER_TOOL = _rule("user_after_tool", "Unexpected role 'user' after role 'tool'")
TOOL_ROLE = _rule("unexpected_tool_role", "Unexpected role 'tool' after role '{role}'")
COUNT = _rule("call_response_count", "Not the same number of function calls and responses")
TRAILING = _rule(
    "trailing_assistant",
    "Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant",
)

#: The error code and type the API sends with each rule's message.
CODES = {
    ID_FORMAT.id: ("3280", "invalid_request_message"),
    USER_AFTER_TOOL.id: ("3230", "invalid_request_message_order"),
    TOOL_ROLE.id: ("3230", "invalid_request_message_order"),
    COUNT.id: ("3230", "invalid_request_message_order"),
}


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []


def _calls(message: Mapping[str, Any]) -> list[object]:
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list):
        return []
    return [call.get("id") for call in calls if isinstance(call, Mapping)]


def check_schema(body: Mapping[str, Any], model: str) -> str | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return SCHEMA.message.format(detail="at least one message is required")
    for n, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            return SCHEMA.message.format(detail=f"messages[{n}].role must be one of {', '.join(ROLES)}")
    return None


def check_id_format(body: Mapping[str, Any], model: str) -> str | None:
    for message in _messages(body):
        ids = _calls(message) + ([message.get("tool_call_id")] if message.get("role") == "tool" else [])
        for call_id in ids:
            if not isinstance(call_id, str) or not ID.match(call_id):
                return ID_FORMAT.message.format(id=call_id)
    return None


def check_user_after_tool(body: Mapping[str, Any], model: str) -> str | None:
    roles = [m.get("role") for m in _messages(body)]
    return (
        USER_AFTER_TOOL.message
        if any(a == "tool" and b == "user" for a, b in itertools.pairwise(roles))
        else None
    )


def check_tool_role(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    for n, message in enumerate(messages):
        if message.get("role") != "tool":
            continue
        previous = messages[n - 1] if n else {"role": "none"}
        if previous.get("role") != "tool" and not _calls(previous):
            return TOOL_ROLE.message.format(role=previous.get("role"))
    return None


def check_count(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    for n, message in enumerate(messages):
        calls = _calls(message)
        if not calls:
            continue
        after = n + 1
        while after < len(messages) and messages[after].get("role") == "tool":
            after += 1
        if after - n - 1 != len(calls):
            return COUNT.message
    return None


def check_trailing(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    last = messages[-1] if messages else {}
    return TRAILING.message if last.get("role") == "assistant" and last.get("prefix") is not True else None


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SCHEMA, check_schema),
    (ID_FORMAT, check_id_format),
    (USER_AFTER_TOOL, check_user_after_tool),
    (TOOL_ROLE, check_tool_role),
    (COUNT, check_count),
    (TRAILING, check_trailing),
)


def route(path: str, query: str) -> Route | None:
    return Route("", False) if path == "/v1/chat/completions" else None


def ok(route: Route, body: Mapping[str, Any]) -> Reply:
    base = {"id": "emulated", "created": 1_700_000_000, "model": model_of(route, body)}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if not route.stream:
        message = {"role": "assistant", "content": "ok", "tool_calls": None, "prefix": False}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return json_reply(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
    chunk = {**base, "object": "chat.completion.chunk"}
    return sse(
        [
            (
                None,
                {
                    **chunk,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}
                    ],
                },
            ),
            (
                None,
                {
                    **chunk,
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
                    "usage": usage,
                },
            ),
            (None, "[DONE]"),
        ]
    )


def error(status: int, message: str, rule: str | None) -> Reply:
    code, kind = CODES.get(rule or "", (None, "invalid_request_error"))
    return json_reply(
        status, {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    )


SPEC = ApiSpec(API, CHECKS, route, ok, error)

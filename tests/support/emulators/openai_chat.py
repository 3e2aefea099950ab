"""OpenAI Chat Completions: POST /v1/chat/completions (SDK base_url: `emulator.base_url + "/v1"`).

Also served at /openai/v1/chat/completions, where Groq's SDK posts (base_url: `emulator.base_url`),
and at /client/v4/accounts/<account>/ai/v1/chat/completions, where CloudflareChatModel posts (Workers
AI's OpenAI-compatible endpoint): providers.md lists such compatible servers among those these rules
hold for.

Rules enforced, in this order (wording from shared/spec/providers.md, "OpenAI Chat Completions"):
- request_schema: `messages` is a non-empty list of objects with a known role. Schema validation
  every OpenAI endpoint does; the wording is OpenAI's schema-error style, not quoted there.
- tool_calls_without_response (verified, pydantic-ai #562): the tool messages right after an
  assistant message with `tool_calls` answer every `tool_call_id`.
- tool_without_tool_calls (verified, wording "preceeding" sic): a tool message sits in the run of
  tool messages right after an assistant message with `tool_calls`, and answers one of them that
  no earlier tool message of the run answered (an id called twice may be answered twice) (a second tool message for one call gets this
  error: LangChain's INVALID_TOOL_RESULTS page, gpt-4o-mini; semantic-kernel#12708).
- content_or_tool_calls (unverified, DeepSeek): an assistant message has content or tool_calls.
- missing_reasoning_content (unverified, DeepSeek reasoning models, i.e. a model name containing
  "reasoner"): an assistant message with tool_calls carries `reasoning_content`.
- roles_alternate (vLLM/Ollama chat templates, vllm#6862): only with `strict_templates=True`.
Streaming (`stream: true`): SSE `data: {chunk}` lines ending `data: [DONE]`, with a usage chunk
when `stream_options.include_usage` is set.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from ._base import ApiSpec, Check, Reply, Route, Rule, json_reply, model_of, sse

__all__ = ["SPEC"]

API = "openai-chat"
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _rule(name: str, verified: bool, message: str) -> Rule:
    return Rule(f"{API}.{name}", API, verified, message)


SCHEMA = _rule("request_schema", True, "Invalid value for 'messages': {detail}")
NO_RESPONSE = _rule(
    "tool_calls_without_response",
    True,
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}",
)
NO_CALL = _rule(
    "tool_without_tool_calls",
    True,
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
)
CONTENT_OR_CALLS = _rule("content_or_tool_calls", False, "content or tool_calls must be set")
REASONING = _rule(
    "missing_reasoning_content",
    False,
    "Missing `reasoning_content` field in the assistant message at message index {index}",
)
ALTERNATE = _rule(
    "roles_alternate",
    True,
    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/... "
    "except for tool calls and results",
)


def messages_of(body: Mapping[str, Any]) -> list[Any]:
    """The request's messages (non-lists: none)."""
    messages = body.get("messages")
    return messages if isinstance(messages, list) else []


def call_ids(message: Mapping[str, Any]) -> list[str]:
    """The ids of an assistant message's tool calls."""
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list):
        return []
    return [str(call.get("id")) for call in calls if isinstance(call, Mapping)]


def check_schema(body: Mapping[str, Any], model: str) -> str | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return SCHEMA.message.format(detail="[] is too short - 'messages'")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            role = message.get("role") if isinstance(message, Mapping) else message
            return SCHEMA.message.format(
                detail=f"messages[{index}].role {role!r} is not one of {list(ROLES)}"
            )
    return None


def check_responses(body: Mapping[str, Any], model: str) -> str | None:
    messages = messages_of(body)
    for index, message in enumerate(messages):
        missing = call_ids(message) if isinstance(message, Mapping) else []
        after = index + 1
        while missing and after < len(messages) and _role(messages[after]) == "tool":
            answered = messages[after].get("tool_call_id")
            missing = [call for call in missing if call != answered]
            after += 1
        if missing:
            return NO_RESPONSE.message.format(ids=", ".join(missing))
    return None


def _role(message: object) -> object:
    return message.get("role") if isinstance(message, Mapping) else None


def check_calls(body: Mapping[str, Any], model: str) -> str | None:
    messages = messages_of(body)
    for index, message in enumerate(messages):
        if _role(message) != "tool":
            continue
        before = index - 1
        while before >= 0 and _role(messages[before]) == "tool":
            before -= 1
        owner = messages[before] if before >= 0 and isinstance(messages[before], Mapping) else {}
        call_id = message.get("tool_call_id")
        answered_before = [m.get("tool_call_id") for m in messages[before + 1 : index]].count(call_id)
        if answered_before >= call_ids(owner).count(call_id):  # each call answered once
            return NO_CALL.message
    return None


def check_content(body: Mapping[str, Any], model: str) -> str | None:
    for message in messages_of(body):
        if _role(message) == "assistant" and not message.get("content") and not message.get("tool_calls"):
            return CONTENT_OR_CALLS.message
    return None


def check_reasoning(body: Mapping[str, Any], model: str) -> str | None:
    if "reasoner" not in model:
        return None
    for index, message in enumerate(messages_of(body)):
        if isinstance(message, Mapping) and call_ids(message) and "reasoning_content" not in message:
            return REASONING.message.format(index=index)
    return None


def check_alternation(body: Mapping[str, Any], model: str) -> str | None:
    # Tool calls and their results are transparent to the templates' alternation check.
    turns = [
        _role(message)
        for message in messages_of(body)
        if _role(message) not in ("system", "developer", "tool") and not call_ids(message)
    ]
    starts_right = not turns or turns[0] == "user"
    if not starts_right or any(a == b for a, b in itertools.pairwise(turns)):
        return ALTERNATE.message
    return None


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SCHEMA, check_schema),
    (NO_RESPONSE, check_responses),
    (NO_CALL, check_calls),
    (CONTENT_OR_CALLS, check_content),
    (REASONING, check_reasoning),
    (ALTERNATE, check_alternation),
)


#: The paths a Chat Completions request arrives on: OpenAI's (and Hugging Face's client's), Groq's.
PATHS = frozenset({"/v1/chat/completions", "/openai/v1/chat/completions"})
#: Cloudflare Workers AI's OpenAI-compatible endpoint, under an account (CloudflareChatModel's path).
CLOUDFLARE_PATH = re.compile(r"/client/v4/accounts/[^/]+/ai/v1/chat/completions")


def route(path: str, query: str) -> Route | None:
    return Route("", False) if path in PATHS or CLOUDFLARE_PATH.fullmatch(path) else None


def ok(route: Route, body: Mapping[str, Any]) -> Reply:
    model = model_of(route, body)
    base = {"id": "chatcmpl-emulated", "created": 1_700_000_000, "model": model, "system_fingerprint": None}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if not route.stream:
        choice = {
            "index": 0,
            "finish_reason": "stop",
            "logprobs": None,
            "message": {"role": "assistant", "content": "ok", "refusal": None},
        }
        return json_reply(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
    chunk = {**base, "object": "chat.completion.chunk"}
    events: list[tuple[str | None, object]] = [
        (
            None,
            {
                **chunk,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}
                ],
            },
        ),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return sse(events)


def error(status: int, message: str, rule: str | None) -> Reply:
    kind = "invalid_request_error"
    return json_reply(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})


SPEC = ApiSpec(API, CHECKS, route, ok, error, optional=frozenset({ALTERNATE.id}))

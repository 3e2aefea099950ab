"""AWS Bedrock Converse: POST /model/{modelId}/converse and /model/{modelId}/converse-stream;
SDK endpoint: base_url (boto3 client("bedrock-runtime", endpoint_url=...), any dummy keys).

Rules enforced, in this order (wording from shared/spec/providers.md, "AWS Bedrock Converse"; the
quoted fragments completed in the service's own style). Several depend on the model family the
path names, as the real service's do:
- request_schema: `messages` is a non-empty list of objects with role user/assistant and a
  `content` list (schema validation; wording in the service's style, not quoted there).
- start_with_user: the first message is a user message, except for the families that accept a
  leading assistant message (`LEADING_ASSISTANT_FAMILIES`: Claude, Qwen, GLM, Kimi; pydantic-ai#6255,
  and recorded: Claude Sonnet 4.5 answered an assistant-first history with 200).
- alternate_roles (unverified: contested): user and assistant messages alternate. Verified in 2024
  (dify#9294, langchain-aws#130); pydantic-ai#2327 and 2.68.0's `models/bedrock.py` say the service
  now merges consecutive same-role turns.
- empty_content: no message with an empty content list.
- whitespace_text: no message whose content is only empty or whitespace text (hermes#63983;
  recorded: Claude accepted a "\n" text block beside other blocks).
- too_many_tool_results: a user message has no more toolResult blocks than the previous turn has
  toolUse blocks. A toolUse answered by a toolResult in its own assistant message is a server-side
  tool (recorded: Nova's code interpreter), not a call the next turn answers.
- tool_results_first: the message after a turn with N toolUse blocks begins with N toolResult
  blocks (langchain-aws#451).
- expected_tool_results: those toolResult blocks answer every toolUse id of the previous turn.
- thinking_signature_missing, thinking_signature_invalid: for Claude models, a `reasoningContent`
  block's `reasoningText` carries a non-empty `signature` (earendil-works/pi#2063,
  run-llama/llama_index#20851: `thinking.signature: Field required`) that Claude can verify
  (chenhg5/cc-connect#897: `Invalid signature in thinking block`). Like the Anthropic emulator, it
  refuses the one foreign kind it can tell (`FOREIGN_SIGNATURE_PREFIX`, OpenAI's encrypted
  reasoning) and passes any other non-empty string; `redactedContent` is opaque and passes.
- mixed_tool_result_turn: for the families that want a toolResult alone in its turn
  (`TOOL_RESULT_ALONE_FAMILIES`: Llama, Mistral, Writer; pydantic-ai#6081), a turn with toolResult
  blocks holds nothing else. Claude and Nova were recorded accepting text, images and documents
  beside a toolResult.
Errors: status 400 with `x-amzn-ErrorType: ValidationException` and `{"message": ...}`, which
botocore raises as `ValidationException`. ConverseStream answers AWS event-stream framing
(`application/vnd.amazon.eventstream`): messageStart, contentBlockDelta, contentBlockStop,
messageStop, metadata.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
import zlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ._base import ApiSpec, Check, Reply, Route, Rule, json_reply
from .anthropic import FOREIGN_SIGNATURE_PREFIX

__all__ = ["SPEC", "event_stream_message"]

API = "bedrock"
PATH = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")


#: Families that accept a conversation opening on an assistant message (pydantic-ai#6255).
LEADING_ASSISTANT_FAMILIES = re.compile(r"anthropic|claude|qwen|glm|zai|moonshot|kimi")
#: Families that refuse any other block in a turn holding a toolResult (pydantic-ai#6081).
TOOL_RESULT_ALONE_FAMILIES = re.compile(r"meta\.|llama|mistral|pixtral|writer|palmyra")


def _rule(name: str, message: str, verified: bool = True) -> Rule:
    return Rule(f"{API}.{name}", API, verified, message)


SCHEMA = _rule("request_schema", "1 validation error detected: {detail}")
START = _rule(
    "start_with_user",
    "A conversation must start with a user message. Try again with a conversation that starts with a "
    "user message.",
)
ALTERNATE = _rule(
    "alternate_roles",
    "A conversation must alternate between user and assistant roles. Make sure the conversation "
    "alternates between user and assistant roles and try again.",
    verified=False,
)
EMPTY = _rule(
    "empty_content",
    "The content field in the Message object at messages.{n} is empty. Add a ContentBlock object to "
    "the content field and try again.",
)
WHITESPACE = _rule("whitespace_text", "messages: text content blocks must contain non-whitespace text")
TOO_MANY = _rule(
    "too_many_tool_results",
    "The number of toolResult blocks at messages.{n}.content exceeds the number of toolUse blocks of previous turn.",
)
FIRST = _rule(
    "tool_results_first",
    "messages.{n}: Did not find {count} toolResult block(s) at the beginning of this message. "
    "Messages following toolUse blocks must begin with a matching number of toolResult blocks.",
)
EXPECTED = _rule(
    "expected_tool_results", "Expected toolResult blocks at messages.{n}.content for the following Ids: {ids}"
)
SIGNATURE_MISSING = _rule(
    "thinking_signature_missing",
    "The model returned the following errors: messages.{n}.content.{m}.thinking.signature: Field required",
)
SIGNATURE_INVALID = _rule(
    "thinking_signature_invalid", "messages.{n}.content.{m}: Invalid signature in thinking block"
)
MIXED = _rule(
    "mixed_tool_result_turn",
    "Conversation blocks and tool result blocks cannot be provided in the same turn.",
)


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []


def _blocks(message: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    content = message.get("content") if message is not None else None
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _results(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [b["toolResult"] for b in _blocks(message) if isinstance(b.get("toolResult"), Mapping)]


def _uses(message: Mapping[str, Any] | None) -> list[object]:
    """The toolUse ids of an assistant message the next turn must answer (not its server tools,
    whose results it holds itself)."""
    if message is None or message.get("role") != "assistant":
        return []
    answered = {result.get("toolUseId") for result in _results(message)}
    calls = [b["toolUse"].get("toolUseId") for b in _blocks(message) if isinstance(b.get("toolUse"), Mapping)]
    return [call for call in calls if call not in answered]


def check_schema(body: Mapping[str, Any], model: str) -> str | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return SCHEMA.message.format(
            detail="Value at 'messages' failed to satisfy constraint: Member must not be empty"
        )
    for n, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            return SCHEMA.message.format(
                detail=f"Value at 'messages.{n + 1}.member.role' failed to satisfy constraint: Member must satisfy "
                "enum value set: [user, assistant]"
            )
        if not isinstance(message.get("content"), list):
            return SCHEMA.message.format(
                detail=f"Value at 'messages.{n + 1}.member.content' must not be null"
            )
    return None


def check_start(body: Mapping[str, Any], model: str) -> str | None:
    if LEADING_ASSISTANT_FAMILIES.search(model):
        return None
    messages = _messages(body)
    return START.message if messages and messages[0].get("role") != "user" else None


def check_alternate(body: Mapping[str, Any], model: str) -> str | None:
    roles = [m.get("role") for m in _messages(body)]
    return ALTERNATE.message if any(a == b for a, b in itertools.pairwise(roles)) else None


def check_empty(body: Mapping[str, Any], model: str) -> str | None:
    for n, message in enumerate(_messages(body)):
        if not _blocks(message):
            return EMPTY.message.format(n=n)
    return None


def check_whitespace(body: Mapping[str, Any], model: str) -> str | None:
    for message in _messages(body):
        blocks = _blocks(message)
        if blocks and all(isinstance(b.get("text"), str) and not b["text"].strip() for b in blocks):
            return WHITESPACE.message
    return None


def check_too_many(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    for n, message in enumerate(messages):
        if message.get("role") == "user" and len(_results(message)) > len(
            _uses(messages[n - 1] if n else None)
        ):
            return TOO_MANY.message.format(n=n)
    return None


def check_first(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    for n, message in enumerate(messages[1:], start=1):
        count = len(_uses(messages[n - 1]))
        leading = _blocks(message)[:count]
        if count and (len(leading) < count or not all("toolResult" in b for b in leading)):
            return FIRST.message.format(n=n, count=count)
    return None


def check_expected(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    for n, message in enumerate(messages[1:], start=1):
        answered = {result.get("toolUseId") for result in _results(message)}
        missing = [str(call) for call in _uses(messages[n - 1]) if call not in answered]
        if missing:
            return EXPECTED.message.format(n=n, ids=", ".join(missing))
    return None


def _claude(model: str) -> bool:
    return "anthropic" in model or "claude" in model


def _reasoning_texts(body: Mapping[str, Any]) -> list[tuple[int, int, Mapping[str, Any]]]:
    """(message, block, reasoningText) of every reasoning block with text."""
    found = []
    for n, message in enumerate(_messages(body)):
        for m, block in enumerate(_blocks(message)):
            reasoning = block.get("reasoningContent")
            text = reasoning.get("reasoningText") if isinstance(reasoning, Mapping) else None
            if isinstance(text, Mapping):
                found.append((n, m, text))
    return found


def check_signature_missing(body: Mapping[str, Any], model: str) -> str | None:
    if not _claude(model):
        return None
    for n, m, text in _reasoning_texts(body):
        if not text.get("signature"):
            return SIGNATURE_MISSING.message.format(n=n, m=m)
    return None


def check_signature_invalid(body: Mapping[str, Any], model: str) -> str | None:
    if not _claude(model):
        return None
    for n, m, text in _reasoning_texts(body):
        signature = text.get("signature")
        if not isinstance(signature, str) or signature.startswith(FOREIGN_SIGNATURE_PREFIX):
            return SIGNATURE_INVALID.message.format(n=n, m=m)
    return None


def check_mixed(body: Mapping[str, Any], model: str) -> str | None:
    if not TOOL_RESULT_ALONE_FAMILIES.search(model):
        return None
    for message in _messages(body):
        if _results(message) and len(_results(message)) != len(_blocks(message)):
            return MIXED.message
    return None


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SCHEMA, check_schema),
    (START, check_start),
    (ALTERNATE, check_alternate),
    (EMPTY, check_empty),
    (WHITESPACE, check_whitespace),
    (TOO_MANY, check_too_many),
    (FIRST, check_first),
    (EXPECTED, check_expected),
    (SIGNATURE_MISSING, check_signature_missing),
    (SIGNATURE_INVALID, check_signature_invalid),
    (MIXED, check_mixed),
)


def route(path: str, query: str) -> Route | None:
    match = PATH.match(path)
    return Route(unquote(match.group(1)), match.group(2) == "converse-stream") if match else None


def event_stream_message(event: str, payload: object) -> bytes:
    """One AWS event-stream message: prelude (lengths + CRC), string headers, JSON payload, CRC."""
    headers = b""
    for name, value in (
        (":event-type", event),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        headers += (
            bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        )
    data = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(data) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + data
    return message + struct.pack(">I", zlib.crc32(message))


def ok(route: Route, body: Mapping[str, Any]) -> Reply:
    usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
    if not route.stream:
        return json_reply(
            200,
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                "stopReason": "end_turn",
                "usage": usage,
                "metrics": {"latencyMs": 1},
            },
        )
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "ok"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        ("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}),
    ]
    stream = b"".join(event_stream_message(name, payload) for name, payload in events)
    return Reply(200, {"Content-Type": "application/vnd.amazon.eventstream"}, stream)


def error(status: int, message: str, rule: str | None) -> Reply:
    kind = "ValidationException" if status == 400 else "UnknownOperationException"
    return json_reply(
        status, {"message": message}, {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/"}
    )


SPEC = ApiSpec(API, CHECKS, route, ok, error)

"""Anthropic Messages: POST /v1/messages (also `?beta=true`, the beta client); SDK base_url: base_url.

Rules enforced, verified ones first, in this order (wording from shared/spec/providers.md,
"Anthropic Messages", unless said otherwise). The API reads consecutive same-role messages as
one (recorded: `assistant[tool_use], assistant[tool_use], user[result, result]` got 200 from
claude-sonnet-4-5), so the pairing rules judge merged turns and name the first message of each.
Messages with the `system` role (mid-conversation instructions, tool additions) are accepted.
- request_schema: `messages` is a non-empty list of objects with role user/assistant/system and
  string or list content (schema validation; wording in the API's schema-error style, not quoted).
- tool_use_id_pattern: every `tool_use` id matches ^[a-zA-Z0-9_-]+$ (earendil-works/pi#9048).
- empty_text: no text block with empty text, also inside tool_result content.
- whitespace_text: no text block of a message that is only whitespace (anthropics/claude-code#23440;
  the quote names message content, so text inside a tool_result is not judged by it).
- multiple_results: one `tool_result` per `tool_use` id within a turn (hindsight#4250).
- tool_use_without_result: every `tool_use` answered in the immediately next (user) turn.
- unexpected_tool_result: every `tool_result` answers a `tool_use` of the previous assistant turn.
- tool_result_first: the turn after one with N `tool_use` blocks begins with N `tool_result`
  blocks (apify/tester-mcp-client#12).
- tool_use_id_unique: no tool_use id twice in one assistant turn (trycua/cua#524, claude-code#20901;
  recorded: the same id in two different turns got 200).
- code_execution_without_result: a `server_tool_use` named *code_execution* has its result block
  in the same message (pydantic-ai #6401; other server tools were recorded in flight, unpaired,
  with 200: web_search under pause_turn).
- thinking_signature: a thinking block carries a non-empty `signature` (redacted: `data`) that
  Anthropic issued: blocks from another model fail the check (anthropic-sdk-python#1598). The
  emulator cannot check a signature cryptographically; it refuses the one foreign kind it can tell
  by its form, OpenAI's encrypted reasoning, a Fernet token (`gAAAAA...`, which pydantic-ai keeps
  as the thinking part's signature), and passes any other non-empty string.
Unverified (off with enforce_unverified=False):
- empty_message: every message but an optional final assistant one has non-empty content.
- first_message_user: the first message has the user role, for the Claude 3 family and older only
  (`LEGACY_FAMILIES`): the 2024 reports (lobehub#1601) name those, while claude-sonnet-4-5 was
  recorded accepting an assistant-first history (pydantic-ai's
  test_anthropic_model_empty_message_on_history).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._base import ApiSpec, Check, Reply, Route, Rule, json_reply, model_of, sse

__all__ = ["SPEC"]

API = "anthropic"
ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
ROLES = ("user", "assistant", "system")
#: Model families that want the first message from the user (the 2024 reports): Claude 3 and older.
LEGACY_FAMILIES = re.compile(r"claude-(instant|[123])([.-]|$)")


def _rule(name: str, verified: bool, message: str) -> Rule:
    return Rule(f"{API}.{name}", API, verified, message)


SCHEMA = _rule("request_schema", True, "{detail}")
PATTERN = _rule(
    "tool_use_id_pattern",
    True,
    "messages.{n}.content.{m}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
)
EMPTY_TEXT = _rule("empty_text", True, "messages: text content blocks must be non-empty")
WHITESPACE_TEXT = _rule(
    "whitespace_text", True, "messages: text content blocks must contain non-whitespace text"
)
MULTIPLE = _rule(
    "multiple_results",
    True,
    "each tool_use must have a single result. Found multiple tool_result blocks with id: {id}",
)
NO_RESULT = _rule(
    "tool_use_without_result",
    True,
    "messages.{n}: tool_use ids were found without tool_result blocks immediately after: {ids}. "
    "Each tool_use block must have a corresponding tool_result block in the next message.",
)
UNEXPECTED = _rule(
    "unexpected_tool_result",
    True,
    "messages.{n}.content.{m}: unexpected tool_use_id found in tool_result blocks: {id}. "
    "Each tool_result block must have a corresponding tool_use block in the previous message.",
)
CODE_EXECUTION = _rule(
    "code_execution_without_result",
    True,
    "{name} tool use with id {id} was found without a corresponding {name}_tool_result block",
)
SIGNATURE = _rule("thinking_signature", True, "messages.{n}.content.{m}: Invalid signature in thinking block")
UNIQUE = _rule("tool_use_id_unique", True, "messages.{n}.content.{m}: tool_use ids must be unique")
EMPTY_MESSAGE = _rule(
    "empty_message",
    False,
    "messages.{n}: all messages must have non-empty content except for the optional final assistant message",
)
RESULT_FIRST = _rule(
    "tool_result_first",
    True,
    "messages.{n}: Did not find {count} tool_result block(s) at the beginning of this message. "
    "Messages following tool_use blocks must begin with a matching number of tool_result blocks.",
)
FIRST_USER = _rule("first_message_user", False, 'messages: first message must use the "user" role')


def _messages(body: Mapping[str, Any]) -> list[Any]:
    messages = body.get("messages")
    return messages if isinstance(messages, list) else []


def _blocks(message: object) -> list[Any]:
    """A message's content blocks (string content is one text block)."""
    if not isinstance(message, Mapping):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _typed(message: object, kind: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(index, block) for every block of type `kind` in `message`."""
    for index, block in enumerate(_blocks(message)):
        if isinstance(block, Mapping) and block.get("type") == kind:
            yield index, block


def _role(message: object) -> object:
    return message.get("role") if isinstance(message, Mapping) else None


def check_schema(body: Mapping[str, Any], model: str) -> str | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for n, message in enumerate(messages):
        if _role(message) not in ROLES:
            return f"messages.{n}.role: Input should be 'user', 'assistant' or 'system'"
        if not isinstance(message.get("content"), (str, list)):
            return f"messages.{n}.content: Input should be a valid list"
    return None


def check_pattern(body: Mapping[str, Any], model: str) -> str | None:
    for n, message in enumerate(_messages(body)):
        for m, block in _typed(message, "tool_use"):
            if not isinstance(block.get("id"), str) or not ID_PATTERN.match(block["id"]):
                return PATTERN.message.format(n=n, m=m)
    return None


def _texts(blocks: list[Any]) -> Iterator[Mapping[str, Any]]:
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "text":
            yield block
        elif (
            isinstance(block, Mapping)
            and block.get("type") == "tool_result"
            and isinstance(block.get("content"), list)
        ):
            yield from _texts(block["content"])


def check_empty_text(body: Mapping[str, Any], model: str) -> str | None:
    for message in _messages(body):
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and any(block.get("text") == "" for block in _texts(content)):
            return EMPTY_TEXT.message
    return None


def check_whitespace_text(body: Mapping[str, Any], model: str) -> str | None:
    for message in _messages(body):
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks = (
            [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []
        )
        if any(
            block.get("type") == "text"
            and isinstance(block.get("text"), str)
            and block["text"]
            and not block["text"].strip()
            for block in blocks
        ):
            return WHITESPACE_TEXT.message
    return None


@dataclass(frozen=True)
class _Turn:
    """Consecutive messages of one role, as the API reads them: the first one's index, the blocks."""

    n: int
    role: object
    blocks: list[Mapping[str, Any]]

    def typed(self, kind: str) -> list[Mapping[str, Any]]:
        return [block for block in self.blocks if block.get("type") == kind]


def _turns(body: Mapping[str, Any]) -> list[_Turn]:
    turns: list[_Turn] = []
    for n, message in enumerate(_messages(body)):
        blocks = [block for block in _blocks(message) if isinstance(block, Mapping)]
        if turns and turns[-1].role == _role(message):
            turns[-1].blocks.extend(blocks)
        else:
            turns.append(_Turn(n, _role(message), blocks))
    return turns


def _call_ids(turn: _Turn | None) -> list[object]:
    if turn is None or turn.role != "assistant":
        return []
    return [block.get("id") for block in turn.typed("tool_use")]


def check_multiple(body: Mapping[str, Any], model: str) -> str | None:
    for turn in _turns(body):
        seen: set[object] = set()
        for block in turn.typed("tool_result"):
            if block.get("tool_use_id") in seen:
                return MULTIPLE.message.format(id=block.get("tool_use_id"))
            seen.add(block.get("tool_use_id"))
    return None


def check_no_result(body: Mapping[str, Any], model: str) -> str | None:
    turns = _turns(body)
    for index, turn in enumerate(turns):
        following = turns[index + 1] if index + 1 < len(turns) and turns[index + 1].role == "user" else None
        answered = (
            {block.get("tool_use_id") for block in following.typed("tool_result")} if following else set()
        )
        missing = [str(call) for call in _call_ids(turn) if call not in answered]
        if missing:
            return NO_RESULT.message.format(n=turn.n, ids=", ".join(missing))
    return None


def check_unexpected(body: Mapping[str, Any], model: str) -> str | None:
    turns = _turns(body)
    for index, turn in enumerate(turns):
        if turn.role != "user":
            continue
        calls = _call_ids(turns[index - 1]) if index > 0 else []
        for m, block in enumerate(turn.blocks):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in calls:
                return UNEXPECTED.message.format(n=turn.n, m=m, id=block.get("tool_use_id"))
    return None


def check_result_first(body: Mapping[str, Any], model: str) -> str | None:
    turns = _turns(body)
    for index, turn in enumerate(turns[1:], start=1):
        count = len(_call_ids(turns[index - 1]))
        if count and any(block.get("type") != "tool_result" for block in turn.blocks[:count]):
            return RESULT_FIRST.message.format(n=turn.n, count=count)
    return None


def check_unique(body: Mapping[str, Any], model: str) -> str | None:
    for turn in _turns(body):
        seen: set[object] = set()
        for m, block in enumerate(turn.blocks):
            if block.get("type") == "tool_use":
                if block.get("id") in seen:
                    return UNIQUE.message.format(n=turn.n, m=m)
                seen.add(block.get("id"))
    return None


def _unpaired_server_tools(body: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    """(name, id) of every server_tool_use whose result block is not in the same message."""
    for message in _messages(body):
        results = {
            block.get("tool_use_id")
            for block in _blocks(message)
            if isinstance(block, Mapping) and str(block.get("type", "")).endswith("_tool_result")
        }
        for _, block in _typed(message, "server_tool_use"):
            if block.get("id") not in results:
                yield str(block.get("name")), block.get("id")


def check_code_execution(body: Mapping[str, Any], model: str) -> str | None:
    for name, call in _unpaired_server_tools(body):
        if "code_execution" in name:
            return CODE_EXECUTION.message.format(name=name, id=call)
    return None


#: How OpenAI's encrypted reasoning starts: a Fernet token (version byte 0x80, base64url), which
#: OpenAIResponsesModel stores as the thinking part's signature. Anthropic never issues one.
FOREIGN_SIGNATURE_PREFIX = "gAAAAA"


def check_signature(body: Mapping[str, Any], model: str) -> str | None:
    for n, message in enumerate(_messages(body)):
        for kind, field in (("thinking", "signature"), ("redacted_thinking", "data")):
            for m, block in _typed(message, kind):
                signature = block.get(field)
                if (
                    not isinstance(signature, str)
                    or not signature
                    or signature.startswith(FOREIGN_SIGNATURE_PREFIX)
                ):
                    return SIGNATURE.message.format(n=n, m=m)
    return None


def check_empty_message(body: Mapping[str, Any], model: str) -> str | None:
    messages = _messages(body)
    for n, message in enumerate(messages):
        final_assistant = n == len(messages) - 1 and _role(message) == "assistant"
        empty = not _blocks(message) or _blocks(message) == [{"type": "text", "text": ""}]
        if empty and not final_assistant:
            return EMPTY_MESSAGE.message.format(n=n)
    return None


def check_first_user(body: Mapping[str, Any], model: str) -> str | None:
    if not LEGACY_FAMILIES.search(model):
        return None
    messages = _messages(body)
    return FIRST_USER.message if messages and _role(messages[0]) != "user" else None


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SCHEMA, check_schema),
    (PATTERN, check_pattern),
    (EMPTY_TEXT, check_empty_text),
    (WHITESPACE_TEXT, check_whitespace_text),
    (MULTIPLE, check_multiple),
    (NO_RESULT, check_no_result),
    (UNEXPECTED, check_unexpected),
    (RESULT_FIRST, check_result_first),
    (UNIQUE, check_unique),
    (CODE_EXECUTION, check_code_execution),
    (SIGNATURE, check_signature),
    (EMPTY_MESSAGE, check_empty_message),
    (FIRST_USER, check_first_user),
)


def route(path: str, query: str) -> Route | None:
    return Route("", False) if path == "/v1/messages" else None


def ok(route: Route, body: Mapping[str, Any]) -> Reply:
    message: dict[str, Any] = {
        "id": "msg_emulated",
        "type": "message",
        "role": "assistant",
        "model": model_of(route, body),
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    if not route.stream:
        return json_reply(200, message)
    start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 0}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": start}),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"index": 0}),
        (
            "message_delta",
            {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}},
        ),
        ("message_stop", {}),
    ]
    return sse([(name, {"type": name, **data}) for name, data in events])


def error(status: int, message: str, rule: str | None) -> Reply:
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    return json_reply(status, {"type": "error", "error": {"type": kind, "message": message}})


SPEC = ApiSpec(API, CHECKS, route, ok, error)

"""What each provider API says when it rejects a history: one table per API, in its own words.

The texts are the providers' error messages as their API references and public issue trackers
quote them (the same texts the strict test emulators answer with). ``{placeholders}`` stand for
what the wire fills in: ``{n}`` a message index, ``{m}`` a content index, ``{id}`` / ``{ids}`` /
``{call_id}`` tool call ids, ``{count}`` a number of blocks, ``{name}`` a tool name, ``{role}`` a
role. Both :mod:`histfix._check.rejections` (the validator's findings) and the profile rules
(their own findings) read them from here, so each text exists once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "ANTHROPIC",
    "BEDROCK",
    "BY_API",
    "GEMINI",
    "MISTRAL",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "PYDANTIC_AI",
    "UNINDEXED",
    "filled",
    "said",
    "worded",
]

OPENAI_CHAT: Final[Mapping[str, str]] = {
    "no_response": "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}",
    "no_call": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'.",
    "empty_content": "content or tool_calls must be set",
}
OPENAI_RESPONSES: Final[Mapping[str, str]] = {
    "no_output": "No tool output found for function call {call_id}.",
    # DeepSeek's Responses-compatible server, which names a call "tool call"
    "no_output_grouped": "No tool output found for tool call {call_id}.",
    "no_call": "No tool call found for function call output with call_id {call_id}.",
    # quoted through a gateway only: OpenAI's own reference does not word it
    "duplicate_output": "Duplicate function_call_output for call_id {call_id}.",
    "reasoning_alone": "Item '{id}' of type 'reasoning' was provided without its required following item.",
}
ANTHROPIC: Final[Mapping[str, str]] = {
    "no_result": "messages.{n}: tool_use ids were found without tool_result blocks immediately after: {ids}. "
    "Each tool_use block must have a corresponding tool_result block in the next message.",
    "unexpected": "messages.{n}.content.{m}: unexpected tool_use_id found in tool_result blocks: {id}. "
    "Each tool_result block must have a corresponding tool_use block in the previous message.",
    "multiple": "each tool_use must have a single result. Found multiple tool_result blocks with id: {id}",
    "result_first": "messages.{n}: Did not find {count} tool_result block(s) at the beginning of this "
    "message. Messages following tool_use blocks must begin with a matching number of tool_result blocks.",
    "ids_unique": "messages.{n}.content.{m}: tool_use ids must be unique",
    "id_pattern": "messages.{n}.content.{m}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    "native_unpaired": "{name} tool use with id {id} was found without a corresponding {name}_tool_result block",
    "thinking_signature": "messages.{n}.content.{m}: Invalid signature in thinking block",
    "empty_message": "messages.{n}: all messages must have non-empty content except for the optional final "
    "assistant message",
    "empty_text": "messages: text content blocks must be non-empty",
    "first_user": 'messages: first message must use the "user" role',
}
GEMINI: Final[Mapping[str, str]] = {
    "count": "Please ensure that the number of function response parts is equal to the number of function "
    "call parts of the function call turn.",
    "call_position": "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn.",
    "response_position": "Please ensure that function response turn comes immediately after a function call "
    "turn.",
    "empty_text": "Unable to submit request because it has an empty text parameter. Add a value to the "
    "parameter and try again.",
    "last_user": "Please ensure that the last turn is a user turn.",
    "empty_parts": "* GenerateContentRequest.contents[{n}].parts: contents.parts must not be empty.",
}
BEDROCK: Final[Mapping[str, str]] = {
    "expected": "Expected toolResult blocks at messages.{n}.content for the following Ids: {ids}",
    "too_many": "The number of toolResult blocks at messages.{n}.content exceeds the number of toolUse "
    "blocks of previous turn.",
    "first": "messages.{n}: Did not find {count} toolResult block(s) at the beginning of this message. "
    "Messages following toolUse blocks must begin with a matching number of toolResult blocks.",
    "alternate": "A conversation must alternate between user and assistant roles. Make sure the "
    "conversation alternates between user and assistant roles and try again.",
    "first_user": "A conversation must start with a user message. Try again with a conversation that starts "
    "with a user message.",
    "empty_content": "The content field in the Message object at messages.{n} is empty. Add a ContentBlock "
    "object to the content field and try again.",
    "empty_text": "messages: text content blocks must contain non-whitespace text",
    "results_alone": "Conversation blocks and tool result blocks cannot be provided in the same turn.",
    "thinking_unsigned": "The model returned the following errors: messages.{n}.content.{m}.thinking.signature: "
    "Field required",
    # Claude on Bedrock passes Anthropic's own refusal through
    "thinking_signature": ANTHROPIC["thinking_signature"],
}
MISTRAL: Final[Mapping[str, str]] = {
    "count": "Not the same number of function calls and responses",
    "tool_role": "Unexpected role 'tool' after role '{role}'",
    "user_after_tool": "Unexpected role 'user' after role 'tool'",
    "id_format": "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
    "last_role": "Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant",
}
#: pydantic-ai's own errors, raised before anything is sent, whatever the provider.
PYDANTIC_AI: Final[Mapping[str, str]] = {
    "opens_on_response": "UserError: Message history cannot start with a `ModelResponse`. Conversations must "
    "begin with a user message.",
    "args_not_object": "ValueError: {error}",
}

#: The placeholders of a finding that names no wire index: its words say ``messages.N`` (and
#: ``content.M``), and the call's id stands as ``{id}`` for the finding to fill.
UNINDEXED: Final[Mapping[str, str]] = {"n": "N", "m": "M", "ids": "{id}", "call_id": "{id}"}

#: Each provider API (``targets.PROVIDER_APIS``) -> its table.
BY_API: Final[Mapping[str, Mapping[str, str]]] = {
    "openai-chat": OPENAI_CHAT,
    "openai-responses": OPENAI_RESPONSES,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "bedrock": BEDROCK,
    "mistral": MISTRAL,
}


class _Kept(dict[str, object]):
    """Placeholders not given stay as they are, for the finding to fill."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def filled(text: str, **values: object) -> str:
    """``text`` with the placeholders in ``values`` filled and every other one kept."""
    return text.format_map(_Kept(values))


def said(keys: Mapping[str, str], **values: str) -> dict[str, str]:
    """A rule's wording: api -> the text its table holds under the key given for that API, with the
    placeholders in ``values`` filled (a rule whose findings name no index words it ``messages.N``)."""
    return {api: filled(BY_API[api][key], **values) for api, key in keys.items()}


def worded(words: Mapping[str, str]) -> str:
    """One finding's words as ``provider_error`` shows them: the text alone for one API, else each
    API's text after its name, in the order given (``targets.PROVIDER_APIS`` order)."""
    if len(words) == 1:
        return next(iter(words.values()))
    return "; ".join(f"{api}: {text}" for api, text in words.items())

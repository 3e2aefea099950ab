"""Hand-written requests for the emulator selftests: per API one valid body, and per rule a body
that breaks that rule and no earlier one (so the verdict must name exactly that rule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ACCEPTED", "GOOD", "PATHS", "VIOLATIONS", "Accepted", "Violation"]


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
    "anthropic": "/v1/messages?beta=true",
    "openai-responses": "/v1/responses",
    "gemini": "/v1beta/models/gemini-2.5-flash:generateContent",
    "bedrock": "/model/us.anthropic.claude-emulated-v1%3A0/converse",
    "mistral": "/v1/chat/completions",
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
    "openai-responses": {
        "model": "o4-mini",
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": "time?"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_time",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "noon"},
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "content": [{"type": "output_text", "text": "It is noon.", "annotations": []}],
            },
            {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
        ],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "time?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "", "thoughtSignature": "c2ln"},
                    {"functionCall": {"name": "get_time", "args": {}}, "thoughtSignature": "c2ln"},
                    {"functionCall": {"name": "get_date", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_time", "response": {"result": "noon"}}},
                    {"functionResponse": {"name": "get_date", "response": {"result": "today"}}},
                ],
            },
            {"role": "model", "parts": [{"text": "It is noon."}]},
            {"parts": [{"text": "thanks"}]},
        ],
    },
    "bedrock": {
        "system": [{"text": "be brief"}],
        "messages": [
            {"role": "user", "content": [{"text": "time?"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Checking."},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "get_time", "input": {}}},
                    {"toolUse": {"toolUseId": "tooluse_2", "name": "get_time", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_2",
                            "content": [{"text": "noon"}],
                            "status": "success",
                        }
                    },
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_1",
                            "content": [{"text": "noon"}],
                            "status": "success",
                        }
                    },
                    {"text": "and?"},  # Claude models accept text after the results
                ],
            },
            {"role": "assistant", "content": [{"text": "It is noon."}]},
            {"role": "user", "content": [{"text": "thanks"}]},
        ],
        "inferenceConfig": {"maxTokens": 64},
    },
    "mistral": {
        "model": "mistral-large-latest",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "time?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [_chat_call("a1B2c3D4e"), _chat_call("Z9y8X7w6v")],
            },
            {"role": "tool", "tool_call_id": "a1B2c3D4e", "name": "get_time", "content": "noon"},
            {"role": "tool", "tool_call_id": "Z9y8X7w6v", "name": "get_time", "content": "noon"},
            {"role": "assistant", "content": "It is noon."},
            {"role": "user", "content": "thanks"},
        ],
    },
    "anthropic": {
        "model": "claude-emulated",
        "max_tokens": 64,
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "time?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "use the tool", "signature": "sig"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "code_execution",
                        "input": {"code": "1"},
                    },
                    {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "noon"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "noon"}],
                    },
                    {"type": "text", "text": "and?"},
                ],
            },
            {"role": "assistant", "content": "It is noon."},
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": ""},  # an empty final assistant message is allowed
        ],
    },
}

_USER = {"role": "user", "content": "hi"}


def _tool_use(call_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "get_time", "input": {}}


def _tool_result(call_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "noon"}


def _claude(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-emulated", "max_tokens": 64, "messages": list(messages)}


def _asst(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


_HI = {"role": "user", "content": "hi"}
_USER_LAST = {"role": "assistant", "content": "done"}
_TEXT = {"type": "text", "text": "more"}


def _responses(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "o4-mini", "input": list(items)}


def _fc(call_id: str = "call_1", item_id: str | None = None) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call_id, "name": "get_time", "arguments": "{}"}
    return {**item, "id": item_id} if item_id else item


def _fco(call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "noon"}


_RS = {"type": "reasoning", "id": "rs_1", "summary": []}
_ASSISTANT = {
    "type": "message",
    "role": "assistant",
    "id": "msg_2",
    "content": [{"type": "output_text", "text": "x"}],
}


def _gemini(*contents: dict[str, Any]) -> dict[str, Any]:
    return {"contents": list(contents)}


_G_USER = {"role": "user", "parts": [{"text": "hi"}]}
_G_TEXT = {"role": "model", "parts": [{"text": "hello"}]}
_G_CALL = {"role": "model", "parts": [{"functionCall": {"name": "get_time", "args": {}}}]}
_G_RESPONSE = {"role": "user", "parts": [{"functionResponse": {"name": "get_time", "response": {}}}]}
_GEMINI_3 = "/v1beta/models/gemini-3-pro-preview:generateContent"
_VERTEX = "/v1beta1/projects/p/locations/global/publishers/google/models/gemini-2.5-flash:generateContent"


def _converse(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": list(messages)}


def _b(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": list(blocks)}


def _use(call_id: str = "t1") -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": "get_time", "input": {}}}


def _res(call_id: str = "t1") -> dict[str, Any]:
    return {"toolResult": {"toolUseId": call_id, "content": [{"text": "noon"}]}}


_B_HI = _b("user", {"text": "hi"})
_B_TEXT = {"text": "more"}
_NOVA = "/model/amazon.nova-pro-v1%3A0/converse"
_LLAMA = "/model/us.meta.llama4-maverick-17b-instruct-v1%3A0/converse"


def _mistral(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "mistral-large-latest", "messages": list(messages)}


def _m_calls(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [_chat_call(call_id) for call_id in ids]}


def _m_tool(call_id: str = "abcdefghi") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": "get_time", "content": "noon"}


VIOLATIONS: list[Violation] = [
    # --- Mistral
    Violation("mistral.request_schema", _mistral(), expect="at least one message"),
    Violation("mistral.request_schema", _mistral({"role": "developer", "content": "x"})),
    Violation(
        "mistral.tool_call_id_format",
        _mistral(_HI, _m_calls("call_1"), _m_tool("call_1")),
        expect="Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9.",
    ),
    Violation("mistral.tool_call_id_format", _mistral(_HI, _m_calls("abcdefghi"), _m_tool("abcdefgh"))),
    Violation("mistral.user_after_tool", _mistral(_HI, _m_calls("abcdefghi"), _m_tool(), _HI)),
    Violation(
        "mistral.unexpected_tool_role",
        _mistral(_HI, _m_tool()),
        expect="Unexpected role 'tool' after role 'user'",
    ),
    Violation(
        "mistral.call_response_count",
        _mistral(_HI, _m_calls("abcdefghi", "bcdefghij"), _m_tool(), _USER_LAST),
    ),
    Violation("mistral.call_response_count", _mistral(_HI, _m_calls("abcdefghi"), _HI)),
    Violation(
        "mistral.trailing_assistant",
        _mistral(_HI, _USER_LAST),
        expect="Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant",
    ),
    # --- AWS Bedrock Converse
    Violation("bedrock.request_schema", _converse(), expect="'messages'"),
    Violation(
        "bedrock.request_schema",
        _converse({"role": "system", "content": []}),
        expect="messages.1.member.role",
    ),
    Violation("bedrock.start_with_user", _converse(_b("assistant", _B_TEXT), _B_HI), path=_NOVA),
    Violation("bedrock.alternate_roles", _converse(_B_HI, _B_HI)),
    Violation(
        "bedrock.empty_content", _converse(_B_HI, _b("assistant"), _B_HI), expect="messages.1 is empty"
    ),
    Violation("bedrock.whitespace_text", _converse(_B_HI, _b("assistant", {"text": " \n"}), _B_HI)),
    Violation(
        "bedrock.too_many_tool_results",
        _converse(_B_HI, _b("assistant", _use()), _b("user", _res(), _res("t2"))),
        expect="messages.2.content",
    ),
    Violation("bedrock.too_many_tool_results", _converse(_b("user", _res()))),
    Violation(
        "bedrock.tool_results_first",
        _converse(_B_HI, _b("assistant", _use()), _b("user", _B_TEXT, _res())),
        expect="messages.2: Did not find 1 toolResult block(s) at the beginning of this message",
    ),
    Violation(
        "bedrock.expected_tool_results",
        _converse(_B_HI, _b("assistant", _use("t1"), _use("t2")), _b("user", _res("t1"), _res("t3"))),
        expect="Expected toolResult blocks at messages.2.content for the following Ids: t2",
    ),
    Violation(  # 1.0.0-1.0.2 send thinking without a signature as a reasoning block
        "bedrock.thinking_signature_missing",
        _converse(
            _B_HI, _b("assistant", {"reasoningContent": {"reasoningText": {"text": "hmm"}}}, _B_TEXT), _B_HI
        ),
        expect="messages.1.content.0.thinking.signature: Field required",
    ),
    Violation(
        "bedrock.thinking_signature_missing",
        _converse(
            _B_HI,
            _b(
                "assistant",
                _B_TEXT,
                {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": ""}}},
            ),
            _B_HI,
        ),
        expect="messages.1.content.1.thinking",
    ),
    Violation(  # OpenAI's encrypted reasoning replayed as a signature: Claude cannot verify it
        "bedrock.thinking_signature_invalid",
        _converse(
            _B_HI,
            _b(
                "assistant",
                {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "gAAAAABoX1"}}},
            ),
            _B_HI,
        ),
        expect="messages.1.content.0: Invalid signature in thinking block",
    ),
    Violation(
        "bedrock.mixed_tool_result_turn",
        _converse(_B_HI, _b("assistant", _use()), _b("user", _res(), _B_TEXT)),
        path=_LLAMA,
    ),
    # --- Google Gemini
    Violation("gemini.request_schema", _gemini(), expect="contents is not specified"),
    Violation("gemini.request_schema", _gemini({"role": "user"}), expect="contents[0].parts"),
    Violation("gemini.role", _gemini({"role": "assistant", "parts": [{"text": "x"}]}, _G_USER)),
    Violation(
        "gemini.empty_parts", _gemini(_G_USER, {"role": "model", "parts": []}, _G_USER), expect="contents[1]"
    ),
    Violation("gemini.empty_text", _gemini({"role": "user", "parts": [{"text": ""}]}), path=_VERTEX),
    Violation("gemini.function_call_turn_position", _gemini(_G_CALL, _G_RESPONSE)),
    Violation("gemini.function_response_turn_position", _gemini(_G_USER, _G_TEXT, _G_RESPONSE)),
    Violation(
        "gemini.function_response_count",
        _gemini(_G_USER, {"role": "model", "parts": [*_G_CALL["parts"], *_G_CALL["parts"]]}, _G_RESPONSE),
    ),
    Violation("gemini.function_response_count", _gemini(_G_USER, _G_CALL, _G_USER)),
    Violation(
        "gemini.thought_signature",
        _gemini(_G_USER, _G_CALL, _G_RESPONSE),
        path=_GEMINI_3,
        expect="`default_api:get_time` , position 1",
    ),
    Violation("gemini.ends_on_model_turn", _gemini(_G_USER, _G_TEXT)),
    # --- OpenAI Responses
    Violation("openai-responses.request_schema", {"model": "o4-mini", "input": 3}),
    Violation(
        "openai-responses.request_schema", _responses({"content": "no role or type"}), expect="input[0]"
    ),
    Violation(
        "openai-responses.function_call_without_output",
        _responses(_HI, _fc("call_7"), _HI),
        expect="No tool output found for function call call_7.",
    ),
    Violation(
        "openai-responses.function_call_output_without_call",
        _responses(_HI, _fco("call_8"), _HI),
        expect="No tool call found for function call output with call_id call_8.",
    ),
    Violation(
        "openai-responses.function_call_output_without_call",  # an output before its call answers nothing
        _responses(_HI, _fco("call_1"), _fc("call_1"), _fco("call_1")),
    ),
    Violation(  # recorded: gpt-5 refused an id-less follower (test_openai_responses_thinking_with_modified_history)
        "openai-responses.reasoning_without_following_item",
        _responses(_HI, _RS, {**_ASSISTANT, "id": None}, _HI),
        expect="Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    ),
    Violation(
        "openai-responses.duplicate_item",
        _responses(_HI, _fc("call_1", "fc_1"), _fco(), _fc("call_1", "fc_1"), _fco()),
        expect="Duplicate item found with id fc_1. Remove duplicate items from your input and try again.",
    ),
    Violation(
        "openai-responses.duplicate_function_call_output",
        _responses(_HI, _fc("call_1"), _fco(), _fco()),
        expect="call_1",
    ),
    Violation(  # recorded: DeepSeek refused an assistant message between a call and its output
        "openai-responses.function_call_without_output",
        {
            "model": "deepseek-v4-flash",
            "input": [_HI, _fc("call-a"), {**_ASSISTANT, "id": None}, _fco("call-a"), _HI],
        },
        expect="No tool output found for tool call call-a.",
    ),
    Violation(
        "openai-responses.reasoning_without_following_item",
        _responses(_HI, _RS, _HI),
        expect="Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    ),
    Violation("openai-responses.reasoning_without_following_item", _responses(_HI, _RS)),
    Violation(
        "openai-responses.item_without_reasoning",
        _responses(_HI, _RS, _fc("call_1", "fc_1"), _fco("call_1"), _ASSISTANT, _HI),
        expect="Item 'msg_2' of type 'message'",
    ),
    # --- Anthropic Messages
    Violation("anthropic.request_schema", _claude(), expect="at least one message"),
    Violation(
        "anthropic.request_schema", _claude({"role": "tool", "content": "x"}), expect="messages.0.role"
    ),
    Violation(
        "anthropic.tool_use_id_pattern",
        _claude(_HI, _asst(_tool_use("call.1")), _user(_tool_result("call.1"))),
        expect="messages.1.content.0.tool_use.id",
    ),
    Violation(
        "anthropic.tool_use_id_pattern",
        _claude(_HI, _asst(_tool_use("")), _user(_tool_result(""))),
    ),
    Violation("anthropic.empty_text", _claude(_HI, _asst({"type": "text", "text": ""}), _HI)),
    Violation(
        "anthropic.empty_text",
        _claude(
            _HI, _asst(_tool_use()), _user({**_tool_result(), "content": [{"type": "text", "text": ""}]})
        ),
    ),
    Violation(
        "anthropic.multiple_results",
        _claude(_HI, _asst(_tool_use()), _user(_tool_result(), _tool_result())),
        expect="with id: toolu_1",
    ),
    Violation(
        "anthropic.tool_use_without_result",
        _claude(_HI, _asst(_tool_use("toolu_1"), _tool_use("toolu_2")), _user(_tool_result("toolu_1"))),
        expect="messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_2.",
    ),
    Violation(
        "anthropic.tool_use_without_result",  # answered across an intervening prompt and response
        _claude(_HI, _asst(_tool_use()), _HI, _asst(_TEXT), _user(_tool_result())),
        expect="messages.1:",
    ),
    Violation(
        "anthropic.whitespace_text",
        _claude(_HI, _asst({"type": "text", "text": " \n"}, _TEXT), _HI),
        expect="messages: text content blocks must contain non-whitespace text",
    ),
    Violation(  # pydantic-ai#7878: a reveal's system entry between a tool_use and its tool_result
        "anthropic.tool_use_without_result",
        _claude(
            _HI,
            _asst(_tool_use()),
            {
                "role": "system",
                "content": [{"type": "tool_addition", "tool": {"type": "tool_reference", "name": "f"}}],
            },
            _user(_tool_result()),
        ),
        expect="messages.1: tool_use ids were found without tool_result blocks immediately after",
    ),
    Violation(  # the same with the "." user turn 2.52.0-2.60.0 put before such an entry while mapping
        "anthropic.tool_use_without_result",
        _claude(
            _HI,
            _asst(_tool_use()),
            _user({"type": "text", "text": "."}),
            {
                "role": "system",
                "content": [{"type": "tool_addition", "tool": {"type": "tool_reference", "name": "f"}}],
            },
            _user(_tool_result()),
        ),
        expect="messages.1:",
    ),
    Violation(
        "anthropic.unexpected_tool_result",
        _claude(_HI, _asst(_TEXT), _user(_TEXT, _tool_result("toolu_9"))),
        expect="messages.2.content.1: unexpected tool_use_id found in tool_result blocks: toolu_9.",
    ),
    Violation(
        "anthropic.code_execution_without_result",
        _claude(
            _HI,
            _asst({"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {}}),
            _HI,
        ),
        expect="code_execution tool use with id srvtoolu_1 was found without a corresponding code_execution_tool_result",
    ),
    Violation(
        "anthropic.thinking_signature",
        _claude(_HI, _asst({"type": "thinking", "thinking": "hmm", "signature": ""}, _TEXT), _HI),
        expect="messages.1.content.0",
    ),
    Violation(
        "anthropic.thinking_signature",
        _claude(_HI, _asst({"type": "redacted_thinking"}, _TEXT), _HI),
    ),
    Violation(  # OpenAI's encrypted reasoning replayed as a signature: Anthropic cannot verify it
        "anthropic.thinking_signature",
        _claude(_HI, _asst({"type": "thinking", "thinking": "hmm", "signature": "gAAAAABoX1"}, _TEXT), _HI),
        expect="Invalid signature in thinking block",
    ),
    Violation(
        "anthropic.tool_use_id_unique",
        _claude(_HI, _asst(_tool_use(), _tool_use()), _user(_tool_result())),
        expect="messages.1.content.1",
    ),
    Violation("anthropic.empty_message", _claude(_HI, _asst(), _HI), expect="messages.1:"),
    Violation("anthropic.empty_message", _claude({"role": "user", "content": ""})),
    Violation(
        "anthropic.tool_result_first",
        _claude(_HI, _asst(_tool_use()), _user(_TEXT, _tool_result())),
        expect="messages.2: Did not find 1 tool_result block(s) at the beginning of this message.",
    ),
    Violation(  # read merged: the results open the turn's second message, after a text
        "anthropic.tool_result_first",
        _claude(_HI, _asst(_tool_use()), _user(_TEXT), _user(_tool_result())),
        expect="messages.2:",
    ),
    Violation(  # the Claude 3 family wants the user first (claude-sonnet-4-5 does not: ACCEPTED)
        "anthropic.first_message_user", {**_claude(_asst(_TEXT), _HI), "model": "claude-3-5-sonnet-20241022"}
    ),
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
        "openai-chat.tool_without_tool_calls",  # an id the assistant message did not call
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
    Violation(  # a second tool message for one call (LangChain's INVALID_TOOL_RESULTS page, gpt-4o-mini)
        "openai-chat.tool_without_tool_calls",
        {
            "model": "gpt-4o-mini",
            "messages": [
                _USER,
                {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
                {"role": "tool", "tool_call_id": "call_1", "content": "noon"},
                {"role": "tool", "tool_call_id": "call_1", "content": "noon again"},
            ],
        },
        expect="preceeding",
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


@dataclass(frozen=True)
class Accepted:
    """A minimal request of a shape the real API answered 200 in pydantic-ai's recordings
    (tools/calibrate.py), which the emulator must accept (`source` names the recording)."""

    api: str
    source: str
    body: dict[str, Any]
    path: str = ""


_CLAUDE_4 = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"

#: What calibration on recorded real traffic taught: each shape here was once refused by an
#: emulator that was stricter than the real service.
ACCEPTED: list[Accepted] = [
    Accepted(
        "anthropic",
        "test_tool_search/test_cross_provider_capability_replay (consecutive assistant messages read merged)",
        {
            **_claude(_HI, _asst(_TEXT, _tool_use("toolu_1")), _asst(_tool_use("toolu_2"))),
            "messages": [
                _HI,
                _asst(_TEXT, _tool_use("toolu_1")),
                _asst(_tool_use("toolu_2")),
                _user(_tool_result("toolu_1"), _tool_result("toolu_2")),
            ],
            "model": "claude-sonnet-4-5",
        },
    ),
    Accepted(
        "anthropic",
        "test_anthropic_model_empty_message_on_history (assistant first, claude-sonnet-4-5)",
        {**_claude(_asst(_TEXT), _HI), "model": "claude-sonnet-4-5"},
    ),
    Accepted(
        "anthropic",
        "test_anthropic_mid_conversation_system (a system message in the conversation)",
        _claude(
            _HI, _asst(_TEXT), _HI, {"role": "system", "content": [{"type": "text", "text": "be brief"}]}
        ),
    ),
    Accepted(
        "anthropic",
        "test_in_flight_native_tool_call_history_is_accepted (web_search in flight, unpaired)",
        _claude(
            _HI,
            _asst(
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                _tool_use("toolu_1"),
            ),
            _user(_tool_result("toolu_1")),
        ),
    ),
    Accepted(
        "anthropic",
        "test_cross_provider_capability_replay (one tool_use id in two turns)",
        _claude(
            _HI,
            _asst(_tool_use("a1")),
            _user(_tool_result("a1")),
            _asst(_tool_use("a1")),
            _user(_tool_result("a1")),
        ),
    ),
    Accepted(
        "openai-responses",
        "test_openai_previous_response_id_seed_auto_chains_through_retries (the call is stored)",
        {**_responses(_fco("call_1")), "previous_response_id": "resp_1"},
    ),
    Accepted(
        "openai-responses",
        "test_openai_conversation_id_tool_call_continuation (the call is in the conversation)",
        {**_responses(_fco("call_1")), "conversation": "conv_1"},
    ),
    Accepted(
        "openai-responses",
        "test_tool_availability_portability_matrix[R5-T3-native-search] (a tool_search_call answered)",
        _responses(
            _HI,
            {"type": "tool_search_call", "call_id": "search_1", "arguments": {}},
            _fco("search_1"),
            _HI,
        ),
    ),
    Accepted(
        "openai-responses",
        "test_openai_native_tool_search_with_deferred_capability (a call without reasoning after a result)",
        _responses(_HI, _RS, _fc("call_1", "fc_1"), _fco("call_1"), _fc("call_2", "fc_2"), _fco("call_2")),
    ),
    Accepted(
        "openai-responses",
        "test_deepseek_responses_replay_own_reasoning_history (DeepSeek: reasoning items in a row, no ids)",
        {
            "model": "deepseek-v4-flash",
            "input": [_HI, {**_RS, "id": "rs-a"}, {**_RS, "id": "rs-b"}, _fc("call-a"), _fco("call-a"), _HI],
        },
    ),
    Accepted(
        "gemini",
        "test_cross_provider_capability_replay (two model turns of one call, answered together)",
        _gemini(
            _G_USER,
            _G_CALL,
            _G_CALL,
            {"role": "user", "parts": [*_G_RESPONSE["parts"], *_G_RESPONSE["parts"]]},
        ),
    ),
    Accepted(
        "gemini",
        "test_google_model_empty_user_prompt (an empty user text, Gemini API)",
        _gemini({"role": "user", "parts": [{"text": ""}]}),
    ),
    Accepted(
        "bedrock",
        "test_bedrock_anthropic_message_history_starting_with_response (assistant first, Claude)",
        _converse(_b("assistant", _B_TEXT), _B_HI),
        path=_CLAUDE_4,
    ),
    Accepted(
        "bedrock",
        "test_bedrock_cache_write_and_read (a newline text block beside others)",
        _converse(_b("user", {"text": "question"}, {"text": "\n"}, {"text": "more"})),
        path=_CLAUDE_4,
    ),
    Accepted(
        "bedrock",
        "test_bedrock_model_with_code_execution_tool (Nova's code interpreter answered in its own message)",
        _converse(
            _B_HI, _b("assistant", _use("code"), _res("code"), _use("t1")), _b("user", _res("t1"), _B_TEXT)
        ),
        path=_NOVA,
    ),
    Accepted(
        "bedrock",
        "test_bedrock_nova_tool_result_followed_by_document_accepted (Nova: a result beside text)",
        _converse(_B_HI, _b("assistant", _use()), _b("user", _res(), _B_TEXT)),
        path=_NOVA,
    ),
]

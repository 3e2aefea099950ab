"""OpenAI Responses: POST /v1/responses (SDK base_url: `emulator.base_url + "/v1"`).

Rules enforced, in this order (wording from shared/spec/providers.md, "OpenAI Responses"):
- request_schema: `input` is a string or a list of items (objects with a `type` or a `role`);
  schema validation, wording in OpenAI's schema-error style (not quoted there).
- function_call_without_output (verified, pydantic-ai #3461): every `function_call` has a
  `function_call_output` with its `call_id` later in the input; for models named deepseek-*, in
  the run of calls and outputs right after it (recorded: DeepSeek refused an assistant message
  between a call and its output, "No tool output found for tool call call-a.").
- function_call_output_without_call (verified, pydantic-ai #4882): every `function_call_output`
  answers an earlier call item with its `call_id` (a `function_call`, or another *_call item that
  has one, such as `tool_search_call`). A request that continues a stored response
  (`previous_response_id`) or a `conversation` may answer calls the server holds (recorded: a lone
  `function_call_output` got 200 both ways).
- duplicate_item (verified, openai-agents-python#1789): no two input items with the same `id`.
- reasoning_without_following_item (verified, vercel/ai#8321): a `reasoning` item is directly
  followed by the output item of the same response; an assistant message there carries its `id`
  (recorded: gpt-5 refused a reasoning item followed by an assistant message without one,
  test_openai_responses_thinking_with_modified_history; calls were recorded only with ids). Models named deepseek-* (DeepSeek's
  compatible server) were recorded accepting reasoning items one after another and followers
  without ids: the rule is OpenAI's.
- item_without_reasoning (unverified detection of a verified rule, pydantic-ai #2861): the real
  API knows which stored reasoning item each output item needs; a stateless emulator cannot, so
  it flags the telltale shape of #2861: a request that carries reasoning items, and a response
  (run of output items) with an assistant message that has an id but no reasoning item of its
  own. Function calls are not flagged: a response after a tool result may call without reasoning
  (recorded with gpt-5.6 and gpt-5.6-luna).
- duplicate_function_call_output (unverified: the per-call wording exists only through a gateway,
  NousResearch/hermes-agent#102629): one `function_call_output` per call (a `call_id` called
  again later is a new call).
Streaming (`stream: true`): SSE with `event:` names, response.created ... response.completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import ApiSpec, Check, Reply, Route, Rule, json_reply, model_of, sse

__all__ = ["SPEC"]

API = "openai-responses"
INPUT_ROLES = ("user", "system", "developer")


def _rule(name: str, verified: bool, message: str) -> Rule:
    return Rule(f"{API}.{name}", API, verified, message)


SCHEMA = _rule("request_schema", True, "Invalid type for 'input': {detail}")
#: "function call" in OpenAI's words, "tool call" in DeepSeek's (recorded in pydantic-ai's
#: test_deepseek_responses_rejects_interleaved_function_calls).
NO_OUTPUT = _rule("function_call_without_output", True, "No tool output found for {kind} call {call_id}.")
NO_CALL = _rule(
    "function_call_output_without_call",
    True,
    "No tool call found for function call output with call_id {call_id}.",
)
DUPLICATE_ITEM = _rule(
    "duplicate_item",
    True,
    "Duplicate item found with id {id}. Remove duplicate items from your input and try again.",
)
DUPLICATE_OUTPUT = _rule(
    "duplicate_function_call_output", False, "Duplicate function_call_output for call_id {call_id}."
)
NO_FOLLOWER = _rule(
    "reasoning_without_following_item",
    True,
    "Item '{id}' of type 'reasoning' was provided without its required following item.",
)
NO_REASONING = _rule(
    "item_without_reasoning",
    False,
    "Item '{id}' of type '{type}' was provided without its required 'reasoning' item.",
)


def _items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = body.get("input")
    return [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def is_output(item: Mapping[str, Any]) -> bool:
    """Whether an input item replays model output (reasoning, an assistant message, a call)."""
    kind = str(item.get("type", "message"))
    if kind == "message":
        return item.get("role") == "assistant"
    return kind == "reasoning" or kind.endswith("_call")


def check_schema(body: Mapping[str, Any], model: str) -> str | None:
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return SCHEMA.message.format(detail="expected a string or an array of input items")
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or ("type" not in item and "role" not in item):
            return SCHEMA.message.format(detail=f"input[{index}] is not an input item")
    return None


def _calls_and_outputs(items: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The leading run of `items` that are calls or call outputs (DeepSeek's window for an output)."""
    run = []
    for item in items:
        if not str(item.get("type", "")).endswith(("_call", "_output")):
            break
        run.append(item)
    return run


def check_no_output(body: Mapping[str, Any], model: str) -> str | None:
    items = _items(body)
    for index, item in enumerate(items):
        if item.get("type") == "function_call":
            later = items[index + 1 :]
            if model.startswith("deepseek"):
                later = _calls_and_outputs(later)
            call_id = item.get("call_id")
            if not any(
                o.get("type") == "function_call_output" and o.get("call_id") == call_id for o in later
            ):
                kind = "tool" if model.startswith("deepseek") else "function"
                return NO_OUTPUT.message.format(kind=kind, call_id=call_id)
    return None


def check_no_call(body: Mapping[str, Any], model: str) -> str | None:
    if body.get("previous_response_id") or body.get("conversation"):
        return None  # the calls may live in the stored response or conversation
    called: set[object] = set()
    for item in _items(body):
        kind = str(item.get("type", ""))
        if kind.endswith("_call") and "call_id" in item:
            called.add(item.get("call_id"))
        elif kind == "function_call_output" and item.get("call_id") not in called:
            return NO_CALL.message.format(call_id=item.get("call_id"))
    return None


def check_duplicate_item(body: Mapping[str, Any], model: str) -> str | None:
    seen: set[object] = set()
    for item in _items(body):
        if item.get("id"):
            if item["id"] in seen:
                return DUPLICATE_ITEM.message.format(id=item["id"])
            seen.add(item["id"])
    return None


def check_duplicate_output(body: Mapping[str, Any], model: str) -> str | None:
    open_calls: dict[object, int] = {}  # call_id -> its calls not yet answered
    answered: set[object] = set()
    for item in _items(body):
        call_id = item.get("call_id")
        if item.get("type") == "function_call":
            open_calls[call_id] = open_calls.get(call_id, 0) + 1  # a reused call_id is a new call
        elif item.get("type") == "function_call_output":
            if not open_calls.get(call_id) and call_id in answered:
                return DUPLICATE_OUTPUT.message.format(call_id=call_id)
            open_calls[call_id] = max(open_calls.get(call_id, 0) - 1, 0)
            answered.add(call_id)
    return None


def check_follower(body: Mapping[str, Any], model: str) -> str | None:
    if model.startswith("deepseek"):
        return None
    items = _items(body)
    for index, item in enumerate(items):
        if item.get("type") != "reasoning":
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        if (
            following is None
            or not is_output(following)
            or following.get("type") == "reasoning"
            or (following.get("type", "message") == "message" and not following.get("id"))
        ):
            return NO_FOLLOWER.message.format(id=item.get("id"))
    return None


def _runs(items: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The consecutive runs of output items (each is one model response, as replayed)."""
    runs: list[list[Mapping[str, Any]]] = []
    previous_output = False
    for item in items:
        if is_output(item):
            if not previous_output:
                runs.append([])
            runs[-1].append(item)
        previous_output = is_output(item)
    return runs


def check_reasoning(body: Mapping[str, Any], model: str) -> str | None:
    runs = _runs(_items(body))
    if not any(item.get("type") == "reasoning" for run in runs for item in run):
        return None
    for run in runs:
        if any(item.get("type") == "reasoning" for item in run):
            continue
        for item in run:
            if item.get("id") and item.get("type", "message") == "message":
                return NO_REASONING.message.format(id=item["id"], type=item.get("type", "message"))
    return None


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SCHEMA, check_schema),
    (NO_OUTPUT, check_no_output),
    (NO_CALL, check_no_call),
    (DUPLICATE_ITEM, check_duplicate_item),
    (NO_FOLLOWER, check_follower),
    (NO_REASONING, check_reasoning),
    (DUPLICATE_OUTPUT, check_duplicate_output),
)


def route(path: str, query: str) -> Route | None:
    return Route("", False) if path == "/v1/responses" else None


def _response(model: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": "resp_emulated",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        if done
        else None,
    }


def ok(route: Route, body: Mapping[str, Any]) -> Reply:
    model = model_of(route, body)
    text = {"type": "output_text", "text": "ok", "annotations": [], "logprobs": []}
    message = {
        "type": "message",
        "id": "msg_emulated",
        "status": "completed",
        "role": "assistant",
        "content": [text],
    }
    if not route.stream:
        return json_reply(200, _response(model, "completed", [message]))
    where = {"item_id": "msg_emulated", "output_index": 0, "content_index": 0}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _response(model, "in_progress", [])}),
        ("response.in_progress", {"response": _response(model, "in_progress", [])}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**message, "status": "in_progress", "content": []}},
        ),
        ("response.content_part.added", {**where, "part": {**text, "text": ""}}),
        ("response.output_text.delta", {**where, "delta": "ok", "logprobs": []}),
        ("response.output_text.done", {**where, "text": "ok", "logprobs": []}),
        ("response.content_part.done", {**where, "part": text}),
        ("response.output_item.done", {"output_index": 0, "item": message}),
        ("response.completed", {"response": _response(model, "completed", [message])}),
    ]
    return sse(
        [(name, {"type": name, "sequence_number": n, **data}) for n, (name, data) in enumerate(events)]
    )


def error(status: int, message: str, rule: str | None) -> Reply:
    payload = {"message": message, "type": "invalid_request_error", "param": "input", "code": None}
    return json_reply(status, {"error": payload})


SPEC = ApiSpec(API, CHECKS, route, ok, error)

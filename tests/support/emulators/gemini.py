"""Google Gemini: POST /v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse
(also /v1 and /v1alpha); SDK base_url: base_url (google-genai `HttpOptions(base_url=...)`). Vertex
AI's form of the same call, /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:...
(also /v1), is served too: the model a check sees is then that full resource name.

Rules enforced, verified ones first, in this order (wording from shared/spec/providers.md,
"Google Gemini"; each message in the API's "* GenerateContentRequest..." style where it has one).
The turn rules read consecutive contents of one role as one turn (recorded: gemini-3-flash-preview
accepted two model turns of one functionCall each, answered together in one user turn):
- request_schema: `contents` is a non-empty list of objects with a `parts` list (schema
  validation; wording in the API's style, not quoted there).
- role: a content's role, when given, is user or model.
- empty_parts: no content with an empty `parts` list.
- empty_text: on Vertex AI only (its wording), no part that is only an empty text (an empty text
  carrying a thoughtSignature, as Gemini itself returns, passes). The Gemini API was recorded
  accepting empty user and model texts (pydantic-ai's test_google_model_empty_user_prompt).
- function_call_turn_position: a model turn with functionCall parts comes right after a user turn
  (a function response turn is a user turn).
- function_response_turn_position: a turn with functionResponse parts comes right after a model
  turn with functionCall parts.
- function_response_count: the turn after a function call turn has as many functionResponse
  parts as it has functionCall parts (adk-python#1583).
- thought_signature: on Gemini 3 models (the model in the path starts "gemini-3"), the first
  functionCall of each model turn in the current turn (after the last user turn that is not only
  function responses) carries a thoughtSignature.
Unverified (off with enforce_unverified=False):
- ends_on_model_turn: the last content is not a model turn (wording ours).
Without `alt=sse`, streamGenerateContent answers a JSON array of chunks, as the REST API does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._base import ApiSpec, Check, Reply, Route, Rule, json_reply, model_of, sse

__all__ = ["SPEC"]

API = "gemini"
PATH = re.compile(
    r"^/(?:v1|v1beta|v1alpha|v1beta1)/((?:projects/[^/]+/locations/[^/]+/publishers/google/)?models/[^/:]+)"
    r":(generateContent|streamGenerateContent)$"
)
VERTEX = "/publishers/"


def _rule(name: str, verified: bool, message: str) -> Rule:
    return Rule(f"{API}.{name}", API, verified, message)


SCHEMA = _rule("request_schema", True, "* GenerateContentRequest.{detail}")
ROLE = _rule("role", True, "Please use a valid role: user, model.")
EMPTY_PARTS = _rule(
    "empty_parts", True, "* GenerateContentRequest.contents[{n}].parts: contents.parts must not be empty."
)
EMPTY_TEXT = _rule(
    "empty_text",
    True,
    "Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.",
)
CALL_POSITION = _rule(
    "function_call_turn_position",
    True,
    "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
)
RESPONSE_POSITION = _rule(
    "function_response_turn_position",
    True,
    "Please ensure that function response turn comes immediately after a function call turn.",
)
COUNT = _rule(
    "function_response_count",
    True,
    "Please ensure that the number of function response parts is equal to the number of function call parts "
    "of the function call turn.",
)
SIGNATURE = _rule(
    "thought_signature",
    True,
    "Function call is missing a thought_signature in functionCall parts. Additional data, function call "
    "`default_api:{name}` , position {n}.",
)
ENDS_ON_MODEL = _rule("ends_on_model_turn", False, "Please ensure that the last turn is a user turn.")


def _contents(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    contents = body.get("contents")
    return [c for c in contents if isinstance(c, Mapping)] if isinstance(contents, list) else []


def _parts(content: Mapping[str, Any] | None, kind: str | None = None) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if content is not None else None
    found = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
    return [p for p in found if kind in p] if kind else found


def _is_model(content: Mapping[str, Any] | None) -> bool:
    return content is not None and content.get("role") == "model"


def check_schema(body: Mapping[str, Any], model: str) -> str | None:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return SCHEMA.message.format(detail="contents: contents is not specified")
    for n, content in enumerate(contents):
        if not isinstance(content, Mapping) or not isinstance(content.get("parts"), list):
            return SCHEMA.message.format(detail=f"contents[{n}].parts: parts is not specified")
    return None


def check_role(body: Mapping[str, Any], model: str) -> str | None:
    bad = any("role" in c and c["role"] not in ("user", "model") for c in _contents(body))
    return ROLE.message if bad else None


def check_empty_parts(body: Mapping[str, Any], model: str) -> str | None:
    for n, content in enumerate(_contents(body)):
        if not _parts(content):
            return EMPTY_PARTS.message.format(n=n)
    return None


def check_empty_text(body: Mapping[str, Any], model: str) -> str | None:
    if VERTEX not in model:
        return None
    for content in _contents(body):
        for part in _parts(content):
            if (
                part.get("text") == ""
                and not part.get("thoughtSignature")
                and set(part) <= {"text", "thought"}
            ):
                return EMPTY_TEXT.message
    return None


def _turns(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The contents with consecutive ones of one role merged (a missing role is the user's)."""
    turns: list[dict[str, Any]] = []
    for content in _contents(body):
        role = content.get("role", "user")
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"] = [*turns[-1]["parts"], *_parts(content)]
        else:
            turns.append({"role": role, "parts": _parts(content)})
    return turns


def check_call_position(body: Mapping[str, Any], model: str) -> str | None:
    contents = _turns(body)
    for n, content in enumerate(contents):
        if _is_model(content) and _parts(content, "functionCall") and (n == 0 or _is_model(contents[n - 1])):
            return CALL_POSITION.message
    return None


def check_response_position(body: Mapping[str, Any], model: str) -> str | None:
    contents = _turns(body)
    for n, content in enumerate(contents):
        previous = contents[n - 1] if n > 0 else None
        if _parts(content, "functionResponse") and not (
            _is_model(previous) and _parts(previous, "functionCall")
        ):
            return RESPONSE_POSITION.message
    return None


def check_count(body: Mapping[str, Any], model: str) -> str | None:
    contents = _turns(body)
    for n, content in enumerate(contents[:-1]):
        calls = _parts(content, "functionCall") if _is_model(content) else []
        if calls and len(_parts(contents[n + 1], "functionResponse")) != len(calls):
            return COUNT.message
    return None


def check_signature(body: Mapping[str, Any], model: str) -> str | None:
    if not model.rsplit("/", 1)[-1].startswith("gemini-3"):
        return None
    contents = _contents(body)
    start = 0  # the current turn starts after the last user turn with more than function responses
    for n, content in enumerate(contents):
        if not _is_model(content) and len(_parts(content, "functionResponse")) != len(_parts(content)):
            start = n + 1
    for n in range(start, len(contents)):
        calls = _parts(contents[n], "functionCall") if _is_model(contents[n]) else []
        if calls and not calls[0].get("thoughtSignature"):
            call = calls[0]["functionCall"]
            name = call.get("name") if isinstance(call, Mapping) else None
            return SIGNATURE.message.format(name=name, n=n)
    return None


def check_ends_on_model(body: Mapping[str, Any], model: str) -> str | None:
    contents = _contents(body)
    return ENDS_ON_MODEL.message if contents and _is_model(contents[-1]) else None


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SCHEMA, check_schema),
    (ROLE, check_role),
    (EMPTY_PARTS, check_empty_parts),
    (EMPTY_TEXT, check_empty_text),
    (CALL_POSITION, check_call_position),
    (RESPONSE_POSITION, check_response_position),
    (COUNT, check_count),
    (SIGNATURE, check_signature),
    (ENDS_ON_MODEL, check_ends_on_model),
)


def route(path: str, query: str) -> Route | None:
    match = PATH.match(path)
    if match is None:
        return None
    streaming = match.group(2) == "streamGenerateContent"
    name = match.group(1)
    return Route(
        name.removeprefix("models/"), streaming, "" if not streaming or "alt=sse" in query else "array"
    )


def _chunk(model: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": model,
        "responseId": "emulated",
    }


def ok(route: Route, body: Mapping[str, Any]) -> Reply:
    chunk = _chunk(model_of(route, body))
    if not route.stream:
        return json_reply(200, chunk)
    if route.form == "array":
        return json_reply(200, [chunk])
    return sse([(None, chunk)])


def error(status: int, message: str, rule: str | None) -> Reply:
    state = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}.get(status, "UNKNOWN")
    return json_reply(status, {"error": {"code": status, "message": message, "status": state}})


SPEC = ApiSpec(API, CHECKS, route, ok, error)

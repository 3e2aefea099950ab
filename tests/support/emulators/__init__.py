"""Strict loopback emulators of the provider APIs pydantic-ai users send to (stdlib only).

Each emulator is a real HTTP server on 127.0.0.1 (a free port) that judges every request against
the documented rules in shared/spec/providers.md and answers either a minimal valid response (JSON
or the provider's streaming form, as the client asks) or the provider's own error shape and
wording. `judge` is the same decision without HTTP. Rules the spec marks unverified carry
`verified=False` and are enforced only while `enforce_unverified` is true.

Where each SDK points (`Emulator.sdk_base_url` adds the suffix):
- openai-chat, openai-responses: `base_url + "/v1"` (openai.OpenAI(base_url=...)).
- anthropic: `base_url` (anthropic.Anthropic(base_url=...)).
- gemini: `base_url` (google-genai `HttpOptions(base_url=...)`; REST path /v1beta/models/...).
- bedrock: `base_url` (boto3 client("bedrock-runtime", endpoint_url=...)).
- mistral: `base_url` (mistralai.Mistral(server_url=...)).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from . import anthropic, bedrock, gemini, mistral, openai_chat, openai_responses
from ._base import (
    DEFAULT_REQUEST_TIMEOUT,
    MALFORMED_JSON,
    UNKNOWN_PATH,
    ApiSpec,
    Emulator,
    Rule,
    Verdict,
    judge_spec,
)

__all__ = [
    "MALFORMED_JSON",
    "PROVIDER_APIS",
    "UNKNOWN_PATH",
    "Emulator",
    "Rule",
    "Verdict",
    "all_rules",
    "judge",
    "serve",
    "spec",
]

#: The emulated APIs (stable names, used in tables).
PROVIDER_APIS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "bedrock",
    "mistral",
)

_MODULES = (openai_chat, openai_responses, anthropic, gemini, bedrock, mistral)
_SPECS: dict[str, ApiSpec] = {module.SPEC.api: module.SPEC for module in _MODULES}
_SDK_SUFFIX = {"openai-chat": "/v1", "openai-responses": "/v1"}


def spec(api: str) -> ApiSpec:
    """The emulated API called `api` (ValueError naming the valid ones otherwise)."""
    if api not in PROVIDER_APIS:
        raise ValueError(f"unknown provider API {api!r}; valid: {', '.join(PROVIDER_APIS)}")
    return _SPECS[api]


def serve(
    api: str,
    *,
    enforce_unverified: bool = True,
    strict_templates: bool = False,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> Emulator:
    """Start the `api` emulator on 127.0.0.1 (port 0: a free port). Close it, or use `with`."""
    return Emulator(
        spec(api),
        enforce_unverified=enforce_unverified,
        strict_templates=strict_templates,
        request_timeout=request_timeout,
        base_suffix=_SDK_SUFFIX.get(api, ""),
    )


def judge(
    api: str, body: object, *, path: str = "", enforce_unverified: bool = True, strict_templates: bool = False
) -> Verdict:
    """What the `api` emulator decides about a request `body` (no HTTP). `path` names the model
    for the APIs that put it there (Gemini, Bedrock)."""
    api_spec = spec(api)
    parts = urlsplit(path)
    route = api_spec.route(parts.path, parts.query) if path else None
    return judge_spec(
        api_spec,
        body,
        model=route.model if route else "",
        path=path,
        enforce_unverified=enforce_unverified,
        strict_templates=strict_templates,
    )


def all_rules() -> tuple[Rule, ...]:
    """Every rule of every emulated API, in PROVIDER_APIS order."""
    return tuple(rule for api in PROVIDER_APIS for rule in _SPECS[api].rules)

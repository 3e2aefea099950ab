"""Which provider API a ``provider=`` argument names: a prefix, a model string, a Model, or ``"any"``.

Profiles are per wire API, not per company: the six APIs histfix knows the rules of (and has a
strict emulator for in its tests) are :data:`PROVIDER_APIS`. A pydantic-ai model-name prefix maps to
the API its model class speaks; a ``Model`` instance maps by its class (a ``FallbackModel`` to every
API of its models, a wrapper to what it wraps). A prefix or class whose wire no profile is for
(:data:`NO_PROFILE`) is refused with the reason. Nothing here imports pydantic-ai at import time.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANY",
    "NO_PROFILE",
    "PROVIDER_APIS",
    "PROVIDER_NAMES",
    "UNPROVEN_PREFIXES",
    "NoProfile",
    "ProviderTarget",
    "api_of_prefix",
    "bedrock_claude",
    "groups_calls",
    "only_grouping_servers",
    "ordered_apis",
    "refuses_mixed_turns",
    "resolve_provider",
    "unknown_provider",
]

#: The wire APIs a profile is written for, in a fixed order (the order of tables and of ``"any"``).
PROVIDER_APIS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "bedrock",
    "mistral",
)
#: One history every profile accepts.
ANY = "any"

_CHAT_COMPATIBLE = (
    *("alibaba", "azure", "cerebras", "crusoe", "deepseek", "fireworks", "github", "github-copilot"),
    *("grok", "heroku", "litellm", "moonshotai", "nebius", "ollama", "openrouter", "ovhcloud"),
    *("otari", "sambanova", "snowflake", "stav", "together", "vercel", "vllm", "zai"),
)
# pydantic-ai model-name prefixes (``infer_model``'s names, 1.0.0-2.78.0) -> the API their model
# class sends. "openai" is not here: which API it names depends on the release (see ``_release.switches``).
_PREFIXES: dict[str, str] = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "azure-responses": "openai-responses",
    "meta": "openai-responses",
    "openai-chatgpt": "openai-responses",
    "openai-codex": "openai-responses",
    "anthropic": "anthropic",
    "google-gla": "gemini",
    "google-vertex": "gemini",
    "google": "gemini",
    "google-cloud": "gemini",
    "vertexai": "gemini",
    "bedrock": "bedrock",
    "mistral": "mistral",
    # OpenAI Chat Completions compatible servers (OpenAIChatModel or a subclass of it).
    **dict.fromkeys(_CHAT_COMPATIBLE, "openai-chat"),
    # Own model classes whose wire is Chat Completions (GroqModel, HuggingFaceModel: proven through
    # their own classes and SDKs against the Chat Completions emulator, tests/profiles/test_provider_prefixes.py)
    # or shaped like it (CohereModel, XaiModel: tool messages answer tool calls by id; not proven).
    **dict.fromkeys(("groq", "huggingface", "cohere", "xai"), "openai-chat"),
    # CloudflareChatModel (2.78.0+): an OpenAIChatModel subclass on Workers AI's Chat Completions endpoint.
    "cloudflare": "openai-chat",
}
#: Prefixes whose API is inferred from the Chat Completions family, not proven against an emulator
#: (Cohere's v2 chat and xAI's gRPC API are not Chat Completions on the wire; no emulator speaks them).
UNPROVEN_PREFIXES = frozenset({"cohere", "xai"})
#: Model-name prefixes ``infer_model`` knows that get no profile -> why, in one line (the error says it).
NO_PROFILE: dict[str, str] = {
    "google-interactions": "GoogleInteractionsModel sends Google's Interactions API (one list of steps, "
    "not Gemini's turns), whose rules for a history no public source documents and no emulator here proves",
    "cloudflare-decisions": "CloudflareDecisionsModel is a decision model that sends the conversation as "
    "one state to judge, not as turns and tool exchanges, so no rule a profile satisfies applies",
}
# Model classes (by name, anywhere in the MRO) with no profile -> why, as NO_PROFILE words it.
_NO_PROFILE_CLASSES: dict[str, str] = {
    "GoogleInteractionsModel": NO_PROFILE["google-interactions"],
    "CloudflareDecisionsModel": NO_PROFILE["cloudflare-decisions"],
}

#: Every name ``provider=`` accepts besides a full model string or a Model instance.
PROVIDER_NAMES: tuple[str, ...] = (
    ANY,
    *PROVIDER_APIS,
    "openai",
    *sorted(set(_PREFIXES) - set(PROVIDER_APIS)),
)

# Model classes (by name, anywhere in the instance's MRO, so subclasses such as OpenRouterModel
# count) -> API. By name so that an SDK that is not installed is never imported to find out.
_MODEL_CLASSES: dict[str, str] = {
    "OpenAIResponsesModel": "openai-responses",
    "OpenAIChatModel": "openai-chat",
    "OpenAIModel": "openai-chat",  # 1.x's deprecated alias of OpenAIChatModel
    "AnthropicModel": "anthropic",
    "GoogleModel": "gemini",
    "GeminiModel": "gemini",
    "BedrockConverseModel": "bedrock",
    "MistralModel": "mistral",
    "GroqModel": "openai-chat",
    "HuggingFaceModel": "openai-chat",
    "CohereModel": "openai-chat",
    "XaiModel": "openai-chat",
}


@dataclass(frozen=True)
class ProviderTarget:
    """What a ``provider=`` argument resolved to: the APIs whose rules apply, and the model."""

    #: the argument as a person would read it back (``"anthropic:claude-sonnet-4-5"``, ``"any"``)
    name: str
    #: the APIs whose profile passes run, in :data:`PROVIDER_APIS` order (several for ``"any"`` or a
    #: ``FallbackModel``)
    apis: tuple[str, ...]
    #: the model name when one was given (a model string or a Model instance), else None
    model_name: str | None = None
    #: (API, model name) of every model named: the one of a model string or Model, each member of a
    #: ``FallbackModel`` (rules that depend on the model, such as Bedrock's non-Claude models', read it)
    models: tuple[tuple[str, str], ...] = ()


def api_of_prefix(prefix: str) -> str | None:
    """The API a pydantic-ai model-name prefix sends to on the installed release (None: unknown)."""
    if prefix.startswith("gateway/"):
        prefix = prefix.removeprefix("gateway/")
    if prefix == "openai":
        from .._release import table
        from .._release.switches import has

        return "openai-responses" if has(table.OPENAI_PREFIX_IS_RESPONSES) else "openai-chat"
    if prefix in PROVIDER_APIS:
        return prefix
    return _PREFIXES.get(prefix)


class NoProfile(ValueError):
    """``provider=`` names a model class histfix knows and has no profile for; the message says why."""


def no_profile(name: str, why: str) -> NoProfile:
    """The error for a known prefix or model class without a profile: what it is, and what to pass instead."""
    return NoProfile(f"no provider profile for {name}: {why}; repair it with provider=None (pairing only)")


def bedrock_claude(model_name: str) -> bool:
    """Whether a Bedrock model id names a Claude model (``us.anthropic.claude-...``)."""
    lowered = model_name.lower()
    return "anthropic" in lowered or "claude" in lowered


def refuses_mixed_turns(target: ProviderTarget) -> bool:
    """Whether the target names a Bedrock model other than Claude (by its model id), alone or as a
    member of a FallbackModel."""
    return any(api == "bedrock" and not bedrock_claude(name) for api, name in target.models)


#: Model-name prefixes of Responses-compatible servers recorded reading calls and outputs as one run.
_GROUPING_FAMILIES = ("deepseek",)


def _grouping(name: str) -> bool:
    return name.lower().rpartition("/")[2].startswith(_GROUPING_FAMILIES)


def groups_calls(target: ProviderTarget) -> bool:
    """Whether the target names a Responses model served by a server that groups calls and outputs."""
    return any(api == "openai-responses" and _grouping(name) for api, name in target.models)


def only_grouping_servers(target: ProviderTarget) -> bool:
    """Whether every Responses model the target names is served by such a server (OpenAI's own
    rules, such as a reasoning item's following item, are then not the server's)."""
    named = [name for api, name in target.models if api == "openai-responses"]
    return bool(named) and all(map(_grouping, named))


def unknown_provider(name: str, *, models: bool = True) -> ValueError:
    """The error for a ``provider=`` name histfix does not know: the canonical names (not every
    prefix; :data:`PROVIDER_NAMES` has them all), and a Model where the caller can pass one."""
    model = ", or a pydantic-ai Model" if models else ""
    return ValueError(
        f"unknown provider {name!r}: use one of {', '.join((ANY, *PROVIDER_APIS))}, a pydantic-ai "
        f"model-name prefix (openai, google-gla, groq, ...: histfix.PROVIDER_NAMES lists them) or a "
        f"model string such as anthropic:claude-sonnet-4-5{model}"
    )


def ordered_apis(apis: Iterable[str]) -> tuple[str, ...]:
    """``apis`` once each, in :data:`PROVIDER_APIS` order (how every list of APIs is shown)."""
    return _in_order(frozenset(apis))


@functools.lru_cache(maxsize=256)
def _in_order(apis: frozenset[str]) -> tuple[str, ...]:
    # a check can ask this once per problem, thousands of times, for a handful of distinct sets
    return tuple(api for api in PROVIDER_APIS if api in apis)


def _models_of(model: Any, seen: set[int]) -> list[tuple[str, str | None]]:
    """(API, model name) of the model, or of each model a FallbackModel or wrapper stands for."""
    if id(model) in seen:  # a wrapper cycle would otherwise recurse forever
        return []
    seen.add(id(model))
    names = [cls.__name__ for cls in type(model).__mro__]
    if "FallbackModel" in names:
        return [found for member in getattr(model, "models", ()) for found in _models_of(member, seen)]
    for name in names:
        if name in _MODEL_CLASSES:
            return [(_MODEL_CLASSES[name], _model_name(model))]
    wrapped = getattr(model, "wrapped", None)
    if wrapped is not None and "WrapperModel" in names:
        return _models_of(wrapped, seen)
    return []


def _model_name(model: Any) -> str | None:
    name = getattr(model, "model_name", None)
    return name if isinstance(name, str) else None


def resolve_provider(provider: object) -> ProviderTarget:
    """Resolve ``provider=`` (see :func:`histfix.repair`); ValueError/TypeError naming what is valid."""
    if isinstance(provider, str):
        prefix, colon, model_name = provider.strip().partition(":")
        prefix = prefix.lower()  # names are case-insensitive; a model's name is kept as given
        if prefix == ANY and not colon:
            return ProviderTarget(ANY, PROVIDER_APIS)
        name = prefix + colon + model_name
        why = NO_PROFILE.get(prefix.removeprefix("gateway/"))
        if why is not None:
            raise no_profile(prefix, why)
        api = api_of_prefix(prefix)
        if api is None or (colon and not model_name):
            raise unknown_provider(provider)
        return ProviderTarget(name, (api,), model_name or None, ((api, model_name),) if model_name else ())
    from .._release.installed import pydantic_ai_messages

    pydantic_ai_messages()  # a clear ImportError when pydantic-ai is missing
    from pydantic_ai.models import Model

    if not isinstance(provider, Model):
        raise TypeError(
            f"provider must be a provider name, a model string or a pydantic-ai Model, "
            f"got {type(provider).__name__}"
        )
    found = _models_of(provider, set())
    apis = {api for api, _ in found}
    if not apis:
        for cls in type(provider).__mro__:
            if cls.__name__ in _NO_PROFILE_CLASSES:
                raise no_profile(type(provider).__name__, _NO_PROFILE_CLASSES[cls.__name__])
        raise ValueError(
            f"no provider profile for {type(provider).__name__}: pass provider= the API it sends to, "
            f"one of {', '.join((ANY, *PROVIDER_APIS))}"
        )
    named = _model_name(provider)
    label = f"{type(provider).__name__}({named or ''})"
    if any(cls.__name__ == "FallbackModel" for cls in type(provider).__mro__):
        named = None  # several models: no one name applies
    models = tuple(dict.fromkeys((api, name) for api, name in found if name is not None))
    return ProviderTarget(label, ordered_apis(apis), named, models)

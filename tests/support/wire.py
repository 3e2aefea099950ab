"""The installed release's own model classes and SDKs, pointed at the loopback emulators.

What a user does, minus the network: build the release's model class for one provider API with a
real SDK client whose base URL is an emulator (`tests/support/emulators/`), dummy credentials, a short
timeout and no retries, then send a stored history through ``Agent(model).run``. Which model
classes, providers and constructor keywords exist is detected on the installed release, never
read from its version; an SDK that does not import gives a reason naming the provider and release.

``send`` gives one ``Outcome`` per history: accepted, rejected (the emulator's rule and message),
or raised before sending (what pydantic-ai or the SDK raised before any request reached the wire).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai import messages as pai

from conftest import PYDANTIC_AI

#: Seconds any one request may take (connect and read), and one whole case.
TIMEOUT = 10.0
CASE_TIMEOUT = 30.0
#: The prompt sent after a history that does not end with a request (one that does is answered as is).
PROMPT = "next question"
DUMMY_KEY = "test-key-not-real"

Build = Callable[[str], tuple[Any, Callable[[], Awaitable[None]]]]


@dataclass(frozen=True)
class Client:
    """How to build one provider API's model on the installed release."""

    api: str
    #: the model and provider classes used, e.g. ``OpenAIChatModel + OpenAIProvider(openai_client=)``
    via: str
    #: base URL -> (model, async close of the SDK client)
    build: Build


@dataclass(frozen=True)
class Outcome:
    """What one history met on one provider API."""

    kind: str  # "accepted" | "rejected" | "raised" (before sending) | "client-error" (after an answer)
    rule: str = ""
    detail: str = ""

    def label(self) -> str:
        """Short, stable form for comparing and tabulating: ``rejected:anthropic.tool-use-answered``."""
        if self.kind == "accepted":
            return "accepted"
        if self.kind == "rejected":
            return f"rejected:{self.rule}"
        return f"{self.kind}:{self.rule}"

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "rule": self.rule, "detail": self.detail}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else "")[:300]


def _module(name: str) -> Any:
    return importlib.import_module(name)


def _accepts(callable_: Any, keyword: str) -> bool:
    try:
        return keyword in inspect.signature(callable_).parameters
    except (TypeError, ValueError):
        return False


def _pick(module: Any, *names: str) -> tuple[str, Any]:
    for name in names:
        if hasattr(module, name):
            return name, getattr(module, name)
    raise LookupError(f"none of {', '.join(names)} in {module.__name__}")


def _provider(module_name: str, class_name: str, keyword: str) -> Callable[[Any], Any]:
    """The release's provider class, as a function wrapping a ready SDK client through ``keyword``."""
    provider_class = getattr(_module(f"pydantic_ai.providers.{module_name}"), class_name)
    if not _accepts(provider_class.__init__, keyword):
        raise LookupError(f"{class_name} takes no {keyword}=")
    return lambda client: provider_class(**{keyword: client})


def _plain_http(sdk: Any) -> dict[str, Any]:
    """``http_client=`` for an SDK client that speaks plain HTTP to a loopback emulator, never TLS:
    the SDK's own default HTTP client without the CA bundle its TLS context would load (20 ms of
    CPU a client, for nothing here), where the SDK offers one; else nothing (the SDK builds its own)."""
    factory = getattr(sdk, "DefaultAsyncHttpxClient", None)
    return {} if factory is None else {"http_client": factory(verify=False)}


def _openai_sdk(openai: Any, base_url: str) -> Any:
    """The ``openai`` SDK's async client pointed at an emulator (every OpenAI-shaped model class's)."""
    return openai.AsyncOpenAI(
        base_url=f"{base_url}/v1", api_key=DUMMY_KEY, max_retries=0, timeout=TIMEOUT, **_plain_http(openai)
    )


async def _close(client: Any, *methods: str) -> None:
    """Close an SDK client by the first of ``methods`` it has (dotted: ``aio.aclose``)."""
    for path in methods:
        target: Any = client
        for name in path.split("."):
            target = getattr(target, name, None)
            if target is None:
                break
        if target is None:
            continue
        result = target()
        if inspect.isawaitable(result):
            await result
        return


# --- one builder per provider API ------------------------------------------------------------------


def _openai(responses: bool, model_name: str = "gpt-4o") -> Client:
    """OpenAI Chat or Responses; ``model_name`` a reasoning model (``REASONING_MODEL``) for the
    releases' reasoning-item replay, which they use only for models that support it."""
    openai = _module("openai")
    models = _module("pydantic_ai.models.openai")
    name, model_class = (
        _pick(models, "OpenAIResponsesModel")
        if responses
        else _pick(models, "OpenAIChatModel", "OpenAIModel")
    )

    provider = _provider("openai", "OpenAIProvider", "openai_client")

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        sdk = _openai_sdk(openai, base_url)
        return model_class(model_name, provider=provider(sdk)), lambda: _close(sdk, "close")

    api = "openai-responses" if responses else "openai-chat"
    named = "" if model_name == "gpt-4o" else f"({model_name!r})"
    return Client(api, f"{name}{named} + OpenAIProvider(openai_client=)", build)


#: A model OpenAI's profile marks as reasoning (encrypted reasoning content): OpenAIResponsesModel
#: replays own thinking as reasoning items only for such models (tests/profiles/test_rules_reasoning.py).
REASONING_MODEL = "o3"


def system_blocks_chat_client() -> Client | str:
    """OpenAIChatModel for a model whose profile takes no inline system prompts (as 2.78.0's
    CloudflareChatModel and gpt-oss models get), so the release sends mid-conversation system prompts as
    ``<system>`` blocks and announces them; or why there is none (no such profile setting on this release)."""
    try:
        from pydantic_ai.profiles import ModelProfile

        keys = {
            *getattr(ModelProfile, "__optional_keys__", ()),
            *getattr(ModelProfile, "__required_keys__", ()),
        }
        if "supports_inline_system_prompts" not in keys:
            raise LookupError("ModelProfile has no supports_inline_system_prompts")
        openai = _module("openai")
        _, model_class = _pick(_module("pydantic_ai.models.openai"), "OpenAIChatModel")
        provider = _provider("openai", "OpenAIProvider", "openai_client")
    except (ImportError, LookupError, AttributeError) as exc:
        return f"openai-chat on pydantic-ai-slim {PYDANTIC_AI}: {type(exc).__name__}: {_first_line(exc)}"

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        sdk = _openai_sdk(openai, base_url)
        profile = ModelProfile(supports_inline_system_prompts=False)
        return model_class("gpt-4o", provider=provider(sdk), profile=profile), lambda: _close(sdk, "close")

    via = "OpenAIChatModel('gpt-4o', profile=supports_inline_system_prompts=False) + OpenAIProvider(openai_client=)"
    return Client("openai-chat", via, build)


def responses_client(model_name: str) -> Client | str:
    """OpenAIResponsesModel for ``model_name`` (a model of a Responses-compatible server, say), or
    why there is none (as ``client_for``)."""
    try:
        return _openai(responses=True, model_name=model_name)
    except (ImportError, LookupError, AttributeError) as exc:
        return f"openai-responses on pydantic-ai-slim {PYDANTIC_AI}: {type(exc).__name__}: {_first_line(exc)}"


def reasoning_responses_client() -> Client | str:
    """OpenAIResponsesModel for ``REASONING_MODEL``, or why there is none (as ``client_for``)."""
    try:
        return _openai(responses=True, model_name=REASONING_MODEL)
    except (ImportError, LookupError, AttributeError) as exc:
        return f"openai-responses on pydantic-ai-slim {PYDANTIC_AI}: {type(exc).__name__}: {_first_line(exc)}"


def _anthropic(model_name: str = "claude-sonnet-4-6") -> Client:
    anthropic = _module("anthropic")
    _, model_class = _pick(_module("pydantic_ai.models.anthropic"), "AnthropicModel")
    provider = _provider("anthropic", "AnthropicProvider", "anthropic_client")

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        sdk = anthropic.AsyncAnthropic(
            base_url=base_url, api_key=DUMMY_KEY, max_retries=0, timeout=TIMEOUT, **_plain_http(anthropic)
        )
        return model_class(model_name, provider=provider(sdk)), lambda: _close(sdk, "close")

    named = "" if model_name == "claude-sonnet-4-6" else f"({model_name!r})"
    return Client("anthropic", f"AnthropicModel{named} + AnthropicProvider(anthropic_client=)", build)


def _gemini() -> Client:
    genai = _module("google.genai")
    types = _module("google.genai.types")
    _, model_class = _pick(_module("pydantic_ai.models.google"), "GoogleModel")
    provider = _provider("google", "GoogleProvider", "client")

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        options: dict[str, Any] = {"base_url": base_url, "timeout": int(TIMEOUT * 1000)}
        if hasattr(types, "HttpRetryOptions") and "retry_options" in types.HttpOptions.model_fields:
            options["retry_options"] = types.HttpRetryOptions(attempts=1)
        sdk = genai.Client(api_key=DUMMY_KEY, http_options=types.HttpOptions(**options))
        return model_class("gemini-2.5-flash", provider=provider(sdk)), lambda: _close(sdk, "aio.aclose")

    return Client("gemini", "GoogleModel + GoogleProvider(client=)", build)


def _bedrock(model_id: str = "anthropic.claude-3-5-sonnet-20240620-v1:0") -> Client:
    boto3 = _module("boto3")
    config = _module("botocore.config").Config(
        retries={"max_attempts": 1, "mode": "standard"},
        connect_timeout=TIMEOUT,
        read_timeout=TIMEOUT,
    )
    _, model_class = _pick(_module("pydantic_ai.models.bedrock"), "BedrockConverseModel")
    provider = _provider("bedrock", "BedrockProvider", "bedrock_client")
    clients: dict[str, Any] = {}  # boto3 clients are synchronous and slow to build: one per URL

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        if base_url not in clients:
            clients[base_url] = boto3.client(
                "bedrock-runtime",
                endpoint_url=base_url,
                region_name="us-east-1",
                aws_access_key_id="AKIDTESTNOTREAL",
                aws_secret_access_key=DUMMY_KEY,
                aws_session_token=None,
                config=config,
            )

        async def close() -> None:
            return None

        model = model_class(model_id, provider=provider(clients[base_url]))
        return model, close

    named = "" if "claude" in model_id else f"({model_id!r})"
    return Client("bedrock", f"BedrockConverseModel{named} + BedrockProvider(bedrock_client=)", build)


def _mistral() -> Client:
    providers = _module("pydantic_ai.providers.mistral")
    sdk_class = providers.Mistral  # the SDK class the release itself imports (its path moved in mistralai 2)
    _, model_class = _pick(_module("pydantic_ai.models.mistral"), "MistralModel")
    provider = _provider("mistral", "MistralProvider", "mistral_client")

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        options: dict[str, Any] = {
            "api_key": DUMMY_KEY,
            "server_url": base_url,
            "timeout_ms": int(TIMEOUT * 1000),
        }
        if _accepts(sdk_class.__init__, "retry_config"):
            options["retry_config"] = None  # explicitly no retries (unset means the SDK's default)
        sdk = sdk_class(**options)

        async def close() -> None:
            async_client = getattr(getattr(sdk, "sdk_configuration", None), "async_client", None)
            if async_client is not None and hasattr(async_client, "aclose"):
                await async_client.aclose()

        return model_class("mistral-large-latest", provider=provider(sdk)), close

    return Client("mistral", "MistralModel + MistralProvider(mistral_client=)", build)


def _groq() -> Client:
    """GroqModel: its own model class and SDK (``groq``), speaking Chat Completions at Groq's path."""
    groq = _module("groq")
    _, model_class = _pick(_module("pydantic_ai.models.groq"), "GroqModel")
    provider = _provider("groq", "GroqProvider", "groq_client")

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        sdk = groq.AsyncGroq(
            base_url=base_url, api_key=DUMMY_KEY, max_retries=0, timeout=TIMEOUT, **_plain_http(groq)
        )
        return model_class("llama-3.3-70b-versatile", provider=provider(sdk)), lambda: _close(sdk, "close")

    return Client("openai-chat", "GroqModel + GroqProvider(groq_client=)", build)


def _huggingface() -> Client:
    """HuggingFaceModel: its own model class and SDK (``huggingface_hub``'s inference client),
    speaking Chat Completions (OpenAI's path under the client's base URL)."""
    hub = _module("huggingface_hub")
    _, model_class = _pick(_module("pydantic_ai.models.huggingface"), "HuggingFaceModel")
    provider_class = _module("pydantic_ai.providers.huggingface").HuggingFaceProvider

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        sdk = hub.AsyncInferenceClient(base_url=base_url, api_key=DUMMY_KEY, timeout=TIMEOUT)
        # the provider wants a key of its own even with a client (else it reads HF_TOKEN)
        model = model_class("Qwen/Qwen3-235B-A22B", provider=provider_class(hf_client=sdk, api_key=DUMMY_KEY))
        return model, lambda: _close(sdk, "close")

    return Client("openai-chat", "HuggingFaceModel + HuggingFaceProvider(hf_client=)", build)


def _openai_compatible(module_name: str, class_name: str, model_name: str) -> Client:
    """OpenAIChatModel on an OpenAI-compatible gateway's own provider class (``otari:``, ``stav:``:
    ``infer_model`` builds exactly this), its SDK client pointed at the emulator. A release without
    that provider module raises ImportError here (``client_for`` turns it into the reason)."""
    openai = _module("openai")
    _, model_class = _pick(_module("pydantic_ai.models.openai"), "OpenAIChatModel")
    provider = _provider(module_name, class_name, "openai_client")

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        sdk = _openai_sdk(openai, base_url)
        return model_class(model_name, provider=provider(sdk)), lambda: _close(sdk, "close")

    return Client("openai-chat", f"OpenAIChatModel({model_name!r}) + {class_name}(openai_client=)", build)


#: The account in the path CloudflareChatModel posts to (any id: the emulator routes every one).
CLOUDFLARE_ACCOUNT = "histfix-test"


def _cloudflare() -> Client:
    """CloudflareChatModel (an OpenAIChatModel subclass) with CloudflareProvider's own HTTP client:
    it posts to Workers AI's OpenAI-compatible path under the account's base URL."""
    httpx2 = _module("httpx2")
    _, model_class = _pick(_module("pydantic_ai.models.cloudflare"), "CloudflareChatModel")
    provider_class = _module("pydantic_ai.providers.cloudflare").CloudflareProvider

    def build(base_url: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        http = httpx2.AsyncClient(timeout=TIMEOUT, verify=False)  # plain HTTP to the emulator
        provider = provider_class(
            api_key=DUMMY_KEY,
            base_url=f"{base_url}/client/v4/accounts/{CLOUDFLARE_ACCOUNT}",
            http_client=http,
        )
        # the model Workers AI serves tools for (its profile turns tools off for the others)
        model = model_class("@cf/meta/llama-4-scout-17b-16e-instruct", provider=provider)
        return model, lambda: _close(http, "aclose")

    return Client("openai-chat", "CloudflareChatModel + CloudflareProvider(base_url=, http_client=)", build)


#: A Bedrock model other than Claude: Converse refuses anything beside tool results in its turns
#: (the profile's tool_results_alone pass; pydantic-ai#6081 names Llama).
BEDROCK_LLAMA = "bedrock:us.meta.llama3-3-70b-instruct-v1:0"

#: ``provider=`` targets proven through a client of their own: pydantic-ai prefixes with a model
#: class and SDK of their own whose wire is one of the emulated APIs (``Client.api``), and a model
#: whose API rules differ from the API's default client's; each goes to its API's emulator.
PREFIX_BUILDERS: dict[str, Callable[[], Client]] = {
    "groq": _groq,
    "huggingface": _huggingface,
    BEDROCK_LLAMA: lambda: _bedrock(BEDROCK_LLAMA.partition(":")[2]),
    "otari": lambda: _openai_compatible("otari", "OtariProvider", "openai:gpt-4o"),
    "stav": lambda: _openai_compatible("stav", "StavProvider", "deepseek-ai/deepseek-v4-flash-0731"),
    "cloudflare": _cloudflare,
}
#: The prefixes of ``PREFIX_BUILDERS`` whose provider arrived in a later release (2.78.0), by the
#: module that brings it: where the installed release lacks it, the prefix's tests skip, saying so.
PREFIX_MODULES = {
    "otari": "pydantic_ai.providers.otari",
    "stav": "pydantic_ai.providers.stav",
    "cloudflare": "pydantic_ai.models.cloudflare",
}


def prefix_absent(prefix: str) -> str | None:
    """Why the installed release has no ``prefix`` (its provider module is not there), or None."""
    module = PREFIX_MODULES.get(prefix)
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    return f"pydantic-ai-slim {PYDANTIC_AI} has no {module} (the {prefix}: prefix arrived later)"


#: A Claude 3 model: Anthropic wants the conversation to open with the user's turn from those
#: (the emulator's first_message_user, for the families the 2024 reports name).
LEGACY_CLAUDE = "anthropic:claude-3-5-haiku-latest"
#: ``system_blocks_chat_client``'s key: OpenAI Chat for a model without inline system prompts.
SYSTEM_BLOCKS_CHAT = "openai-chat (no inline system prompts)"


def _system_blocks_chat() -> Client:
    found = system_blocks_chat_client()
    if isinstance(found, str):
        raise LookupError(found)
    return found


BUILDERS: dict[str, Callable[[], Client]] = {
    "openai-chat": lambda: _openai(responses=False),
    "openai-responses": lambda: _openai(responses=True),
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
    "mistral": _mistral,
    **PREFIX_BUILDERS,
    LEGACY_CLAUDE: lambda: _anthropic(LEGACY_CLAUDE.partition(":")[2]),
    SYSTEM_BLOCKS_CHAT: _system_blocks_chat,
}


def client_for(api: str) -> Client | str:
    """The installed release's client for ``api`` (an emulated API, or a prefix of
    ``PREFIX_BUILDERS``), or why there is none (naming provider and release)."""
    try:
        return BUILDERS[api]()
    except (ImportError, LookupError, AttributeError) as exc:
        return f"{api} on pydantic-ai-slim {PYDANTIC_AI}: {type(exc).__name__}: {_first_line(exc)}"


# --- sending a history as a user would ------------------------------------------------------------


def prompt_for(history: list[pai.ModelMessage]) -> str | None:
    """No prompt after a history that ends with a request (it is sent as is), else a fixed one; a
    conversation not started yet (nothing but system prompts or tool deltas) gets it too, as [] does."""
    from histfix._profiles.run import nothing_sendable
    from histfix._profiles.scan import Scan

    pending = history and isinstance(history[-1], pai.ModelRequest) and not nothing_sendable(history, Scan())
    return None if pending else PROMPT


class _LoopRunner:
    """``asyncio.Runner`` (Python 3.11+) for Python 3.10: one event loop, kept for many runs (the
    loop is running, and so current, whenever a coroutine of a run is)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, coroutine: Awaitable[Any]) -> Any:
        return self._loop.run_until_complete(coroutine)

    def close(self) -> None:
        loop = self._loop
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def loop_runner() -> Any:
    """An object with ``run(coroutine)`` and ``close()`` that keeps one event loop between runs."""
    runner = getattr(asyncio, "Runner", None)
    return runner() if runner is not None else _LoopRunner()


class Driver:
    """Sends histories through one release's clients, reusing one event loop and one model per API.

    A user's process keeps its model and agent (and the SDK's connection pool) between runs; so
    does this, which makes a case one loopback round trip (an ``Agent`` holds no state between
    runs: a run's history is its ``message_history``). ``close`` closes every SDK client and the loop.
    """

    def __init__(self) -> None:
        self._runner = loop_runner()
        # keyed by the client's classes and the URL: two clients may speak one API (OpenAIChatModel, GroqModel)
        self._models: dict[tuple[str, str], tuple[Any, Callable[[], Awaitable[None]]]] = {}
        self._agents: dict[tuple[str, str], Any] = {}

    def model(self, client: Client, base_url: str) -> Any:
        key = (client.via, base_url)
        if key not in self._models:
            self._models[key] = client.build(base_url)
        return self._models[key][0]

    def agent(self, client: Client, base_url: str) -> Any:
        """One ``Agent`` per model, built once (building one per send cost 2 ms of ~50)."""
        key = (client.via, base_url)
        if key not in self._agents:
            self._agents[key] = Agent(self.model(client, base_url))
        return self._agents[key]

    async def _run(self, agent: Any, history: list[pai.ModelMessage]) -> None:
        await asyncio.wait_for(agent.run(prompt_for(history), message_history=history), timeout=CASE_TIMEOUT)

    def send(self, client: Client, emulator: Any, history: list[pai.ModelMessage]) -> Outcome:
        """One round trip of ``history`` through the release's own ``client`` to ``emulator``."""
        emulator.clear()
        error: BaseException | None = None
        try:
            self._runner.run(self._run(self.agent(client, emulator.base_url), history))
        except Exception as exc:  # what the user would see, recorded as data
            error = exc
        verdicts = list(emulator.verdicts)
        if verdicts:
            verdict = verdicts[-1]
            if not verdict.accepted:
                return Outcome("rejected", verdict.rule or "", verdict.message or "")
            if error is not None:
                return Outcome("client-error", type(error).__name__, _first_line(error))
            return Outcome("accepted")
        if error is None:
            return Outcome("client-error", "no-request", "the run ended without reaching the emulator")
        return Outcome("raised", type(error).__name__, _first_line(error))

    def close(self) -> None:
        for _, close in self._models.values():
            with contextlib.suppress(Exception):  # a client that failed must not hide the results
                self._runner.run(close())
        self._models.clear()
        self._agents.clear()
        self._runner.close()

"""Write tests/data/dumps/<release>.json: a rich history as the installed pydantic-ai writes it.

Run it once under each release the portable-JSON tests cross (test_portable.py loads every file
on whatever release is installed, and the nox matrix installs each pinned release in turn):

    for X in 1.0.0 1.0.7 1.67.0 1.95.0 1.107.10 2.0.0 2.9.1 2.10.0 2.52.0 2.53.0 2.55.0 2.59.0 \\
             2.60.0 2.68.0 2.78.0; do
        pins=$(python3 -c "from packaging.version import Version as V; \\
                           print(\\"'opentelemetry-api<1.39'\\" if V('$X') < V('1.32.0') else '')")
        uv venv -q -p 3.11 /tmp/portable/v$X
        VIRTUAL_ENV=/tmp/portable/v$X uv pip install -q -e . pydantic-ai-slim==$X $pins
        /tmp/portable/v$X/bin/python tools/make_dumps.py
    done

The history is what the release itself produces, not JSON written by hand: an agent run on a
scripted ``FunctionModel`` (system prompt, instructions, thinking, parallel tool calls, a
``ModelRetry`` from a tool and a validation-error retry, both written as ``RetryPromptPart`` before
2.60 and as ``ToolReturnPart(outcome='retried')`` from 2.60, and an output-validator retry, a
tool-less ``RetryPromptPart`` or a ``RetryFeedbackPart``), then a crashed turn built from the
release's own classes (a native/builtin tool call and return, a tool return with metadata, a
custom ``tool_kind`` where the release keeps one, ``state='interrupted'`` where it has the field,
request metadata, ``ui_visibility`` where calls have it) with a dangling call that ``histfix.repair``
closes with a synthesized return.
It is dumped with the release's ``ModelMessagesTypeAdapter``; only volatile values (clock
timestamps and durations, run ids, generated call ids) are replaced by fixed ones, consistently, so that
regenerating a file changes nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, ModelRetry
from pydantic_ai import messages as pai
from pydantic_ai.models.function import AgentInfo, FunctionModel

import histfix
from histfix._release import probes as _load_probes

DUMPS = Path(__file__).resolve().parent.parent / "tests" / "data" / "dumps"
#: A custom tool kind (an application's own): kept by 2.58.0+, rejected before, absent before 1.95.
CUSTOM_KIND = "travel:booking"
ISO_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
GENERATED_ID = re.compile(r"^pyd_ai_[0-9a-f]{32}$")
#: An ISO 8601 duration, as ``ModelResponse.duration`` (2.78.0+) is written: the time a request took.
ISO_DURATION = re.compile(r"^P(T[0-9.]+S)?$")
VOLATILE_KEYS = ("run_id", "conversation_id")


def release() -> str:
    return metadata.version("pydantic-ai-slim")


def build(cls: type, **kwargs: Any) -> Any:
    """``cls(**kwargs)`` without the fields this release's ``cls`` does not have."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in kwargs.items() if k in names})


# --- 1. an agent run: what the release writes for tools, retries and output validation --------------


def scripted_model() -> FunctionModel:
    """A model that answers in a fixed order, whatever the release sends it."""
    steps: list[Callable[[], pai.ModelResponse]] = [
        lambda: pai.ModelResponse(
            parts=[
                pai.ThinkingPart(content="Two cities: look both up at once.", signature="sig-1"),
                pai.ToolCallPart("get_weather", {"city": "Pariss"}, tool_call_id="call_typo"),
                pai.ToolCallPart("get_weather", {"city": 42}, tool_call_id="call_badarg"),
            ]
        ),
        lambda: pai.ModelResponse(
            parts=[
                pai.ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_paris"),
                pai.ToolCallPart("get_weather", {"city": "Rome"}, tool_call_id="call_rome"),
            ]
        ),
        lambda: pai.ModelResponse(parts=[pai.TextPart("Paris is overcast, Rome is sunny")]),
        lambda: pai.ModelResponse(
            parts=[pai.TextPart("Paris is overcast at 14 °C, Rome is sunny at 21 °C.")]
        ),
    ]

    def respond(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        return steps.pop(0)()

    return FunctionModel(respond)


def agent_run() -> list[pai.ModelMessage]:
    # 1.95.x deprecates `retries` for `tool_retries`/`output_retries`; later releases went back.
    accepted = inspect.signature(Agent.__init__).parameters
    retries = {"tool_retries": 3, "output_retries": 3} if "tool_retries" in accepted else {"retries": 3}
    agent = Agent(
        scripted_model(),
        system_prompt="You are a travel assistant.",
        instructions="Answer in one short sentence.",
        **retries,
    )

    @agent.tool_plain
    def get_weather(city: str) -> dict[str, Any]:
        if city not in ("Paris", "Rome"):
            raise ModelRetry(f"Unknown city {city!r}: did you mean 'Paris'?")
        return {"city": city, "temp_c": 14 if city == "Paris" else 21}

    @agent.output_validator
    def full_sentence(output: str) -> str:
        if not output.endswith("."):
            raise ModelRetry("End the answer with a full stop.")
        return output

    result = agent.run_sync("What's the weather in Paris and in Rome?")
    return list(result.all_messages())


# --- 2. a crashed turn, built from the release's own classes ------------------------------------------


def crashed_turn() -> list[pai.ModelMessage]:
    """A web search, one answered call and one call the worker died in, then a new prompt."""
    native_call = getattr(pai, "NativeToolCallPart", None) or pai.BuiltinToolCallPart
    native_return = getattr(pai, "NativeToolReturnPart", None) or pai.BuiltinToolReturnPart
    kind = (
        {"tool_kind": CUSTOM_KIND}
        if _load_probes.part_value_kept("tool-call", "tool_kind", CUSTOM_KIND)
        else {}
    )
    return_kind = kind if _load_probes.part_value_kept("tool-return", "tool_kind", CUSTOM_KIND) else {}
    return [
        build(
            pai.ModelRequest,
            parts=[pai.UserPromptPart("Find me a hotel in Rome and search for packing tips.")],
            metadata={"channel": "web", "user": "u-17"},
        ),
        build(
            pai.ModelResponse,
            parts=[
                native_call(
                    tool_name="web_search",
                    args={"query": "packing tips Rome spring"},
                    tool_call_id="native_search",
                    provider_name="anthropic",
                ),
                native_return(
                    tool_name="web_search",
                    content=[{"title": "Pack light layers", "link": "https://example.invalid/tips"}],
                    tool_call_id="native_search",
                    provider_name="anthropic",
                ),
                pai.TextPart("Light layers are best. Checking hotels now."),
                build(
                    pai.ToolCallPart,
                    tool_name="list_hotels",
                    args={"city": "Rome"},
                    tool_call_id="call_hotels",
                    **kind,
                ),
                build(
                    pai.ToolCallPart,
                    tool_name="book_hotel",
                    args={"hotel": "Albergo Sole", "nights": 2},
                    tool_call_id="call_book",
                    ui_visibility="private",  # 2.78.0+: what a UI may show; its synthesized return copies it
                    **kind,
                ),
            ],
            model_name="demo-model",
            provider_name="demo",
            state="interrupted",
        ),
        build(
            pai.ModelRequest,
            parts=[
                build(
                    pai.ToolReturnPart,
                    tool_name="list_hotels",
                    content=["Albergo Sole", "Hotel Luna"],
                    tool_call_id="call_hotels",
                    metadata={"source": "cache"},
                    **return_kind,
                ),
                pai.UserPromptPart("Never mind the booking. Thanks!"),
            ],
            metadata={"channel": "web", "user": "u-17"},
            state="interrupted",
        ),
        build(
            pai.ModelResponse,
            parts=[pai.TextPart("You're welcome. Enjoy Rome.")],
            model_name="demo-model",
            provider_name="demo",
            finish_reason="stop",
        ),
    ]


# --- 3. dump, with volatile values made fixed ------------------------------------------------------------


def stable(data: Any) -> Any:
    """``data`` with clock timestamps, durations, run ids and generated call ids replaced, consistently.

    Each distinct original value gets the next fixed value in order of first appearance, so equal
    values (a synthesized return carries its response's timestamp) stay equal. When a response's
    request went out (``request_timestamp``, 2.78.0+) counts on its own, on the next day, and every
    ``duration`` (2.78.0+) is one millisecond.
    """
    seen: dict[str, str] = {}
    requested: dict[str, str] = {}

    def fixed(value: str, make: Callable[[int], str], values: dict[str, str] = seen) -> str:
        if value not in values:
            values[value] = make(len(values))
        return values[value]

    def walk(node: Any, key: str | None = None) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if isinstance(node, dict):
            return {k: walk(v, k) for k, v in node.items()}
        if isinstance(node, str):
            if key == "timestamp" and ISO_TIMESTAMP.match(node):
                return fixed(node, lambda n: f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z")
            if key == "request_timestamp" and ISO_TIMESTAMP.match(node):
                return fixed(node, lambda n: f"2026-01-02T00:00:{n:02d}Z", requested)
            if key == "duration" and ISO_DURATION.match(node):
                return "PT0.001S"
            if key in VOLATILE_KEYS:
                return fixed(node, lambda n: f"00000000-0000-4000-8000-{n:012d}")
            if key == "tool_call_id" and GENERATED_ID.match(node):
                return fixed(node, lambda n: f"pyd_ai_{n:032x}")
        return node

    return walk(data)


def history_json() -> Any:
    """The rich history as this release writes it, repaired, with volatile values fixed."""
    history = histfix.repair([*agent_run(), *crashed_turn()])
    synthesized = [
        p
        for m in history
        for p in m.parts
        if (getattr(p, "metadata", None) or {}).get("pydantic_ai_synthesized_tool_return")
    ]
    assert len(synthesized) == 1, "histfix.repair should have closed exactly the booking call"
    return stable(json.loads(pai.ModelMessagesTypeAdapter.dump_json(history)))


def render(data: Any) -> str:
    """The file text for ``data`` (indented, so that a diff between releases is readable)."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DUMPS, help=f"folder to write into (default {DUMPS})")
    args = parser.parse_args()
    data = history_json()
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"{release()}.json"
    target.write_text(render(data), encoding="utf-8")
    print(f"{target}: {len(data)} messages, {sum(len(m['parts']) for m in data)} parts")


if __name__ == "__main__":
    main()

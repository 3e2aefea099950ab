"""A compact way to write stored histories as pydantic-ai JSON, loadable on every release.

Histories are written as the JSON a store would hold (``part_kind``/``kind`` dicts with fixed
timestamps) and loaded with the installed release's ``ModelMessagesTypeAdapter``, the way a stored
history reaches histfix. ``synth(...)`` writes the return histfix/upstream synthesize; ``load``
adapts it to the fields the installed release has (see contract.md's table).
"""

from __future__ import annotations

import json
import sys
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic_ai import messages as pai

Json = dict[str, Any]
INTERRUPTED = "The tool call was interrupted before a result was produced."
MARKER = "pydantic_ai_synthesized_tool_return"


def ts(at: int) -> str:
    """A fixed timestamp ``at`` seconds after a fixed epoch (distinct per message in tests)."""
    return f"2026-01-01T00:{at // 60:02d}:{at % 60:02d}Z"


# --- request parts -----------------------------------------------------------------------------------
def user(content: str, at: int = 0) -> Json:
    return {"part_kind": "user-prompt", "content": content, "timestamp": ts(at)}


def system(content: str, at: int = 0) -> Json:
    return {"part_kind": "system-prompt", "content": content, "timestamp": ts(at)}


def ret(name: str, id: str, content: Any = "ok", at: int = 0, **extra: Any) -> Json:
    return {
        "part_kind": "tool-return",
        "tool_name": name,
        "tool_call_id": id,
        "content": content,
        "timestamp": ts(at),
        **extra,
    }


def retry(content: str, name: str | None = None, id: str = "retry", at: int = 0) -> Json:
    return {
        "part_kind": "retry-prompt",
        "content": content,
        "tool_name": name,
        "tool_call_id": id,
        "timestamp": ts(at),
    }


def synth(
    name: str, id: str, at: int, tool_kind: str | None = None, ui_visibility: str | None = None
) -> Json:
    """The return both repairs synthesize for a dangling call made in the response stamped ``at``
    (with the call's ``tool_kind`` and ``ui_visibility``, which it copies)."""
    part = {
        "part_kind": "tool-return",
        "tool_name": name,
        "tool_call_id": id,
        "content": INTERRUPTED,
        "metadata": {MARKER: True},
        "timestamp": ts(at),
        "outcome": "interrupted",
        "__synth__": True,
    }
    if tool_kind is not None:
        part["tool_kind"] = tool_kind
    if ui_visibility is not None:
        part["ui_visibility"] = ui_visibility
    return part


# --- response parts ----------------------------------------------------------------------------------
def call(name: str, id: str, args: Any = None, **extra: Any) -> Json:
    return {
        "part_kind": "tool-call",
        "tool_name": name,
        "tool_call_id": id,
        "args": {} if args is None else args,
        **extra,
    }


def text(content: str) -> Json:
    return {"part_kind": "text", "content": content}


def thinking(content: str, signature: str | None = None, provider: str | None = None) -> Json:
    """A thinking part; ``provider`` sets its ``provider_name`` (a key releases whose ``ThinkingPart``
    has no such field ignore, 1.0.0 among them)."""
    part: Json = {"part_kind": "thinking", "content": content, "signature": signature}
    if provider is not None:
        part["provider_name"] = provider
    return part


def native_call(name: str, id: str, args: Any = None, provider: str = "anthropic") -> Json:
    return {
        "part_kind": "builtin-tool-call",
        "tool_name": name,
        "tool_call_id": id,
        "args": {} if args is None else args,
        "provider_name": provider,
    }


def native_return(name: str, id: str, content: Any = "ok", at: int = 0, provider: str = "anthropic") -> Json:
    return {
        "part_kind": "builtin-tool-return",
        "tool_name": name,
        "tool_call_id": id,
        "content": content,
        "timestamp": ts(at),
        "provider_name": provider,
    }


# --- messages ----------------------------------------------------------------------------------------
def req(*parts: Json, **fields_: Any) -> Json:
    """A request; pass ``instructions``, ``metadata``, ``timestamp`` (an int: ``ts``), ``state``…"""
    if isinstance(fields_.get("timestamp"), int):
        fields_["timestamp"] = ts(fields_["timestamp"])
    return {"kind": "request", "parts": list(parts), **fields_}


def resp(*parts: Json, at: int = 1, **fields_: Any) -> Json:
    """A response stamped ``at``; provider fields (``model_name``…) make it non-synthetic."""
    return {"kind": "response", "parts": list(parts), "timestamp": ts(at), **fields_}


def real(*parts: Json, at: int = 1, **fields_: Any) -> Json:
    """A response a provider produced (it has a model name, so it is never merged)."""
    return resp(*parts, at=at, model_name="test-model", **fields_)


# --- loading on the installed release -----------------------------------------------------------------
def literal_values(cls: type, name: str) -> frozenset[Any]:
    """The values a ``Literal`` dataclass field allows (empty if the class has no such field).

    Resolves that one annotation: ``typing.get_type_hints(cls)`` fails on Python 3.10 for
    pydantic-ai's dataclasses (their ``KW_ONLY`` marker field).
    """
    found = [f for f in fields(cls) if f.name == name]
    if not found:
        return frozenset()
    holder = type("Holder", (), {"__annotations__": {name: found[0].type}})
    return frozenset(typing.get_args(typing.get_type_hints(holder, vars(sys.modules[cls.__module__]))[name]))


def _outcome_values() -> frozenset[str]:
    return literal_values(pai.ToolReturnPart, "outcome")


OUTCOMES = _outcome_values()


def _adapt(part: Json) -> Json:
    if not part.get("__synth__"):
        return part
    part = {k: v for k, v in part.items() if k != "__synth__"}
    if "interrupted" not in OUTCOMES:  # 1.67.0-2.9.1 cannot say 'interrupted': the default stays
        part.pop("outcome")
    return part


def to_json(history: list[Json]) -> bytes:
    adapted = [{**m, "parts": [_adapt(p) for p in m["parts"]]} for m in history]
    return json.dumps(adapted).encode()


def load(history: list[Json]) -> list[pai.ModelMessage]:
    """The history as the installed release loads it from a store."""
    return pai.ModelMessagesTypeAdapter.validate_json(to_json(history))


def load_history(case: Case) -> list[pai.ModelMessage]:
    """A corpus case's history on the installed release; skips the test where the case's
    declared ``needs`` are not met (the release rejects such a history on load)."""
    import pytest
    from pydantic_core import ValidationError

    try:
        return load(case.history)
    except ValidationError as exc:
        if case.needs:
            pytest.skip(
                f"needs {sorted(case.needs)}, which this release rejects on load: {exc.errors()[0]['msg']}"
            )
        raise


def loadable(cases: typing.Iterable[Case]) -> list[tuple[Case, list[pai.ModelMessage]]]:
    """Each case the installed release loads, with its history: a case needing a field the release
    rejects on load is left out here, as its own tests skip it."""
    import pytest

    found = []
    for case in cases:
        try:
            found.append((case, load_history(case)))
        except pytest.skip.Exception:
            continue
    return found


def dump(messages: list[pai.ModelMessage]) -> Any:
    """Messages as plain JSON data (for readable diffs)."""
    return json.loads(pai.ModelMessagesTypeAdapter.dump_json(messages))


@dataclass(frozen=True)
class Case:
    """A named stored history and what the newest upstream repair makes of it."""

    name: str
    doc: str
    history: list[Json]
    expected: list[Json]
    repair_last_response: bool = True
    #: features the case needs to load at all; tests skip it where the release rejects it on load
    needs: frozenset[str] = field(default_factory=frozenset)


def docs_block(marker: str) -> str:
    """The one ```python block of README.md or docs/ that contains `marker` (tests/test_docs.py)."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text() for page in pages)
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL) if marker in b]
    return code

"""What the profile tests share: the histories they run over and the readings they assert with."""

from __future__ import annotations

from pydantic_ai import messages as pai

import histfix

from corpus import CASES
from dsl import load, loadable
from generate import random_history
from volume import sized


def named_histories() -> list[tuple[str, list[pai.ModelMessage]]]:
    """Every corpus case the release loads and a few generated histories, each with its name.
    tests/repair/test_fuzz.py's shared draw checks the profiles' properties on many more."""
    found = [(case.name, history) for case, history in loadable(CASES)]
    found += [(f"random {seed}", load(random_history(seed))) for seed in range(sized(60))]
    return found


def profile_or_none(history: list[pai.ModelMessage], provider: str) -> list[pai.ModelMessage] | None:
    """``provider``'s profile of ``history``, or None where nothing is sendable (the runner's clear error)."""
    try:
        return histfix.repair(history, provider=provider)
    except ValueError:
        return None


def kinds(report: histfix.RepairReport) -> list[str]:
    return [change.kind for change in report.changes]


def texts(history: list[pai.ModelMessage]) -> list[str]:
    """Every non-blank text a person or the model wrote: prompts, text parts, thinking."""
    found: list[str] = []
    for message in history:
        for part in message.parts:
            content = getattr(part, "content", None)
            kind = (pai.UserPromptPart, pai.TextPart, pai.ThinkingPart)
            if isinstance(part, kind) and isinstance(content, str) and content.strip():
                found.append(content)
    return found


def results(message: pai.ModelMessage) -> list[pai.ToolReturnPart | pai.RetryPromptPart]:
    """The tool results of ``message``: returns, and retry prompts that name a tool."""
    return [
        p
        for p in message.parts
        if isinstance(p, pai.ToolReturnPart)
        or (isinstance(p, pai.RetryPromptPart) and p.tool_name is not None)
    ]


def assert_paired_on_the_wire(history: list[pai.ModelMessage]) -> None:
    """Every call is answered exactly once, in the request right after its response, by id."""
    for i, message in enumerate(history):
        if isinstance(message, pai.ModelResponse):
            wanted = sorted(p.tool_call_id for p in message.parts if isinstance(p, pai.ToolCallPart))
            following = history[i + 1] if i + 1 < len(history) else None
            if wanted:
                assert isinstance(following, pai.ModelRequest), (i, wanted)
                assert sorted(p.tool_call_id for p in results(following)) == wanted, (i, following)

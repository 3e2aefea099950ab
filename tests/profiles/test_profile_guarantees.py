"""What every profile guarantees, over the corpus and generated histories: pure (the input is never
mutated), deterministic, idempotent, and no non-blank text lost but what a report names.
"""

from __future__ import annotations

import copy

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.rule import preview
from histfix._profiles.targets import PROVIDER_APIS

from corpus import CASES
from dsl import dump, load, loadable
from generate import random_history
from volume import sized

PROFILES = [*PROVIDER_APIS, "any"]


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


def _corpus() -> list[list[pai.ModelMessage]]:
    return [history for _, history in loadable(CASES) if history]


@pytest.fixture(scope="module")
def corpus() -> list[list[pai.ModelMessage]]:
    return _corpus()


PROVIDERS = [*PROVIDER_APIS, "any"]


def dumped(history: list[pai.ModelMessage]) -> bytes:
    return pai.ModelMessagesTypeAdapter.dump_json(history)


def _histories() -> list[tuple[str, list[pai.ModelMessage]]]:
    found = [(case.name, history) for case, history in loadable(CASES)]
    # A few generated ones beside the corpus: tests/repair/test_fuzz.py's shared draw checks the same three
    # properties for a drawn profile on 500 generated histories per release.
    found += [(f"random {seed}", load(random_history(seed))) for seed in range(sized(60))]
    return found


HISTORIES = _histories()


def _profile(history: list[pai.ModelMessage], provider: str) -> list[pai.ModelMessage] | None:
    try:
        return histfix.repair(history, provider=provider)
    except ValueError:
        return None  # nothing sendable (only system prompts): the runner's clear error


def load_dump(history: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """A fresh copy of ``history`` through the release's own JSON (a second, independent input)."""
    return pai.ModelMessagesTypeAdapter.validate_json(dumped(history))


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_are_pure_deterministic_idempotent_and_keep_text(
    profile: str, corpus: list[list[pai.ModelMessage]]
) -> None:
    for history in corpus:
        before = copy.deepcopy(history)
        try:
            fixed = histfix.repair(history, provider=profile)
        except ValueError:
            continue  # nothing sendable (a history of system prompts only)
        assert dump(history) == dump(before)  # never mutates
        assert dump(histfix.repair(history, provider=profile)) == dump(fixed)  # deterministic
        assert histfix.repair(fixed, provider=profile) == fixed  # idempotent
        kept = texts(fixed)
        # no text lost, but thinking a provider refuses (Bedrock's Claude on 1.0.0-1.0.2), reported
        report = histfix.repair_report(history, provider=profile)
        dropped = {change.preview for change in report.changes if change.kind == "dropped_thinking"}
        assert all(t in kept or preview(t) in dropped for t in texts(histfix.repair(history))), profile


@pytest.mark.parametrize("provider", PROVIDERS)
def test_profiles_are_idempotent_deterministic_and_never_mutate(provider: str) -> None:
    for name, history in HISTORIES:
        before = copy.deepcopy(history)
        out = _profile(history, provider)
        assert dumped(history) == dumped(before), name
        if out is None:
            continue
        assert dumped(_profile(load_dump(history), provider) or []) == dumped(out), name
        assert dumped(histfix.repair(out, provider=provider)) == dumped(out), name

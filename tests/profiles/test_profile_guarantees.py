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
from dsl import dump, loadable
from profile_support import named_histories, profile_or_none, texts

PROFILES = [*PROVIDER_APIS, "any"]


def _corpus() -> list[list[pai.ModelMessage]]:
    return [history for _, history in loadable(CASES) if history]


@pytest.fixture(scope="module")
def corpus() -> list[list[pai.ModelMessage]]:
    return _corpus()


PROVIDERS = [*PROVIDER_APIS, "any"]


def dumped(history: list[pai.ModelMessage]) -> bytes:
    return pai.ModelMessagesTypeAdapter.dump_json(history)


HISTORIES = named_histories()


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
        out = profile_or_none(history, provider)
        assert dumped(history) == dumped(before), name
        if out is None:
            continue
        assert dumped(profile_or_none(load_dump(history), provider) or []) == dumped(out), name
        assert dumped(histfix.repair(out, provider=provider)) == dumped(out), name

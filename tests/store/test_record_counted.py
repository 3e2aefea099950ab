"""The store's record (and ``is_provider_valid``) counts the findings it needs no Problem for, and
the record what a repair that only renames ids would report, instead of running it: exactly what
the Problems and the repair give.

The differential runs on the corpus, the examples and generated histories (valid conversations,
whose ``call_N`` ids are outside Mistral's format, and damaged histories), also with ids outside
Anthropic's pattern so that every release has id-only findings to count.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest

import histfix
from histfix._check.history import check_history
from histfix._check.rejections import check_for, verdict_for
from histfix._profiles.rules import ids as _ids
from histfix._profiles.targets import PROVIDER_APIS, resolve_provider
from histfix._repair.pairing import pair
from histfix.store import Options, examine

from conftest import mistral_profile_fits_ids
from generate import random_conversation, random_history
from store_cases import histories
from volume import sized

PROVIDERS = [*PROVIDER_APIS, "any"]


def _dotted(raw: object) -> bytes:
    """The history's JSON with every ``call...`` id given a dot: outside Anthropic's pattern."""
    return json.dumps(raw).replace('"call', '"fn.call').encode()


def stored() -> dict[str, bytes]:
    found = dict(histories())
    for seed in range(sized(40)):
        found[f"conversation-{seed}"] = json.dumps(random_conversation(seed)).encode()
        found[f"conversation-dotted-{seed}"] = _dotted(random_conversation(seed))
        found[f"damaged-{seed}"] = json.dumps(random_history(seed)).encode()
        found[f"damaged-dotted-{seed}"] = _dotted(random_history(seed))
    return found


STORED = stored()
#: the providers with id-format findings here: Anthropic's pattern on every release, Mistral's
#: format where the release sends ids as stored
_COUNTING = {"anthropic", "any"} | (set() if mistral_profile_fits_ids() else {"mistral"})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_counted_record_is_the_record_of_the_problems_and_the_repair(provider: str) -> None:
    """``want_new`` needs the repaired bytes, so its record runs the repair and check's Problems
    decide nothing it reports: every other field must be the same without it. Some histories must
    take the counted repair (only ids to rename), or this tests nothing."""
    counted = 0
    for key, raw in STORED.items():
        record = examine(key, raw, Options(provider=provider))
        full = examine(key, raw, Options(provider=provider, want_new=True))
        assert record == replace(full, new=None), key
        counted += record.action == "repair" and set(record.rejected) == {"invalid_call_id"}
    if provider in _COUNTING:
        assert counted >= sized(40) // 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_verdict_lists_check_s_kinds_in_check_s_order(provider: str) -> None:
    """The kinds and their order (the record's ``rejected``) are ``check(provider=)``'s, and where
    the verdict says only passes that each make one change have findings, ``repair_report`` makes
    exactly those changes and changes the history."""
    target = resolve_provider(provider)
    sole = 0
    for key, raw in STORED.items():
        try:
            history = histfix.load_json(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        for last in (True, False):
            found = check_history(history, repair_last_response=last)
            verdict = verdict_for(history, target, found)
            assert verdict.kinds == tuple(p.kind for p in check_for(history, target, found)), key
            # the record hands over its pairing walk, either way of the last response: the same verdict
            assert verdict_for(history, target, found, pair(history, last)) == verdict, key
            assert verdict_for(history, target, found, pair(history, not last)) == verdict, key
            if last:  # the verdict alone: is_provider_valid, as check's Problems say it
                assert histfix.is_provider_valid(history, provider=provider) == (not verdict.kinds), key
            if verdict.sole_changes and not found:
                sole += 1
                report = histfix.repair_report(history, provider=provider, repair_last_response=last)
                assert Counter(c.kind for c in report.changes) == Counter(verdict.sole_changes), key
                assert report.messages != history and not any(c.preview for c in report.changes), key
    if provider in _COUNTING:
        assert sole >= sized(40) // 2


def test_an_id_only_history_is_counted_neither_worded_nor_repaired(monkeypatch: pytest.MonkeyPatch) -> None:
    """The counted path is taken: no Problem is made for an id outside the format, and the repair
    does not run, for a valid conversation whose only findings are its ids."""

    def refused(*args: object, **kwargs: object) -> object:
        raise AssertionError("the counted record made a Problem or ran the repair")

    raw = _dotted(random_conversation(3))
    expected = examine("k", raw, Options(provider="anthropic", want_new=True))
    assert expected.changes == {"renamed_call_id": 1} and expected.rejected
    monkeypatch.setattr(_ids, "problem", refused)
    monkeypatch.setattr(histfix, "repair_report", refused)
    record = examine("k", raw, Options(provider="anthropic"))
    assert record == replace(expected, new=None)
    assert set(record.rejected) == {"invalid_call_id"}

"""conftest.merge_providers: the workers' provider measurements add up to one serial run's record.

Each history runs on one worker, so the parts' counts add and their names unite; every way the
truth test sends (the profile ways too) and the generated histories' counts survive the merge.
"""

from __future__ import annotations

from typing import Any

from conftest import merge_providers


def _way(accepted: int, measured: int, rejected: dict[str, str] | None = None) -> dict[str, Any]:
    return {"measured": measured, "accepted": accepted, "not_accepted": rejected or {}}


def _truth(cases: list[str], rejected: dict[str, str]) -> dict[str, Any]:
    entry = {"client": "C", "unavailable": None, "cases": len(cases), "seconds": 1.0}
    for way in ("stored", "histfix", "upstream", "profile", "any"):
        entry[way] = _way(len(cases) - len(rejected), len(cases), rejected)
    summary = {"sample": "all", "selected": 3, "measured": cases, "apis": {"x": entry}, "seconds": 2.0}
    return {"summary": summary, "detail": {"x": {case: {} for case in cases}}}


def _generated(seeds: list[str], rejected: dict[str, str], refused: list[str]) -> dict[str, Any]:
    entry = {"client": "C", "unavailable": None, "seconds": 0.5}
    entry.update({way: _way(len(seeds) - len(rejected), len(seeds), rejected) for way in ("profile", "any")})
    return {
        "sample": "rotated",
        "histories": 4,
        "seeds": "1..4",
        "distinct": 4,
        "refused": refused,
        "apis": {"x": entry},
        "seconds": 3.0,
    }


def test_every_way_and_the_generated_counts_survive_the_merge() -> None:
    one = {**_truth(["a", "b"], {"b": "rejected:x.r"}), "generated": _generated(["1"], {}, ["2"])}
    two = {**_truth(["c"], {}), "generated": _generated(["3", "4"], {"4": "raised:E"}, [])}
    only_generated = {"generated": _generated([], {}, ["5"])}  # a worker that ran no truth case
    merged = merge_providers([one, two, only_generated])
    entry = merged["summary"]["apis"]["x"]
    for way in ("stored", "histfix", "upstream", "profile", "any"):
        assert entry[way] == _way(2, 3, {"b": "rejected:x.r"})
    assert (entry["cases"], entry["seconds"]) == (3, 2.0)
    assert merged["summary"]["measured"] == ["a", "b", "c"]
    assert sorted(merged["detail"]["x"]) == ["a", "b", "c"]
    generated = merged["generated"]
    assert generated["apis"]["x"]["profile"] == _way(2, 3, {"4": "raised:E"})
    assert generated["apis"]["x"]["any"] == _way(2, 3, {"4": "raised:E"})
    assert generated["refused"] == ["2", "5"]
    assert (generated["distinct"], generated["histories"], generated["seconds"]) == (4, 4, 3.0)


def test_one_part_is_the_record_itself() -> None:
    part = _truth(["a"], {})
    assert merge_providers([part]) is part


def _prefixes(groq: list[str], huggingface: list[str], rejected: dict[str, str]) -> dict[str, Any]:
    """tests/profiles/test_provider_prefixes.py's part: each prefix's cases as one worker measured them."""

    def entry(cases: list[str]) -> dict[str, Any]:
        found = {"client": "C" if cases else None, "unavailable": None, "cases": len(cases)}
        mine = {case: label for case, label in rejected.items() if case in cases}
        found.update({way: _way(len(cases) - len(mine), len(cases), mine) for way in ("stored", "profile")})
        return found

    return {
        "prefixes": {"sample": "all", "prefixes": {"groq": entry(groq), "huggingface": entry(huggingface)}}
    }


def test_the_prefixes_counts_survive_the_merge() -> None:
    """Each prefix's tests run on one worker (its SDK's), so one part holds all of a prefix's cases."""
    merged = merge_providers(
        [
            _prefixes(["a", "b"], [], {"b": "rejected:x.r"}),
            _prefixes([], ["a", "b", "c"], {}),
            _truth(["a"], {}),
        ]
    )["prefixes"]
    assert merged["sample"] == "all"
    groq, huggingface = merged["prefixes"]["groq"], merged["prefixes"]["huggingface"]
    assert (groq["cases"], groq["client"], groq["profile"]) == (2, "C", _way(1, 2, {"b": "rejected:x.r"}))
    assert (huggingface["cases"], huggingface["stored"]) == (3, _way(3, 3))

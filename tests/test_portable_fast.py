"""``load_json`` reads with the release's own loader first: it must give what converting gives.

:func:`histfix._portable.load_json` hands the text to ``ModelMessagesTypeAdapter.validate_json``
and goes the converting way (``_load_converting``: parse, convert each part, validate) only when
that fails or may load the text silently differently. Here both are run on every committed dump,
every corpus history, generated histories with every enum-like value any release writes, and
texts that stress JSON itself, and must return the same types and values or raise the same error.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import messages as pai

from histfix import _portable
from histfix._release import table
from histfix._release.switches import has

from corpus import CASES
from dsl import Json, call, real, req, ret, user
from generate import random_conversation, random_history
from volume import sized

DUMPS = Path(__file__).parent / "data" / "dumps"

#: Every value each enum-like field has had in some release, and one no release has.
OUTCOMES = ["success", "failed", "denied", "interrupted", "retried", "exploded"]
TOOL_KINDS = ["function", "output", "external", "unapproved", "tool-search", "mykind"]
STATES = ["complete", "interrupted", "incomplete", "suspended", "exploded"]
FINISH_REASONS = ["stop", "length", "content_filter", "tool_call", "error", "weird"]


def result(load: Any, data: Any) -> tuple[Any, ...]:
    """What ``load`` makes of ``data``: every class and the release's JSON, or the error."""
    try:
        messages = load(data)
    except (TypeError, ValueError) as exc:
        return ("error", type(exc).__name__, str(exc))
    classes = [(type(m).__name__, [type(p).__name__ for p in m.parts]) for m in messages]
    # repr as well as the dump: NaN is written as null, and a field may not be serialized at all
    return ("loaded", classes, pai.ModelMessagesTypeAdapter.dump_json(messages), repr(messages))


def assert_same(data: str | bytes) -> tuple[Any, ...]:
    fast = result(_portable.load_json, data)
    assert fast == result(_portable._load_converting, data)
    return fast


def text_and_bytes(history: list[Json]) -> list[str | bytes]:
    text = json.dumps(history)
    return [text, text.encode(), json.dumps(history, ensure_ascii=False).encode()]


@pytest.mark.parametrize("path", sorted(DUMPS.glob("*.json")), ids=lambda path: path.stem)
def test_every_dump(path: Path) -> None:
    assert assert_same(path.read_bytes())[0] == "loaded"
    assert_same(path.read_text(encoding="utf-8"))


def test_every_corpus_history() -> None:
    loaded = 0
    for case in CASES:
        for history in (case.history, case.expected):
            for data in text_and_bytes(history):
                loaded += assert_same(data)[0] == "loaded"
    assert loaded > len(CASES)  # most of them load on every release


def vary(history: list[Json], rng: random.Random) -> list[Json]:
    """``history`` with enum-like values from every release, retry-feedback parts and some damage."""
    varied: list[Json] = []
    for original in history:
        message = {**original, "parts": [dict(part) for part in original["parts"]]}
        if rng.random() < 0.2:
            message["state"] = rng.choice(STATES)
        if message["kind"] == "response" and rng.random() < 0.2:
            message["finish_reason"] = rng.choice(FINISH_REASONS)
        for part in message["parts"]:
            if "tool_call_id" in part and rng.random() < 0.3:
                part["outcome"] = rng.choice(OUTCOMES)
            if "tool_call_id" in part and rng.random() < 0.2:
                part["tool_kind"] = rng.choice(TOOL_KINDS)
            if part["part_kind"] == "retry-prompt" and part.get("tool_name") is None and rng.random() < 0.5:
                part["part_kind"] = "retry-feedback"
        if rng.random() < 0.02:
            message.pop(rng.choice(["kind", "parts"]))
        varied.append(message)
    return varied


@pytest.mark.parametrize("seed", range(sized(8)))
def test_generated_histories(seed: int) -> None:
    outcomes = set()
    for n in range(seed * 40, seed * 40 + 40):
        rng = random.Random(n)
        history = random_history(n) if n % 2 else random_conversation(n)
        for data in text_and_bytes(vary(history, rng)):
            outcomes.add(assert_same(data)[0])
    assert outcomes == {"loaded", "error"}


def retried_return(outcome_json: str) -> str:
    history = [req(user("Weather?")), real(call("get_weather", "c1")), req(ret("get_weather", "c1", "again"))]
    return json.dumps(history).replace(
        '"part_kind": "tool-return"', f'"outcome": {outcome_json}, "part_kind": "tool-return"'
    )


@pytest.mark.parametrize(
    "spelling", ['"retried"', '"\\u0072etried"', '"retri\\u0065d"', '"R\\u0045TRIED"', '"retried "']
)
def test_every_spelling_of_retried(spelling: str) -> None:
    """An escaped letter is the one other way JSON writes the value 1.0-1.66 would load as a success."""
    data = retried_return(spelling)
    for text in (data, data.encode()):
        assert_same(text)
    loaded = _portable.load_json(data)[2].parts[0]
    if json.loads(spelling) == "retried" and not has(table.OUTCOME_RETRIED):
        assert type(loaded).__name__ == "RetryPromptPart"


EDGES = {
    "nan": '{"x": NaN}',
    "infinity": '{"x": -Infinity}',
    "overflow": '{"x": 1e400}',
    "negative zero": '{"x": -0, "y": -0.0}',
    "big int": '{"x": 123456789012345678901234567890}',
    "long float": '{"x": 0.1000000000000000055511151231257827021181583404541015625}',
    "duplicate keys": '{"x": 1, "y": 2, "x": 3}',
    "surrogate pair": '{"x": "\\ud83d\\ude00"}',
    "lone surrogate": '{"x": "\\ud800"}',
    "nul": '{"x": "a\\u0000b"}',
    "deep": '{"x": ' + "[" * 150 + "]" * 150 + "}",
    "too deep": '{"x": ' + "[" * 300 + "]" * 300 + "}",
}


@pytest.mark.parametrize("args", EDGES.values(), ids=EDGES.keys())
def test_json_edges(args: str) -> None:
    """Numbers, keys and strings that Python's json and pydantic's parser might read apart."""
    data = json.dumps([req(user("hi")), real(call("f", "c1", {"x": 0}))]).replace('{"x": 0}', args)
    assert_same(data)
    assert_same(data.encode())


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf[]",
        "\ufeff[]",
        "[]".encode("utf-16"),
        '[{"kind": "request", "parts": []}]'.encode("utf-32-le"),
        b'["\xff"]',
        b'[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "\xed\xa0\x80"}]}]',
        '[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "\ud800"}]}]',
        " [ ] \n",
        "[]x",
        "",
        # the kept kind's default timestamp would be the time of loading
        '[{"kind": "request", "kind": "response", "parts": [], "timestamp": "2025-01-01T00:00:00Z"}]',
        '[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi", "part_kind": "text"}]}]',
    ],
)
def test_encodings_and_documents(data: str | bytes) -> None:
    assert_same(data)


def test_debug_records_are_those_of_converting(caplog: pytest.LogCaptureFixture) -> None:
    """A field no release has loads as it is, yet at DEBUG it is still listed as ignored."""
    caplog.set_level(logging.DEBUG, logger="histfix")
    data = json.dumps([req({**user("hi"), "mood": "curious"})])
    _portable.load_json(data)
    fast = [r.getMessage() for r in caplog.records]
    assert any("user-prompt.mood (1x)" in line for line in fast)
    caplog.clear()
    _portable._load_converting(data)
    assert fast == [r.getMessage() for r in caplog.records]


def test_a_history_the_release_loads_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The release's own loader answers alone: the converting way is not run after it."""
    data = (DUMPS / "1.0.0.json").read_bytes()
    expected = _portable._load_converting(data)

    def converting(data: object) -> None:
        raise AssertionError("converted a history the release loads as it is")

    monkeypatch.setattr(_portable, "_load_converting", converting)
    assert _portable.load_json(data) == expected

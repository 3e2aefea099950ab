"""Portable JSON across releases: every pinned release's own dump loads on the installed one.

``tests/data/dumps/<release>.json`` were written by ``tools/make_dumps.py`` under each pinned
release (an agent run plus a crashed turn, repaired, dumped with that release's adapter). The nox
matrix runs this file on every pinned release, so each dump is loaded by each release: older
releases read newer JSON and the reverse. Below the cross-release tests, one test per conversion
and one per error message pin the exact behaviour on whatever release is installed.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from pydantic_ai import messages as pai

import histfix
import make_dumps
from histfix._portable import dump_json, load_json
from histfix._release import installed as _release
from histfix._release import probes as _load_probes
from histfix._release import table
from histfix._release.switches import has

from conftest import PYDANTIC_AI
from dsl import INTERRUPTED, MARKER, call, native_call, native_return, real, req, resp, ret, ts, user

Json = dict[str, Any]
DUMPS = Path(__file__).parent / "data" / "dumps"
#: The releases whose dumps must be there: the nox matrix's pins.
RELEASES = [
    "1.0.0",
    "1.0.7",
    "1.67.0",
    "1.95.0",
    "1.107.10",
    "2.0.0",
    "2.9.1",
    "2.10.0",
    "2.52.0",
    "2.53.0",
    "2.55.0",
    "2.59.0",
    "2.60.0",
    "2.68.0",
    "2.78.0",
]
DUMP_FILES = sorted(DUMPS.glob("*.json"), key=lambda path: Version(path.stem))
RELEASE = f"pydantic-ai {_release.current()[1]}"
CUSTOM_KIND = make_dumps.CUSTOM_KIND


def stored(path: Path) -> list[Json]:
    data: list[Json] = json.loads(path.read_bytes())
    return data


def as_json(messages: list[pai.ModelMessage]) -> list[Json]:
    """What the installed release writes for ``messages``, as plain data to compare with a dump."""
    data: list[Json] = json.loads(dump_json(messages))
    return data


def meaning(part: Json) -> str:
    """What a stored part is, whichever release wrote it.

    A retry that answers a tool call is a ``retry-prompt`` with a tool name before 2.60 and a
    ``tool-return`` with ``outcome='retried'`` from 2.60; one that answers none is a tool-less
    ``retry-prompt`` or a ``retry-feedback``. Every other part keeps its kind on every release.
    """
    kind: str = part["part_kind"]
    if kind == "retry-prompt":
        return "tool retry" if part.get("tool_name") is not None else "retry feedback"
    if kind == "retry-feedback":
        return "retry feedback"
    if kind == "tool-return" and part.get("outcome") == "retried":
        return "tool retry"
    return kind


def leaves(value: Any) -> set[str]:
    """Every scalar inside ``value``, as JSON text (so 42 and '42' stay different)."""
    if isinstance(value, dict):
        return set().union(*(leaves(v) for v in value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*(leaves(v) for v in value)) if value else set()
    return {json.dumps(value)}


def synthesized_at(history: list[Json]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, message in enumerate(history)
        for j, part in enumerate(message["parts"])
        if (part.get("metadata") or {}).get(MARKER)
    ]


# --- the pinned releases' dumps, loaded on the installed release -----------------------------------------


def test_every_pinned_release_has_a_dump() -> None:
    assert [path.stem for path in DUMP_FILES] == RELEASES


@pytest.mark.parametrize("path", DUMP_FILES, ids=[path.stem for path in DUMP_FILES])
def test_dump_loads_with_its_content(path: Path) -> None:
    """Same messages, same parts, same meaning, same words, same ids, same synthesized marker."""
    written = stored(path)
    loaded = as_json(load_json(path.read_bytes()))

    assert [m["kind"] for m in loaded] == [m["kind"] for m in written]
    assert [len(m["parts"]) for m in loaded] == [len(m["parts"]) for m in written]
    for i, (before, after) in enumerate(zip(written, loaded, strict=True)):
        for j, (old, new) in enumerate(zip(before["parts"], after["parts"], strict=True)):
            where = f"messages[{i}].parts[{j}]"
            assert meaning(new) == meaning(old), where
            if isinstance(old.get("content"), str):
                assert new["content"] == old["content"], where
            elif old.get("content") is not None:
                assert leaves(old["content"]) <= leaves(new["content"]), where
            if "args" in old:
                assert new["args"] == old["args"], where
            if old.get("tool_name") is not None:
                assert (new["tool_name"], new["tool_call_id"]) == (old["tool_name"], old["tool_call_id"]), (
                    where
                )
    assert synthesized_at(loaded) == synthesized_at(written) != []


@pytest.mark.parametrize("path", DUMP_FILES, ids=[path.stem for path in DUMP_FILES])
def test_dump_round_trips_and_stays_repaired(path: Path) -> None:
    history = load_json(path.read_bytes())
    assert load_json(path.read_bytes()) == history  # loading is a pure function of the text
    assert load_json(dump_json(history)) == history
    assert histfix.check(history) == []
    assert histfix.repair(history) == history


def test_own_dump_is_what_this_release_writes_and_loads_as_upstream_does() -> None:
    """The committed dump of the installed release is reproduced, and needs no conversion."""
    path = DUMPS / f"{PYDANTIC_AI}.json"
    if not path.exists():
        pytest.skip(f"no committed dump for pydantic-ai {PYDANTIC_AI} (not a pinned release)")
    assert make_dumps.render(make_dumps.history_json()) == path.read_text(encoding="utf-8")
    assert load_json(path.read_bytes()) == pai.ModelMessagesTypeAdapter.validate_json(path.read_bytes())


# --- conversions, one by one ----------------------------------------------------------------------------


def history_with(*parts: Json, message: str = "request") -> bytes:
    """A prompt, a response calling ``get_weather`` (``c1``), then one message holding ``parts``."""
    last = req(*parts) if message == "request" else real(*parts, at=3)
    return json.dumps([req(user("Weather in Paris?")), real(call("get_weather", "c1")), last]).encode()


def at(seconds: int) -> datetime:
    return datetime.fromisoformat(ts(seconds).replace("Z", "+00:00"))


def test_retried_return_becomes_a_retry_prompt_before_2_60() -> None:
    part = ret(
        "get_weather", "c1", "Unknown city: did you mean 'Paris'?", at=5, outcome="retried", metadata={"k": 1}
    )
    part["retry"] = {"cause": "model_retry", "attempt": 1, "max_retries": 1}
    loaded = load_json(history_with(part))[2].parts[0]
    if has(table.OUTCOME_RETRIED):
        assert isinstance(loaded, pai.ToolReturnPart)
        assert loaded.outcome == "retried"
    else:  # 1.0.0-1.66 would otherwise load it as a successful return, 1.67-2.59 reject it
        assert type(loaded).__name__ == "RetryPromptPart"
    fields = (loaded.content, loaded.tool_name, loaded.tool_call_id, loaded.timestamp)
    assert fields == ("Unknown city: did you mean 'Paris'?", "get_weather", "c1", at(5))


def test_retried_validation_errors_keep_every_word() -> None:
    """2.60+ drop keys RetryPromptPart requires of an error; the errors then travel as JSON text."""
    errors = [
        {"type": "string_type", "loc": ["city"], "msg": "Input should be a valid string", "input": 42},
        {"type": "missing", "loc": ["country"], "msg": "Field required"},  # no 'input'
    ]
    loaded = load_json(history_with(ret("get_weather", "c1", errors, outcome="retried")))[2].parts[0]
    if has(table.OUTCOME_RETRIED):
        assert loaded.content == errors
    else:
        assert type(loaded).__name__ == "RetryPromptPart"
        assert isinstance(loaded.content, str)
        assert json.loads(loaded.content) == errors


def test_retried_validation_errors_stay_errors_when_they_fit() -> None:
    errors = [{"type": "string_type", "loc": ["city"], "msg": "Input should be a valid string", "input": 42}]
    loaded = load_json(history_with(ret("get_weather", "c1", errors, outcome="retried")))[2].parts[0]
    assert isinstance(loaded.content, list)
    assert [(e["type"], tuple(e["loc"]), e["msg"], e["input"]) for e in loaded.content] == [
        ("string_type", ("city",), "Input should be a valid string", 42)
    ]


def feedback(content: str = "End the answer with a full stop.", **extra: Any) -> Json:
    return {
        "part_kind": "retry-feedback",
        "content": content,
        "retry": {"cause": "model_retry", "attempt": 1, "max_retries": 1},
        "timestamp": ts(6),
        **extra,
    }


def test_retry_feedback_becomes_a_tool_less_retry_prompt_before_2_60() -> None:
    data = history_with(feedback())
    loaded = load_json(data)[2].parts[0]
    if has(table.RETRY_FEEDBACK_PART):
        assert type(loaded).__name__ == "RetryFeedbackPart"
    else:
        assert type(loaded).__name__ == "RetryPromptPart"
        assert loaded.tool_name is None
        assert loaded.tool_call_id == "histfix-retry-feedback-2-0"  # fixed, not random
    assert (loaded.content, loaded.timestamp) == ("End the answer with a full stop.", at(6))
    assert load_json(data) == load_json(data)


@pytest.mark.skipif(has(table.RETRY_FEEDBACK_PART), reason="the release loads retry-feedback itself")
def test_retry_feedback_keeps_its_tool_call_id() -> None:
    loaded = load_json(history_with(feedback(tool_call_id="fb_1")))[2].parts[0]
    assert (loaded.tool_name, loaded.tool_call_id) == (None, "fb_1")


@pytest.mark.parametrize("outcome", ["interrupted", "exploded"])
def test_rejected_outcome_is_removed_and_the_marker_kept(outcome: str) -> None:
    part = ret("get_weather", "c1", INTERRUPTED, at=1, outcome=outcome, metadata={MARKER: True})
    loaded = load_json(history_with(part))[2].parts[0]
    assert isinstance(loaded, pai.ToolReturnPart)
    assert (loaded.content, loaded.metadata, loaded.tool_call_id) == (INTERRUPTED, {MARKER: True}, "c1")
    if not has(table.RETURN_OUTCOME):
        assert not hasattr(loaded, "outcome")
    elif outcome == "interrupted" and has(table.OUTCOME_INTERRUPTED):
        assert loaded.outcome == "interrupted"
    else:  # 1.67.0-2.9.1 have no 'interrupted'; no release has 'exploded'
        assert loaded.outcome == "success"


def test_retried_native_return_has_no_retry_prompt_to_become() -> None:
    """A native return lives in a response, where a retry-prompt cannot go: outcome is removed."""
    native = {**native_return("web_search", "n1", "timed out"), "outcome": "retried"}
    loaded = load_json(history_with(native_call("web_search", "n1"), native, message="response"))
    part = loaded[2].parts[1]
    assert (part.part_kind, part.content, part.tool_call_id) == ("builtin-tool-return", "timed out", "n1")
    assert getattr(part, "outcome", None) in (
        ("retried",) if has(table.OUTCOME_RETRIED) else ("success", None)
    )


def test_custom_tool_kind_is_kept_where_it_loads_and_removed_elsewhere() -> None:
    data = json.dumps(
        [
            req(user("Book it")),
            real(call("book_hotel", "c1", {"nights": 2}, tool_kind=CUSTOM_KIND)),
            req(ret("book_hotel", "c1", "booked", tool_kind=CUSTOM_KIND)),
        ]
    )
    loaded = load_json(data)
    kept = _load_probes.part_value_kept("tool-call", "tool_kind", CUSTOM_KIND)
    assert kept == (has(table.RETURN_TOOL_KIND) and Version(_release.current()[1]) >= Version("2.58.0"))
    expected = CUSTOM_KIND if kept else None
    assert getattr(loaded[1].parts[0], "tool_kind", None) == expected
    assert getattr(loaded[2].parts[0], "tool_kind", None) == expected
    assert (loaded[2].parts[0].content, loaded[1].parts[0].args) == ("booked", {"nights": 2})


def test_core_tool_kind_that_does_not_fit_its_part_is_removed() -> None:
    """'tool-search' types its call's arguments from 1.95.0; a plain call with that kind still loads."""
    data = json.dumps(
        [req(user("Find tools")), real(call("lookup", "c1", {"q": "x"}, tool_kind="tool-search"))]
    )
    part = load_json(data)[1].parts[0]
    assert isinstance(part, pai.ToolCallPart)
    assert (part.tool_name, part.args, getattr(part, "tool_kind", None)) == ("lookup", {"q": "x"}, None)


def test_core_tool_kind_whose_part_fits_is_kept() -> None:
    """A real tool search (typed call and return parts from 1.95.0) keeps its kind and its types.

    1.95-2.0 require each match's ``description``; later releases ignore it, so this fits all.
    """
    data = json.dumps(
        [
            req(user("Which tool tells the weather?")),
            real(call("search_tools", "s1", {"queries": ["weather"]}, tool_kind="tool-search")),
            req(
                ret(
                    "search_tools",
                    "s1",
                    {"discovered_tools": [{"name": "get_weather", "description": None}]},
                    tool_kind="tool-search",
                )
            ),
        ]
    )
    loaded = load_json(data)
    expected = "tool-search" if has(table.RETURN_TOOL_KIND) else None
    assert getattr(loaded[1].parts[0], "tool_kind", None) == expected
    assert getattr(loaded[2].parts[0], "tool_kind", None) == expected
    assert load_json(dump_json(loaded)) == loaded


@pytest.mark.parametrize("state", ["suspended", "exploded"])
def test_response_state_the_release_rejects_is_removed(state: str) -> None:
    """'suspended' exists from 2.10.0 (ModelResponse.state itself from 1.92.0); 'exploded' nowhere."""
    data = json.dumps([req(user("Approve?")), real(call("deploy", "c1"), state=state)])
    response = load_json(data)[1]
    if "state" not in _load_probes.message_fields("response"):
        assert not hasattr(response, "state")
    elif state == "suspended" and _load_probes.message_value_kept("response", "state", state):
        assert response.state == "suspended"
    else:
        assert response.state == "complete"
    assert response.parts[0].tool_call_id == "c1"


def test_request_state_is_kept_where_the_release_has_it() -> None:
    data = json.dumps([req(user("Hi"), state="interrupted")])
    expected = "interrupted" if "state" in _load_probes.message_fields("request") else None
    assert getattr(load_json(data)[0], "state", None) == expected


def test_conversions_are_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="histfix")
    load_json(history_with(ret("get_weather", "c1", "again", outcome="retried"), feedback()))
    records = [
        r.getMessage() for r in caplog.records if r.name == "histfix" and "loaded as" in r.getMessage()
    ]
    expected = []
    if not has(table.OUTCOME_RETRIED):
        expected.append(
            "messages[2].parts[0]: tool-return with outcome='retried' loaded as a retry-prompt; dropped outcome"
        )
    if not has(table.RETRY_FEEDBACK_PART):
        expected.append(
            "messages[2].parts[1]: retry-feedback loaded as a tool-less retry-prompt; dropped retry"
        )
    assert records == expected


def test_fields_the_release_lacks_are_listed_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="histfix")
    load_json((DUMPS / "2.68.0.json").read_bytes())
    summary = [r.getMessage() for r in caplog.records if "has no field for" in r.getMessage()]
    if "model_id" in _load_probes.message_fields("response"):
        assert not any("response.model_id" in line for line in summary)
    else:
        assert len(summary) == 1
        assert summary[0].startswith(f"{RELEASE} has no field for, and ignored: ")
        assert "response.model_id (4x)" in summary[0]


def test_nothing_is_logged_above_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="histfix")
    load_json((DUMPS / "2.68.0.json").read_bytes())
    assert [r for r in caplog.records if r.name == "histfix"] == []


# --- errors: exact, one line ----------------------------------------------------------------------------

PART = {"part_kind": "user-prompt", "content": "hi"}


def _json_error(text: str) -> json.JSONDecodeError:
    """The error this Python's json raises on ``text`` (3.13 words a trailing comma differently)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc
    raise AssertionError(f"{text!r} is valid JSON")


_TRAILING_COMMA = _json_error("[1,]")

ERRORS = [
    ("", "empty input: expected a pydantic-ai message history (a JSON list)"),
    (b" \n\t", "empty input: expected a pydantic-ai message history (a JSON list)"),
    (
        "[{",
        "not valid JSON (line 1, column 3: Expecting property name enclosed in double quotes); "
        "the document ends early (truncated?)",
    ),
    ("[1,]", f"not valid JSON (line 1, column {_TRAILING_COMMA.colno}: {_TRAILING_COMMA.msg})"),
    (b'["\xff"]', "not UTF-8 text (invalid start byte at byte 2)"),
    ('{"kind": "request"}', "not a history: expected a JSON list of messages, got an object"),
    ('"hello"', "not a history: expected a JSON list of messages, got a string"),
    ("[1]", "messages[0]: expected a message object, got a number"),
    ([{"parts": []}], "messages[0]: expected kind 'request' or 'response', found no 'kind'"),
    (
        [{"kind": "question", "parts": []}],
        "messages[0]: expected kind 'request' or 'response', found kind 'question'",
    ),
    ([{"kind": "request"}], "messages[0]: expected a list of parts, found no 'parts'"),
    ([{"kind": "request", "parts": "hi"}], "messages[0]: expected a list of parts, found parts as a string"),
    (
        [req(PART), {"kind": "response", "parts": [None]}],
        "messages[1].parts[0]: expected a part object, got null",
    ),
    ([req(PART, {"content": "hi"})], "messages[0].parts[1]: missing 'part_kind' (the part's type)"),
    (
        [req(PART), resp({"part_kind": "hologram"}), req(PART)],
        f"messages[1].parts[0]: part_kind 'hologram' is not supported by {RELEASE}",
    ),
    (
        [req(PART), resp(ret("get_weather", "c1"))],
        "messages[1].parts[0]: part_kind 'tool-return' belongs in a request, not a response",
    ),
    (
        [req({"part_kind": "tool-return", "content": "x", "tool_call_id": "c1"})],
        f"messages[0].parts[0].tool_name: Field required ({RELEASE})",
    ),
    (
        [req({"part_kind": "user-prompt", "content": [{"kind": "hologram"}]})],
        f"messages[0].parts[0].content[0]: matches no form {RELEASE} accepts here (kind 'hologram')",
    ),
    (
        [req({"part_kind": "user-prompt", "content": "hi", "timestamp": "yesterday"})],
        f"messages[0].parts[0].timestamp: Input should be a valid datetime or date, input is too short ({RELEASE})",
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [(d if isinstance(d, str | bytes) else json.dumps(d), m) for d, m in ERRORS]
)
def test_error_message(data: str | bytes, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        load_json(data)
    assert str(caught.value) == message
    assert "\n" not in message


def test_retry_feedback_in_a_response_is_an_error() -> None:
    data = json.dumps([req(PART), resp(feedback())])
    expected = (
        "messages[1].parts[0]: part_kind 'retry-feedback' belongs in a request, not a response"
        if has(table.RETRY_FEEDBACK_PART)
        else f"messages[1].parts[0]: part_kind 'retry-feedback' is not supported by {RELEASE}"
    )
    with pytest.raises(ValueError) as caught:
        load_json(data)
    assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "load_json() needs JSON text (str, bytes or bytearray), got NoneType"),
        (
            [pai.ModelRequest(parts=[pai.UserPromptPart("hi")])],
            "load_json() needs JSON text (str, bytes or bytearray), got list; "
            "to write loaded messages as JSON, use dump_json",
        ),
    ],
)
def test_load_json_needs_text(data: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        load_json(data)
    assert str(caught.value) == message


def test_load_json_takes_bytearray() -> None:
    data = bytearray(json.dumps([req(PART)]).encode())
    assert load_json(data)[0].parts[0].content == "hi"


# --- dump_json -----------------------------------------------------------------------------------------


def test_dump_json_is_the_release_adapter() -> None:
    history = load_json((DUMPS / "2.68.0.json").read_bytes())
    assert dump_json(history) == pai.ModelMessagesTypeAdapter.dump_json(history)
    assert dump_json(tuple(history)) == dump_json(history)


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (None, "dump_json() needs a list of ModelRequest/ModelResponse messages, got None"),
        (
            "[]",
            "dump_json() needs a list of messages, got str: load stored JSON with histfix.load_json() "
            "first (it reads what any pydantic-ai release wrote)",
        ),
        (
            [{"kind": "request", "parts": []}],
            "messages[0] is a builtins.dict, not a pydantic_ai.messages.ModelRequest or ModelResponse "
            "(it looks like stored JSON: load it with pydantic_ai.messages.ModelMessagesTypeAdapter first)",
        ),
    ],
)
def test_dump_json_checks_its_input(messages: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        dump_json(messages)
    assert str(caught.value) == message

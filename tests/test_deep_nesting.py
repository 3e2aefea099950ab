"""Nesting deeper than any history needs is bad input: one ``ValueError`` naming the depth.

A real history nests a few levels (the list, a message, its parts, a part, then tool arguments or
results: 9 at most in what docs/portable-json.md measured); pydantic-ai's JSON reader refuses more
than 201. Deeper text used to escape ``load_json`` as a ``RecursionError`` (or a parser message
pointing into text histfix had re-written), and deep content in memory made the token estimate,
``dump_json`` and the previews of a repair report fail from deep inside. The CLI's and the stores'
handling of a deep file is tested in tests/cli/test_deep_files.py and tests/store/test_deep_lines.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix

from deep import deep_history, nested, opening_column, reader_limit, too_deep

#: 201 with pydantic-core 2.x.
LIMIT = reader_limit()


def test_the_limit_is_the_readers() -> None:
    """histfix finds the release's limit by halving; counting gives the same."""
    from histfix._release.probes import json_depth_limit

    assert json_depth_limit() == LIMIT


@pytest.mark.parametrize("levels", [LIMIT + 1, 1500, 100_000])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_load_json_names_the_depth(levels: int, as_bytes: bool) -> None:
    """Just past the reader, past Python's recursion limit, and far past both: the same one line."""
    text = deep_history(levels)
    with pytest.raises(ValueError) as caught:
        histfix.load_json(text.encode() if as_bytes else text)
    assert str(caught.value) == too_deep(levels, opening_column(text))


def test_the_converting_way_names_it_too(caplog: pytest.LogCaptureFixture) -> None:
    """At DEBUG every text goes the converting way (Python's json, then the reader): same line."""
    caplog.set_level(logging.DEBUG, logger="histfix")
    for levels in (LIMIT + 1, 1500):
        text = deep_history(levels)
        with pytest.raises(ValueError) as caught:
            histfix.load_json(text)
        assert str(caught.value) == too_deep(levels, opening_column(text))


def test_a_bare_nest_is_not_a_history_but_the_depth_is_what_is_said() -> None:
    text = "\n" + nested(3000)
    with pytest.raises(ValueError) as caught:
        histfix.load_json(text)
    assert str(caught.value) == too_deep(3000, LIMIT + 1, line=2)


def test_brackets_inside_strings_do_not_count() -> None:
    text = deep_history(20).replace('"routes"', json.dumps("[" * 500 + '"{'))
    assert histfix.load_json(text)[1].parts[-1].args.keys() == {"[" * 500 + '"{'}


def test_as_deep_as_the_reader_reads_loads_and_round_trips() -> None:
    history = histfix.load_json(deep_history(LIMIT))
    assert histfix.load_json(histfix.dump_json(history)) == history
    assert histfix.repair(history) == histfix.repair(histfix.repair(history))


# --- content built in memory ---------------------------------------------------------------------------


def nested_value(levels: int) -> list[Any]:
    """A list ``levels`` deep, built without recursion (deeper than Python's recursion limit)."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


DEEP = 5000


def history(where: str) -> list[pai.ModelMessage]:
    """A history with one deep value: a dangling call's args, an orphaned or a second result, or
    a result's metadata."""
    deep = nested_value(DEEP)
    messages: list[pai.ModelMessage] = [
        pai.ModelRequest(parts=[pai.UserPromptPart("Plan my trip")]),
        pai.ModelResponse(
            parts=[pai.ToolCallPart("plan", {"legs": deep} if where == "args" else {}, tool_call_id="c1")]
        ),
    ]
    if where == "orphan":
        messages.append(pai.ModelRequest(parts=[pai.ToolReturnPart("plan", deep, tool_call_id="gone")]))
    if where == "duplicate":
        again = [pai.ToolReturnPart("plan", deep, tool_call_id="c1") for _ in range(2)]
        messages.append(pai.ModelRequest(parts=again))
    if where == "metadata":
        messages.append(
            pai.ModelRequest(
                parts=[pai.ToolReturnPart("plan", "ok", tool_call_id="c1", metadata={"trace": deep})]
            )
        )
    return messages


#: Every public function that takes a history, and what it may say about a deep one.
FUNCTIONS: dict[str, Callable[[list[pai.ModelMessage]], object]] = {
    "check": histfix.check,
    "check(provider=any)": lambda h: histfix.check(h, provider="any"),
    "classify": histfix.classify,
    "is_provider_valid": lambda h: histfix.is_provider_valid(h, provider="anthropic"),
    "repair": histfix.repair,
    "repair(provider=openai)": lambda h: histfix.repair(h, provider="openai"),
    "repair_report": lambda h: histfix.repair_report(h).changes,
    "repair_report(provider=any)": lambda h: histfix.repair_report(h, provider="any").changes,
    "repair(orphans=note)": lambda h: histfix.repair(h, orphans="note"),
    "keep_last_turns": lambda h: histfix.keep_last_turns(h, 1),
    "trim_to_budget": lambda h: histfix.trim_to_budget(h, 10**9),
    "estimate_tokens": lambda h: [histfix.estimate_tokens(m) for m in h],
    "dump_json": histfix.dump_json,
}


@pytest.mark.parametrize("where", ["args", "orphan", "duplicate", "metadata"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_no_public_function_lets_a_recursion_error_out(name: str, where: str) -> None:
    """Each works, or raises one ValueError line naming where the history nests too deep."""
    try:
        FUNCTIONS[name](history(where))
    except ValueError as exc:
        message = str(exc)
        assert "\n" not in message
        path = {
            "args": "messages[1].parts[0].args",
            "orphan": "messages[2].parts[0].content",
            "duplicate": "messages[2].parts[0].content",
            "metadata": "messages[2].parts[0].metadata",
        }[where]
        if name in ("trim_to_budget", "estimate_tokens"):  # sized one message at a time
            path = path.partition(".")[2]
        levels = DEEP + 4 if path.endswith("content") else DEEP + 5
        assert message == (
            f"{path}: nested {levels} levels deep, more than the {LIMIT} a history may have "
            "(pydantic-ai's JSON reader refuses deeper)"
        )


@pytest.mark.parametrize("provider", [None, "any"])
def test_a_removed_deep_result_is_previewed_by_its_depth(provider: str | None) -> None:
    """The report's preview of what repair removed cannot be rendered: it says what it was."""
    changes = histfix.repair_report(history("orphan"), provider=provider).changes
    (dropped,) = [change for change in changes if change.kind == "dropped_result"]
    assert dropped.preview == f"(content nested {DEEP} levels deep)"

"""Hypothesis strategies for stored histories: realistic conversations and adversarial damage.

Histories are drawn as stored JSON (see ``dsl``) and loaded on the installed release, so the same
strategy runs on every release. Part kinds the installed release lacks are probed once and left out.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st
from pydantic_ai import messages as pai

from dsl import (
    Json,
    call,
    native_call,
    native_return,
    req,
    resp,
    ret,
    retry,
    system,
    text,
    thinking,
    user,
)

IDS = ["a", "b", "c", "d", "call_1", "x"]  # a small pool, so ids collide, repeat and get reused
TOOLS = ["get", "put", "search"]


def _loads(part: Json, kind: str) -> bool:
    message = {"kind": kind, "parts": [part]}
    if kind == "response":
        message["timestamp"] = "2026-01-01T00:00:00Z"
    try:
        pai.ModelMessagesTypeAdapter.validate_json(json.dumps([message]))
    except Exception:
        return False
    return True


# Part kinds that only some releases have: kept where the installed release loads them.
_EXTRA_RESPONSE = [
    p
    for p in (
        {"part_kind": "file", "content": {"data": "aGk=", "media_type": "image/png", "kind": "binary"}},
        {"part_kind": "compaction", "content": "summary of earlier turns"},
    )
    if _loads(p, "response")
]
_EXTRA_REQUEST = [
    p
    for p in (
        {
            "part_kind": "user-prompt",
            "content": ["look", {"url": "https://example.com/a.png", "kind": "image-url"}],
            "timestamp": "2026-01-01T00:00:00Z",
        },
        {"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None},
    )
    if _loads(p, "request")
]

ats = st.integers(min_value=0, max_value=120)
ids = st.sampled_from(IDS)
tools = st.sampled_from(TOOLS)
args = st.one_of(st.just({}), st.fixed_dictionaries({"q": st.integers(0, 9)}), st.just('{"q": "cut off'))


# Every strategy is built once, here: hypothesis validates a strategy on first use, and building
# them inside the composites below would redo that on every draw (most of the suite's fuzz time).

#: A request part waits for its timestamp, drawn once per request, so it is drawn as a maker.
_request_part = st.one_of(
    st.just(lambda at: user("hello", at)),
    st.just(lambda at: system("sys", at)),
    st.builds(lambda i, n: lambda at: ret(n, i, "ok", at=at), ids, tools),
    st.builds(lambda i, n: lambda at: retry("fix args", name=n, id=i, at=at), ids, tools),
    st.builds(lambda i: lambda at: retry("validation feedback", id=i, at=at), ids),
    *(st.just(lambda at, p=p: p) for p in _EXTRA_REQUEST),
)
_request_part_makers = st.lists(_request_part, max_size=4)
_response_parts = st.lists(
    st.one_of(
        st.builds(call, tools, ids, args),
        st.builds(call, tools, ids, args),  # calls twice as likely
        st.builds(lambda: text("answer")),
        st.builds(lambda: thinking("hmm")),
        st.builds(lambda i: native_call("web_search", f"n{i}"), ids),
        st.builds(lambda i: native_return("web_search", f"n{i}"), ids),
        *(st.just(p) for p in _EXTRA_RESPONSE),
    ),
    max_size=4,
)
_one_in_5 = st.integers(0, 4)
_one_in_6 = st.integers(0, 5)
_instructions = st.sampled_from([None, "", "be brief", "be verbose"])
_metadata = st.sampled_from([{"k": 1}, {"__pydantic_ai__": {"a": 1}}, {"__pydantic_ai__": {"a": 2, "b": 3}}])
_provider_fields = st.sampled_from(
    [{}, {}, {"model_name": "m"}, {"provider_name": "p"}, {"provider_response_id": "r1"}]
)


@st.composite
def message(draw: st.DrawFn) -> Json:
    if draw(st.booleans()):
        fields: dict[str, Any] = {}
        if draw(_one_in_5) == 0:
            fields["instructions"] = draw(_instructions)
        if draw(_one_in_6) == 0:
            fields["metadata"] = draw(_metadata)
        if draw(_one_in_5) == 0:
            fields["timestamp"] = draw(ats)
        at = draw(ats)
        return req(*(make(at) for make in draw(_request_part_makers)), **fields)
    provider = draw(_provider_fields)
    return resp(*draw(_response_parts), at=draw(ats), **provider)


_turns = st.integers(1, 4)
_steps = st.integers(0, 3)
_parallel = st.integers(1, 3)
_drops = st.integers(0, 2)


@st.composite
def conversation(draw: st.DrawFn) -> list[Json]:
    """A realistic tool conversation: calls answered in the next request, sometimes damaged."""
    history: list[Json] = []
    for turn in range(draw(_turns)):
        history.append(req(user(f"q{turn}")))
        for step in range(draw(_steps)):
            n = draw(_parallel)
            calls = [call(draw(tools), f"t{turn}_{step}_{k}", draw(args)) for k in range(n)]
            history.append(resp(*calls, at=turn * 10 + step, model_name="m"))
            answers = [ret(c["tool_name"], c["tool_call_id"], "ok") for c in calls]
            history.append(req(*draw(st.permutations(answers))))
        history.append(resp(text(f"a{turn}"), at=turn * 10 + 9, model_name="m"))
    # damage: drop some messages, as crashes and evictions do, and slice at a random point
    for _ in range(draw(_drops)):
        if history:
            del history[draw(st.integers(0, len(history) - 1))]
    start = draw(st.integers(0, len(history)))
    return history[start:] if draw(st.booleans()) else history


histories = st.one_of(st.lists(message(), max_size=10), conversation())

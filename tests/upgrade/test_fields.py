"""The round-trip proof (histfix.upgrade._fields): what it vouches for is what the real trip finds.

The rules on small tables made up here, and on the installed release against itself: every
history the proof calls lossless loses nothing when it is dumped and loaded again for real.
Across releases (B in its own environment): tests/upgrade/test_across_releases.py.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

from pydantic_ai.messages import ModelMessagesTypeAdapter

from histfix.upgrade._fields import FACTORY, TripProof, _default, _moved, field_table, translated_parts
from histfix.upgrade._trip import LOSSLESS, round_trip

from upgrade_cases import histories


def field(type_: str = "str", default: Any = None, *, nested: str | None = None, by_name: bool = True) -> Any:
    return {"type": type_, "default": default, "nested": nested, "by_name": by_name}


def table(**owners: dict[str, Any]) -> dict[str, Any]:
    """Owners as field_table writes them; what the proof is handed here loads as Held."""
    return {owner: {"class": "Held", "fields": fields} for owner, fields in owners.items()}


STATIC = {"value": None}
REQUEST = {"parts": field("list"), "kind": field("str", {"value": "request"})}
USER = {"content": field("str"), "part_kind": field("str", {"value": "user-prompt"})}


class Held:
    """What a release loaded (the proof reads attributes off it)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def one(*parts: dict[str, Any], **fields_: Any) -> tuple[list[Any], list[Any]]:
    stored = [{"kind": "request", "parts": list(parts), **fields_}]
    held = [Held(kind="request", parts=[Held(**part) for part in parts], **fields_)]
    return stored, held


def test_the_same_tables_and_a_plain_history_are_lossless() -> None:
    tables = table(request=REQUEST, **{"part:user-prompt": USER})
    assert TripProof(tables, tables).lossless(*one({"part_kind": "user-prompt", "content": "hi"}))


def test_a_field_b_lacks_is_lossless_only_at_as_default() -> None:
    a = table(request={**REQUEST, "state": field("str", {"value": "complete"})}, **{"part:user-prompt": USER})
    b = table(request=REQUEST, **{"part:user-prompt": USER})
    part = {"part_kind": "user-prompt", "content": "hi"}
    assert TripProof(a, b).lossless(*one(part, state="complete"))
    assert not TripProof(a, b).lossless(*one(part, state="interrupted"))


def test_what_b_drops_is_named_where_it_sits_in_the_trips_order() -> None:
    # paths are written out only for a loss: at a message, a part and a nested value alike
    state = field("str", {"value": "complete"})
    usage = {"tokens": field("int", {"value": 0}), "cache": field("int", {"value": 0})}
    a = table(
        request={**REQUEST, "usage": field("Usage", STATIC, nested="request.usage"), "state": state},
        **{"request.usage": usage, "part:user-prompt": {**USER, "state": state}},
    )
    b = table(
        request={**REQUEST, "usage": field("Usage", STATIC, nested="request.usage")},
        **{"request.usage": {"tokens": usage["tokens"]}, "part:user-prompt": USER},
    )
    parts = [
        {"part_kind": "user-prompt", "content": "hi"},
        {"part_kind": "user-prompt", "content": "?", "state": "x"},
    ]
    stored = [
        {"kind": "request", "parts": parts[:1]},
        {"kind": "request", "parts": parts, "usage": {"tokens": 1, "cache": 2}, "state": "y"},
    ]
    held = [
        Held(kind="request", parts=[Held(**part) for part in message["parts"]], usage=Held(tokens=1))
        for message in stored
    ]
    proof = TripProof(a, b)
    for _ in range(2):  # the walks worked out the first time give the same the second
        assert proof.losses(stored, held) == [
            ("[1].parts[1].state", "x", "complete"),
            ("[1].usage.cache", 2, 0),
            ("[1].state", "y", "complete"),
        ]
    assert proof.losses(stored[:1], held[:1]) == []


def test_a_field_left_out_is_lossless_only_when_both_default_alike() -> None:
    made_afresh = table(
        request={**REQUEST, "timestamp": field("datetime", FACTORY)}, **{"part:user-prompt": USER}
    )
    plain = table(request={**REQUEST, "timestamp": field("datetime", STATIC)}, **{"part:user-prompt": USER})
    other = table(
        request={**REQUEST, "timestamp": field("datetime", {"value": "1970"})}, **{"part:user-prompt": USER}
    )
    stored = one({"part_kind": "user-prompt", "content": "hi"})
    assert TripProof(plain, plain).lossless(*stored)
    assert not TripProof(made_afresh, plain).lossless(*stored)  # A makes a new one on each load
    assert not TripProof(plain, other).lossless(*stored)  # B writes its own default, A loads it
    assert TripProof(plain, table(request=REQUEST, **{"part:user-prompt": USER})).lossless(*stored)


def test_unknown_keys_changed_types_aliases_and_rebuilt_values_are_left_to_the_trip() -> None:
    tables = table(request=REQUEST, **{"part:user-prompt": USER})
    part = {"part_kind": "user-prompt", "content": "hi"}
    assert not TripProof(tables, tables).lossless(*one({**part, "extra": 1}))  # unknown to A
    changed = table(request=REQUEST, **{"part:user-prompt": {**USER, "content": field("datetime | str")}})
    assert TripProof(tables, changed).lossless(*one(part))  # held as stored: loads as stored
    stored, held = one(part)
    held[0].parts[0].content = datetime.datetime(2026, 1, 1)  # B parsed it, A keeps a string
    assert not TripProof(tables, changed).lossless(stored, held)
    assert TripProof(changed, changed).lossless(stored, held)  # both parse it alike
    aliased = table(request=REQUEST, **{"part:user-prompt": {**USER, "content": field(by_name=False)}})
    assert not TripProof(aliased, tables).lossless(*one(part))
    listed = {"part_kind": "user-prompt", "content": ["a", "b"]}
    stored, held = one(listed)
    held[0].parts[0].content = ("a", "b")  # B rebuilt the container: not held as it was stored
    assert not TripProof(tables, tables).lossless(stored, held)
    assert TripProof(tables, tables).lossless(*one(listed))


def test_a_part_b_loads_as_another_kind_is_lossless_when_a_made_the_same_of_it() -> None:
    tool_return = {
        "part_kind": field("str", {"value": "tool-return"}),
        "content": field("str"),
        "outcome": field("str", {"value": "success"}),
    }
    tables = table(request=REQUEST, **{"part:retry-prompt": USER, "part:tool-return": tool_return})
    stored = [{"kind": "request", "parts": [{"part_kind": "retry-prompt", "content": "again"}]}]

    def loaded_as(**values: Any) -> list[Any]:
        return [Held(kind="request", parts=[Held(**values)])]

    a_made = {"part_kind": "tool-return", "content": "again", "outcome": "retried"}
    import histfix.upgrade._fields as fields_module

    original = fields_module._dump
    try:
        fields_module._dump = lambda part: dict(part.__dict__)
        proof = TripProof(tables, tables)
        assert proof.lossless(stored, loaded_as(**a_made), {"0.0": a_made})
        assert not proof.lossless(stored, loaded_as(**{**a_made, "outcome": "failed"}), {"0.0": a_made})
        assert not proof.lossless(stored, loaded_as(**a_made), {})  # A kept it as it was stored
    finally:
        fields_module._dump = original


def test_a_plain_history_is_proven_a_list_at_a_time_and_anything_else_walked() -> None:
    tables = table(request=REQUEST, **{"part:user-prompt": USER})
    proof = TripProof(tables, tables)
    stored, held = one(
        {"part_kind": "user-prompt", "content": "hi"}, {"part_kind": "user-prompt", "content": ["a"]}
    )
    assert proof._plainly_lossless(stored, held, {})
    assert _moved(stored, held) == []  # translated_parts compares the kinds a list at a time too
    held[0].parts[1].content = ("a",)  # not held as stored: the walk decides
    assert not proof._plainly_lossless(stored, held, {})
    assert proof.losses(stored, held) is None
    # a loss to name (B drops a field A reads back as its default) is the walk's to name
    a = table(request={**REQUEST, "state": field("str", {"value": "complete"})}, **{"part:user-prompt": USER})
    dropping = TripProof(a, tables)
    stored, held = one({"part_kind": "user-prompt", "content": "hi"}, state="interrupted")
    assert not dropping._plainly_lossless(stored, held, {})
    assert dropping.losses(stored, held) == [("[0].state", "interrupted", "complete")]


def test_on_this_release_every_proven_history_survives_the_real_trip() -> None:
    own = field_table()
    proof = TripProof(own, own)
    proven = 0
    for key, raw in histories().items():
        try:
            loaded = ModelMessagesTypeAdapter.validate_json(raw)
        except ValueError:
            continue
        stored = json.loads(raw)
        if proof.lossless(stored, loaded, translated_parts(stored, loaded)):
            proven += 1
            trip = round_trip(raw, ModelMessagesTypeAdapter.dump_json(loaded))
            assert trip == LOSSLESS, key
    assert proven > len(histories()) // 2


def test_the_table_describes_messages_and_parts_by_kind() -> None:
    own = field_table()
    assert {"request", "response", "part:user-prompt", "part:tool-call", "part:tool-return"} <= set(own)
    assert own["part:tool-call"]["class"] == "ToolCallPart"  # the base, not a typed subclass
    assert own["part:tool-call"]["fields"]["tool_call_id"]["default"] == FACTORY  # a new id each time
    assert own["response"]["fields"]["usage"]["nested"] == "response.usage"
    json.dumps(own)  # it travels to the other release's probe as JSON


def test_a_default_made_by_a_clock_is_made_afresh_even_when_two_calls_agree() -> None:
    noon = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.timezone.utc)

    @dataclasses.dataclass
    class Stamped:
        at: datetime.datetime = dataclasses.field(default_factory=lambda: noon)  # one tick, two calls
        tags: list[str] = dataclasses.field(default_factory=list)

    at, tags = dataclasses.fields(Stamped)
    assert _default(at)[0] == FACTORY
    assert _default(tags)[0] == {"value": []}

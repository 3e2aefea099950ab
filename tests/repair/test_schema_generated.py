"""The schema-driven generator (tests/support/schema_strategies.py): what it draws, on the installed release.

It must draw every part kind and every literal value of a part's fields that the installed
release's schema declares, and the release's own metadata keys at both levels of a metadata
object, without naming any of them: these tests read what to expect from the schema, so they
hold on every release and fail when a release adds something the walker cannot reach. The
walker's rules are checked on small schemas of its own.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from hypothesis import strategies as st
from packaging.version import Version
from pydantic_ai import messages as pai

from histfix._release.pinned import NEWEST, PINNED_RELEASES

import schema_strategies
from conftest import PYDANTIC_AI
from dsl import Json
from schema_strategies import SchemaStrategies, UnsupportedSchema, drawn, loads, release_metadata_keys
from schema_summary import literals, summarize

#: The reach checks cost about 8 s a release; they run where a schema is new to the suite: on the
#: oldest and the newest pinned release, and on any newer one (`nox -s latest`). The walker is
#: the same code on every release, and its rules are checked on every one below.
REACH_CHECKED = PYDANTIC_AI in {Version(PINNED_RELEASES[0]), Version(NEWEST)} or Version(NEWEST) < PYDANTIC_AI
reach = pytest.mark.skipif(
    not REACH_CHECKED, reason="reach checked on the oldest, the newest and newer releases"
)


def sample() -> list[list[Json]]:
    return schema_strategies.sample()  # the differential's histories too (drawn once per process)


@reach
def test_every_draw_is_kept_and_loads() -> None:
    """The filters that keep only what the release loads refuse few draws: hypothesis gives up
    on a strategy that refuses too many, and fewer histories come back than asked for."""
    histories = sample()
    assert len(histories) == schema_strategies.SAMPLE_SIZE
    schema_strategies.load([m for h in histories for m in h])


def _drawn_values(histories: list[list[Json]]) -> dict[str, dict[str, set[str]]]:
    seen: dict[str, dict[str, set[str]]] = {}
    for history in histories:
        for message in history:
            for part in message["parts"]:
                fields = seen.setdefault(f"part {part['part_kind']}", {})
                for field, value in part.items():
                    if isinstance(value, str):
                        fields.setdefault(field, set()).add(value)
    return seen


@reach
def test_every_part_kind_the_schema_declares_is_drawn() -> None:
    declared = {k for k in summarize(schema_strategies.installed_schema()) if k.startswith("part ")}
    assert sorted(_drawn_values(sample())) == sorted(declared)


#: Draws of a part kind alone, where the sample left one of its literals undrawn.
PART_DRAWS = 60


def _undrawn(schema: dict[str, Any], seen: dict[str, dict[str, set[str]]]) -> list[tuple[str, str, Any]]:
    return [
        (kind, field, value)
        for kind, fields in summarize(schema).items()
        if kind.startswith("part ")
        for field, values in fields.items()
        if "." not in field  # a part's own fields (nested objects are drawn with required keys alone)
        for value in values
        if value not in seen.get(kind, {}).get(field, set())
    ]


@reach
def test_every_literal_value_of_a_parts_fields_is_drawn() -> None:
    """Each value a part's own field declares (an ``outcome``, a ``ui_visibility``, an
    ``authority``) is drawn for that part kind: in the sample, or else in draws of that part kind
    alone (a rare kind's rare value)."""
    schema = schema_strategies.installed_schema()
    seen = _drawn_values(sample())
    rare = {kind for kind, _, _ in _undrawn(schema, seen)}
    builder = SchemaStrategies(schema, release_metadata_keys())
    for branch_of_message in schema["items"]["oneOf"]:
        message = builder.resolve(branch_of_message)[0]
        envelope = {"kind": message["properties"]["kind"]["const"]}
        for branch in message["properties"]["parts"]["items"]["oneOf"]:
            if (
                not rare
                & {
                    f"part {v}"
                    for v in literals(
                        schema, builder.resolve(branch)[0].get("properties", {}).get("part_kind", {})
                    )
                }
                and "oneOf" not in branch
            ):
                continue
            part = builder.build(branch, 1).filter(
                lambda p, e=envelope: loads(pai.ModelMessagesTypeAdapter, [{**e, "parts": [p]}])
            )
            for kind, fields in _drawn_values([[{"parts": drawn(PART_DRAWS, part)}]]).items():
                for field, values in fields.items():
                    seen.setdefault(kind, {}).setdefault(field, set()).update(values)
    missing = [f"{kind}.{field}={value!r}" for kind, field, value in _undrawn(schema, seen)]
    assert not missing, f"declared but never drawn: {missing}"


@reach
def test_the_releases_metadata_keys_are_drawn_at_both_levels() -> None:
    """Each of the release's metadata keys appears on a request's metadata, and nested in
    another key's object there (a flag in a reserved namespace), with a True value."""
    keys = release_metadata_keys()
    if not keys or "metadata" not in summarize(schema_strategies.installed_schema())["message request"]:
        pytest.skip("this release has no metadata keys or no request metadata")
    top: set[str] = set()
    nested: set[str] = set()
    for history in sample():
        for message in history:
            metadata = message.get("metadata") or {}
            if message["kind"] != "request" or not isinstance(metadata, dict):
                continue
            top |= set(metadata)
            for value in metadata.values():
                if isinstance(value, dict):
                    nested |= {k for k, v in value.items() if v is True}
    assert set(keys) <= top
    assert set(keys) <= nested


def test_release_metadata_keys_are_the_modules_key_constants() -> None:
    module = types.ModuleType("fake")
    module.__dict__.update(
        _NAMESPACE_KEY="__ns__", FLAG_KEY="flag", NOT_A_KEY_NAME="x", COUNT_KEY=3, __SECRET_KEY="no"
    )
    assert release_metadata_keys(module) == ("__ns__", "flag")


# --- the walker's rules, on small schemas -----------------------------------------------------------


def draws(node: dict[str, Any], count: int = 60, **defs: Any) -> list[Any]:
    builder = SchemaStrategies({"$defs": defs}, ("ns", "flag"))
    return drawn(count, builder.build(node))


def test_a_const_is_always_written_and_optional_keys_come_and_go() -> None:
    schema = {
        "type": "object",
        "properties": {"kind": {"const": "k"}, "must": {"type": "integer"}, "may": {"type": "boolean"}},
        "required": ["must"],
    }
    values = draws(schema)
    assert all(v["kind"] == "k" and v["must"] in range(4) for v in values)
    assert {"may" in v for v in values} == {True, False}


def test_a_declared_default_is_a_candidate() -> None:
    schema = {"type": "object", "properties": {"kind": {"type": "string", "default": "registered.kind"}}}
    assert any(v.get("kind") == "registered.kind" for v in draws(schema))


def test_free_strings_come_from_the_small_pool() -> None:
    assert set(draws({"type": "string"})) <= set(schema_strategies.WORDS)


def test_a_recursive_definition_is_followed_once() -> None:
    tree = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/Tree"}}]}
    values = draws({"$ref": "#/$defs/Tree"}, 100, Tree=tree)

    def depth(value: Any) -> int:
        return 1 + max(map(depth, value), default=0) if isinstance(value, list) else 0

    assert max(map(depth, values)) == 1


def test_a_recursive_definition_with_an_unconstrained_branch_ends_in_a_plain_value() -> None:
    """1.67.0-2.10.0's tool return content has no string branch: its plain values come from its
    ``{}`` (any value) branch, which a definition met inside itself draws as a plain value."""
    content = {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Content"}}, {}]}
    values = draws({"$ref": "#/$defs/Content"}, 100, Content=content)
    inner = [item for v in values if isinstance(v, list) for item in v]
    assert inner and not any(isinstance(item, (list, dict)) for item in inner)


def test_a_strings_length_bounds_are_kept() -> None:
    """2.52.0-2.55.0 declare a file's ``media_type`` with ``minLength: 1``."""
    assert all(len(v) >= 3 for v in draws({"type": "string", "minLength": 3}))
    assert all(1 <= len(v) <= 2 for v in draws({"type": "string", "minLength": 1, "maxLength": 2}))


@pytest.mark.parametrize(
    ("node", "named"),
    [
        ({"type": "string", "pattern": "^a$"}, "pattern"),
        ({"allOf": [{"type": "string"}]}, "allOf"),
        ({"type": "string", "format": "email"}, "'email'"),
        ({"type": "tuple"}, "'tuple'"),
        ({"$ref": "#/$defs/Missing"}, "Missing"),
        ({"$ref": "#/$defs/Loop"}, "no plain branch"),
        ({"type": "string", "format": "date-time", "minLength": 40}, "length bound"),
        ({"type": "string", "maxLength": 0}, "0 characters"),
    ],
)
def test_what_the_walker_cannot_draw_is_refused_by_name(node: dict[str, Any], named: str) -> None:
    loop = {"type": "array", "items": {"$ref": "#/$defs/Loop"}}
    builder = SchemaStrategies({"$defs": {"Loop": loop}}, ())
    with pytest.raises(UnsupportedSchema, match=named):
        strategy = builder.build(node)
        drawn(1, strategy)  # (hypothesis builds lazily; the walker itself refuses while building)


def test_free_form_objects_hold_the_given_keys() -> None:
    builder = SchemaStrategies({}, ("ns", "flag"))
    values = drawn(100, builder.free_object(0))
    keys = {k for v in values for k in v}
    assert keys == {"ns", "flag", schema_strategies.APPLICATION_KEY}
    assert any(isinstance(v.get("ns"), dict) and v["ns"].get("flag") is True for v in values)
    assert drawn(1, st.just(1)) == [1]

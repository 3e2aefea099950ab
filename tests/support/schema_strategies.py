"""Hypothesis strategies for stored histories, derived from the installed release's own JSON schema.

The hand-written generators (``generate``, ``fuzz_strategies``) name every part kind and field they
build, so a release that adds one (a part kind, a field, a literal value) is never generated until
someone names it. Here the shapes come from ``ModelMessagesTypeAdapter.json_schema()`` of the
installed release: every message kind, part kind, field and enum value it declares is drawn, with
nothing named. What the schema cannot say is filled in by three rules that keep repair busy:

* every free string comes from a pool of four short words (:data:`WORDS`), so tool call ids repeat
  and collide, tool names match, instructions are equal or differ, as in damaged real histories;
* a free-form object (``metadata``, ``args``, ``provider_details``: ``additionalProperties: true``
  and no properties of its own) is filled with the release's own metadata keys: every module-level
  string constant named ``*_KEY`` in ``pydantic_ai.messages``, where ``repair_messages`` and the
  keys it reads live (:func:`release_metadata_keys`), nested one level, so a reserved namespace
  holding a flag (``{namespace_key: {flag_key: True}}``) is reached without naming either;
* a property's declared default is always one of its candidates, so a string field whose default
  selects a registered variant (a capability part's ``kind``) reaches it.

Repair-stressing structure follows from those rules: a history is up to :data:`MAX_MESSAGES` requests
and responses in any order (consecutive requests to merge, responses with calls no request answers,
results no call asked for, duplicate ids), like ``generate.random_history``.

A keyword or ``format`` this walker does not know raises :class:`UnsupportedSchema` when the
strategies are built (at import), so a release whose schema needs more is noticed, not skipped.
Every drawn history validates on the release that drew it (tests/repair/test_schema_generated.py).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache, partial
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic_ai import messages as pai

from dsl import Json, ts
from schema_summary import literals

#: The pool every free string is drawn from: few values, so ids and names collide and repeat.
WORDS = ("a", "b", "c", "d")
#: A metadata key no release reserves, beside the release's own keys: application metadata.
APPLICATION_KEY = "app"
#: Up to this many messages in a history, this many parts in a message, items in other arrays.
MAX_MESSAGES = 12
MAX_PARTS = 4
MAX_ITEMS = 2
#: Valid values of each string ``format`` the releases' schemas use; an unknown format raises.
FORMATS: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.integers(0, 120).map(ts),
    "duration": st.sampled_from(["PT0S", "PT1.5S"]),
    "base64url": st.sampled_from(["aGk=", ""]),
}
#: Keywords that only describe (no effect on what is valid), and the ones the walker draws from.
_ANNOTATIONS = frozenset({"title", "description", "default", "discriminator", "deprecated", "examples"})
_HANDLED = frozenset(
    {"$ref", "$defs", "anyOf", "oneOf", "const", "enum", "type", "format", "properties", "required"}
    | {"additionalProperties", "items", "minLength", "maxLength"}
)
#: The types of a union's branches that hold no further structure.
_PLAIN_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})


#: Stands for an optional key left out of a drawn object.
_ABSENT = object()


def _present(drawn: Json) -> Json:
    return {key: value for key, value in drawn.items() if value is not _ABSENT}


class UnsupportedSchema(ValueError):
    """The installed release's schema uses a keyword or format the walker cannot draw from."""


def _holds_no_structure(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` is a plain value's schema (its types all plain), or no constraint at all."""
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return all(k in _PLAIN_TYPES for k in kinds) if kind is not None else not set(node) - _ANNOTATIONS


def release_metadata_keys(module: ModuleType = pai) -> tuple[str, ...]:
    """The metadata keys a release defines: ``module``'s string constants named ``*_KEY``, sorted.

    pydantic-ai names each metadata key it writes or reads as such a constant beside the code that
    uses it (the synthesized-return marker, the reserved namespace, the flags inside it), so a key a
    release adds is found here without being named; 1.0.0 defines none.
    """
    found = {
        value
        for name, value in vars(module).items()
        if name.endswith("_KEY") and not name.startswith("__") and isinstance(value, str)
    }
    return tuple(sorted(found))


def _free_objects(keys: tuple[str, ...]) -> tuple[st.SearchStrategy[Json], st.SearchStrategy[Json]]:
    """Free-form objects of ``keys`` (and an application key): nested (each key holding an object
    of such keys holding scalars, or a scalar), and flat (each key holding a scalar).

    Each key is drawn on its own toss (not one of many), so a flag nested under a namespace key,
    both among the release's keys, is drawn in about one nested object in ten. Hypothesis draws
    the first of ``one_of``'s branches more often than the others, so a key's value comes first
    and its absence second, and the nested object before the scalar.
    """
    scalar = st.sampled_from([True, False, 1, WORDS[0]])
    everyone = [*keys, APPLICATION_KEY]

    def tossed(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Json]:
        return st.fixed_dictionaries({k: st.one_of(value, st.just(_ABSENT)) for k in everyone}).map(_present)

    flat = tossed(scalar)
    return tossed(st.one_of(flat, scalar)), flat


class SchemaStrategies:
    """Strategies for the values one JSON schema (with ``$defs``) allows, each built once.

    ``$ref`` cycles (a tool return's content holding tool return content) are followed once: a
    definition met again inside itself draws only its branches that hold no further structure.
    Objects are drawn whole near the top (a message at depth 0, its parts and its own fields'
    objects at 1) and with their required keys alone deeper down (a part's file content, a
    source, a recorded attempt's usage). Free-form objects are nested at a message's own fields
    (its metadata), flat at a part's (its metadata and arguments) and of one plain entry below:
    drawing a large schema's deep bookkeeping in full would cost most of each draw (hypothesis
    spends its time per choice) and crowd out the messages repair works on.
    """

    #: The deepest objects whose optional keys are drawn.
    OPTIONAL_DEPTH = 1
    #: The deepest free-form objects drawn nested, and drawn flat.
    NESTED_DEPTH = 1
    FLAT_DEPTH = 2

    def __init__(self, schema: Mapping[str, Any], metadata_keys: tuple[str, ...]) -> None:
        self.schema = schema
        self.defs: Mapping[str, Any] = schema.get("$defs", {})
        self.built: dict[tuple[str, int], st.SearchStrategy[Any]] = {}
        nested, flat = _free_objects(metadata_keys)
        self.scalar = st.one_of(st.none(), st.booleans(), st.integers(0, 3), st.sampled_from(WORDS))
        small = st.dictionaries(st.sampled_from(WORDS), self.scalar, max_size=1)
        self.free_objects = (nested, flat, small)

    def free_object(self, depth: int) -> st.SearchStrategy[Json]:
        """A free-form object at object depth ``depth``."""
        nested, flat, small = self.free_objects
        return nested if depth <= self.NESTED_DEPTH else flat if depth <= self.FLAT_DEPTH else small

    def resolve(self, node: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
        ref = node.get("$ref")
        if ref is None:
            return node, None
        prefix = "#/$defs/"
        if not ref.startswith(prefix) or ref[len(prefix) :] not in self.defs:
            raise UnsupportedSchema(f"a $ref outside this schema's $defs: {ref!r}")
        name = ref[len(prefix) :]
        return self.defs[name], name

    def build(
        self, node: Mapping[str, Any], depth: int = 0, active: frozenset[str] = frozenset()
    ) -> st.SearchStrategy[Any]:
        """The strategy for ``node`` at object depth ``depth``, inside the definitions ``active``."""
        node, name = self.resolve(node)
        if name is None:
            return self._build(node, depth, active)
        if name in active:
            return self._leaf(node, depth)
        key = (name, min(depth, self.FLAT_DEPTH + 1))  # below that depth every draw is the same
        if key not in self.built:
            self.built[key] = self._build(node, depth, active | {name})
        return self.built[key]

    def _build(self, node: Mapping[str, Any], depth: int, active: frozenset[str]) -> st.SearchStrategy[Any]:
        unknown = set(node) - _HANDLED - _ANNOTATIONS
        if unknown:
            raise UnsupportedSchema(f"schema keywords the generator does not draw from: {sorted(unknown)}")
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        branches = node.get("anyOf") or node.get("oneOf")
        if branches:
            return st.one_of(*(self.build(branch, depth, active) for branch in branches))
        kind = node.get("type")
        if isinstance(kind, list):
            return st.one_of(*(self.build({**node, "type": k}, depth, active) for k in kind))
        if kind is None:  # any JSON value
            free = self.free_object(depth)
            return st.one_of(self.scalar, free, st.lists(self.scalar, max_size=MAX_ITEMS))
        if kind == "object":
            return self._object(node, depth, active)
        if kind == "array":
            return st.lists(self.build(node.get("items", {}), depth, active), max_size=MAX_ITEMS)
        if kind == "string":
            return self._string(node)
        simple: dict[str, st.SearchStrategy[Any]] = {
            "integer": st.integers(0, 3),
            "number": st.sampled_from([0, 0.5, 2.0]),
            "boolean": st.booleans(),
            "null": st.none(),
        }
        if kind not in simple:
            raise UnsupportedSchema(f"schema type the generator does not draw: {kind!r}")
        return simple[kind]

    def parts(self, node: Mapping[str, Any]) -> st.SearchStrategy[Json]:
        """A message's part: the kinds that carry a ``tool_call_id`` (what repair pairs on) drawn
        as often as all the others together, so calls, results and their damage are common."""
        branches = node.get("oneOf") or node.get("anyOf") or [node]
        pairing = [b for b in branches if "tool_call_id" in self.resolve(b)[0].get("properties", {})]
        others = [b for b in branches if b not in pairing]
        groups = [st.one_of(*(self.build(b, 1) for b in group)) for group in (pairing, others) if group]
        return st.one_of(*groups)

    def _string(self, node: Mapping[str, Any]) -> st.SearchStrategy[str]:
        """A string of ``node``'s ``format`` (or a pool word), within its ``minLength``/``maxLength``:
        a pool word too short is repeated up to the minimum (a media type must not be empty)."""
        shortest, longest = node.get("minLength", 0), node.get("maxLength")
        fmt = node.get("format")
        if fmt is None:
            words = [w * -(-shortest // len(w)) if len(w) < shortest else w for w in WORDS]
            fitting = [w for w in words if longest is None or len(w) <= longest]
            if not fitting:
                raise UnsupportedSchema(f"no string of {shortest} to {longest} characters in the pool")
            return st.sampled_from(fitting)
        if fmt not in FORMATS:
            raise UnsupportedSchema(f"string format the generator has no values for: {fmt!r}")
        if shortest or longest is not None:
            raise UnsupportedSchema(f"a length bound on a {fmt!r} string: {json.dumps(node)[:200]}")
        return FORMATS[fmt]

    def _leaf(self, node: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
        """``node`` without recursion: only its branches that are plain values (a string, a number;
        an unconstrained branch, any JSON value, drawn as a plain value)."""
        branches = node.get("anyOf") or node.get("oneOf") or [node]
        plain = [b for b in branches if _holds_no_structure(b)]
        if not plain:
            raise UnsupportedSchema(f"a recursive definition with no plain branch: {json.dumps(node)[:200]}")
        return st.one_of(*(self.build(b, depth) if "type" in b else self.scalar for b in plain))

    def _object(self, node: Mapping[str, Any], depth: int, active: frozenset[str]) -> st.SearchStrategy[Json]:
        properties: Mapping[str, Any] = node.get("properties", {})
        extra = node.get("additionalProperties")
        if not properties:
            if extra is True or extra is None:
                return self.free_object(depth)
            values = self.build(extra, depth + 1, active)
            return st.dictionaries(st.sampled_from(WORDS), values, max_size=MAX_ITEMS)
        required = set(node.get("required", ()))
        drawn: dict[str, st.SearchStrategy[Any]] = {}
        for key, schema in properties.items():
            # a const names the variant a discriminated union dispatches on: every dump writes it
            always = key in required or "const" in self.resolve(schema)[0]
            if not always and depth > self.OPTIONAL_DEPTH:
                continue
            value = self.build(schema, depth + 1, active)
            default = schema.get("default")
            if default is not None and default not in literals(self.schema, schema):
                value = st.one_of(st.just(default), value)  # a value the release writes, may dispatch on
            # each optional key is left out on a toss of its own: hypothesis's own optional keys
            # keep about one in eight, which would leave a request's metadata out nearly always
            drawn[key] = value if always else st.one_of(st.just(_ABSENT), value)
        return st.fixed_dictionaries(drawn).map(_present)


def loads(adapter: Any, history: list[Json]) -> bool:
    """Whether ``adapter`` (a release's ``ModelMessagesTypeAdapter``) loads ``history``."""
    try:
        with quiet():
            adapter.validate_json(json.dumps(history))
    except Exception:  # pydantic's ValidationError, or an error of the release's own (its UserError)
        return False
    return True


@contextmanager
def quiet() -> Iterator[None]:
    """Loading without the release's own warnings (a capability part kind it has not registered
    warns, and is drawn on purpose: a history written where that kind's module was imported)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module=r"pydantic_ai\.")
        yield


def load(history: list[Json]) -> list[pai.ModelMessage]:
    """A drawn history as the installed release loads it, quietly (see :func:`quiet`)."""
    with quiet():
        return pai.ModelMessagesTypeAdapter.validate_json(json.dumps(history))


def _loads_alone(adapter: Any, envelope: Json, part: Json) -> bool:
    """Whether ``adapter`` loads ``part`` as the only part of a message ``envelope``."""
    return loads(adapter, [{**envelope, "parts": [part]}])


def message_strategies(
    schema: Mapping[str, Any], metadata_keys: tuple[str, ...], adapter: Any
) -> tuple[st.SearchStrategy[Json], st.SearchStrategy[list[Json]]]:
    """One message, and a history, of ``schema`` (a release's ``ModelMessagesTypeAdapter`` schema).

    The schema does not say everything a release checks on load (a speech part's speaker must
    match its message's kind; a capability part in the data voice needs a tag), so each part,
    each message and each history is kept only where ``adapter`` (the same release's) loads it:
    few draws are refused, since each level was drawn from parts that already load.
    """
    builder = SchemaStrategies(schema, metadata_keys)
    messages = schema["items"].get("oneOf") or schema["items"].get("anyOf")
    if schema.get("type") != "array" or not messages:
        raise UnsupportedSchema("the history schema is not an array of message kinds")
    kinds = []
    for branch in messages:
        message, name = builder.resolve(branch)
        fields = {k: v for k, v in message["properties"].items() if k != "parts"}
        envelope = {k: v["const"] for k, v in fields.items() if "const" in v}
        rest = builder.build({**message, "properties": fields}, 0, frozenset({name or ""}))
        part = builder.parts(message["properties"]["parts"]["items"])
        part = part.filter(partial(_loads_alone, adapter, envelope))
        drawn = st.tuples(rest, _sized_lists(part, MAX_PARTS)).map(lambda m: {**m[0], "parts": m[1]})
        kinds.append(drawn.filter(lambda m: loads(adapter, [m])))
    one = st.one_of(*kinds)
    return one, _sized_lists(one, MAX_MESSAGES).filter(lambda h: loads(adapter, h))


def _sized_lists(element: st.SearchStrategy[Any], most: int) -> st.SearchStrategy[list[Any]]:
    """Lists of ``element`` whose length is drawn first, evenly from 0 to ``most``: hypothesis keeps
    lists of large elements short (one or two messages, most messages with no part), and merges,
    dangling calls and orphans need several."""
    return st.integers(0, most).flatmap(lambda n: st.lists(element, min_size=n, max_size=n))


@cache
def installed_schema() -> dict[str, Any]:
    """The installed release's history schema."""
    return pai.ModelMessagesTypeAdapter.json_schema()


message, histories = message_strategies(
    installed_schema(), release_metadata_keys(), pai.ModelMessagesTypeAdapter
)


def drawn(count: int, strategy: st.SearchStrategy[Any] = histories) -> list[Any]:
    """``count`` draws of ``strategy``, the same on every call for the same release (derandomized):
    for tests and tools that want a fixed list rather than a property."""
    found: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    collect()
    return found


#: How many histories :func:`sample` draws: in the first 200 on 2.78.0, six merge a request
#: holding the reserved namespace's pause flag with one that does not, and 65 synthesize a return
#: for a call with a ``ui_visibility``.
SAMPLE_SIZE = 200


@cache
def sample() -> list[list[Json]]:
    """:data:`SAMPLE_SIZE` drawn histories, once per process (the differential and the reach
    checks share them): about 8 s of drawing on 2.78.0, 2 s on 1.0.0."""
    return drawn(SAMPLE_SIZE)

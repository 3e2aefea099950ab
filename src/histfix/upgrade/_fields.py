"""What each release's message types hold, so that a round trip can be proven lossless without running it.

The round trip (stored history -> loaded and dumped on release B -> loaded on release A) costs two
dumps and a third validation per history, more than the scan itself. It can lose a value only
where B does not hold a field the stored JSON has (and the value is not A's default), where B
fills a field the stored JSON leaves out differently from A, or where B changes a value. A
:class:`FieldTable` lists, per message and part kind, each field's annotation and default as the
installed release defines them; :class:`TripProof` holds A's and B's tables and says, for one
stored history and what B loaded of it, whether none of that can happen. Anything it cannot
prove (an unknown key, a changed annotation, a default made afresh each time, a value B does not
hold as it was stored) is left to the real round trip, so the result is always the real trip's.

Runs in any release's environment: only the standard library, pydantic and pydantic-ai.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import re
import types
import typing
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Mapping
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, itemgetter, ne, not_
from typing import Any

__all__ = ["FACTORY", "TripProof", "field_table", "translated_parts", "translates"]

Json = Any
#: A default made afresh for each value (a timestamp, a new id): no two loads agree on it.
FACTORY = {"factory": True}
#: Nested dataclasses followed from a message (a response's usage, and what it holds).
DEPTH = 3


#: A TypeAdapter per dataclass: building one costs milliseconds, dumping with it microseconds.
_ADAPTERS: dict[type, Any] = {}


def _dump(value: object) -> Json:
    """A dataclass value as the release dumps it (JSON data)."""
    adapter = _ADAPTERS.get(type(value))
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[type(value)] = TypeAdapter(type(value))
    return adapter.dump_python(value, mode="json")


def _json(value: object) -> Json:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dump(value)
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def _default(field: dataclasses.Field[Any]) -> tuple[Json, object]:
    """The field's default as the release dumps it (or FACTORY), and a sample value of it."""
    if field.default is not dataclasses.MISSING:
        return {"value": _json(field.default)}, field.default
    if field.default_factory is dataclasses.MISSING:
        return None, None  # required: the stored JSON always has it, or the loader refuses it
    try:
        one, two = field.default_factory(), field.default_factory()
        first, second = _json(one), _json(two)
    except Exception:  # a factory that needs more than nothing: take it as made afresh
        return FACTORY, None
    # a clock gives one value twice within its resolution: a time is taken as made afresh
    fresh = first != second or isinstance(one, (datetime.datetime, datetime.date, datetime.time))
    return (FACTORY if fresh else {"value": first}), one


def _read_by_name(name: str, annotation: str) -> bool:
    """Whether the loader reads the field under its own name: not when its name starts with "_"
    (an alias is its key), nor when an alias that leaves the name out replaces it."""
    if name.startswith("_"):
        return False
    if "alias" not in annotation:
        return True
    return name in re.findall(r"""['"]([^'"]+)['"]""", annotation.split("alias", 1)[1])


def _classes(union: object) -> Iterator[type]:
    """The dataclasses of a (possibly Annotated, possibly tagged) union of message or part types."""
    for member in typing.get_args(union) or (union,):
        inner = typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member
        if typing.get_origin(inner) in (typing.Union, types.UnionType):
            yield from _classes(inner)
        elif isinstance(inner, type) and dataclasses.is_dataclass(inner):
            yield inner


def translates() -> bool:
    """Whether the installed release's loader turns some stored parts into another kind: a part
    type it loads through a validator of its own (2.60+: a legacy ``retry-prompt`` becomes a
    ``tool-return`` or a ``retry-feedback``). Only then does another release need the parts the
    checking release translated (:func:`translated_parts`) to prove a round trip."""
    from pydantic_ai import messages

    for union in (messages.ModelRequestPart, messages.ModelResponsePart):
        for members in typing.get_args(union)[:1]:
            for member in typing.get_args(members) or (members,):
                extras = typing.get_args(member)[1:] if typing.get_origin(member) is typing.Annotated else ()
                if any("Validator" in type(extra).__name__ for extra in extras):
                    return True
    return False


def _describe(cls: type, owner: str, table: dict[str, Json], depth: int) -> None:
    fields: dict[str, Json] = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        default, sample = _default(field)
        nested = None
        if dataclasses.is_dataclass(sample) and depth < DEPTH:
            nested = f"{owner}.{field.name}"
            _describe(type(sample), nested, table, depth + 1)
        annotation = str(field.type)
        fields[field.name] = {
            "type": annotation,
            "default": default,
            "nested": nested,
            "by_name": _read_by_name(field.name, annotation),
        }
    table[owner] = {"class": cls.__name__, "fields": fields}


def field_table() -> dict[str, Json]:
    """The installed release's messages and parts: owner -> the class it loads as, and field ->
    its annotation, default (or FACTORY, or None: required), nested owner and whether the loader
    reads it by its name. Owners are ``request``, ``response``,
    ``part:<part_kind>`` and ``<owner>.<field>`` for a nested dataclass. Plain JSON."""
    from pydantic_ai import messages

    table: dict[str, Json] = {}
    for cls in _classes(messages.ModelMessage):
        kind = getattr(cls, "kind", None)
        if isinstance(kind, str):
            _describe(cls, kind, table, 0)
    kinds: dict[str, list[type]] = {}
    for union in (messages.ModelRequestPart, messages.ModelResponsePart):
        for cls in _classes(union):
            part_kind = getattr(cls, "part_kind", None)
            if isinstance(part_kind, str) and cls not in kinds.setdefault(part_kind, []):
                kinds[part_kind].append(cls)
    for part_kind, classes in kinds.items():
        # typed subclasses share their base's part_kind (2.60+ tool search parts): the base is
        # what a stored part of that kind loads as; one loaded as a subclass is left to the trip
        base = [cls for cls in classes if all(issubclass(other, cls) for other in classes)]
        if base:
            _describe(base[0], f"part:{part_kind}", table, 0)
    return table


#: JSON values that hold nothing: a part whose values are all of these has no container to check
_SCALARS = frozenset({str, int, float, bool, type(None)})
_KIND, _HELD_KIND = itemgetter("kind"), attrgetter("kind")
_PARTS, _HELD_PARTS = itemgetter("parts"), attrgetter("parts")
_KIND_OF_PART, _HELD_KIND_OF_PART = itemgetter("part_kind"), attrgetter("part_kind")


def _only(cls: type, values: list[Any]) -> bool:
    """Whether every value is exactly a ``cls``."""
    return set(map(type, values)) <= {cls}


def translated_parts(stored: Json, loaded: list[Any]) -> dict[str, Json]:
    """The parts the installed release's loader turned into another kind (a stored legacy
    ``retry-prompt`` loads as a ``tool-return`` or ``retry-feedback`` from 2.60): ``"i.j"`` (message
    i, part j) -> that part as the release dumps it. What another release makes of the same parts
    is then checked against these (:meth:`TripProof.lossless`)."""
    found: dict[str, Json] = {}
    if not isinstance(stored, list) or len(stored) != len(loaded):
        return found
    moved = _moved(stored, loaded)
    if moved is not None:
        for index, at, part in moved:
            found[_where(index, at)] = _dump(part)
        return found
    for i, (raw, message) in enumerate(zip(stored, loaded, strict=True)):
        raw_parts = raw.get("parts") if isinstance(raw, dict) else None
        parts = getattr(message, "parts", None)
        if not isinstance(raw_parts, list) or parts is None or len(raw_parts) != len(parts):
            continue
        for j, (raw_part, part) in enumerate(zip(raw_parts, parts, strict=True)):
            if isinstance(raw_part, dict) and raw_part.get("part_kind") != getattr(part, "part_kind", None):
                found[_where(i, j)] = _dump(part)
    return found


def _where(index: int, at: int) -> str:
    """The key of part ``at`` of message ``index`` among :func:`translated_parts`' parts."""
    return f"{index}.{at}"


def _differing(kinds: list[Any], held_kinds: list[Any]) -> list[int]:
    """The positions where a part is held as another kind than it was stored as."""
    return [] if kinds == held_kinds else list(compress(range(len(kinds)), map(ne, kinds, held_kinds)))


def _flat_parts(stored: list[Json], loaded: list[Any]) -> tuple[list[int], list[Json], list[Any]] | None:
    """Each message's number of parts, and all stored and held parts of a history in one list
    each (to be checked a list at a time: ``map`` runs in C). None where a message is no dict
    with a list of parts, B holds them in another number or not as a list, or a part is no dict."""
    try:
        raw_parts, parts = list(map(_PARTS, stored)), list(map(_HELD_PARTS, loaded))
        lengths = list(map(len, raw_parts))
        if not _only(list, raw_parts) or not _only(list, parts) or lengths != list(map(len, parts)):
            return None
        raw_flat, flat = list(chain.from_iterable(raw_parts)), list(chain.from_iterable(parts))
    except Exception:  # a message of another shape
        return None
    return (lengths, raw_flat, flat) if _only(dict, raw_flat) else None


def _place(lengths: list[int], moved: list[int]) -> Iterator[tuple[int, int]]:
    """Where each of the parts ``moved`` (indices into :func:`_flat_parts`'s lists) sits: (message, part)."""
    ends = list(accumulate(lengths))
    for at in moved:
        index = bisect_right(ends, at)
        yield index, at - (ends[index - 1] if index else 0)


def _moved(stored: list[Json], loaded: list[Any]) -> list[tuple[int, int, Any]] | None:
    """The parts held as another kind than stored, as (message index, part index, part), found
    by comparing all stored and held kinds at once rather than part by part. None where the
    history is not of the plain shape (:func:`_flat_parts`, each part with its kind): the
    part-by-part walk decides there."""
    found = _flat_parts(stored, loaded)
    if found is None:
        return None
    lengths, raw_flat, flat = found
    try:
        kinds, held_kinds = list(map(_KIND_OF_PART, raw_flat)), list(map(_HELD_KIND_OF_PART, flat))
    except Exception:  # a part without its kind
        return None
    moved = _differing(kinds, held_kinds)
    return [
        (index, at, flat[flat_at]) for (index, at), flat_at in zip(_place(lengths, moved), moved, strict=True)
    ]


class _CannotProve(Exception):
    """The stored JSON has something the tables cannot vouch for: the real round trip decides."""


def _same(one: Json, other: Json) -> bool:
    # JSON equality without Python's True == 1 == 1.0: a bool default is no int default
    return type(one) is type(other) and one == other


def _dropped(value: Json, default: Json, path: str) -> list[tuple[str, Json, Json]]:
    """A stored value B does not hold: A gets its default back, so the trip loses it unless it
    is that default. A JSON scalar of the default's own type (or any value, against a None
    default) stays as stored on A's load; anything else could load as something else there."""
    from ._meaning import differences

    if value == default and type(value) is type(default):
        return []
    scalar = value is None or isinstance(value, (str, int, float, bool))
    both_dicts = isinstance(value, dict) and isinstance(default, dict)
    if default is not None and not (scalar and type(value) is type(default)) and not both_dicts:
        raise _CannotProve
    return list(differences(value, default, path))


def _held_as_stored(held: object, value: Json, *, same_type: bool) -> bool:
    """Whether B holds the stored value so that its dump loads on A as the stored value does: the
    value itself (a scalar, or a container B keeps as it is), or, where both annotate the field
    alike, a timestamp it parsed (it writes the same instant back) or an enum member of it."""
    if held == value and (value is None or type(held) is type(value)):
        return True
    if same_type and isinstance(value, str):
        if isinstance(held, datetime.datetime):
            return True
        return isinstance(held, enum.Enum) and held.value == value
    return False


def _held_containers(raw: dict[str, Json], held: object, keys: tuple[str, ...]) -> None:
    """Raise unless B holds each dict or list stored under ``keys`` as it was stored."""
    for key in keys:
        value = raw[key]
        if isinstance(value, (dict, list)) and not _held_as_stored(
            getattr(held, key, None), value, same_type=True
        ):
            raise _CannotProve


#: Where a value sits, kept as (parent, key, index) and written out only for a loss:
#: ``((None, None, 2), "parts", 0)`` is ``[2].parts[0]``.
_Path = tuple[Any, str | None, int | None]


def _render(path: _Path | None) -> str:
    if path is None:
        return ""
    parent, key, index = path
    return _render(parent) + ("" if key is None else f".{key}") + ("" if index is None else f"[{index}]")


@dataclasses.dataclass(frozen=True, slots=True)
class _Walk:
    """A plan (:meth:`TripProof._make_plan`) sorted for the walk: the class B must hold it as, the
    keys whose value B must hold as stored (``containers``: only a dict or list needs looking at,
    the annotations being the same), and the steps that can name losses, in A's field order."""

    cls: str
    containers: tuple[str, ...]
    values: tuple[str, ...]
    steps: tuple[tuple[str, str, Json], ...]

    @classmethod
    def of(cls, name: str, plan: list[tuple[str, str, Json]]) -> _Walk:
        return cls(
            name,
            tuple(key for how, key, _ in plan if how == "container"),
            tuple(key for how, key, _ in plan if how == "value"),
            tuple(step for step in plan if step[0] in {"dropped", "parts", "nested"}),
        )


class TripProof:
    """Whether the round trip installed release (A) -> B -> A provably loses nothing, from A's and
    B's :func:`field_table` (B's is this process's when it runs in B's environment)."""

    def __init__(self, a: Mapping[str, Json], b: Mapping[str, Json]) -> None:
        self._a, self._b = a, b
        #: (owner, stored keys) -> the checks each value needs, or None when nothing can be proven
        self._plans: dict[tuple[str, frozenset[str]], list[tuple[str, str, Json]] | None] = {}
        #: the same per key order, sorted for the walk (:class:`_Walk`)
        self._walks: dict[tuple[str, tuple[str, ...]], _Walk | None] = {}
        #: (message kind, stored keys, class B holds it as) -> whether it only holds scalars and its parts
        self._simple: dict[tuple[str, tuple[str, ...], type], bool] = {}
        #: (part kind, stored keys, class B holds it as) -> its plain walk, or False
        self._plain: dict[tuple[str, tuple[str, ...], type], _Walk | typing.Literal[False]] = {}

    def losses(
        self, stored: Json, loaded: list[Any], translated: Mapping[str, Json] | None = None
    ) -> list[tuple[str, Json, Json]] | None:
        """What loading ``loaded`` (B's messages of the stored JSON ``stored``) back on A loses
        of what A loads of ``stored``, as the real trip names it (path, A's value, what A gets
        back), in the trip's order; None when that cannot be proven. ``translated``:
        :func:`translated_parts` of the same history on A."""
        if not isinstance(stored, list) or len(stored) != len(loaded):
            return None
        if self._plainly_lossless(stored, loaded, translated or {}):
            return []
        lost: list[tuple[str, Json, Json]] = []
        try:
            for index, (raw, message) in enumerate(zip(stored, loaded, strict=True)):
                kind = raw.get("kind") if isinstance(raw, dict) else None
                if not isinstance(kind, str) or getattr(message, "kind", None) != kind:
                    return None
                self._check(raw, message, kind, (None, None, index), (index, translated or {}), lost)
        except _CannotProve:
            return None
        return lost

    def _plainly_lossless(
        self, stored: list[Json], loaded: list[Any], translated: Mapping[str, Json]
    ) -> bool:
        """Whether the history is lossless the plain way, as :meth:`_check` would find it: every
        message holds its kind, scalars and its parts, every part (but those A and B both
        translated) takes a plain walk (:meth:`_plain_walk`), every dict or list in a part is
        held as stored. Checked a list of messages or parts at a time (``map`` runs in C), not
        a value at a time. False: it cannot tell, and the walk decides."""
        try:
            kinds = list(map(_KIND, stored))
            if kinds != list(map(_HELD_KIND, loaded)) or not _only(str, kinds):
                return False
            simple = self._simple
            shapes = list(zip(kinds, map(tuple, stored), map(type, loaded), strict=True))
            if not all(map(simple.get, shapes)):
                for shape in shapes:
                    if shape not in simple:
                        simple[shape] = self._simple_message(*shape)
                if not all(map(simple.get, shapes)):
                    return False
            # a message's values: scalars, and its parts (the one list in it)
            values = Counter(map(type, chain.from_iterable(map(dict.values, stored))))
            if not values.keys() <= _SCALARS | {list} or values[list] != len(stored):
                return False
            found = _flat_parts(stored, loaded)
            if found is None:
                return False
            lengths, raw_flat, flat = found
            part_kinds = list(map(_KIND_OF_PART, raw_flat))
            plain = self._plain
            part_shapes = list(zip(part_kinds, map(tuple, raw_flat), map(type, flat), strict=True))
            walks = list(map(plain.get, part_shapes))
            if None in walks:
                for shape in part_shapes:
                    if shape not in plain:
                        plain[shape] = self._plain_walk(*shape)
                walks = list(map(plain.get, part_shapes))
            held_kinds = list(map(_HELD_KIND_OF_PART, flat))
            moved = _differing(part_kinds, held_kinds)
            for at in moved:  # A and B both loaded it as another kind: proven on its own (_translated)
                walks[at] = None
            if False in walks or None in part_kinds:
                return False
            scalars = map(_SCALARS.issuperset, map(map, repeat(type), map(dict.values, raw_flat)))
            for at in compress(range(len(flat)), map(not_, scalars)):
                walk = walks[at]
                if walk:
                    _held_containers(raw_flat[at], flat[at], walk.containers)
            for (index, at), flat_at in zip(_place(lengths, moved), moved, strict=True):
                self._translated(translated.get(_where(index, at)), flat[flat_at])
        except Exception:  # anything odd (or a check that fails): the walk decides, as it always did
            return False
        return True

    def _simple_message(self, kind: str, keys: tuple[str, ...], cls: type) -> bool:
        """Whether a message of ``kind`` with ``keys`` held as ``cls`` takes a walk with no
        step but its parts, and ``cls`` is the class B must hold it as."""
        walk = self._walk(kind, keys)
        return not (
            walk is None
            or walk.values
            or walk.steps != (("parts", "parts", None),)
            or cls.__name__ != walk.cls
        )

    def _plain_walk(self, kind: str, keys: tuple[str, ...], cls: type) -> _Walk | typing.Literal[False]:
        """The walk of a part of ``kind`` with ``keys`` held as ``cls`` when it only checks that
        dicts and lists are held as stored (every key is such a check) and ``cls`` is the class
        B must hold, else False."""
        walk = self._walk(f"part:{kind}", keys)
        if walk is None or walk.values or walk.steps or cls.__name__ != walk.cls:
            return False
        return walk

    def lossless(self, stored: Json, loaded: list[Any], translated: Mapping[str, Json] | None = None) -> bool:
        """Whether :meth:`losses` proves that nothing is lost."""
        return self.losses(stored, loaded, translated) == []

    def _translated(self, on_a: Json | None, part: object) -> None:
        """A part B loaded as another kind than stored: lossless when A made the same of it (A
        loads B's dump of it to what A loaded from the stored part)."""
        if on_a is None:
            raise _CannotProve
        on_b = _dump(part)
        owner = self._a.get(f"part:{on_a.get('part_kind')}")
        if owner is None:
            raise _CannotProve
        fields = owner["fields"]
        for key, value in on_a.items():
            if key in on_b:
                if on_b[key] != value:
                    raise _CannotProve
                continue
            field = fields.get(key)
            default = None if field is None else field["default"]
            if default is None or default == FACTORY or not _same(value, default["value"]):
                raise _CannotProve
        if any(key in fields for key in on_b if key not in on_a):
            raise _CannotProve  # A would read it, though its own dump leaves it out

    def _check(  # noqa: PLR0917 (one step of a walk: where it is, and what it carries)
        self,
        raw: dict[str, Json],
        held: object,
        owner: str,
        path: _Path,
        message: tuple[int, Mapping[str, Json]],
        lost: list[tuple[str, Json, Json]],
    ) -> None:
        walk = self._walk(owner, tuple(raw))
        if walk is None or type(held).__name__ != walk.cls:
            raise _CannotProve
        # a check that fails anywhere fails the whole proof, so only the steps that name
        # losses need the trip's order; the value checks come first, in any order
        _held_containers(raw, held, walk.containers)
        for key in walk.values:
            if not _held_as_stored(getattr(held, key, None), raw[key], same_type=False):
                raise _CannotProve
        for how, key, detail in walk.steps:
            value = raw[key]
            if how == "dropped":
                lost.extend(_dropped(value, detail, f"{_render(path)}.{key}"))
            elif how == "parts":
                parts = getattr(held, key, None)
                if not isinstance(value, list) or not isinstance(parts, list) or len(value) != len(parts):
                    raise _CannotProve
                index, translated = message
                for at, (raw_part, part) in enumerate(zip(value, parts, strict=True)):
                    kind = raw_part.get("part_kind") if isinstance(raw_part, dict) else None
                    if kind is None:
                        raise _CannotProve
                    if getattr(part, "part_kind", None) != kind:
                        self._translated(translated.get(_where(index, at)), part)
                    else:
                        self._check(raw_part, part, f"part:{kind}", (path, key, at), message, lost)
            else:  # nested
                if not isinstance(value, dict):
                    raise _CannotProve
                self._check(value, getattr(held, key, None), detail, (path, key, None), message, lost)

    def _walk(self, owner: str, keys: tuple[str, ...]) -> _Walk | None:
        """What checking a stored value of ``owner`` with ``keys`` (in the stored order) takes,
        worked out once per owner and key order (a store repeats a few shapes over and over)."""
        walk = self._walks.get((owner, keys), self)
        if walk is self:
            plan = self._plan(owner, frozenset(keys))
            walk = None if plan is None else _Walk.of(self._b[owner]["class"], plan)
            self._walks[(owner, keys)] = walk
        return walk  # type: ignore[return-value]

    def _plan(self, owner: str, keys: frozenset[str]) -> list[tuple[str, str, Json]] | None:
        found = self._plans.get((owner, keys), self)
        if found is self:
            try:
                found = self._make_plan(owner, keys)
            except _CannotProve:
                found = None
            self._plans[(owner, keys)] = found
        return found  # type: ignore[return-value]

    def _make_plan(self, owner: str, keys: frozenset[str]) -> list[tuple[str, str, Json]]:
        a, b = self._a.get(owner), self._b.get(owner)
        if a is None or b is None:
            raise _CannotProve
        a_fields, b_fields = a["fields"], b["fields"]
        if not keys <= a_fields.keys():  # A ignores it, or reads it under another name
            raise _CannotProve
        plan: list[tuple[str, str, Json]] = []
        for key in (name for name in a_fields if name in keys):  # in A's order, as A dumps them
            on_a, on_b = a_fields[key], b_fields.get(key)
            if not on_a["by_name"] or (on_b is not None and not on_b["by_name"]):
                raise _CannotProve  # read under another name: the trip decides
            if on_b is None:  # B drops it: A loads its default back, fine when that is what was stored
                default = on_a["default"]
                if default is None or default == FACTORY:
                    raise _CannotProve
                plan.append(("dropped", key, default["value"]))
            elif key == "parts":
                plan.append(("parts", key, None))
            elif on_a["nested"] and on_b["nested"]:
                plan.append(("nested", key, on_a["nested"]))
            elif on_a["type"] == on_b["type"] and "Validator" not in on_a["type"]:
                # a JSON scalar loads alike on both (the same annotation, no validator of its
                # own); a container only where B holds it as stored
                plan.append(("container", key, True))
            else:
                plan.append(("value", key, False))
        for name, on_a in a_fields.items():
            if name not in keys:
                self._left_out(name, on_a, b_fields.get(name))
        return plan

    def _left_out(self, name: str, on_a: Json, on_b: Json | None) -> None:
        """A field the stored JSON leaves out: A makes its default; B's dump writes B's, which A
        then loads. Lossless when both give the same value."""
        if on_a["default"] is None or on_a["default"] == FACTORY:
            raise _CannotProve
        if on_b is None:
            return  # B does not have it: A makes the same default again
        if on_b["default"] is None or on_b["default"] == FACTORY:
            raise _CannotProve
        mine, theirs = on_a["default"]["value"], on_b["default"]["value"]
        if on_a["nested"] and on_b["nested"] and isinstance(theirs, dict):
            # B's default of a nested dataclass is stored JSON to A: check it the same way
            plan = self._plan(on_a["nested"], frozenset(theirs))
            if plan is None or not isinstance(mine, dict):
                raise _CannotProve
            for how, key, detail in plan:
                if how == "dropped" and not _same(theirs[key], detail):
                    raise _CannotProve
                if how != "dropped" and (key not in mine or not _same(theirs[key], mine[key])):
                    raise _CannotProve
        elif not _same(mine, theirs):
            raise _CannotProve

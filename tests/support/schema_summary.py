"""What a release's history schema declares, as plain data: message kinds, part kinds, their
fields and the literal values each field allows. Pure (no pydantic-ai import), so the release
watch (tools/release_watch.py) compares two releases' schemas in a process holding neither."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Summary = dict[str, dict[str, list[Any]]]

_PREFIX = "#/$defs/"


def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_PREFIX):
        return schema.get("$defs", {}).get(ref[len(_PREFIX) :], {})  # type: ignore[no-any-return]
    return node


def _branches(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The object schemas a union node stands for, nested unions flattened, references resolved."""
    node = _resolve(schema, node)
    union = node.get("oneOf") or node.get("anyOf")
    if union:
        for branch in union:
            yield from _branches(schema, branch)
    elif node.get("type") == "object" or "properties" in node:
        yield node


def literals(schema: Mapping[str, Any], node: Mapping[str, Any]) -> list[Any]:
    """The literal values (``const``, ``enum``) a field allows, through unions (``None`` left out)."""
    node = _resolve(schema, node)
    found: list[Any] = []
    if "const" in node:
        found.append(node["const"])
    found.extend(node.get("enum", ()))
    for branch in node.get("anyOf") or node.get("oneOf") or ():
        found.extend(v for v in literals(schema, branch) if v not in found)
    return [v for v in found if v is not None]


def _kind_key(node: Mapping[str, Any], field: str) -> Any:
    const = literals({}, node.get("properties", {}).get(field, {}))
    return const[0] if len(const) == 1 else node.get("title", "?")


def _fields(
    schema: Mapping[str, Any],
    node: Mapping[str, Any],
    into: dict[str, list[Any]],
    prefix: str = "",
    depth: int = 0,
) -> None:
    """Every field of the object ``node``, and of the objects its fields hold (as ``source.authority``,
    down to ``MAX_DEPTH``), into ``into`` with their literal values."""
    for field, child in node.get("properties", {}).items():
        path = f"{prefix}{field}"
        values = into.setdefault(path, [])
        values.extend(v for v in literals(schema, child) if v not in values)
        if depth < MAX_DEPTH:
            for inner in _branches(schema, child):
                _fields(schema, inner, into, f"{path}.", depth + 1)


#: How deep into a part's nested objects fields are listed (``source.authority`` is depth 1).
MAX_DEPTH = 2


def summarize(schema: Mapping[str, Any]) -> Summary:
    """``{"message <kind>" | "part <part_kind>": {field: literal values}}`` for ``schema``, a
    release's ``ModelMessagesTypeAdapter.json_schema()``; nested fields as ``source.authority``.

    Part kinds sharing one ``part_kind`` (a capability part's variants) are one entry, their
    fields and values merged: what a stored history can hold under that kind.
    """
    summary: Summary = {}
    for message in _branches(schema, schema.get("items", {})):
        properties = message.get("properties", {})
        envelope = {**message, "properties": {f: s for f, s in properties.items() if f != "parts"}}
        _fields(schema, envelope, summary.setdefault(f"message {_kind_key(message, 'kind')}", {}))
        for part in _branches(schema, properties.get("parts", {}).get("items", {})):
            _fields(schema, part, summary.setdefault(f"part {_kind_key(part, 'part_kind')}", {}))
    return summary

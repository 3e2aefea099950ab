"""How deep a history nests, said in one line when something could not read or write it.

A history nests a few levels: the list of messages, a message, its parts, a part, then the tool
arguments or results inside it (measured in docs/portable-json.md: 9 at most). Nothing checks
that on the way in: pydantic-ai's own JSON reader refuses a document nested deeper than it reads
(201 levels on pydantic-core 2.x), which covers the fast path for free, and everything histfix
does with what it loaded stays far inside Python's recursion limit. Nesting only matters once
something failed on it (the reader, ``json``, the serializer, ``repr``), so the walks here run
only then, and turn the failure into a ``ValueError`` that names the depth.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence

__all__ = [
    "PART_LEVELS",
    "deepest_field",
    "depth_limit",
    "describe_nesting",
    "text_nesting",
    "text_or_depth",
    "too_deep_text",
    "too_deep_value",
    "value_depth",
]

#: The levels of a history's JSON around a part's field: the list, a message, its parts, the part.
PART_LEVELS = 4
#: The same around a message's field: the list and the message.
_MESSAGE_LEVELS = 2

# A JSON string (escapes included) or one bracket: what the scan steps over and what it counts.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def depth_limit() -> int:
    """How deep a document the installed release's JSON reader loads (probed once)."""
    from .._release.probes import json_depth_limit

    return json_depth_limit()


def text_nesting(data: str | bytes | bytearray, limit: int) -> tuple[int, int, int] | None:
    """How deep the JSON text ``data`` nests, and the line and column of its first bracket deeper
    than ``limit``; None when it stays within ``limit``. Strings are stepped over, so brackets in
    them do not count; the text need not be valid JSON past that point."""
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="replace")
    depth = deepest = 0
    first_over = -1
    for match in _STRING_OR_BRACKET.finditer(text):
        char = text[match.start()]
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > limit and first_over < 0:
                    first_over = match.start()
        elif char in "]}":
            depth -= 1
    if first_over < 0:
        return None
    line = text.count("\n", 0, first_over) + 1
    column = first_over - (text.rfind("\n", 0, first_over) + 1) + 1
    return deepest, line, column


def value_depth(value: object) -> int:
    """How deep ``value`` nests as JSON (dicts, lists and tuples count; a scalar is 0), without
    recursion. A container met again (shared, or a cycle) is not entered twice."""
    deepest = 0
    seen: set[int] = set()
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list | tuple) or id(node) in seen:
            continue
        seen.add(id(node))
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in _children(node))
    return deepest


def _children(node: dict[object, object] | list[object] | tuple[object, ...]) -> Iterator[object]:
    return iter(node.values()) if isinstance(node, dict) else iter(node)


def describe_nesting(depth: int, limit: int, *, path: str | None = None) -> str:
    """The one line for a history nested deeper than one may be, at its JSON ``path`` if known."""
    text = (
        f"nested {depth} levels deep, more than the {limit} a history may have "
        "(pydantic-ai's JSON reader refuses deeper)"
    )
    return f"{path}: {text}" if path else text


def too_deep_text(data: str | bytes | bytearray) -> str | None:
    """The one line for the JSON text ``data`` if it nests deeper than the reader reads, else None."""
    limit = depth_limit()
    found = text_nesting(data, limit)
    if found is None:
        return None
    depth, line, column = found
    return f"{describe_nesting(depth, limit)}; level {limit + 1} opens at line {line}, column {column}"


def too_deep_value(value: object, where: str, *, above: int) -> str:
    """The one line for ``value`` at ``where``, inside ``above`` levels of the history, which
    something ran out of stack rendering."""
    return describe_nesting(above + value_depth(value), depth_limit(), path=where)


def deepest_field(messages: Sequence[object]) -> tuple[int, str]:
    """How deep the history ``messages`` would nest as JSON, and the path of the field that does it.

    The list, a message and its fields' values count, then ``parts``, a part and its fields'.
    """
    deepest, where = 1, "messages"
    for i, message in enumerate(messages):
        for name, value in _fields(message):
            if name == "parts" and isinstance(value, list | tuple):
                for j, part in enumerate(value):
                    for field, inner in _fields(part):
                        depth = PART_LEVELS + value_depth(inner)
                        if depth > deepest:
                            deepest, where = depth, f"messages[{i}].parts[{j}].{field}"
                continue
            depth = _MESSAGE_LEVELS + value_depth(value)
            if depth > deepest:
                deepest, where = depth, f"messages[{i}].{name}"
    return deepest, where


def _fields(obj: object) -> list[tuple[str, object]]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj)]
    return []


def text_or_depth(render: Callable[[object], str], value: object) -> str:
    """``render(value)``, or, when that runs out of stack, what the value is instead of its text.

    For previews of content (a repair report's), which must not fail the repair they describe.
    """
    try:
        return render(value)
    except RecursionError:
        return f"(content nested {value_depth(value)} levels deep)"

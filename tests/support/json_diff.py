"""Where two JSON values differ, as readable paths: what a failing differential names."""

from __future__ import annotations

from typing import Any

#: What a path shows for a key one side lacks.
MISSING = "<missing>"


def differences(ours: Any, theirs: Any, path: str = "", limit: int = 5) -> list[str]:
    """Up to ``limit`` lines ``path: ours != theirs``, in document order, for the leaves that differ.

    Paths read like ``[2].metadata.__pydantic_ai__.deferred_pause`` (list indexes in brackets,
    object keys after dots); a key or list item one side lacks shows as ``<missing>`` there.
    """
    found: list[str] = []
    _walk(ours, theirs, path, found, limit)
    return found


def _walk(ours: Any, theirs: Any, path: str, found: list[str], limit: int) -> None:
    if len(found) >= limit:
        return
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            _walk(ours.get(key, MISSING), theirs.get(key, MISSING), f"{path}.{key}", found, limit)
        return
    if isinstance(ours, list) and isinstance(theirs, list):
        for index in range(max(len(ours), len(theirs))):
            mine = ours[index] if index < len(ours) else MISSING
            other = theirs[index] if index < len(theirs) else MISSING
            _walk(mine, other, f"{path}[{index}]", found, limit)
        return
    if ours != theirs or type(ours) is not type(theirs):
        found.append(f"{path or '.'}: {_short(ours)} != {_short(theirs)}")


def _short(value: Any, width: int = 80) -> str:
    text = value if value == MISSING else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."

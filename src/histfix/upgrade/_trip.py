"""The JSON round trip, run for real: a history loaded on A, B's dump of it loaded on A again.

Run on the installed release (A) for the histories whose trip :class:`~._fields.TripProof` could
not prove lossless; what it returns is what every round trip in a record says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._observe import loader_error

__all__ = ["LOSSES_SHOWN", "LOSSLESS", "differences", "general", "round_trip"]

Json = dict[str, Any]
#: Round-trip losses named per history (the rest are counted).
LOSSES_SHOWN = 5
#: What a trip that loses nothing says.
LOSSLESS: Json = {"error": None, "lost": 0, "lost_paths": []}


def general(path: str) -> str:
    """``[2].parts[0].outcome`` as ``[*].parts[*].outcome``: the field, whichever message."""
    out, inside = [], False
    for char in path:
        if char == "[":
            inside = True
            out.append("[*]")
        elif char == "]":
            inside = False
        elif not inside:
            out.append(char)
    return "".join(out)


def differences(before: Any, after: Any, path: str = "") -> Iterator[str]:
    """The paths where ``after`` lost or changed what ``before`` held (pydantic-ai JSON data)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            if key not in after:
                yield f"{path}.{key}"
            else:
                yield from differences(value, after[key], f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (one, other) in enumerate(zip(before, after, strict=True)):
            yield from differences(one, other, f"{path}[{index}]")
    elif before != after:
        yield path or "(the whole history)"


def round_trip(history: bytes, dumped: bytes) -> Json:
    """What the installed release loses of ``history`` (which it loads) when it loads ``dumped``,
    another release's dump of it instead: the loader's error, or the paths it lost."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    mine = ModelMessagesTypeAdapter.dump_python(ModelMessagesTypeAdapter.validate_json(history), mode="json")
    try:
        back = ModelMessagesTypeAdapter.validate_json(dumped)
    except Exception as exc:
        return {"error": loader_error(exc), "lost": 0, "lost_paths": []}
    lost = list(differences(mine, ModelMessagesTypeAdapter.dump_python(back, mode="json")))
    return {"error": None, "lost": len(lost), "lost_paths": lost[:LOSSES_SHOWN]}

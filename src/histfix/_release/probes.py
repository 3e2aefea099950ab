"""What the installed release's own JSON loader accepts, probed once per question and cached.

Where a part kind or an enum-like value was added in a range of releases that cannot be named in
advance (or one release types it differently), histfix asks the release itself: it builds the
smallest history that holds the value and loads it with ``ModelMessagesTypeAdapter.validate_json``.
Used by :mod:`histfix._portable` (loading JSON from other releases) and by the walk (whether a
synthesized return may copy its call's ``tool_kind``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import warnings
from typing import Any

from .installed import pydantic_ai_messages

__all__ = [
    "PROBED_PART_KINDS",
    "content_item_loads",
    "field_names",
    "json_depth_limit",
    "message_fields",
    "message_value_kept",
    "part_fields",
    "part_kind_loads",
    "part_value_kept",
    "probe_load",
    "request_part_value_kept",
    "return_tool_kind_loads",
]


def field_names(cls: type) -> frozenset[str]:
    """The dataclass fields of a pydantic-ai class."""
    return frozenset(field.name for field in dataclasses.fields(cls))


@functools.cache
def return_tool_kind_loads(kind: str) -> bool:
    """Whether a synthesized return with this ``tool_kind`` loads back from the release's own JSON.

    1.95.0-2.57.x validate ``tool_kind`` against a Literal of core kinds, and some of them type
    a core kind's content (1.107.10 loads a ``'tool-search'`` return as a ``ToolSearchReturnPart``,
    whose content must be an object), so the newest behaviour, copying the call's kind, would
    write a history that release cannot read. Probed once per kind, not guessed from a version.
    """
    messages = pydantic_ai_messages()
    probe = messages.ToolReturnPart(
        tool_name="probe",
        content="probe",  # text, as a synthesized return's content is
        tool_call_id="probe",
        tool_kind=kind,  # type: ignore[call-arg,unused-ignore]
    )
    adapter = messages.ModelMessagesTypeAdapter
    try:
        adapter.validate_json(adapter.dump_json([messages.ModelRequest(parts=[probe])]))
    except Exception:
        return False
    return True


#: The smallest valid part of each tool part kind whose enum-like fields (``outcome``,
#: ``tool_kind``) changed their allowed values between releases, with the message kind it lives
#: in. The probes below add one field to it and see what the release makes of it.
_PROBE_PARTS: dict[str, tuple[str, dict[str, Any]]] = {
    "tool-call": ("response", {"tool_name": "probe", "args": {}, "tool_call_id": "probe"}),
    "builtin-tool-call": ("response", {"tool_name": "probe", "args": {}, "tool_call_id": "probe"}),
    "tool-return": ("request", {"tool_name": "probe", "content": "probe", "tool_call_id": "probe"}),
    "builtin-tool-return": ("response", {"tool_name": "probe", "content": "probe", "tool_call_id": "probe"}),
}
#: The part kinds :func:`part_value_kept` can probe.
PROBED_PART_KINDS: frozenset[str] = frozenset(_PROBE_PARTS)


def probe_load(data: list[dict[str, Any]]) -> list[Any] | None:
    """``data`` loaded the way the release loads stored JSON, or None if the release rejects it.

    Always through ``validate_json``: JSON mode is what a store's reader uses, and it differs from
    Python mode (base64 bytes, for one).
    """
    from pydantic import ValidationError

    try:
        return list(pydantic_ai_messages().ModelMessagesTypeAdapter.validate_json(json.dumps(data)))
    except ValidationError:
        return None


@functools.lru_cache(maxsize=256)
def part_kind_loads(message_kind: str, part_kind: str) -> bool:
    """Whether the release knows ``part_kind`` inside a ``message_kind`` (request/response) message.

    Part types come and go across releases (``RetryFeedbackPart`` 2.60.0, ``SpeechPart``,
    ``CompactionPart``, ``FilePart``…), and each release accepts its own set in requests and in
    responses. Probed with a part that has nothing but its kind: a known kind then fails only on
    missing fields, an unknown one on the discriminator's tag.
    """
    from pydantic import ValidationError

    try:
        with warnings.catch_warnings():
            # 2.78.0 warns that a capability part of no registered kind loads as an unknown one.
            warnings.simplefilter("ignore")
            pydantic_ai_messages().ModelMessagesTypeAdapter.validate_json(
                json.dumps([{"kind": message_kind, "parts": [{"part_kind": part_kind}]}])
            )
    except ValidationError as exc:
        return not any(error["type"].startswith("union_tag_") for error in exc.errors())
    return True


@functools.lru_cache(maxsize=16)
def part_fields(part_kind: str) -> frozenset[str]:
    """The fields the release's class for a tool ``part_kind`` has (empty if it cannot load one).

    A field the release does not have is ignored on load, as pydantic-ai ignores every unknown
    key; only a field it has can reject a value.
    """
    message_kind, base = _PROBE_PARTS[part_kind]
    loaded = probe_load([{"kind": message_kind, "parts": [{**base, "part_kind": part_kind}]}])
    return frozenset() if loaded is None else field_names(type(loaded[0].parts[0]))


@functools.lru_cache(maxsize=1024)
def part_value_kept(part_kind: str, field: str, value: str) -> bool:
    """Whether a minimal ``part_kind`` part with ``field=value`` loads and still holds the value.

    Covers the enum-like tool part fields whose allowed values grew release by release:
    ``outcome`` (absent before 1.67.0; ``'interrupted'`` from 2.10.0, ``'retried'`` from 2.60.0) and
    ``tool_kind`` (absent before 1.95.0; a Literal of core kinds until 2.57.x, any string from
    2.58.0). Typed core kinds (``'tool-search'``…) need their own content shape, so a False here
    for ``tool_kind`` only means "not with arbitrary content"; the caller checks such a part as
    it is.
    """
    message_kind, base = _PROBE_PARTS[part_kind]
    loaded = probe_load([{"kind": message_kind, "parts": [{**base, "part_kind": part_kind, field: value}]}])
    return loaded is not None and getattr(loaded[0].parts[0], field, None) == value


@functools.lru_cache(maxsize=4)
def message_fields(message_kind: str) -> frozenset[str]:
    """The fields of the release's ``ModelRequest`` or ``ModelResponse``."""
    messages = pydantic_ai_messages()
    cls = messages.ModelRequest if message_kind == "request" else messages.ModelResponse
    return field_names(cls)


@functools.lru_cache(maxsize=256)
def message_value_kept(message_kind: str, field: str, value: str) -> bool:
    """Whether an empty ``message_kind`` message with ``field=value`` loads and keeps the value.

    For the enum-like message fields: ``state`` (``ModelResponse`` from 1.92.0 with
    ``'complete'``/``'interrupted'``, ``'incomplete'`` added by 1.107.10 and ``'suspended'`` in
    2.10.0; ``ModelRequest`` from 2.0.0) and ``finish_reason``.
    """
    loaded = probe_load([{"kind": message_kind, "parts": [], field: value}])
    return loaded is not None and getattr(loaded[0], field, None) == value


#: The smallest valid request part of each kind whose later fields histfix asks about, beside the
#: tool parts above: ``SystemPromptPart.scope`` and ``InstructionDeltaPart.authority``.
_PROBE_REQUEST_PARTS: dict[str, dict[str, Any]] = {
    "system-prompt": {"content": "probe"},
    "instruction-delta": {"id": "agent", "content": "probe"},
}


@functools.lru_cache(maxsize=16)
def request_part_value_kept(part_kind: str, field: str, value: str) -> bool:
    """Whether a minimal request part of ``part_kind`` with ``field=value`` loads holding the value.

    ``SystemPromptPart.scope='request'`` (2.68.0 has it; 1.x and 2.9.1 do not) and
    ``InstructionDeltaPart.authority`` (2.78.0; 2.68.0 has the part and ignores the field, so
    text below ``'operator'`` would load as the application's own instruction).
    """
    part = {**_PROBE_REQUEST_PARTS[part_kind], "part_kind": part_kind, field: value}
    loaded = probe_load([{"kind": "request", "parts": [part]}])
    return loaded is not None and getattr(loaded[0].parts[0], field, None) == value


@functools.lru_cache(maxsize=8)
def content_item_loads(kind: str) -> bool:
    """Whether a user prompt's content list holds a ``text-content`` or ``structured-content`` item.

    ``TextContent`` appears between 1.0.0 and 1.107.10, ``StructuredContent`` by 2.68.0; a release
    without them loads neither (it rejects the list).
    """
    item: dict[str, Any] = {"kind": kind, "content": "probe"}
    if kind == "structured-content":
        item["value"] = "probe"
    loaded = probe_load([{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": ["", item]}]}])
    return loaded is not None and getattr(loaded[0].parts[0].content[1], "kind", None) == kind


@functools.cache
def json_depth_limit() -> int:
    """How deep a JSON document the release's loader reads: deeper, it refuses the text.

    pydantic-core's parser stops at a fixed recursion limit (201 levels, counting the top-level
    list, in pydantic-core 2.x); found by halving, for the one line that names it.
    """
    from pydantic import ValidationError

    adapter = pydantic_ai_messages().ModelMessagesTypeAdapter
    low, high = 1, 1 << 14  # low is read; high is refused, or the most anything here would try
    while high - low > 1:
        middle = (low + high) // 2
        try:
            adapter.validate_json("[" * middle + "]" * middle)
        except ValidationError as exc:
            if exc.errors()[0]["type"] == "json_invalid":
                high = middle
                continue
        low = middle
    return low

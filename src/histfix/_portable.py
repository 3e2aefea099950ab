"""Portable JSON: load a history written by any release from 1.0.0 to 2.78.0 on the installed one.

pydantic-ai's own ``ModelMessagesTypeAdapter.validate_json`` ignores fields it does not know but
rejects values it does not know, so JSON written by a newer release often fails on an older one
(``outcome='interrupted'`` on 1.67-2.9, ``outcome='retried'`` and ``RetryFeedbackPart`` before
2.60, a custom ``tool_kind`` before 2.58), and 1.0-1.66 even load a 2.60+ retry as a successful
tool return. Teams that upgrade workers one at a time share one store, so :func:`load_json` works
on the parsed JSON first and turns what the installed release cannot represent into its nearest
equivalent:

* a tool-bound ``tool-return`` with ``outcome='retried'`` (2.60+) becomes the ``retry-prompt``
  that older releases write for the same retry (content, tool name, call id, timestamp kept);
* a ``retry-feedback`` part (2.60+) becomes a tool-less ``retry-prompt`` (content, timestamp);
* an ``outcome``, ``tool_kind``, ``state`` or ``finish_reason`` value the release does not keep is
  removed, so the field takes its default; everything else on the part, such as the
  ``pydantic_ai_synthesized_tool_return`` marker in ``metadata``, stays;
* a capability part, and an ``instruction-delta`` below ``'operator'`` authority (2.78.0), become
  what 2.78.0 sends a model for them (:mod:`histfix._capability_render`): never text below
  ``'operator'`` in the application's voice.

Fields the release does not have at all are ignored, exactly as pydantic-ai itself ignores them
(one DEBUG record on the ``histfix`` logger lists them). Content is never dropped: a part kind the
release does not know, or any other value it rejects, raises ``ValueError`` naming the JSON path
of the first bad field. Every message is one line, so a command line can print it as it is, and
JSON nested deeper than the release's reader reads says how deep (:mod:`histfix._records.depth`).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse

from . import _capability_render as _render
from ._jsonerrors import describe_json_error
from ._oneline import first_line, squeezed
from ._records.depth import deepest_field, depth_limit, describe_nesting, too_deep_text
from ._records.inputs import as_history, check_messages
from ._release import probes as _load_probes
from ._release import table
from ._release.installed import current
from ._release.switches import has

__all__ = ["dump_json", "load_json"]

logger = logging.getLogger("histfix")

Json = dict[str, Any]

#: Message fields whose allowed values differ between releases; a value the release does not keep
#: is removed so that the field takes its default.
_MESSAGE_ENUM_FIELDS = ("state", "finish_reason")
#: The same for tool part fields, checked in this order (a retried return is converted first).
_PART_ENUM_FIELDS = ("outcome", "tool_kind")
#: The part kind a retry is stored as before 2.60.0, and the kind 2.60.0 added for a tool-less one.
_RETRY_PROMPT, _RETRY_FEEDBACK = "retry-prompt", "retry-feedback"
#: The part kind 2.78.0 stores what a capability or the application tells the model as.
_CAPABILITY = "capability"


def _release() -> str:
    return f"pydantic-ai {current()[1]}"


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type, with its article, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


# --- parsing -------------------------------------------------------------------------------------------


def _require_text(data: object) -> None:
    """A ``TypeError`` unless ``data`` is what ``load_json`` reads: JSON text."""
    if not isinstance(data, str | bytes | bytearray):
        hint = ""
        if isinstance(data, list | tuple):
            hint = "; to write loaded messages as JSON, use dump_json"
        raise TypeError(
            f"load_json() needs JSON text (str, bytes or bytearray), got {type(data).__name__}{hint}"
        )


def _parse(data: str | bytes | bytearray) -> list[Any]:
    """The JSON document as a list, or a one-line ``ValueError`` saying why it is not one."""
    _require_text(data)
    text = data.strip()
    if not text:
        raise ValueError("empty input: expected a pydantic-ai message history (a JSON list)")
    try:
        parsed = json.loads(data)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(describe_json_error(exc)) from exc
    if not isinstance(parsed, list):
        raise ValueError(f"not a history: expected a JSON list of messages, got {_json_type(parsed)}")
    return parsed


# --- conversions ---------------------------------------------------------------------------------------


def _retry_prompt(part: Json, *, tool_call_id: object) -> Json:
    """A ``retry-prompt`` part with ``part``'s retry fields; ``RetryPromptPart`` has no others."""
    converted: Json = {"part_kind": _RETRY_PROMPT, "content": part.get("content")}
    converted["tool_name"] = part.get("tool_name")
    if tool_call_id is not None:
        converted["tool_call_id"] = tool_call_id
    if "timestamp" in part:
        converted["timestamp"] = part["timestamp"]
    content = converted["content"]
    if isinstance(content, list | dict) and _load_probes.probe_load([_request(converted)]) is None:
        # 2.60+ store a retry's validation errors without the keys RetryPromptPart requires of each
        # (``ctx`` always, ``input`` when repeated); the JSON text keeps every word of them.
        converted["content"] = json.dumps(converted["content"], ensure_ascii=False)
    return converted


def _request(part: Json) -> Json:
    return {"kind": "request", "parts": [part]}


def _dropped(part: Json, kept: Json) -> str:
    """The non-null fields of ``part`` that ``kept`` no longer has, for the DEBUG record."""
    names = sorted(k for k, v in part.items() if k not in kept and v is not None)
    return f"; dropped {', '.join(names)}" if names else ""


def _convert_part(part: Json, message_kind: str, at: tuple[int, int]) -> Json:
    """``part`` (message and part index ``at``) as the installed release can load it.

    Raises ``ValueError`` naming the part's path when the release has no equivalent for it.
    """
    path = f"messages[{at[0]}].parts[{at[1]}]"
    part_kind = part.get("part_kind")
    if not isinstance(part_kind, str):
        raise ValueError(f"{path}: missing 'part_kind' (the part's type)")

    if part_kind == _RETRY_FEEDBACK and message_kind == "request" and not has(table.RETRY_FEEDBACK_PART):
        # A retry that answers no tool call: before 2.60.0 a RetryPromptPart without a tool name.
        # RetryPromptPart invents a random id when none is given; a fixed one keeps loading pure.
        call_id = part.get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) else f"histfix-retry-feedback-{at[0]}-{at[1]}"
        converted = _retry_prompt({**part, "tool_name": None}, tool_call_id=call_id)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: retry-feedback loaded as a tool-less retry-prompt%s", path, _dropped(part, converted)
            )
        return converted

    if not _load_probes.part_kind_loads(message_kind, part_kind):
        elsewhere = "response" if message_kind == "request" else "request"
        if _load_probes.part_kind_loads(elsewhere, part_kind) or (elsewhere, part_kind) == (
            "request",
            _CAPABILITY,
        ):
            raise ValueError(
                f"{path}: part_kind {part_kind!r} belongs in a {elsewhere}, not a {message_kind}"
            )
        raise ValueError(f"{path}: part_kind {part_kind!r} is not supported by {_release()}")

    if part_kind not in _load_probes.PROBED_PART_KINDS:
        return part
    has_field = _load_probes.part_fields(part_kind)
    for field in _PART_ENUM_FIELDS:
        value = part.get(field)
        if not isinstance(value, str) or _load_probes.part_value_kept(part_kind, field, value):
            continue
        if field not in has_field and value != "retried":
            continue  # ignored on load like any field the release lacks (listed at DEBUG)
        if field == "tool_kind" and _kept_as_it_is(part, message_kind, field):
            continue  # a typed core kind whose content has that kind's shape
        if (
            field == "outcome"
            and value == "retried"
            and part_kind == "tool-return"
            and isinstance(part.get("tool_name"), str)
            and not has(table.OUTCOME_RETRIED)
        ):
            converted = _retry_prompt(part, tool_call_id=part.get("tool_call_id"))
            if logger.isEnabledFor(logging.DEBUG):
                why = _dropped(part, converted)
                logger.debug("%s: tool-return with outcome='retried' loaded as a retry-prompt%s", path, why)
            return converted
        part = {k: v for k, v in part.items() if k != field}
        logger.debug("%s.%s: %r removed (%s does not keep it)", path, field, value, _release())
    return part


def _kept_as_it_is(part: Json, message_kind: str, field: str) -> bool:
    """Whether this very part loads with its ``field`` value kept (for typed core tool kinds)."""
    loaded = _load_probes.probe_load([{"kind": message_kind, "parts": [part]}])
    return loaded is not None and getattr(loaded[0].parts[0], field, None) == part.get(field)


#: Where a converted part came from: the stored part's index, and how far the converted part's
#: content list is shifted from the stored one's (a framed body opens with its tag).
Origin = tuple[int, int]


def _convert(messages: list[Any]) -> tuple[list[Json], list[list[Origin]]]:
    """Every message with its parts converted; structural errors name their JSON path.

    Also returns where each converted part came from (:data:`Origin`), so that an error found in
    a converted part names the part, and the content item, as stored.
    """
    converted: list[Json] = []
    origins: list[list[Origin]] = []
    statements: _render.Statements | None = None
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ValueError(f"{path}: expected a message object, got {_json_type(message)}")
        kind = message.get("kind")
        if kind not in ("request", "response"):
            found = "no 'kind'" if "kind" not in message else f"kind {kind!r}"
            raise ValueError(f"{path}: expected kind 'request' or 'response', found {found}")
        parts = message.get("parts")
        if not isinstance(parts, list):
            found = "no 'parts'" if "parts" not in message else f"parts as {_json_type(parts)}"
            raise ValueError(f"{path}: expected a list of parts, found {found}")
        new_parts: list[Json] = []
        origin: list[Origin] = []
        for part_index, part in enumerate(parts):
            if not isinstance(part, dict):
                raise ValueError(
                    f"{path}.parts[{part_index}]: expected a part object, got {_json_type(part)}"
                )
            at = (index, part_index)
            if kind == "request" and _renders_lowered(part):
                statements = statements or _render.Statements(messages)
                restated = statements.restates(index, part)
                rendered = _render.render_lowered_statement(
                    part, _part_path(at), restated=restated, timestamp=message.get("timestamp"), held=_held()
                )
            elif kind == "request" and _renders_capability(part):
                rendered = _render.render_capability_part(part, _part_path(at), _held())
            else:
                new_parts.append(_convert_part(part, kind, at))
                origin.append((part_index, 0))
                continue
            _log_rendered(part, rendered, at)
            new_parts.extend(rendered.parts)
            origin.extend(
                (part_index, 1 if isinstance(new["content"], list) else 0) for new in rendered.parts
            )
        new_message = {**message, "parts": new_parts}
        for field in _MESSAGE_ENUM_FIELDS:
            value = new_message.get(field)
            if (
                isinstance(value, str)
                and field in _load_probes.message_fields(kind)
                and not _load_probes.message_value_kept(kind, field, value)
            ):
                del new_message[field]
                logger.debug("%s.%s: %r removed (%s does not keep it)", path, field, value, _release())
        converted.append(new_message)
        origins.append(origin)
    return converted, origins


def _part_path(at: tuple[int, int]) -> str:
    return f"messages[{at[0]}].parts[{at[1]}]"


def _renders_capability(part: Json) -> bool:
    """Whether ``part`` is a capability part the release cannot load, so it loads as 2.78.0 sends it."""
    return part.get("part_kind") == _CAPABILITY and not _load_probes.part_kind_loads("request", _CAPABILITY)


def _renders_lowered(part: Json) -> bool:
    """Whether ``part`` states instructions below 'operator' on a release that would lose the authority."""
    return _render.is_lowered_statement(part) and not _load_probes.request_part_value_kept(
        "instruction-delta", "authority", "none"
    )


def _held() -> _render.Held:
    """What the installed release can hold of a rendered capability part (probed once each)."""
    return _render.Held(
        items=frozenset(kind for kind in _render.TEXT_ITEMS if _load_probes.content_item_loads(kind)),
        request_scope=_load_probes.request_part_value_kept("system-prompt", "scope", "request"),
    )


def _log_rendered(part: Json, rendered: _render.Rendering, at: tuple[int, int]) -> None:
    """The DEBUG record of one capability part or lowered statement loaded as what 2.78.0 sends."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    if part.get("part_kind") == _CAPABILITY:
        what = f"capability part {part.get('kind')!r} at authority {_render.effective_authority(part)!r}"
    else:
        what = f"instruction-delta {part.get('id')!r} at authority {part.get('authority')!r}"
    escaped = "; framing tags in its body written &lt;" if rendered.neutralized else ""
    # The frame's attributes are kept, in the frame; content and timestamp in the rendered parts.
    attributes = (part.get("rendering") or {}).get("attributes") or []
    kept = {k: v for new in rendered.parts for k, v in new.items()} | dict.fromkeys(attributes, True)
    logger.debug(
        "%s: %s loaded as %s, as pydantic-ai 2.78.0 sends it%s%s",
        _part_path(at),
        what,
        rendered.described,
        escaped,
        _dropped(part, kept),
    )


# --- validation errors -----------------------------------------------------------------------------------


def _resolve(loc: tuple[int | str, ...], data: Any, *, missing: bool) -> list[int | str]:
    """The keys of a pydantic error location that exist in ``data``, in order.

    Locations also hold union tags (``'request'``, ``'tool-return'``) and union member names
    (``'str'``, ``'list[...]'``) that are not in the data; they are skipped. A missing field is
    kept as the last key, since it is the one thing to add.
    """
    keys: list[int | str] = []
    node = data
    for position, key in enumerate(loc):
        in_list = isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)
        in_object = isinstance(node, dict) and isinstance(key, str) and key in node
        if in_list or in_object:
            node = node[key]
            keys.append(key)
        elif missing and position == len(loc) - 1 and isinstance(node, dict):
            keys.append(key)
    return keys


def _format_path(keys: Sequence[int | str]) -> str:
    text = "messages"
    for key in keys:
        if isinstance(key, int):
            text += f"[{key}]"
        elif key.isidentifier():
            text += f".{key}"
        else:
            text += f"[{key!r}]"
    return text


def _node(data: Any, keys: Sequence[int | str]) -> Any:
    for key in keys:
        data = data[key]  # every key came from _resolve, so it exists
    return data


def _refuse_if_too_deep(exc: ValidationError, data: str | bytes | bytearray) -> None:
    """Raise the one line naming the depth when the reader refused ``data`` for nesting too deep."""
    first = exc.errors(include_url=False)[0]
    if first["type"] == "json_invalid" and "recursion limit" in first["msg"]:
        reason = too_deep_text(data)
        if reason is not None:
            raise ValueError(reason) from exc


def _refused_part(exc: Exception, data: list[Json], origins: list[list[Origin]]) -> str:
    """One line for a part the release refused with an error that has no location (a UserError)."""
    why = squeezed(first_line(exc))
    for i, message in enumerate(data):
        for j, part in enumerate(message["parts"]):
            try:
                _load_probes.probe_load([{**message, "parts": [part]}])
            except UserError:
                return f"{_format_path(_as_stored([i, 'parts', j], origins))}: {why} ({_release()})"
    return f"messages: {why} ({_release()})"


def _as_stored(keys: Sequence[int | str], origins: list[list[Origin]]) -> list[int | str]:
    """A path into the converted data as the same path into the stored history."""
    stored = list(keys)
    if (
        len(stored) >= 3
        and stored[1] == "parts"
        and isinstance(stored[0], int)
        and isinstance(stored[2], int)
    ):
        part, shift = origins[stored[0]][stored[2]]
        stored[2] = part
        if len(stored) >= 5 and stored[3] == "content" and isinstance(stored[4], int):
            stored[4] -= shift
    return stored


def _describe(exc: ValidationError, data: list[Json], origins: list[list[Origin]]) -> str:
    """One line for the first bad field of ``data``: its JSON path and what is wrong with it.

    pydantic reports one error per union member a value failed; those all sit under one field
    (``content``…), so they are summed up at the deepest value they share instead of quoting
    whichever member happened to come first. The path is the stored one (``origins``).
    """
    errors = exc.errors(include_url=False)
    located = [
        (_resolve(tuple(e["loc"]), data, missing=e["type"] == "missing"), e["type"], e["msg"]) for e in errors
    ]
    first_keys, _, first_msg = located[0]
    scope = first_keys[:3]  # the message, or the part, the first error is in
    same = [item for item in located if item[0][: len(scope)] == scope]
    fields = [keys[len(scope)] for keys, _, _ in same if len(keys) > len(scope)]
    if len(same) == 1 or len(set(fields)) > 1 or len(fields) < len(same):
        return f"{_format_path(_as_stored(first_keys, origins))}: {squeezed(first_msg)} ({_release()})"
    # Several errors under one field: a union whose every member rejected the value.
    existing = [keys[:-1] if kind == "missing" else keys for keys, kind, _ in same]
    deepest = max(existing, key=len)
    # Report the list item the members disagree about, not a field one member happened to check.
    while deepest and isinstance(deepest[-1], str) and len(deepest) > len(scope) + 1:
        deepest = deepest[:-1]
    value = _node(data, deepest)
    hint = ""
    if isinstance(value, dict) and isinstance(value.get("kind"), str):
        hint = f" (kind {value['kind']!r})"
    elif len({msg for _, _, msg in same}) == 1:
        hint = f" ({squeezed(first_msg)})"
    return f"{_format_path(_as_stored(deepest, origins))}: matches no form {_release()} accepts here{hint}"


# --- the public functions ----------------------------------------------------------------------------------


def load_json(data: str | bytes | bytearray) -> list[ModelMessage]:
    """Load a history written by any pydantic-ai release from 1.0.0 on into the installed release.

    What the installed release cannot represent becomes its nearest equivalent (see the module
    docstring); anything it cannot load raises ``ValueError`` with the JSON path of the first bad
    field, in one line. A ``TypeError`` means ``data`` is not JSON text at all.

    Most histories need no conversion, so the release's own loader reads the text first; only
    what it rejects, or may load silently differently (:func:`_may_need_conversion`), goes the
    converting way, which costs a second parse. Both give the same messages.
    """
    _require_text(data)
    if not _may_need_conversion(data):
        try:
            return ModelMessagesTypeAdapter.validate_json(data)
        except ValidationError as exc:
            _refuse_if_too_deep(exc, data)
        except (ValueError, UserError):
            pass  # rejected as it is: converting either makes it loadable or names the bad field
    return _load_converting(data)


def _load_converting(data: str | bytes | bytearray) -> list[ModelMessage]:
    """:func:`load_json` by parsing, converting every part, and validating the converted JSON."""
    try:
        converted, origins = _convert(_parse(data))
        text = json.dumps(converted)
    except RecursionError:
        # Python's json gives up past its recursion limit, deeper than the reader reads anyway.
        raise ValueError(too_deep_text(data) or "nested too deep to read") from None
    try:
        messages = ModelMessagesTypeAdapter.validate_json(text)
    except ValidationError as exc:
        _refuse_if_too_deep(exc, data)
        raise ValueError(_describe(exc, converted, origins)) from exc
    except UserError as exc:  # 2.78.0 refuses a capability part that way, without a location
        raise ValueError(_refused_part(exc, converted, origins)) from exc
    if logger.isEnabledFor(logging.DEBUG):
        _log_ignored_fields(converted, messages)
    return messages


#: The JSON strings a release may load silently differently from the converting way: where it has
#: no ``outcome``, ``'retried'`` (1.0-1.66 load the retry as a successful return), and where it
#: loads ``instruction-delta`` without ``authority``, that key (2.68.0 would load text below
#: ``'operator'`` as the application's own instruction). Each as text and as bytes.
_RETRIED = '"retried"'
_AUTHORITY = '"authority"'
#: The ``\u`` escapes of ``a``-``z`` (and a few signs): the only other way JSON can spell a letter.
_LETTER_ESCAPE = re.compile(r"\\u00[67]")
_LETTER_ESCAPE_BYTES = re.compile(rb"\\u00[67]")


@functools.cache
def _silently_different() -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """The strings of :data:`_RETRIED` and :data:`_AUTHORITY` the installed release loads silently."""
    found = []
    if not _load_probes.part_value_kept("tool-return", "outcome", "retried"):
        found.append(_RETRIED)
    if _load_probes.part_kind_loads(
        "request", "instruction-delta"
    ) and not _load_probes.request_part_value_kept("instruction-delta", "authority", "none"):
        found.append(_AUTHORITY)
    return tuple(found), tuple(text.encode() for text in found)


def _may_need_conversion(data: str | bytes | bytearray) -> bool:
    """Whether the release's own loader may load ``data`` differently from the converting way.

    At DEBUG the converting way is taken for the records it writes. Otherwise only the values of
    :func:`_silently_different` are loaded and yet converted (others the release rejects anyway).
    A text that cannot spell one cannot hold it, and looking costs a scan of the bytes for each.
    """
    if logger.isEnabledFor(logging.DEBUG):
        return True
    texts, raw = _silently_different()
    if not texts:
        return False
    # An escape needs a backslash, which many histories lack: looking for one character runs at
    # memory speed, several times faster than the pattern's scan.
    if isinstance(data, str):
        return any(text in data for text in texts) or (
            "\\" in data and _LETTER_ESCAPE.search(data) is not None
        )
    return any(text in data for text in raw) or (
        b"\\" in data and _LETTER_ESCAPE_BYTES.search(data) is not None
    )


def dump_json(messages: Sequence[ModelMessage]) -> bytes:
    """The installed release's own JSON for ``messages`` (``ModelMessagesTypeAdapter.dump_json``).

    Only the input is checked first, so that a wrong argument gets histfix's usual ``TypeError``
    naming what was passed instead of a serializer error.
    """
    history = as_history(messages, function="dump_json")
    check_messages(history, ModelRequest, ModelResponse)
    try:
        return ModelMessagesTypeAdapter.dump_json(list(history))
    except ValueError as exc:  # the serializer's own depth limit, sometimes worded as a cycle
        depth, path = deepest_field(history)
        if depth > depth_limit():
            raise ValueError(describe_nesting(depth, depth_limit(), path=path)) from exc
        raise


def _log_ignored_fields(data: list[Json], messages: list[ModelMessage]) -> None:
    """One DEBUG record naming the set fields the release has no place for (and so ignored).

    Found by comparing the input with the release's own dump of what it loaded; only done when
    the ``histfix`` logger is at DEBUG, since it costs a second serialization.
    """
    dumped = json.loads(ModelMessagesTypeAdapter.dump_json(messages))
    ignored: dict[str, int] = {}
    for message, again in zip(data, dumped, strict=False):
        for key, value in message.items():
            if key not in again and value is not None:
                name = f"{message['kind']}.{key}"
                ignored[name] = ignored.get(name, 0) + 1
        for part, part_again in zip(message["parts"], again["parts"], strict=False):
            for key, value in part.items():
                if key not in part_again and value is not None:
                    name = f"{part['part_kind']}.{key}"
                    ignored[name] = ignored.get(name, 0) + 1
    if ignored:
        listed = ", ".join(f"{name} ({count}x)" for name, count in sorted(ignored.items()))
        logger.debug("%s has no field for, and ignored: %s", _release(), listed)

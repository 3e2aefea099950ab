"""Every switch that depends on the installed pydantic-ai release, in one place.

Presence is detected (attributes, dataclass fields, a ``Literal``'s values, a probe load); the
release number is compared only for behaviour that changed under an unchanged name. Each switch
names the release that introduced it.

The release facts (distribution, version, the auto-backend rule) need no pydantic-ai import, so
``histfix info`` answers at once. The detected switches import ``pydantic_ai.messages`` (about a
second) on first access, through the module ``__getattr__`` below; histfix never touches them at
``import histfix`` time.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import typing
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from packaging.version import InvalidVersion, Version

#: The distributions that ship the ``pydantic_ai`` package, most specific first.
_DISTRIBUTIONS = ("pydantic-ai-slim", "pydantic-ai")

#: ``repair_messages`` exists from 2.53.0 but matches the newest behaviour only from 2.60.0:
#: 2.53-2.54 synthesize duplicate ids non-idempotently (FIFO matching arrived in 2.55.0),
#: 2.53-2.57 do not copy ``tool_kind`` (2.58.0), 2.53-2.58 do not move parts from between
#: tool results (2.59.0), and 2.53-2.59 hoist tool-less retry prompts in merges (2.60.0 loads
#: those as ``RetryFeedbackPart``). A pre-release or dev build of 2.60.0 counts as older.
UPSTREAM_CURRENT_SINCE = Version("2.60.0")
#: The newest release histfix has been measured against (the test matrix's newest pin).
NEWEST_TESTED = Version("2.68.0")


def installed_release() -> tuple[str, str]:
    """(distribution name, version string) of the installed pydantic-ai.

    The full ``pydantic-ai`` distribution depends on ``pydantic-ai-slim`` of the same version,
    so the slim one is asked first and the full one only covers unusual installs.
    """
    for name in _DISTRIBUTIONS:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "pydantic_ai (no distribution metadata)", "unknown"


def parse(version: str) -> Version | None:
    """The version, or None when it is not PEP 440."""
    try:
        return Version(version)
    except InvalidVersion:
        return None


def source_defines(module: str, name: str) -> bool | None:
    """Whether the installed ``pydantic_ai.<module>`` source defines ``name`` (None: can't tell).

    Feature detection by reading the source instead of importing it, for fast paths only;
    the library itself detects features on the imported module.
    """
    spec = importlib.util.find_spec("pydantic_ai")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / f"{module}.py"
        if path.exists():
            return f"\ndef {name}(" in path.read_text(encoding="utf-8")
    return None


def choose_backend(version_string: str, has_repair_messages: bool, forced: str = "") -> tuple[str, str]:
    """("upstream" | "histfix", why) for ``repair(..., backend="auto")``: the one decision rule."""
    version = parse(version_string)
    if forced:
        return forced, f"forced by HISTFIX_BACKEND={forced}"
    if has_repair_messages and version is not None and version >= UPSTREAM_CURRENT_SINCE:
        reason = f"pydantic-ai {version_string} has repair_messages with the newest behaviour (>= {UPSTREAM_CURRENT_SINCE})"
        if version > NEWEST_TESTED:
            reason += f"; newer than the newest release histfix was measured on ({NEWEST_TESTED})"
        return "upstream", reason
    if not has_repair_messages:
        return "histfix", f"pydantic-ai {version_string} has no repair_messages (added in 2.53.0)"
    if version is None:
        return (
            "histfix",
            f"pydantic-ai version {version_string!r} is not PEP 440, so histfix's own walk runs to be safe",
        )
    return "histfix", (
        f"pydantic-ai {version_string} has repair_messages, but it differs from the newest behaviour "
        f"before {UPSTREAM_CURRENT_SINCE}"
    )


# --- detected switches (first access imports pydantic-ai) -------------------------------------------


def pydantic_ai_messages() -> ModuleType:
    """``pydantic_ai.messages``, or an ImportError that says what to install."""
    try:
        from pydantic_ai import messages
    except ImportError as exc:
        raise ImportError(
            "histfix needs pydantic-ai, which is not installed: run `pip install pydantic-ai-slim` "
            "(any release from 1.0.0 on) in the same environment."
        ) from exc
    return messages


def _field_names(cls: type) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(cls))


def _literal_values(cls: type, field: str) -> frozenset[Any]:
    """The values allowed by a ``Literal[...]`` field annotation (empty if not a Literal)."""
    try:
        hint = typing.get_type_hints(cls)[field]
    except Exception:  # pragma: no cover - unresolvable annotations on an unknown release
        return frozenset()
    return frozenset(typing.get_args(hint)) if typing.get_origin(hint) is typing.Literal else frozenset()


DISTRIBUTION, VERSION_STRING = installed_release()
#: The installed release, or None when its version string is not PEP 440.
VERSION: Version | None = parse(VERSION_STRING)

#: ``pydantic_ai.messages.repair_messages``: public repair, first in 2.53.0.
HAS_REPAIR_MESSAGES: bool
#: Whether upstream ``repair_messages`` is the newest behaviour (see ``UPSTREAM_CURRENT_SINCE``).
UPSTREAM_REPAIR_IS_CURRENT: bool
#: ``ToolReturnPart.outcome``: first in 1.67.0.
RETURN_HAS_OUTCOME: bool
#: ``outcome='interrupted'``, the neutral value for a synthesized return: first in 2.10.0.
#: On 1.67.0-2.9.1 no allowed value is neutral, so histfix leaves ``outcome`` at its default there.
OUTCOME_INTERRUPTED: bool
#: ``ToolReturnPart.tool_kind`` (copied from the call, as 2.58.0+ upstream does): first in 1.95.0.
RETURN_HAS_TOOL_KIND: bool
#: ``ModelRequest.timestamp``: first in 1.38.0.
REQUEST_HAS_TIMESTAMP: bool
#: ``ModelRequest.metadata``: first in 1.20.0.
REQUEST_HAS_METADATA: bool
#: ``ToolAvailabilityDeltaPart``, which stays in place between tool results: first in 2.23.0.
TOOL_AVAILABILITY_DELTA: type | None
#: ``RetryFeedbackPart`` (JSON ``part_kind='retry-feedback'``), a retry that answers no tool call:
#: first in 2.60.0. Earlier releases store the same retry as a ``RetryPromptPart`` without a
#: ``tool_name``, which is what a portable load turns it into there.
HAS_RETRY_FEEDBACK_PART: bool
#: ``outcome='retried'``, a tool-bound retry stored as the call's own ``ToolReturnPart``: first in
#: 2.60.0. Earlier releases store the same retry as a ``RetryPromptPart`` with the call's
#: ``tool_name`` (1.67.0-2.59.x reject the value; 1.0.0-1.66.x have no ``outcome`` and would load
#: the retry as a successful return).
OUTCOME_RETRIED: bool

_DETECTED = frozenset(
    {
        "HAS_REPAIR_MESSAGES",
        "UPSTREAM_REPAIR_IS_CURRENT",
        "RETURN_HAS_OUTCOME",
        "OUTCOME_INTERRUPTED",
        "RETURN_HAS_TOOL_KIND",
        "REQUEST_HAS_TIMESTAMP",
        "REQUEST_HAS_METADATA",
        "TOOL_AVAILABILITY_DELTA",
        "HAS_RETRY_FEEDBACK_PART",
        "OUTCOME_RETRIED",
    }
)


def _detect() -> dict[str, Any]:
    """Inspect the imported pydantic-ai once and return every detected switch by name."""
    messages = pydantic_ai_messages()
    returns = _field_names(messages.ToolReturnPart)
    requests = _field_names(messages.ModelRequest)
    outcomes = _literal_values(messages.ToolReturnPart, "outcome") if "outcome" in returns else frozenset()
    has_repair = callable(getattr(messages, "repair_messages", None))
    return {
        "HAS_REPAIR_MESSAGES": has_repair,
        "UPSTREAM_REPAIR_IS_CURRENT": has_repair
        and VERSION is not None
        and VERSION >= UPSTREAM_CURRENT_SINCE,
        "RETURN_HAS_OUTCOME": "outcome" in returns,
        "OUTCOME_INTERRUPTED": "interrupted" in outcomes,
        "RETURN_HAS_TOOL_KIND": "tool_kind" in returns,
        "REQUEST_HAS_TIMESTAMP": "timestamp" in requests,
        "REQUEST_HAS_METADATA": "metadata" in requests,
        "TOOL_AVAILABILITY_DELTA": getattr(messages, "ToolAvailabilityDeltaPart", None),
        "HAS_RETRY_FEEDBACK_PART": hasattr(messages, "RetryFeedbackPart"),
        "OUTCOME_RETRIED": "retried" in outcomes,
    }


@functools.cache
def _switches() -> dict[str, Any]:
    """The detected switches, detected once and kept as module attributes from then on."""
    detected = _detect()
    globals().update(detected)
    return detected


def __getattr__(name: str) -> Any:
    """Detect the switches on first access to any of them (PEP 562)."""
    if name in _DETECTED:
        return _switches()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def features() -> dict[str, bool]:
    """The detected switches by name, for :func:`histfix.backend_info`."""
    switches = _switches()
    return {
        "repair_messages": switches["HAS_REPAIR_MESSAGES"],
        "upstream_repair_is_current": switches["UPSTREAM_REPAIR_IS_CURRENT"],
        "tool_return_outcome": switches["RETURN_HAS_OUTCOME"],
        "outcome_interrupted": switches["OUTCOME_INTERRUPTED"],
        "tool_return_tool_kind": switches["RETURN_HAS_TOOL_KIND"],
        "request_timestamp": switches["REQUEST_HAS_TIMESTAMP"],
        "request_metadata": switches["REQUEST_HAS_METADATA"],
        "tool_availability_delta_part": switches["TOOL_AVAILABILITY_DELTA"] is not None,
        "retry_feedback_part": switches["HAS_RETRY_FEEDBACK_PART"],
        "outcome_retried": switches["OUTCOME_RETRIED"],
    }


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
        content="The tool call was interrupted before a result was produced.",
        tool_call_id="probe",
        tool_kind=kind,  # type: ignore[call-arg,unused-ignore]
    )
    adapter = messages.ModelMessagesTypeAdapter
    try:
        adapter.validate_json(adapter.dump_json([messages.ModelRequest(parts=[probe])]))
    except Exception:
        return False
    return True


# --- JSON written by other releases (histfix._portable) ---------------------------------------------

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
    return frozenset() if loaded is None else _field_names(type(loaded[0].parts[0]))


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
    return _field_names(cls)


@functools.lru_cache(maxsize=256)
def message_value_kept(message_kind: str, field: str, value: str) -> bool:
    """Whether an empty ``message_kind`` message with ``field=value`` loads and keeps the value.

    For the enum-like message fields: ``state`` (``ModelResponse`` from 1.92.0 with
    ``'complete'``/``'interrupted'``, ``'incomplete'`` added by 1.107.10 and ``'suspended'`` in
    2.10.0; ``ModelRequest`` from 2.0.0) and ``finish_reason``.
    """
    loaded = probe_load([{"kind": message_kind, "parts": [], field: value}])
    return loaded is not None and getattr(loaded[0], field, None) == value


def process_history_class() -> type | None:
    """``pydantic_ai.capabilities.ProcessHistory``, first in 1.87.0 (the module itself in 1.71.0).

    Where it exists histfix wires itself in as a capability: ``Agent(history_processors=)`` warns
    from 1.96.0 and is rejected from 2.0.0. Before 1.87.0 ``history_processors=`` is the only way.
    """
    try:
        from pydantic_ai.capabilities import ProcessHistory
    except ImportError:
        return None
    return ProcessHistory  # type: ignore[no-any-return,unused-ignore]

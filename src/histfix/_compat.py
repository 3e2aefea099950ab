"""Every switch that depends on the installed pydantic-ai release, in one place.

Presence is detected (attributes, dataclass fields, a ``Literal``'s values); the release number is
compared only for behaviour that changed under an unchanged name. Each switch names the release
that introduced it. Importing this module imports ``pydantic_ai.messages``, so histfix only imports
it from inside functions, never at ``import histfix`` time.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from packaging.version import Version

from ._release import UPSTREAM_CURRENT_SINCE, installed_release, parse

try:
    from pydantic_ai import messages as _messages
except ImportError as exc:  # pragma: no cover - exercised only without pydantic-ai installed
    raise ImportError(
        "histfix needs pydantic-ai, which is not installed: run `pip install pydantic-ai-slim` "
        "(any release from 1.0.0 on) in the same environment."
    ) from exc


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
if DISTRIBUTION.endswith("(no distribution metadata)"):  # a source checkout: trust the package
    VERSION_STRING = str(getattr(_messages, "__version__", VERSION_STRING))
#: The installed release, or None when its version string is not PEP 440.
VERSION: Version | None = parse(VERSION_STRING)

# --- presence (feature detection) ---------------------------------------------------------------

#: ``pydantic_ai.messages.repair_messages``: public repair, first in 2.53.0.
HAS_REPAIR_MESSAGES: bool = callable(getattr(_messages, "repair_messages", None))

_RETURN_FIELDS = _field_names(_messages.ToolReturnPart)
_REQUEST_FIELDS = _field_names(_messages.ModelRequest)

#: ``ToolReturnPart.outcome``: first in 1.67.0.
RETURN_HAS_OUTCOME: bool = "outcome" in _RETURN_FIELDS
#: ``outcome='interrupted'``, the neutral value for a synthesized return: first in 2.10.0.
#: On 1.67.0-2.9.1 no allowed value is neutral, so histfix leaves ``outcome`` at its default there.
OUTCOME_INTERRUPTED: bool = RETURN_HAS_OUTCOME and "interrupted" in _literal_values(
    _messages.ToolReturnPart, "outcome"
)
#: ``ToolReturnPart.tool_kind`` (copied from the call, as 2.58.0+ upstream does): first in 1.95.0.
RETURN_HAS_TOOL_KIND: bool = "tool_kind" in _RETURN_FIELDS
#: ``ModelRequest.timestamp``: first in 1.38.0.
REQUEST_HAS_TIMESTAMP: bool = "timestamp" in _REQUEST_FIELDS
#: ``ModelRequest.metadata``: first in 1.20.0.
REQUEST_HAS_METADATA: bool = "metadata" in _REQUEST_FIELDS
#: ``ToolAvailabilityDeltaPart``, which stays in place between tool results: first in 2.23.0.
TOOL_AVAILABILITY_DELTA: type | None = getattr(_messages, "ToolAvailabilityDeltaPart", None)


@functools.cache
def return_tool_kind_loads(kind: str) -> bool:
    """Whether a synthesized return with this ``tool_kind`` loads back from the release's own JSON.

    1.95.0-2.57.x validate ``tool_kind`` against a Literal of core kinds, and some of them type
    a core kind's content (1.107.10 loads a ``'tool-search'`` return as a ``ToolSearchReturnPart``,
    whose content must be an object), so the newest behaviour, copying the call's kind, would
    write a history that release cannot read. Probed once per kind, not guessed from a version.
    """
    probe = _messages.ToolReturnPart(
        tool_name="probe",
        content="The tool call was interrupted before a result was produced.",
        tool_call_id="probe",
        tool_kind=kind,  # type: ignore[call-arg,unused-ignore]
    )
    adapter = _messages.ModelMessagesTypeAdapter
    try:
        adapter.validate_json(adapter.dump_json([_messages.ModelRequest(parts=[probe])]))
    except Exception:
        return False
    return True


# --- behaviour under an unchanged name (version comparison) ---------------------------------------

#: Whether upstream ``repair_messages`` is the newest behaviour (the reasons are in ``_release``).
UPSTREAM_REPAIR_IS_CURRENT: bool = (
    HAS_REPAIR_MESSAGES and VERSION is not None and VERSION >= UPSTREAM_CURRENT_SINCE
)


def features() -> dict[str, bool]:
    """The detected switches by name, for :func:`histfix.backend_info`."""
    return {
        "repair_messages": HAS_REPAIR_MESSAGES,
        "upstream_repair_is_current": UPSTREAM_REPAIR_IS_CURRENT,
        "tool_return_outcome": RETURN_HAS_OUTCOME,
        "outcome_interrupted": OUTCOME_INTERRUPTED,
        "tool_return_tool_kind": RETURN_HAS_TOOL_KIND,
        "request_timestamp": REQUEST_HAS_TIMESTAMP,
        "request_metadata": REQUEST_HAS_METADATA,
        "tool_availability_delta_part": TOOL_AVAILABILITY_DELTA is not None,
    }


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

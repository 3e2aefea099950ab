"""Every switch that depends on the installed pydantic-ai release, in one short list.

Each entry names the release that introduced what it switches on. Presence is detected
(attributes, dataclass fields, a ``Literal``'s values, a probe load); a release number is compared
only for behaviour that changed under an unchanged name (the rule in :mod:`.backend` too). The detected
values are computed by :mod:`.detect` on first access to any of them, which imports
``pydantic_ai.messages``; ``import histfix`` never does.
"""

from __future__ import annotations

from typing import Any, Literal

from packaging.version import Version

from .probes import message_value_kept, return_tool_kind_loads

__all__ = [
    "AGENT_REFUSES_RESPONSE_FIRST",
    "ARGS_AS_DICT_TOLERATES_INVALID",
    "BEDROCK_SENDS_ONLY_OWN_THINKING_SINCE",
    "BEDROCK_SKIPS_RESPONSE_FILES_SINCE",
    "FRAMING_ANNOUNCED_SINCE",
    "HAS_CONVERSATION_STORE",
    "HAS_REPAIR_MESSAGES",
    "HAS_RETRY_FEEDBACK_PART",
    "INSTRUCTIONS_AT_SYSTEM_COUNT",
    "NATIVE_RETURN_NAMED_BY_TOOL_SINCE",
    "OPENAI_PREFIX_IS_RESPONSES_SINCE",
    "OUTCOME_INTERRUPTED",
    "OUTCOME_RETRIED",
    "PROFILE_FITS_TOOL_CALL_IDS",
    "REQUEST_HAS_METADATA",
    "REQUEST_HAS_TIMESTAMP",
    "RESPONSES_NATIVE_CALLS_SENT_SINCE",
    "RESPONSES_REASONING_OWN_ONLY_SINCE",
    "RETURN_HAS_OUTCOME",
    "RETURN_HAS_TOOL_KIND",
    "RETURN_HAS_UI_VISIBILITY",
    "RUN_REPAIR_DICT_MATCHING",
    "THINKING_SENT_SINCE",
    "TOOL_AVAILABILITY_DELTA",
    "UPSTREAM_REPAIR_IS_CURRENT",
    "agent_refuses_response_first",
    "bedrock_sends_only_own_thinking",
    "bedrock_skips_response_files",
    "framing_announced_in_first_request",
    "instructions_at_system_count",
    "interrupted_state",
    "native_return_named_by_tool",
    "openai_prefix_api",
    "responses_native_calls_sent",
    "responses_reasoning_items",
    "return_tool_kind_loads",
    "run_repair_adds_surplus_results",
    "thinking_sent",
]

# --- compared by version: the same name, different behaviour -----------------------------------------

#: 2.0.0: ``openai:`` model strings build OpenAIResponsesModel (OpenAIChatModel before).
OPENAI_PREFIX_IS_RESPONSES_SINCE = Version("2.0.0")
#: 1.0.9: AnthropicModel sends a native tool return under its tool's name (before: the wire block's only).
NATIVE_RETURN_NAMED_BY_TOOL_SINCE = Version("1.0.9")
#: 2.10.0-2.54.x: the run's own repair matches results by a dict, adding a result for an id called twice.
RUN_REPAIR_DICT_MATCHING = (Version("2.10.0"), Version("2.55.0"))
#: 1.0.3: OpenAI Chat, Gemini and Responses send ThinkingPart (before: left out, a response may go out empty).
THINKING_SENT_SINCE = Version("1.0.3")
#: 1.80.0: BedrockConverseModel leaves a response FilePart out (before: AssertionError before sending).
BEDROCK_SKIPS_RESPONSE_FILES_SINCE = Version("1.80.0")
#: 1.0.5: OpenAIResponsesModel sends only OpenAI's own thinking as reasoning items (1.0.3-1.0.4: every one).
RESPONSES_REASONING_OWN_ONLY_SINCE = Version("1.0.5")
#: 1.0.9: OpenAIResponsesModel sends OpenAI's native tool calls as ``*_call`` items (before: left out).
RESPONSES_NATIVE_CALLS_SENT_SINCE = Version("1.0.9")
#: 1.33.0-1.74.x: OpenAI Chat and Mistral insert the instructions at the count of system messages.
INSTRUCTIONS_AT_SYSTEM_COUNT = (Version("1.33.0"), Version("1.75.0"))
#: 1.0.3: BedrockConverseModel sends Claude only its own signed thinking as reasoning (before: every one).
BEDROCK_SENDS_ONLY_OWN_THINKING_SINCE = Version("1.0.3")
#: 2.63.0: for a model without inline system prompts, Model.prepare_messages puts a system prompt saying
#: what its ``<system>`` blocks mean at the front of the first request, wherever that request stands.
FRAMING_ANNOUNCED_SINCE = Version("2.63.0")
#: 1.21.x: the Agent refuses a history that starts with a ModelResponse, whatever the provider.
AGENT_REFUSES_RESPONSE_FIRST = (Version("1.21.0"), Version("1.22.0"))

# --- detected on first access (declared here, assigned by .detect) ------------------------------------

#: 2.53.0: ``pydantic_ai.messages.repair_messages``.
HAS_REPAIR_MESSAGES: bool
#: ``repair_messages`` is present and behaves as the newest one (:mod:`.backend`'s rule).
UPSTREAM_REPAIR_IS_CURRENT: bool
#: 1.67.0: ``ToolReturnPart.outcome``.
RETURN_HAS_OUTCOME: bool
#: 2.10.0: ``outcome='interrupted'``, the neutral value for a synthesized return (before: none is neutral).
OUTCOME_INTERRUPTED: bool
#: 1.95.0: ``ToolReturnPart.tool_kind``.
RETURN_HAS_TOOL_KIND: bool
#: 2.78.0: ``ToolReturnPart.ui_visibility``, which a synthesized return copies from its call.
RETURN_HAS_UI_VISIBILITY: bool
#: 1.38.0: ``ModelRequest.timestamp``.
REQUEST_HAS_TIMESTAMP: bool
#: 1.20.0: ``ModelRequest.metadata``.
REQUEST_HAS_METADATA: bool
#: 2.23.0: ``ToolAvailabilityDeltaPart``, which keeps its place between tool results.
TOOL_AVAILABILITY_DELTA: type | None
#: 2.60.0: ``RetryFeedbackPart``, a retry answering no call (before: a tool-less ``RetryPromptPart``).
HAS_RETRY_FEEDBACK_PART: bool
#: 2.60.0: ``outcome='retried'``, a retry stored as the call's return (before: a ``RetryPromptPart``).
OUTCOME_RETRIED: bool
#: ``args_as_dict(raise_if_invalid=)`` (1.95.0 has it, 1.67.0 not): before, args not a JSON object raise.
ARGS_AS_DICT_TOLERATES_INVALID: bool
#: 2.59.0: ``ModelProfile`` key ``tool_call_id_length``, with which MistralModel fits ids (before: sent as stored).
PROFILE_FITS_TOOL_CALL_IDS: bool

#: 2.66.0: ``pydantic_ai.conversation_store`` (``ConversationStore``, its records, branches and revisions).
HAS_CONVERSATION_STORE: bool

#: The names :func:`.detect.switches` detects: exactly those declared above without a value.
DETECTED = frozenset(__annotations__)

# --- probed per value (where a whole release range cannot be named in advance) ------------------------

# return_tool_kind_loads(kind), from .probes: whether a synthesized return keeps the call's
#   ``tool_kind`` through the release's own JSON (1.95.0-2.57.x accept only core kinds, and
#   1.107.10 types some of them; any string from 2.58.0).
# .probes.part_kind_loads / part_fields / part_value_kept / message_fields /
#   message_value_kept: which part kinds and enum-like values (``outcome`` 1.67.0/2.10.0/2.60.0,
#   ``tool_kind`` 1.95.0/2.58.0, ``state`` 1.92.0/1.107.10/2.0.0/2.10.0, ``finish_reason``) the
#   release loads, for the portable JSON load.
# _wiring.process_history_class(): the ``ProcessHistory`` capability, first in 1.87.0
#   (``history_processors=`` warns from 1.96.0 and is rejected from 2.0.0).


def interrupted_state(message_kind: str) -> bool:
    """``state='interrupted'`` on a ``ModelResponse`` (first in 1.92.0) or ``ModelRequest`` (2.0.0)."""
    return message_value_kept(message_kind, "state", "interrupted")


def run_repair_adds_surplus_results() -> bool:
    """Whether the installed release's run-time repair is the dict-matching one (2.10.0-2.54.x)."""
    from .installed import VERSION

    low, high = RUN_REPAIR_DICT_MATCHING
    return VERSION is not None and low <= VERSION < high


def openai_prefix_api() -> str:
    """The API ``openai:`` model strings go to on the installed release (newest when unknown)."""
    from .installed import VERSION

    if VERSION is not None and VERSION < OPENAI_PREFIX_IS_RESPONSES_SINCE:
        return "openai-chat"
    return "openai-responses"


def native_return_named_by_tool() -> bool:
    """Whether the installed AnthropicModel sends native returns named by their tool (newest when unknown)."""
    from .installed import VERSION

    return VERSION is None or VERSION >= NATIVE_RETURN_NAMED_BY_TOOL_SINCE


def bedrock_skips_response_files() -> bool:
    """Whether the installed BedrockConverseModel leaves response files out (newest when unknown)
    rather than failing on them before sending."""
    from .installed import VERSION

    return VERSION is None or VERSION >= BEDROCK_SKIPS_RESPONSE_FILES_SINCE


def bedrock_sends_only_own_thinking() -> bool:
    """Whether the installed BedrockConverseModel sends only Bedrock's own signed thinking to Claude as
    reasoning blocks (newest when unknown), rather than every thinking part."""
    from .installed import VERSION

    return VERSION is None or VERSION >= BEDROCK_SENDS_ONLY_OWN_THINKING_SINCE


def framing_announced_in_first_request() -> bool:
    """Whether the installed release's ``prepare_messages`` may put its framing announcement at the front
    of the first request (newest when unknown)."""
    from .installed import VERSION

    return VERSION is None or VERSION >= FRAMING_ANNOUNCED_SINCE


def thinking_sent() -> bool:
    """Whether the installed OpenAI Chat, Gemini and Responses serializers send thinking (newest when unknown)."""
    from .installed import VERSION

    return VERSION is None or VERSION >= THINKING_SENT_SINCE


def responses_reasoning_items() -> Literal["none", "every", "own"]:
    """Which thinking parts the installed OpenAIResponsesModel sends as reasoning items: ``"none"``
    (before 1.0.3), ``"every"`` (1.0.3-1.0.4) or ``"own"`` (OpenAI's, with an id; newest when unknown)."""
    from .installed import VERSION

    if VERSION is None or VERSION >= RESPONSES_REASONING_OWN_ONLY_SINCE:
        return "own"
    return "every" if VERSION >= THINKING_SENT_SINCE else "none"


def agent_refuses_response_first() -> bool:
    """Whether the installed release's agent refuses a history that opens with a response (1.21.0)."""
    from .installed import VERSION

    low, high = AGENT_REFUSES_RESPONSE_FIRST
    return VERSION is not None and low <= VERSION < high


def instructions_at_system_count() -> bool:
    """Whether the installed OpenAIChatModel and MistralModel place the instructions at the count of
    system messages (1.33.0-1.74.x; newest when unknown: they do not)."""
    from .installed import VERSION

    low, high = INSTRUCTIONS_AT_SYSTEM_COUNT
    return VERSION is not None and low <= VERSION < high


def responses_native_calls_sent() -> bool:
    """Whether the installed OpenAIResponsesModel sends OpenAI's native calls (newest when unknown)."""
    from .installed import VERSION

    return VERSION is None or VERSION >= RESPONSES_NATIVE_CALLS_SENT_SINCE


def __getattr__(name: str) -> Any:
    """Detect the declared switches on first access to any of them (PEP 562)."""
    from .detect import switches

    if name in DETECTED:
        detected = switches()
        globals().update(detected)  # later reads are plain attribute lookups
        return detected[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

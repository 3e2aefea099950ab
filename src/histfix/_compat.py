"""Every switch that depends on the installed pydantic-ai release, in one short list.

Each entry names the release that introduced what it switches on. Presence is detected
(attributes, dataclass fields, a ``Literal``'s values, a probe load); a release number is compared
only for behaviour that changed under an unchanged name (``UPSTREAM_CURRENT_SINCE``). The detected
values are computed by :mod:`histfix._detect` on first access to any of them, which imports
``pydantic_ai.messages``; ``import histfix`` never does.
"""

from __future__ import annotations

from typing import Any, Literal

from packaging.version import Version

from ._load_probes import message_value_kept, return_tool_kind_loads

__all__ = [
    "AGENT_REFUSES_RESPONSE_FIRST",
    "ARGS_AS_DICT_TOLERATES_INVALID",
    "BEDROCK_SENDS_ONLY_OWN_THINKING_SINCE",
    "BEDROCK_SKIPS_RESPONSE_FILES_SINCE",
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
    "RUN_REPAIR_DICT_MATCHING",
    "THINKING_SENT_SINCE",
    "TOOL_AVAILABILITY_DELTA",
    "UPSTREAM_CURRENT_SINCE",
    "UPSTREAM_REPAIR_IS_CURRENT",
    "agent_refuses_response_first",
    "bedrock_sends_only_own_thinking",
    "bedrock_skips_response_files",
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

#: ``repair_messages`` exists from 2.53.0 but matches the newest behaviour only from 2.60.0:
#: 2.53-2.54 synthesize duplicate ids non-idempotently (FIFO matching arrived in 2.55.0),
#: 2.53-2.57 do not copy ``tool_kind`` (2.58.0), 2.53-2.58 do not move parts from between
#: tool results (2.59.0), and 2.53-2.59 hoist tool-less retry prompts in merges (2.60.0 loads
#: those as ``RetryFeedbackPart``). A pre-release or dev build of 2.60.0 counts as older.
UPSTREAM_CURRENT_SINCE = Version("2.60.0")

#: ``infer_model("openai:...")`` builds ``OpenAIResponsesModel`` from 2.0.0 and ``OpenAIChatModel``
#: before it: ``provider="openai"`` names the API the installed release sends ``openai:`` models to.
OPENAI_PREFIX_IS_RESPONSES_SINCE = Version("2.0.0")

#: AnthropicModel sends a native (builtin) tool return stored under the tool's own name
#: (``web_search``, ``code_execution``) from 1.0.9, which also stores them so; 1.0.0-1.0.8 send only
#: the wire block's name (``web_search_tool_result``) and raise ``Unsupported tool name`` otherwise.
NATIVE_RETURN_NAMED_BY_TOOL_SINCE = Version("1.0.9")

#: 2.10.0 added pydantic-ai's own repair of the history before each request; up to 2.54.x it
#: matches results to calls by a dict, so two calls with one id in one response get a surplus
#: synthesized result on every send (FIFO matching from 2.55.0). OpenAI Chat and Responses, Gemini,
#: Bedrock and Mistral count results per call and reject that request (measured on 2.10.0; issue 10,
#: unique_call_ids).
RUN_REPAIR_DICT_MATCHING = (Version("2.10.0"), Version("2.55.0"))

#: OpenAIChatModel, GoogleModel and OpenAIResponsesModel send a ``ThinkingPart`` (as tagged text, a
#: thought part, a reasoning item) from 1.0.3; 1.0.0-1.0.2 leave it out, so a response of only
#: thinking goes out empty there (read in the wheels of 1.0.1-1.0.7, measured on 1.0.0, 1.0.4 and
#: 1.0.7; issue 10, ``_rules_turns`` and ``_rules_reasoning``).
THINKING_SENT_SINCE = Version("1.0.3")

#: BedrockConverseModel leaves a ``FilePart`` in a response out from 1.80.0; from FilePart's arrival
#: (after 1.0.7) to 1.79.0 it asserts every response part it does not map is a tool call, and raises
#: ``AssertionError`` before sending (read in 1.26.0-1.79.0's models/bedrock.py and 1.80.0's; measured
#: on 1.67.0, seed 2562699975196673; issue 10, _rules_files).
BEDROCK_SKIPS_RESPONSE_FILES_SINCE = Version("1.80.0")

#: OpenAIResponsesModel sends *every* ``ThinkingPart`` as a ``reasoning`` input item on 1.0.3-1.0.4 (one
#: without an id under a fresh one); from 1.0.5 only OpenAI's own thinking with an id, the rest as
#: tagged assistant text. A reasoning item needs an output item right after it (read in the wheels
#: of 1.0.3-1.0.7 and 1.72.0; measured on 1.0.4 and 1.0.7; issue 10, _rules_reasoning).
RESPONSES_REASONING_OWN_ONLY_SINCE = Version("1.0.5")

#: OpenAIResponsesModel sends OpenAI's own native (server) tool calls as ``*_call`` items from 1.0.9;
#: before, it leaves every native part out (read in the wheels of 1.0.8 and 1.0.9; _rules_reasoning).
RESPONSES_NATIVE_CALLS_SENT_SINCE = Version("1.0.9")

#: OpenAIChatModel and MistralModel insert the instructions at the *count* of system messages in
#: the history from 1.33.0 to 1.74.x (1.32.0 inserts them first; 1.75.0 after the leading system
#: messages): a later system prompt lands them inside a tool exchange (read in the wheels of
#: 1.32.0, 1.33.0, 1.74.0, 1.75.0; measured on 1.67.0, seed 2562699975196837; _rules_instructions).
INSTRUCTIONS_AT_SYSTEM_COUNT = (Version("1.33.0"), Version("1.75.0"))

#: BedrockConverseModel sends a Claude model every ``ThinkingPart`` as a reasoning block, signed or not and
#: whatever provider made it, before 1.0.3; from 1.0.3 only Bedrock's own signed thinking (the rest
#: as tagged text). Claude refuses a reasoning block without its own signature (read in the wheels of
#: 1.0.0, 1.0.2, 1.0.3, 1.0.6, 1.0.7, 1.107.10 and 2.68.0; measured by the provider sweep: 1.0.0-1.0.2
#: refuse two corpus cases as stored, 1.0.3 and later accept them; issue 10, _rules_bedrock_thinking).
BEDROCK_SENDS_ONLY_OWN_THINKING_SINCE = Version("1.0.3")

#: 1.21.0's agent refuses a history whose first message is a ``ModelResponse`` (``UserError: Message
#: history cannot start with a `ModelResponse`.``) before any model class sees it, whatever the
#: provider; 1.20.0 and 1.22.0 do not (read in the wheels of 1.19.0-1.23.0; measured by the
#: provider sweep on 1.21.0; issue 10, _rules_shape.agent_accepts_opening).
AGENT_REFUSES_RESPONSE_FIRST = (Version("1.21.0"), Version("1.22.0"))

# --- detected on first access (declared here, assigned by _detect) ------------------------------------

#: ``pydantic_ai.messages.repair_messages``: public repair, first in 2.53.0.
HAS_REPAIR_MESSAGES: bool
#: ``repair_messages`` is present and the release is at least ``UPSTREAM_CURRENT_SINCE`` (2.60.0).
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
#: ``ToolCallPart.args_as_dict`` returns ``{'INVALID_JSON': raw}`` for args that are not a JSON
#: object (its ``raise_if_invalid`` parameter; 1.95.0 has it, 1.67.0 does not). Before, it raises
#: (``ValueError: EOF while parsing ...``), and the model classes that send args as an object
#: (Anthropic, Google, Bedrock) fail before sending a history with a truncated call (issue 10).
ARGS_AS_DICT_TOLERATES_INVALID: bool
#: ``ModelProfile`` key ``tool_call_id_length``: the model rewrites ids that do not fit it (the
#: Mistral profile sets 9), first in 2.59.0 (2.55.0 has none). Before, MistralModel sends ids as
#: stored and Mistral rejects every id that is not nine letters or digits (code 3280; issue 10):
#: the Mistral profile renames ids only there.
PROFILE_FITS_TOOL_CALL_IDS: bool

# --- probed per value (where a whole release range cannot be named in advance) ------------------------

# return_tool_kind_loads(kind), from _load_probes: whether a synthesized return keeps the call's
#   ``tool_kind`` through the release's own JSON (1.95.0-2.57.x accept only core kinds, and
#   1.107.10 types some of them; any string from 2.58.0).
# _load_probes.part_kind_loads / part_fields / part_value_kept / message_fields /
#   message_value_kept: which part kinds and enum-like values (``outcome`` 1.67.0/2.10.0/2.60.0,
#   ``tool_kind`` 1.95.0/2.58.0, ``state`` 1.92.0/1.107.10/2.0.0/2.10.0, ``finish_reason``) the
#   release loads, for _portable.
# _wiring.process_history_class(): the ``ProcessHistory`` capability, first in 1.87.0
#   (``history_processors=`` warns from 1.96.0 and is rejected from 2.0.0).


def interrupted_state(message_kind: str) -> bool:  # issue 11: where classify() can see 'interrupted'
    """``state='interrupted'`` on a ``ModelResponse`` (first in 1.92.0) or ``ModelRequest`` (2.0.0)."""
    return message_value_kept(message_kind, "state", "interrupted")


def run_repair_adds_surplus_results() -> bool:  # issue 10: whom unique_call_ids protects
    """Whether the installed release's run-time repair is the dict-matching one (2.10.0-2.54.x)."""
    from ._release import VERSION

    low, high = RUN_REPAIR_DICT_MATCHING
    return VERSION is not None and low <= VERSION < high


def openai_prefix_api() -> str:  # issue 10: which profile provider="openai" means
    """The API ``openai:`` model strings go to on the installed release (newest when unknown)."""
    from ._release import VERSION

    if VERSION is not None and VERSION < OPENAI_PREFIX_IS_RESPONSES_SINCE:
        return "openai-chat"
    return "openai-responses"


def native_return_named_by_tool() -> bool:  # issue 10: the Anthropic profile's native parts
    """Whether the installed AnthropicModel sends native returns named by their tool (newest when unknown)."""
    from ._release import VERSION

    return VERSION is None or VERSION >= NATIVE_RETURN_NAMED_BY_TOOL_SINCE


def bedrock_skips_response_files() -> bool:  # issue 10: the Bedrock profile's response files
    """Whether the installed BedrockConverseModel leaves response files out (newest when unknown)
    rather than failing on them before sending."""
    from ._release import VERSION

    return VERSION is None or VERSION >= BEDROCK_SKIPS_RESPONSE_FILES_SINCE


def bedrock_sends_only_own_thinking() -> bool:  # issue 10: the Bedrock profile's thinking
    """Whether the installed BedrockConverseModel sends only Bedrock's own signed thinking to Claude as
    reasoning blocks (newest when unknown), rather than every thinking part."""
    from ._release import VERSION

    return VERSION is None or VERSION >= BEDROCK_SENDS_ONLY_OWN_THINKING_SINCE


def thinking_sent() -> bool:  # issue 10: which responses go out empty (_rules_turns)
    """Whether the installed OpenAI Chat, Gemini and Responses serializers send thinking (newest when unknown)."""
    from ._release import VERSION

    return VERSION is None or VERSION >= THINKING_SENT_SINCE


def responses_reasoning_items() -> Literal[
    "none", "every", "own"
]:  # issue 10: which thinking needs a follower (_rules_reasoning)
    """Which thinking parts the installed OpenAIResponsesModel sends as reasoning items: ``"none"``
    (before 1.0.3), ``"every"`` (1.0.3-1.0.4) or ``"own"`` (OpenAI's, with an id; newest when unknown)."""
    from ._release import VERSION

    if VERSION is None or VERSION >= RESPONSES_REASONING_OWN_ONLY_SINCE:
        return "own"
    return "every" if VERSION >= THINKING_SENT_SINCE else "none"


def agent_refuses_response_first() -> bool:  # issue 10: every profile opens with a request there
    """Whether the installed release's agent refuses a history that opens with a response (1.21.0)."""
    from ._release import VERSION

    low, high = AGENT_REFUSES_RESPONSE_FIRST
    return VERSION is not None and low <= VERSION < high


def instructions_at_system_count() -> bool:  # issue 10: where Chat/Mistral put the instructions
    """Whether the installed OpenAIChatModel and MistralModel place the instructions at the count of
    system messages (1.33.0-1.74.x; newest when unknown: they do not)."""
    from ._release import VERSION

    low, high = INSTRUCTIONS_AT_SYSTEM_COUNT
    return VERSION is not None and low <= VERSION < high


def responses_native_calls_sent() -> bool:  # issue 10: what can follow a reasoning item
    """Whether the installed OpenAIResponsesModel sends OpenAI's native calls (newest when unknown)."""
    from ._release import VERSION

    return VERSION is None or VERSION >= RESPONSES_NATIVE_CALLS_SENT_SINCE


def __getattr__(name: str) -> Any:
    """Detect the declared switches on first access to any of them (PEP 562)."""
    from ._detect import DETECTED, switches

    if name in DETECTED:
        detected = switches()
        globals().update(detected)  # later reads are plain attribute lookups
        return detected[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

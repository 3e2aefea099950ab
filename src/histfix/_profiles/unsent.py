"""What a release never sends as part of a turn: the parts the wire leaves out, and a history of only those.

Some parts never reach the provider as part of a turn: system prompts (a system field, or a system
message), tool-availability deltas (``table.TOOL_AVAILABILITY_DELTA``: a system announcement or
nothing), request-scoped capability parts a response has answered (``table.CAPABILITY_PARTS``), native
(server) tool parts of another provider, compaction, and, before ``table.THINKING_SENT``, thinking on
OpenAI Chat and Gemini. The profile rules about empty
messages and the opening turn read these facts, and the runner refuses a profile that leaves a
history with nothing to send.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic_ai.messages import SystemPromptPart, ThinkingPart

from .._records.parts import native_kind
from .._release import switches as _compat
from .._release import table
from .._release.switches import has
from .scan import Scan
from .targets import ProviderTarget, refuses_mixed_turns

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "EMPTY_RESPONSE_APIS",
    "compaction",
    "no_user_turn_before_a_response",
    "only_unsent_request_parts",
    "sends_nothing",
    "unsent_once_answered",
    "unsent_request_classes",
    "unsent_request_part",
    "unsent_response_part",
]

#: The APIs whose model class sends a response of only parts it leaves out as an empty assistant
#: message (OpenAI Chat content_or_tool_calls, Gemini empty_parts, Bedrock empty_content).
EMPTY_RESPONSE_APIS = frozenset({"openai-chat", "gemini", "bedrock"})

#: The APIs whose serializers drop thinking on releases before ``table.THINKING_SENT``.
_THINKING_DROPPED_BY = frozenset({"openai-chat", "gemini"})


def _unsent_request_class(kind: type) -> bool:
    """A request part class no release sends as part of a user turn: a system prompt, or a
    tool-availability delta (rendered as a system announcement, or nothing)."""
    delta = _compat.delta_part()
    return issubclass(kind, SystemPromptPart) or (delta is not None and issubclass(kind, delta))


def unsent_request_part(part: object) -> bool:
    """Whether ``part`` is a system prompt or a tool-availability delta (never sent as a user turn)."""
    return _unsent_request_class(type(part))


def unsent_once_answered(part: object) -> bool:
    """A request-scoped capability part (``table.CAPABILITY_PARTS``): ``Model.prepare_messages`` leaves it out once a response
    has answered its request (an instruction at operator authority as a request-scoped system prompt, a
    downgraded one as framed user text), so before a response it sends no user turn."""
    return getattr(part, "part_kind", "") == "capability" and getattr(part, "scope", None) == "request"


def no_user_turn_before_a_response(part: object) -> bool:
    """A request part that sends no user turn when a response follows its request: a system prompt or a
    request-scoped capability part (:func:`unsent_once_answered`)."""
    return isinstance(part, SystemPromptPart) or unsent_once_answered(part)


def only_unsent_request_parts(history: Sequence[ModelMessage], scan: Scan) -> bool:
    """Whether every part is a system prompt or a tool-availability delta (one set of part classes)."""
    return all(map(_unsent_request_class, scan.survey(history).part_classes))


def unsent_request_classes(history: Sequence[ModelMessage], scan: Scan) -> frozenset[type]:
    """The history's request part classes that are never sent as a user turn (the cheap early exit)."""
    return frozenset(filter(_unsent_request_class, scan.survey(history).part_classes))


def compaction(part: object) -> bool:
    """A ``CompactionPart`` (a provider's summary of earlier turns; present from after 1.80.0)."""
    return getattr(part, "part_kind", "") == "compaction"


def unsent_response_part(part: object, api: str, thinking_sent: bool, target: ProviderTarget) -> bool:
    """A response part the installed release's ``api`` serializer leaves out: native parts (OpenAI Chat
    and Bedrock never send them; Gemini sends only Google's own), compaction (OpenAI Chat, Gemini and
    Bedrock never send it), and thinking on OpenAI Chat and Gemini before ``table.THINKING_SENT`` (they drop it;
    Bedrock sends it for Claude models, and drops it for the others)."""
    if compaction(part):
        return True  # every api of this rule (EMPTY_RESPONSE_APIS)
    if native_kind(part):
        return not (api == "gemini" and getattr(part, "provider_name", None) == "google")
    if not isinstance(part, ThinkingPart) or thinking_sent:
        return False
    return api in _THINKING_DROPPED_BY or (api == "bedrock" and refuses_mixed_turns(target))


def _responses_leaves_out(part: object, thinking_sent: bool) -> bool:
    """A response part the installed OpenAIResponsesModel never sends: another provider's native
    parts (OpenAI's own too before ``table.RESPONSES_NATIVE_CALLS_SENT``) and, before ``table.THINKING_SENT``,
    thinking (read in 1.0.0's models/openai.py)."""
    if native_kind(part):
        return getattr(part, "provider_name", None) != "openai" or not has(table.RESPONSES_NATIVE_CALLS_SENT)
    return isinstance(part, ThinkingPart) and not thinking_sent


def _mistral_leaves_out(part: object) -> bool:
    """A response part MistralModel never sends: native parts (1.0.0, 2.68.0)."""
    return bool(native_kind(part))


def sends_nothing(history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan) -> bool:
    """Whether some target API gets nothing of this history from the installed release: its requests
    hold only parts never sent as a turn, and its responses only parts that API's serializer leaves out
    (1.0.0's OpenAIResponsesModel then sends an empty ``input``)."""
    if not scan.survey(history).requests_hold_only(unsent_request_classes(history, scan)):
        return False  # a request sends a part (on a real history, its first prompt)
    responses = [message for message in history if message.kind == "response"]
    thinking_sent = _thinking_sent()
    for api in target.apis:
        unsent: Callable[[object], bool]
        if api == "openai-responses":
            unsent = functools.partial(_responses_leaves_out, thinking_sent=thinking_sent)
        elif api == "mistral":
            unsent = _mistral_leaves_out
        elif api in EMPTY_RESPONSE_APIS:
            unsent = functools.partial(
                unsent_response_part, api=api, thinking_sent=thinking_sent, target=target
            )
        else:
            continue
        if all(unsent(part) for message in responses for part in message.parts):
            return True
    return False


def _thinking_sent() -> bool:

    return has(table.THINKING_SENT)

"""The release table: every change of a pydantic-ai release that histfix follows, one entry each.

Each :class:`Note` names the release, what it changed, what the releases before it did, and where the
change was read or reported (its release notes always: :attr:`Note.link`). Each says how histfix
tells whether the installed release has it, which is the rule: a presence (a class, a field, a
keyword, a module) is feature-detected (``"detected"``: :mod:`.detect`); a release number is
compared only for behaviour that changed under an unchanged name (``"compared"``); a change histfix
meets with the same repair on every release is ``"noted"``, so that its number has a home too.
:func:`.switches.has` answers for the installed release, and the rule texts and the docs quote the
numbers from here.

Plain data with nothing imported, so ``histfix info`` reads it at once.
"""

from __future__ import annotations

# Nothing is imported at run time: `histfix info` imports this module through .backend.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    How = Literal["detected", "compared", "noted"]

__all__ = ["NOTES", "OLDEST", "REPAIR_FIXES", "Note", "span"]

#: The oldest release histfix supports (pydantic-ai-slim >= 1.0: the first 1.x).
OLDEST = "1.0.0"

#: The release notes of a pydantic-ai release, by its version.
_NOTES_URL = "https://github.com/pydantic/pydantic-ai/releases/tag/v{release}"


class Note:
    """One change of one pydantic-ai release, and how histfix tells whether a release has it."""

    __slots__ = ("before", "how", "name", "release", "source", "until", "what")

    def __init__(
        self,
        name: str,
        release: str,
        what: str,
        *,
        how: How,
        before: str = "",
        until: str = "",
        source: str = "",
    ) -> None:
        #: the name histfix knows it by (the constant's own name)
        self.name = name
        #: the first release with the change
        self.release = release
        #: what the release changed, one line
        self.what = what
        #: ``"detected"``, ``"compared"`` or ``"noted"`` (see the module docstring)
        self.how = how
        #: what the releases before it did (where a message has to say it)
        self.before = before
        #: the first release without the change again, for a change confined to a range ("": none)
        self.until = until
        #: where the change was read or reported, besides the release notes
        self.source = source

    @property
    def link(self) -> str:
        """The release notes of :attr:`release`."""
        return _NOTES_URL.format(release=self.release)

    def __repr__(self) -> str:
        return f"Note({self.name!r}, {self.release!r})"


def _last_before(release: str) -> str:
    """The releases just before ``release``, as a person writes them: ``1.0.2`` before ``1.0.3``,
    ``1.74.x`` before ``1.75.0``."""
    major, minor, patch = (int(number) for number in release.split("."))
    return f"{major}.{minor}.{patch - 1}" if patch else f"{major}.{minor - 1}.x"


def span(first: str, until: str) -> str:
    """The releases from ``first`` up to (not including) ``until``: ``1.21.x``, ``1.33.0-1.74.x``."""
    last = _last_before(until)
    if first.endswith(".0") and last == first[: -len(".0")] + ".x":
        return last
    return f"{first}-{last}"


# --- the messages' types: present from a release on (detected) ----------------------------------------

REQUEST_METADATA = Note("REQUEST_METADATA", "1.20.0", "ModelRequest.metadata", how="detected")
REQUEST_TIMESTAMP = Note("REQUEST_TIMESTAMP", "1.38.0", "ModelRequest.timestamp", how="detected")
RETURN_OUTCOME = Note("RETURN_OUTCOME", "1.67.0", "ToolReturnPart.outcome", how="detected")
RETURN_TOOL_KIND = Note("RETURN_TOOL_KIND", "1.95.0", "ToolReturnPart.tool_kind", how="detected")
ARGS_AS_DICT_TOLERATES_INVALID = Note(
    "ARGS_AS_DICT_TOLERATES_INVALID",
    "1.95.0",
    "ToolCallPart.args_as_dict(raise_if_invalid=): args that are not a JSON object no longer raise",
    how="detected",
    before="args_as_dict raises on them: the Anthropic, Gemini and Bedrock model classes fail before sending",
    source="absent in 1.67.0; the model classes' args_as_dict() calls in models/*.py",
)
OUTCOME_INTERRUPTED = Note(
    "OUTCOME_INTERRUPTED",
    "2.10.0",
    "ToolReturnPart.outcome='interrupted', the neutral value of a synthesized return",
    how="detected",
)
TOOL_AVAILABILITY_DELTA = Note(
    "TOOL_AVAILABILITY_DELTA",
    "2.23.0",
    "ToolAvailabilityDeltaPart, which keeps its place between tool results and is sent as no user turn",
    how="detected",
)
REPAIR_MESSAGES = Note("REPAIR_MESSAGES", "2.53.0", "pydantic_ai.messages.repair_messages", how="detected")
PROFILE_FITS_TOOL_CALL_IDS = Note(
    "PROFILE_FITS_TOOL_CALL_IDS",
    "2.59.0",
    "ModelProfile's tool_call_id_length, with which MistralModel fits every id to Mistral's format",
    how="detected",
    before="MistralModel sends ids as stored",
)
RETRY_FEEDBACK_PART = Note(
    "RETRY_FEEDBACK_PART", "2.60.0", "RetryFeedbackPart: a retry answering no call", how="detected"
)
OUTCOME_RETRIED = Note(
    "OUTCOME_RETRIED",
    "2.60.0",
    "ToolReturnPart.outcome='retried': a retry stored as the call's return",
    how="detected",
    before="a RetryPromptPart",
)
RETURN_UI_VISIBILITY = Note(
    "RETURN_UI_VISIBILITY",
    "2.78.0",
    "ToolReturnPart.ui_visibility, which a synthesized return copies from its call",
    how="detected",
)
CONVERSATION_STORE = Note(
    "CONVERSATION_STORE",
    "2.66.0",
    "pydantic_ai.conversation_store: ConversationStore, its records, branches and revisions",
    how="detected",
)

# --- what a model class sends: behaviour under the same name (compared) ---------------------------------

THINKING_SENT = Note(
    "THINKING_SENT",
    "1.0.3",
    "OpenAIChatModel, GoogleModel and OpenAIResponsesModel send ThinkingPart",
    how="compared",
    before="they leave it out, so a response of only thinking goes out empty",
    source="models/openai.py, models/google.py",
)
BEDROCK_SENDS_ONLY_OWN_THINKING = Note(
    "BEDROCK_SENDS_ONLY_OWN_THINKING",
    "1.0.3",
    "BedrockConverseModel sends Claude only Bedrock's own signed thinking as reasoning blocks, the rest as text",
    how="compared",
    before="it sends Claude every thinking part as a reasoning block, signed or not, whatever made it",
    source="models/bedrock.py",
)
RESPONSES_REASONING_OWN_ONLY = Note(
    "RESPONSES_REASONING_OWN_ONLY",
    "1.0.5",
    "OpenAIResponsesModel sends only OpenAI's own thinking with an id as reasoning items",
    how="compared",
    before="from 1.0.3, every thinking part",
    source="models/openai.py",
)
NATIVE_RETURN_NAMED_BY_TOOL = Note(
    "NATIVE_RETURN_NAMED_BY_TOOL",
    "1.0.9",
    "AnthropicModel sends a native tool return under its tool's name",
    how="compared",
    before="only under the wire block's name (web_search_tool_result); the tool's name raises ValueError",
    source="models/anthropic.py",
)
RESPONSES_NATIVE_CALLS_SENT = Note(
    "RESPONSES_NATIVE_CALLS_SENT",
    "1.0.9",
    "OpenAIResponsesModel sends OpenAI's native tool calls as *_call items",
    how="compared",
    before="it leaves them out",
    source="models/openai.py",
)
AGENT_REFUSES_RESPONSE_FIRST = Note(
    "AGENT_REFUSES_RESPONSE_FIRST",
    "1.21.0",
    "the Agent raises UserError on a history that starts with a ModelResponse, whatever the provider",
    how="compared",
    until="1.22.0",
    source="_agent_graph.py, read in the wheels of 1.19.0-1.23.0",
)
INSTRUCTIONS_AT_SYSTEM_COUNT = Note(
    "INSTRUCTIONS_AT_SYSTEM_COUNT",
    "1.33.0",
    "OpenAIChatModel and MistralModel insert the instructions after as many messages as there are "
    "system messages anywhere in the history",
    how="compared",
    until="1.75.0",
    before="after the leading system messages, as the releases after the range do again",
    source="models/openai.py, models/mistral.py, read in the wheels of 1.32.0, 1.33.0, 1.74.0 and 1.75.0",
)
BEDROCK_SKIPS_RESPONSE_FILES = Note(
    "BEDROCK_SKIPS_RESPONSE_FILES",
    "1.80.0",
    "BedrockConverseModel leaves a FilePart in a response out",
    how="compared",
    before="it asserts that every response part it does not map is a tool call: AssertionError before sending",
    source="models/bedrock.py",
)
OPENAI_PREFIX_IS_RESPONSES = Note(
    "OPENAI_PREFIX_IS_RESPONSES",
    "2.0.0",
    "openai: model strings build OpenAIResponsesModel",
    how="compared",
    before="OpenAIChatModel",
    source="models/__init__.py (infer_model)",
)
BEDROCK_SEPARATES_RESULTS = Note(
    "BEDROCK_SEPARATES_RESULTS",
    "2.6.0",
    "BedrockConverseModel inserts a '.' assistant turn between a request's tool results and its other "
    "content where the model's profile forbids them in one turn",
    how="noted",
    before="it sends one request as one user turn",
    source="models/bedrock.py; histfix separates them in the history on every release",
)
CAPABILITY_PARTS = Note(
    "CAPABILITY_PARTS",
    "2.78.0",
    "CapabilityPart, what a capability or the application tells the model: Model.prepare_messages "
    "leaves a request-scoped one out once a response answers its request",
    how="noted",
    source="messages.py, models/__init__.py; histfix reads part_kind, alike on every release",
)
FRAMING_ANNOUNCED = Note(
    "FRAMING_ANNOUNCED",
    "2.63.0",
    "Model.prepare_messages puts a system prompt saying what its <system> blocks mean at the front of "
    "the first request, for a model without inline system prompts",
    how="compared",
    source="models/__init__.py",
)
RESULTS_SENT_FIRST = Note(
    "RESULTS_SENT_FIRST",
    "2.68.0",
    "Model.prepare_messages puts each request's tool results ahead of its other parts, for every model class",
    how="compared",
    before="a model class sends a request's parts in stored order: a prompt, system prompt or summary "
    "before the results goes out before them",
    source="models/__init__.py, read in the wheels of 2.66.0 and 2.68.0 (2.67.0 was not released)",
)

# --- the repair: the run's own, then repair_messages (compared) -----------------------------------------

RUN_REPAIRS_HISTORY = Note(
    "RUN_REPAIRS_HISTORY",
    "2.10.0",
    "the agent run repairs the history before each request",
    how="compared",
    before="nothing repairs a history",
    source="_agent_graph.py",
)
REPAIR_MATCHES_FIFO = Note(
    "REPAIR_MATCHES_FIFO",
    "2.55.0",
    "the repair matches the results of an id called twice in one response first in, first out",
    how="compared",
    before="duplicate ids are matched by a dict, which is not idempotent",
    source="pydantic_ai/messages.py; the run's own repair before each request: _agent_graph.py, "
    "then messages.py from 2.53.0 (read in the wheels of 2.10.0, 2.53.0 and 2.55.0)",
)
REPAIR_COPIES_TOOL_KIND = Note(
    "REPAIR_COPIES_TOOL_KIND",
    "2.58.0",
    "a synthesized return copies its call's tool_kind",
    how="compared",
    before="synthesized returns do not copy tool_kind",
)
REPAIR_MOVES_PARTS_BETWEEN_RESULTS = Note(
    "REPAIR_MOVES_PARTS_BETWEEN_RESULTS",
    "2.59.0",
    "a request that is not merged gets the parts between its results moved after them",
    how="compared",
    before="parts between the results of an unmerged request stay put",
)
REPAIR_LEAVES_TOOLLESS_RETRY = Note(
    "REPAIR_LEAVES_TOOLLESS_RETRY",
    "2.60.0",
    "a tool-less retry prompt loads as RetryFeedbackPart, which a merge leaves in place",
    how="compared",
    before="a merge hoists a tool-less retry prompt (2.60.0 loads it as RetryFeedbackPart)",
)
REPAIR_PAUSE_ONLY_WHEN_ALL = Note(
    "REPAIR_PAUSE_ONLY_WHEN_ALL",
    "2.78.0",
    "a merge keeps deferred_pause only when every merged request has it",
    how="compared",
    before="a merge keeps deferred_pause when any merged request has it, not only when all do",
)
#: Each release that brought ``repair_messages`` closer to the newest behaviour, oldest first: what
#: the releases before each do instead are the reasons ``backend="auto"`` runs histfix's walk there.
REPAIR_FIXES: tuple[Note, ...] = (
    REPAIR_MATCHES_FIFO,
    REPAIR_COPIES_TOOL_KIND,
    REPAIR_MOVES_PARTS_BETWEEN_RESULTS,
    REPAIR_LEAVES_TOOLLESS_RETRY,
    REPAIR_PAUSE_ONLY_WHEN_ALL,
)
#: The backend rule: where ``repair_messages`` is the newest behaviour, ``backend="auto"`` delegates to
#: it; a pre-release or dev build of that release counts as older.
UPSTREAM_REPAIR_CURRENT = Note(
    "UPSTREAM_REPAIR_CURRENT",
    REPAIR_FIXES[-1].release,
    "repair_messages matches the newest behaviour: backend='auto' delegates to it",
    how="compared",
    before="backend='auto' runs histfix's own walk",
    source="the test suite proves the walk gives repair_messages' output there",
)

#: Every entry, in the order above.
NOTES: tuple[Note, ...] = tuple(value for value in tuple(globals().values()) if isinstance(value, Note))

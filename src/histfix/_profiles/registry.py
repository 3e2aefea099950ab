"""Provider profiles: the default repair, then the extra passes the target provider's API needs.

Upstream's repair guarantees call/result pairing only; each provider API enforces more. A profile
is the list of :class:`ProfileRule` whose ``apis`` include the target's API. Each rule is one
provider rule (named for it), with a pure ``fix`` pass and a ``detect`` for :func:`histfix.check`.

Order: the ``"before"`` rules run on the input, before the default repair (they only rewrite
identities, such as tool call ids, so that the default repair pairs what the wire will pair; they
never add, drop or reorder messages). Then the default repair runs, exactly as ``provider=None``
does. Then the ``"after"`` rules run, in the order of :data:`RULES`, each on the previous one's
output. A rule's ``Change`` and ``Problem`` indices point into the history that rule received.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .._records.changes import Change
from .._records.problems import Problem
from .targets import ProviderTarget

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["RULES", "Detect", "Fix", "ProfileRule", "rules_for"]

#: A pass: the history (never mutated) -> the fixed history and what it changed. A pass that finds
#: nothing to do returns the list it was given (the same object) and no changes.
Fix = Callable[["list[ModelMessage]", ProviderTarget], "tuple[list[ModelMessage], list[Change]]"]
#: What a provider would reject in a history, one Problem per finding, worded as that provider words it.
Detect = Callable[["Sequence[ModelMessage]", ProviderTarget], "list[Problem]"]


@dataclass(frozen=True)
class ProfileRule:
    """One provider rule the default repair does not cover, with the pass that satisfies it."""

    #: short snake_case name, also the pass's function name (``one_result_per_call``)
    name: str
    #: the APIs (``_providers.PROVIDER_APIS``) that enforce it
    apis: frozenset[str]
    #: one line: what the provider rejects and where that is documented (providers.md)
    why: str
    stage: Literal["before", "after"]
    fix: Fix
    detect: Detect | None = None
    #: api -> the provider's own error text for this rule
    wording: Mapping[str, str] = field(default_factory=dict)


def _registered() -> tuple[ProfileRule, ...]:
    """Every rule, in the order the passes run (rule modules append theirs here)."""
    from .rules.bedrock_thinking import bedrock_thinking_rules
    from .rules.calls import call_rules
    from .rules.files import file_rules
    from .rules.instructions import instructions_rules
    from .rules.reasoning import reasoning_rules
    from .rules.results_alone import results_alone_rules
    from .rules.turns import turn_rules

    shape = _shape_rules()
    emptied = [rule.name for rule in shape].index("no_empty_content")
    return (
        # --- tool calls, ids and results (_rules_calls): before-stage renames, then results/args.
        *call_rules(),
        # --- shape, order, content and native parts (_rules_shape), after the calls/results rules.
        # Passes that remove parts run before no_empty_content (which drops what they empty);
        # starts_with_user after it (an emptied first request is gone); alternation after the
        # turn rules (_rules_turns), which can make two responses neighbours.
        *shape[:emptied],
        # --- response files a model class cannot send (_rules_files): they remove parts, so before
        # no_empty_content.
        *file_rules(),
        # --- thinking Claude on Bedrock refuses as 1.0.0-1.0.2 send it (_rules_bedrock_thinking): after
        # thinking_transfers (whose unsigned thinking it then sees); it drops parts, so before
        # no_empty_content.
        *bedrock_thinking_rules(),
        # --- reasoning items without a following output item (_rules_reasoning): after
        # thinking_transfers; it can drop parts, so before no_empty_content.
        *reasoning_rules(),
        *[rule for rule in shape[emptied:] if rule.name != "alternating_roles"],
        # --- turns the wire does not see (_rules_turns): requests and responses of parts the release
        # never sends, a first request without a user turn, Gemini's function call position.
        *turn_rules(),
        # --- Bedrock's non-Claude models take nothing beside tool results in a turn
        # (_rules_results_alone): after results_first and the turn rules; the response it adds sits
        # between two requests, so alternation is unchanged.
        *results_alone_rules(),
        *[rule for rule in shape if rule.name == "alternating_roles"],
        # --- where OpenAI Chat and Mistral put the instructions (_rules_instructions): last, since it
        # counts the wire messages every other rule may drop, merge or reorder.
        *instructions_rules(),
    )


def _shape_rules() -> tuple[ProfileRule, ...]:
    from .rules import native, shape

    return (
        ProfileRule(
            "native_calls_paired",
            native.NATIVE_CALLS_APIS,
            "Anthropic server_tool_use_without_result: a native call needs its result block in the same "
            "response (releases up to 2.30 send it alone; before 1.0.9 returns need the wire name)",
            "after",
            native.native_calls_paired,
            native.detect_native_calls_paired,
            native.NATIVE_CALL_WORDING,
        ),
        ProfileRule(
            "thinking_transfers",
            native.THINKING_APIS,
            "thinking signatures verify only with their own provider: Anthropic 'Invalid signature in "
            "thinking block' (anthropic-sdk-python#1598), OpenAI Responses reasoning items",
            "after",
            native.thinking_transfers,
            native.detect_thinking_transfers,
            native.THINKING_WORDING,
        ),
        ProfileRule(
            "no_empty_content",
            shape.NO_EMPTY_CONTENT_APIS,
            "empty text, prompts or messages: Anthropic empty_text/empty_message, Bedrock whitespace_text/"
            "empty_content, Gemini empty_text/empty_parts/ends_on_model_turn, OpenAI Chat content_or_tool_calls",
            "after",
            shape.no_empty_content,
            shape.detect_no_empty_content,
            shape.EMPTY_WORDING,
        ),
        ProfileRule(
            "starts_with_user",
            shape.STARTS_WITH_USER_APIS,
            "the first turn must be the user's: Anthropic first_message_user (unverified), Bedrock "
            "start_with_user (verified), Gemini (GoogleModel opens with an empty user text)",
            "after",
            shape.starts_with_user,
            shape.detect_starts_with_user,
            shape.FIRST_USER_WORDING,
        ),
        ProfileRule(
            "agent_accepts_opening",
            frozenset(shape.AGENT_OPENING_WORDING),
            "1.21.0's Agent raises UserError 'Message history cannot start with a `ModelResponse`' for every "
            "provider (1.20.0 and 1.22.0 do not): there the fixed prompt goes first, as starts_with_user does",
            "after",
            shape.agent_accepts_opening,
            shape.detect_agent_accepts_opening,
            shape.AGENT_OPENING_WORDING,
        ),
        ProfileRule(
            "results_first",
            shape.RESULTS_FIRST_APIS,
            "tool results first in a request: Anthropic tool_result_first, Bedrock tool_results_first, "
            "OpenAI Chat and Mistral (a user message between calls and tool messages); serializers up to "
            "2.30 keep part order",
            "after",
            shape.results_first,
            shape.detect_results_first,
            shape.RESULTS_FIRST_WORDING,
        ),
        ProfileRule(
            "alternating_roles",
            shape.ALTERNATION_APIS,
            "Bedrock alternate_roles (verified): user and assistant turns alternate; Gemini "
            "function_call_turn_position (verified): a function call turn follows a user turn",
            "after",
            shape.alternating_roles,
            shape.detect_alternating_roles,
            shape.ALTERNATION_WORDING,
        ),
    )


#: Every profile rule in pass order. A profile is the subsequence whose ``apis`` meet the target's.
RULES: tuple[ProfileRule, ...] = _registered()


def rules_for(target: ProviderTarget, stage: Literal["before", "after"]) -> tuple[ProfileRule, ...]:
    """The rules of ``stage`` that apply to ``target``, in pass order."""
    wanted = set(target.apis)
    return tuple(rule for rule in RULES if rule.stage == stage and wanted & rule.apis)

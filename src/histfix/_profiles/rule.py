"""The profile rule type, and what every rule builds its findings and fixes from.

A :class:`ProfileRule` pairs one provider rule with the pass that satisfies it and the detect that
finds it. The helpers below are shared by the rule modules: the one Problem factory, the preview of
what a pass removes, the fixed starter prompt, and the default repair's merges after a drop.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._records.changes import Change, renumbered
from .._records.depth import text_or_depth
from .._records.problems import Problem, ProblemKind
from .._release import table
from .._release.switches import has
from .scan import Scan
from .targets import PROVIDER_APIS, ProviderTarget
from .wording import filled, worded

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart

    from .call_ids import IdFormat

__all__ = [
    "STARTER_PROMPT",
    "Count",
    "Counted",
    "Detect",
    "Finding",
    "Fix",
    "IdFormatForm",
    "ProfileRule",
    "moved",
    "preview",
    "problem",
    "renormalized",
    "replaced",
    "rule",
    "starter_request",
    "with_starter_prompt",
]

#: A pass: the history (never mutated) -> the fixed history and what it changed. A pass that finds
#: nothing to do returns the list it was given (the same object) and no changes. The run's
#: :class:`.scan.Scan` carries what earlier passes learned about the lists they handed on.
Fix = Callable[["list[ModelMessage]", ProviderTarget, Scan], "tuple[list[ModelMessage], list[Change]]"]
#: What a provider would reject in a history, one :class:`Finding` each (made by :func:`problem`).
Detect = Callable[["Sequence[ModelMessage]", ProviderTarget, Scan], "list[Finding]"]


class Counted(NamedTuple):
    """A detect's findings where only how many and where are wanted: no Problem is made."""

    kind: ProblemKind
    #: each finding's part, as its index among the history's parts (``scan.survey(history).flat``),
    #: in history order
    places: list[int]


#: A detect's findings as :class:`Counted`, from which the detect itself words them: one reading of
#: the history for both.
Count = Callable[["Sequence[ModelMessage]", ProviderTarget, Scan], Counted]
#: A before-stage pass that only renames ids into a format, one call id at a time: the target ->
#: that format (:class:`.call_ids.IdFormat`), or None where the pass renames nothing for the target.
IdFormatForm = Callable[[ProviderTarget], "IdFormat | None"]


@dataclass(frozen=True)
class ProfileRule:
    """One provider rule the default repair does not cover, with the pass that satisfies it."""

    #: short snake_case name, also the pass's function name (``one_result_per_call``)
    name: str
    #: the APIs (``targets.PROVIDER_APIS``) that enforce it
    apis: frozenset[str]
    #: one line: what the provider rejects and where that is documented
    why: str
    stage: Literal["before", "after"]
    fix: Fix
    detect: Detect | None = None
    #: api -> the provider's own error text for this rule
    wording: Mapping[str, str] = field(default_factory=dict)
    #: the detect's findings counted (see :class:`Counted`), for a caller that needs no Problem
    count: Count | None = None
    #: the pass one call id at a time (see :data:`IdFormatForm`): the default repair pairs by id
    #: alone, so renaming each call and its results as the repair meets them gives what renaming its
    #: input and repairing gives
    id_format: IdFormatForm | None = None
    #: the one Change kind the pass reports, once, where this rule's findings are the only ones the
    #: profile's check makes (nothing else then changes): what the store's record counts instead of
    #: running the repair
    sole_change: str | None = None
    #: whether the pass may change ``history`` where the detect finds nothing for the target (a
    #: change harmless everywhere, made for every API): no other rule's findings stand alone then
    changes_unfound: Callable[[Sequence[ModelMessage], Scan], bool] | None = None

    def applies_to(self, target: ProviderTarget) -> bool:
        """Whether some API of ``target`` enforces this rule: the one test of which rules a profile runs."""
        return not self.apis.isdisjoint(target.apis)


def rule(
    name: str,
    stage: Literal["before", "after"],
    fix: Fix,
    detect: Detect | None,
    wording: Mapping[str, str],
    *,
    why: str,
    apis: Collection[str] | None = None,
    count: Count | None = None,
    id_format: IdFormatForm | None = None,
    sole_change: str | None = None,
    changes_unfound: Callable[[Sequence[ModelMessage], Scan], bool] | None = None,
) -> ProfileRule:
    """A rule for the APIs that enforce it: ``apis``, by default the APIs ``wording`` has words for."""
    return ProfileRule(
        name,
        frozenset(wording if apis is None else apis),
        why,
        stage,
        fix,
        detect,
        wording,
        count,
        id_format,
        sole_change,
        changes_unfound,
    )


#: The user prompt a profile puts before a history that starts with the model's response (a slice
#: of a longer conversation, or a history whose first request held only an orphaned result).
#: Anthropic, Bedrock and Gemini need the first turn from the user; inserting this keeps the
#: model's text, where dropping the response would lose it. Fixed, so a re-run recognizes it
#: (the history then starts with a user turn) and never inserts it twice.
STARTER_PROMPT = "(The earlier part of this conversation is not included.)"

_PREVIEW = 200


def preview(content: object) -> str:
    """What a removed thing held, on one line (long content is cut at 200 characters)."""
    text = content if isinstance(content, str) else text_or_depth(repr, content)
    text = " ".join(text.split()) if text.strip() else repr(text)
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


class Finding(NamedTuple):
    """What a detect found: the Problem as the target's APIs that reject it word it, and each one's
    own words (check merges two findings of one place by them)."""

    problem: Problem
    words: Mapping[str, str]


def problem(
    kind: ProblemKind,
    wording: Mapping[str, str],
    target: ProviderTarget,
    *,
    at: int,
    description: str,
    part_index: int | None = None,
    part: object = None,
    apis: Collection[str] | None = None,
    **fill: object,
) -> Finding:
    """The one way a rule words what it finds: rejected by the target's APIs among ``apis`` (by
    default those ``wording`` has words for), each in its own words with ``fill`` in the
    placeholders, or in ``description`` where its words are not documented. ``part`` gives the
    call id and tool name of a finding about one call or result."""
    enforcing = apis if isinstance(apis, frozenset) else frozenset(wording if apis is None else apis)
    rejected_by = _rejecting(target.apis, enforcing)
    words = {api: _filled(wording[api], fill) if api in wording else description for api in rejected_by}
    found = Problem(
        kind,
        at,
        part_index,
        getattr(part, "tool_call_id", None),
        getattr(part, "tool_name", None),
        description,
        rejected_by,
        worded(words) if words else None,
    )
    return Finding(found, words)


def moved(finding: Finding, *, at: int, part_index: int | None = None, part: object = None) -> Finding:
    """The same finding about another place (a call's id, found again on its result), in the same
    words: a detect that meets one finding many times words it once."""
    found = finding.problem
    return Finding(
        Problem(
            found.kind,
            at,
            part_index,
            getattr(part, "tool_call_id", None),
            getattr(part, "tool_name", None),
            found.description,
            found.rejected_by,
            found.provider_error,
        ),
        finding.words,
    )


def _filled(text: str, fill: dict[str, object]) -> str:
    # str.format is the common case and a third of the cost; a placeholder the finding does not
    # fill (another API's words name more) is kept as it is
    try:
        return text.format(**fill)
    except KeyError:
        return filled(text, **fill)


@functools.lru_cache(maxsize=1024)
def _rejecting(target_apis: tuple[str, ...], enforcing: frozenset[str]) -> tuple[str, ...]:
    # asked once per finding, for a handful of distinct pairs
    return tuple(api for api in PROVIDER_APIS if api in target_apis and api in enforcing)


def replaced(message: Any, **changes: Any) -> Any:
    """A copy of a message or part with other field values, through its own constructor."""
    return dataclasses.replace(message, **changes)


def _starter_prompt(response: ModelResponse) -> UserPromptPart:
    """:data:`STARTER_PROMPT` as the user turn before ``response``, stamped with its time."""
    from pydantic_ai.messages import UserPromptPart

    return UserPromptPart(STARTER_PROMPT, timestamp=response.timestamp)


def with_starter_prompt(request: ModelRequest, response: ModelResponse) -> ModelRequest:
    """``request`` (no user turn on the wire) with the starter prompt for ``response`` appended."""
    fixed: ModelRequest = replaced(request, parts=[*request.parts, _starter_prompt(response)])
    return fixed


def starter_request(response: ModelResponse) -> ModelRequest:
    """A request of the starter prompt alone, to go before ``response`` (stamped with its time where
    requests have one)."""
    from pydantic_ai.messages import ModelRequest

    fields: dict[str, Any] = {"timestamp": response.timestamp} if has(table.REQUEST_TIMESTAMP) else {}
    return ModelRequest(parts=[_starter_prompt(response)], **fields)


def renormalized(
    history: list[ModelMessage], positions: Sequence[int]
) -> tuple[list[ModelMessage], list[Change]]:
    """The default repair's merges for messages a drop made neighbours (two requests, or two
    responses no provider produced), so that a re-run's default repair finds nothing to do.
    ``repair_last_response=False``: the default repair already closed every call it would close.
    ``positions``: where each message of ``history`` stood in the list the pass received, whose
    indices its changes name (the drop left gaps)."""
    from .._repair.report import repair_with_changes

    report = repair_with_changes(history, repair_last_response=False)
    if not report.changes:
        return history, []
    return report.messages, [renumbered(change, positions.__getitem__) for change in report.changes]

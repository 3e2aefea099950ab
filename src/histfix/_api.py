"""The public functions. pydantic-ai is imported inside them, never when histfix is imported."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ._profiles.targets import ProviderTarget
from ._records.changes import RepairReport
from ._records.inputs import as_history
from ._records.problems import Problem
from ._records.state import HistoryState
from ._records.tokens import estimate_tokens
from ._release import table
from ._release.override import forced_backend as _forced_backend
from ._release.switches import has

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model

    from ._profiles.plan import Plan
    from ._repair.memory import RepairMemory
    from ._repair.pairing import Pairing

__all__ = [
    "Backend",
    "BackendInfo",
    "backend_info",
    "check",
    "classify",
    "dump_json",
    "is_provider_valid",
    "keep_last_turns",
    "load_json",
    "repair",
    "repair_report",
    "trim_to_budget",
]

Backend = Literal["auto", "upstream", "histfix"]
_BACKENDS = ("auto", "upstream", "histfix")
#: What ``repair(..., orphans=)`` does with a result whose call is not in the history.
Orphans = Literal["drop", "note"]
_ORPHANS = ("drop", "note")
#: Repair is silent; with this logger at DEBUG it writes one record per change it makes.
logger = logging.getLogger("histfix")


@dataclass(frozen=True)
class BackendInfo:
    """Which repair path ``backend="auto"`` takes on this install, and why."""

    backend: Literal["upstream", "histfix"]
    reason: str
    distribution: str
    version: str
    newest_tested: str
    features: Mapping[str, bool] = field(default_factory=dict)


def _check_flags(repair_last_response: object, orphans: object) -> None:
    if not isinstance(repair_last_response, bool):
        raise TypeError(f"repair_last_response must be a bool, got {type(repair_last_response).__name__}")
    if orphans not in _ORPHANS:
        raise ValueError(f"orphans must be one of {', '.join(map(repr, _ORPHANS))}, got {orphans!r}")


def _require_pydantic_ai() -> None:
    """Raise an ImportError that says what to install when pydantic-ai is missing."""
    from ._release.installed import pydantic_ai_messages

    pydantic_ai_messages()


def backend_info() -> BackendInfo:
    """Describe the installed pydantic-ai and the repair path ``repair(..., backend="auto")`` runs."""
    from ._release.backend import choose_backend
    from ._release.installed import NEWEST_TESTED, current
    from ._release.switches import features

    distribution, version = current()
    chosen, reason = choose_backend(version, has(table.REPAIR_MESSAGES), _forced_backend())
    return BackendInfo(
        backend=chosen,  # type: ignore[arg-type]
        reason=reason,
        distribution=distribution,
        version=version,
        newest_tested=NEWEST_TESTED,
        features=features(),
    )


def repair(
    messages: Sequence[ModelMessage],
    *,
    repair_last_response: bool = True,
    backend: Backend = "auto",
    orphans: Orphans = "drop",
    provider: str | Model | None = None,
) -> list[ModelMessage]:
    """Return a provider-valid copy of ``messages``, as the newest pydantic-ai repairs it.

    Orphaned tool results are dropped, every dangling tool call gets a synthesized return marked
    ``{'pydantic_ai_synthesized_tool_return': True}``, and consecutive compatible messages are
    merged. With ``repair_last_response=False`` the calls of the last response are left open (they
    can still be run). ``orphans="note"`` keeps each orphaned result, in its place, as a marked
    user note carrying the tool name and content, instead of dropping it (upstream's ``"drop"``).
    ``backend`` forces upstream's ``repair_messages`` or histfix's own walk; ``"auto"`` picks as
    ``backend_info`` says. The input is never mutated.

    ``provider`` (a model-name prefix such as ``"anthropic"``, a model string, a pydantic-ai
    ``Model``, or ``"any"``: one history every profile accepts) runs that provider's profile
    around this repair: the passes for the rules its API enforces beyond pairing, so that what the
    installed release's model class sends is accepted and ``check(result, provider=provider)`` is
    ``[]``. What a pass removes is in ``repair_report`` with its content. ``None`` is exactly
    the default repair. For an Agent, ``agent_options(provider="auto")`` picks the profile from the
    run's model. Raises ValueError for an unknown name, and when a non-empty history has nothing
    sendable (only system prompts); ``[]`` stays ``[]``.
    """
    _check_arguments(backend, repair_last_response, orphans)
    history = as_history(messages, function="repair")
    logged = logger.isEnabledFor(logging.DEBUG)
    plan = _plan(backend, repair_last_response, orphans, provider, changes_wanted=logged)
    return _repaired(history, plan)


def _repaired(
    history: Sequence[ModelMessage], plan: Plan, pairing: Pairing | None = None
) -> list[ModelMessage]:
    """``repair``'s work once its arguments are checked: the plan run (reusing ``pairing``, made of
    ``history``, where it can), each change logged."""
    from ._profiles.run import repair_by_plan

    report = repair_by_plan(history, plan, pairing)
    for change in report.changes:  # none unless logged
        logger.debug("%s", change)
    return report.messages


def remembering_repair(messages: Sequence[ModelMessage], memory: RepairMemory) -> list[ModelMessage]:
    """``repair(messages)`` with every default, asking ``memory`` first whether it returns the
    history as it is (the history processor's path: only what is new since the last healthy
    history is read). The same list and errors as ``repair(messages)``."""
    history = as_history(messages, function="repair")
    plan = _plan("auto", True, "drop", None, changes_wanted=logger.isEnabledFor(logging.DEBUG))
    same, pairing = memory.as_is(history, plan.engine)
    if same is not None:
        return same
    return _repaired(history, plan, pairing)


def _check_arguments(backend: object, repair_last_response: object, orphans: object) -> None:
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, _BACKENDS))}, got {backend!r}")
    _check_flags(repair_last_response, orphans)


def _plan(
    backend: Backend, repair_last_response: bool, orphans: Orphans, provider: object, *, changes_wanted: bool
) -> Plan:
    """The plan of a ``repair``/``repair_report`` call whose other arguments are checked: the
    provider resolved (ValueError for an unknown one), then pydantic-ai required (ImportError)."""
    target = _target(provider)
    _require_pydantic_ai()
    from ._profiles.plan import plan_call

    return plan_call(
        backend=backend,
        repair_last_response=repair_last_response,
        orphans=orphans,
        changes_wanted=changes_wanted,
        target=target,
    )


def _target(provider: object) -> ProviderTarget | None:
    if provider is None:
        return None
    from ._profiles.targets import resolve_provider

    return resolve_provider(provider)


def keep_last_turns(
    messages: Sequence[ModelMessage], turns: int, *, keep_system_prompt: bool = True
) -> list[ModelMessage]:
    """Keep the last ``turns`` user turns, never cutting a tool call from its result.

    A turn starts at a request with a user prompt that answers no tool call. With
    ``keep_system_prompt`` the system prompt parts that opened the history are carried over to
    the first kept request, since pydantic-ai does not re-send them when given a history.
    """
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ValueError(f"turns must be a positive int, got {turns!r}")
    history = as_history(messages, function="keep_last_turns")
    _require_pydantic_ai()
    from ._trim import keep_last_turns as trim

    return trim(history, turns, keep_system_prompt=keep_system_prompt)


def trim_to_budget(
    messages: Sequence[ModelMessage],
    max_tokens: int,
    *,
    count_tokens: Callable[[ModelMessage], int] = estimate_tokens,
    keep_system_prompt: bool = True,
) -> list[ModelMessage]:
    """Keep the longest run of whole turns, newest last, whose size fits ``max_tokens``.

    Sizes come from ``count_tokens(message)`` (default: ``estimate_tokens``, about four
    characters a token; pass a real tokenizer's count for exactness). Cuts only where
    ``keep_last_turns`` would, carrying the opening system prompt over the same way. Raises
    ``BudgetExceededError`` (a ``ValueError``) when even the last turn does not fit.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if not callable(count_tokens):
        raise TypeError(f"count_tokens must be callable, got {type(count_tokens).__name__}")
    history = as_history(messages, function="trim_to_budget")
    _require_pydantic_ai()
    from ._trim import trim_to_budget as trim

    return trim(history, max_tokens, count_tokens=count_tokens, keep_system_prompt=keep_system_prompt)


def check(
    messages: Sequence[ModelMessage],
    *,
    provider: str | Model | None = None,
    repair_last_response: bool = True,
) -> list[Problem]:
    """Every problem in ``messages`` that a strict provider rejects or ``repair`` would change.

    Dangling and shadowed calls, orphaned, early, duplicate and late results, consecutive
    messages that repair merges, and parts sitting between tool results, each located by message
    and part index, in order. The same rules on every release; an empty list means valid. Each
    problem's ``rejected_by`` names the provider APIs that reject it; empty means no provider
    does and repair only normalizes it (two requests in a row). With ``repair_last_response=False``
    the last response's open calls are left alone, as ``repair`` leaves them then (they may still
    run, or get deferred results).

    With ``provider`` (what ``repair`` takes: a prefix, a model string, a ``Model`` or
    ``"any"``): exactly what that provider's API rejects, the problems above it rejects plus what
    its profile's rules find (reused or malformed ids, a history starting with a response, empty
    text...), each with ``provider_error``, the API's own error text. ``check(repair(h,
    provider=P), provider=P)`` is ``[]``. Raises ValueError for an unknown provider name.
    """
    _check_flags(repair_last_response, "drop")
    history = as_history(messages, function="check")
    target = _target(provider)
    _require_pydantic_ai()
    from ._check.history import check_history
    from ._check.rejections import check_for, mark_rejections

    problems = check_history(history, repair_last_response)
    if target is None:
        return mark_rejections(history, problems)
    return check_for(history, target, problems)


def classify(messages: Sequence[ModelMessage]) -> HistoryState:
    """Where a stored history stands before you persist or continue it (see ``HistoryState``).

    ``"complete"``, ``"pending_calls"`` (the last response's calls can still run or get deferred
    results/approvals), ``"pending_request"``, ``"interrupted"`` (marked so by pydantic-ai, where
    the release has ``state``) or ``"broken"`` (with the problems outside the frontier). Takes
    what ``repair`` takes and fails the same way.
    """
    history = as_history(messages, function="classify")
    _require_pydantic_ai()
    from ._check.classify import classify_history

    return classify_history(history)


def is_provider_valid(messages: Sequence[ModelMessage], *, provider: str | Model | None = None) -> bool:
    """Whether ``check(messages, provider=provider)`` finds nothing.

    Without ``provider``: a strict provider accepts it and repair keeps it as it is. With one:
    that provider's API accepts it as it is (repair may still normalize it).
    """
    if provider is None:
        return not check(messages)
    history = as_history(messages, function="check")
    target = _target(provider)
    assert target is not None  # a provider was given
    _require_pydantic_ai()
    from ._check.history import check_history
    from ._check.rejections import verdict_for

    # the verdict alone: no Problem for each finding a rule can count (every id outside a format)
    return not verdict_for(history, target, check_history(history)).kinds


def repair_report(
    messages: Sequence[ModelMessage],
    *,
    repair_last_response: bool = True,
    backend: Backend = "auto",
    orphans: Orphans = "drop",
    provider: str | Model | None = None,
) -> RepairReport:
    """Repair ``messages`` and say what changed: dropped results, synthesized returns, merges, moves.

    ``.messages`` is exactly what ``repair`` returns with the same arguments on the installed
    release, through the same path (``backend`` as ``repair`` takes it). The changes are recorded
    by histfix's own walk, which gives upstream's output on 2.78.0+ except for one input, an
    in-memory tool-less ``RetryPromptPart`` (deprecated there): upstream's merge moves it forward
    with the tool results. The same results are dropped, returns synthesized and messages merged
    either way; only the order of parts inside that merged request differs, and ``.messages`` has
    upstream's. With ``orphans="note"`` it lists each orphaned result kept as a note (with its
    content's preview) instead of dropped. With ``provider``, the profile's changes follow the
    repair's (each with what it removed). Every change names the message it is about by its index
    in ``messages`` (see ``Change``), also where the profile works on a list the repair shortened.
    """
    _check_arguments(backend, repair_last_response, orphans)
    history = as_history(messages, function="repair_report")
    return _report(history, _plan(backend, repair_last_response, orphans, provider, changes_wanted=True))


def _report(history: Sequence[ModelMessage], plan: Plan, pairing: Pairing | None = None) -> RepairReport:
    """:func:`repair_report` of a checked history by ``plan``; ``pairing``: one made of ``history``
    with the plan's ``repair_last_response``, which the repair then need not make again."""
    from ._profiles.run import repair_by_plan

    return repair_by_plan(history, plan, pairing)


def _default_report(history: Sequence[ModelMessage], provider: str | None, pairing: Pairing) -> RepairReport:
    """``repair_report(history, provider=provider)`` of a list of messages, reusing ``pairing``
    (``history``'s, with ``repair_last_response=True``): the store's record, which has it from check."""
    return _report(history, _plan("auto", True, "drop", provider, changes_wanted=True), pairing)


def load_json(data: str | bytes | bytearray) -> list[ModelMessage]:
    """Load a history written by any pydantic-ai release from 1.0.0 on into the installed one's types.

    Values the installed release cannot represent become their nearest equivalent (a 2.60+
    retried return becomes a ``RetryPromptPart`` before 2.60, a ``RetryFeedbackPart`` a tool-less
    one, an unknown ``outcome`` or ``tool_kind`` its default); content is never dropped: anything
    else it cannot load raises a one-line ``ValueError`` naming the JSON path.
    """
    _require_pydantic_ai()
    from ._portable import load_json as load

    return load(data)


def dump_json(messages: Sequence[ModelMessage]) -> bytes:
    """The history as JSON bytes, as the installed release writes it (readable by ``load_json``)."""
    _require_pydantic_ai()
    from ._portable import dump_json as dump

    return dump(messages)

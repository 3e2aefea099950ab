"""Which provider APIs reject each problem the validator finds, in each API's own words.

The validator (:mod:`.history`) finds pairing problems; whether a provider rejects one depends
on the API. Decided from the providers' API references and the strict test emulators built from
them: every API rejects a call without a result and a result without a call; OpenAI Responses
pairs by ``call_id`` anywhere later in the input, so it accepts a late result, a second result and
a call whose id a later answered call reuses; OpenAI Chat accepts a second result among the tool
messages right after the call; two requests in a row are merged by every model class (only
normalized), except that a request of nothing but system prompts is an empty Gemini turn on some
releases. Where releases' model classes differ, a problem counts as rejected if one release's
wire rejects it (the repair that fixes it is the same). ``check(provider=)`` adds what each applicable profile rule's ``detect`` finds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from .._profiles.registry import rules_for
from .._profiles.rule import Counted, ProfileRule
from .._profiles.scan import Scan
from .._profiles.targets import ProviderTarget, ordered_apis
from .._profiles.wording import BY_API, worded
from .._records.parts import is_result
from .._records.problems import KEPT_BY_REPAIR, Problem

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._repair.pairing import Pairing

__all__ = ["Verdict", "check_for", "mark_rejections", "rejected_kinds", "rejections", "verdict_for"]

_STAGES: tuple[Literal["before", "after"], ...] = ("before", "after")


def _say(key: str, **values: object) -> str:
    """The text of ``key`` (``api.what``) in that API's wording table, its placeholders filled."""
    api, what = key.rsplit(".", 1)
    return BY_API[api][what].format(**values)


def _calls(message: ModelMessage | None) -> list[str]:
    """The tool call ids of a response (anything else: none)."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    if not isinstance(message, ModelResponse):
        return []
    return [part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart)]


def _unanswered(problem: Problem) -> dict[str, str]:
    n, ids = problem.message_index, problem.tool_call_id
    found = {
        "openai-chat": _say("openai-chat.no_response", ids=ids),
        "openai-responses": _say("openai-responses.no_output", call_id=ids),
        "anthropic": _say("anthropic.no_result", n=n, ids=ids),
        "gemini": _say("gemini.count"),
        "bedrock": _say("bedrock.expected", n=n + 1, ids=ids),
        "mistral": _say("mistral.count"),
    }
    if problem.kind == "shadowed_call":  # Responses pairs by call_id: the later call's output answers it
        del found["openai-responses"]
    return found


def _mistral_previous_role(history: Sequence[ModelMessage], problem: Problem) -> str:
    from pydantic_ai.messages import ModelResponse

    if problem.part_index:
        return "user"  # a prompt part before it in the same request
    if problem.message_index == 0:
        return "none"
    return "assistant" if isinstance(history[problem.message_index - 1], ModelResponse) else "user"


def _unexpected(history: Sequence[ModelMessage], problem: Problem) -> dict[str, str]:
    n, m, call_id = problem.message_index, problem.part_index, problem.tool_call_id
    previous = history[n - 1] if n > 0 else None
    previous_calls = _calls(previous)
    request = history[n]
    results_before = any(is_result(part) for part in request.parts[: m or 0])
    if problem.kind == "duplicate_result" and call_id in previous_calls:
        # a second result beside the first, right after the call: counted, not unexpected
        return {
            "openai-chat": _say("openai-chat.no_call"),
            "openai-responses": _say("openai-responses.duplicate_output", call_id=call_id),
            "anthropic": _say("anthropic.multiple", id=call_id),
            "gemini": _say("gemini.count"),
            "bedrock": _say("bedrock.too_many", n=n),
            "mistral": _say("mistral.count"),
        }
    found = {
        "openai-chat": _say("openai-chat.no_call"),
        "openai-responses": _say("openai-responses.no_call", call_id=call_id),
        "anthropic": _say("anthropic.unexpected", n=n, m=m, id=call_id),
        "gemini": _say("gemini.count" if previous_calls else "gemini.response_position"),
        "bedrock": _say("bedrock.too_many", n=n),
        "mistral": _say("mistral.count")
        if previous_calls or results_before
        else _say("mistral.tool_role", role=_mistral_previous_role(history, problem)),
    }
    if problem.kind == "late_result":  # Responses: an earlier call has its call_id
        del found["openai-responses"]
    elif problem.kind == "duplicate_result":  # Responses: one output per call (a gateway's wording)
        found["openai-responses"] = _say("openai-responses.duplicate_output", call_id=call_id)
    return found


def _scattered(history: Sequence[ModelMessage], problem: Problem) -> dict[str, str]:
    n = problem.message_index
    parts = history[n].parts
    calls = len(_calls(history[n - 1])) if n > 0 else 0
    count = calls or sum(1 for part in parts if is_result(part))
    return {
        # Chat Completions and Mistral get one message per part, in order: a user message between tools
        "openai-chat": _say("openai-chat.no_call"),
        "anthropic": _say("anthropic.result_first", n=n, count=count),
        # GoogleModel splits such a request into turns on some releases (2.9.1): a user
        # turn between function responses
        "gemini": _say("gemini.response_position"),
        "bedrock": _say("bedrock.first", n=n, count=count),
        "mistral": _say("mistral.user_after_tool"),
    }


def _consecutive(history: Sequence[ModelMessage], problem: Problem) -> dict[str, str]:
    from pydantic_ai.messages import SystemPromptPart

    before = history[problem.message_index - 1]
    if before.parts and all(isinstance(part, SystemPromptPart) for part in before.parts):
        # A request of nothing but system prompts becomes an empty user turn in GoogleModel on some
        # releases (1.0.0); every model class merges other requests in a row.
        return {"gemini": _say("gemini.empty_text")}
    return {}


def rejections(history: Sequence[ModelMessage], problem: Problem) -> dict[str, str]:
    """API -> its error text, for every API that rejects ``problem`` (a validator finding)."""
    kind = problem.kind
    if kind in ("dangling_call", "shadowed_call"):
        return _unanswered(problem)
    if kind in ("orphan_result", "result_before_call", "duplicate_result", "late_result"):
        return _unexpected(history, problem)
    if kind == "parts_between_results":
        return _scattered(history, problem)
    if kind == "consecutive_responses":  # Bedrock Converse gets two assistant messages in a row;
        # Gemini refuses a function call turn that does not follow a user or function response turn
        found = {"bedrock": _say("bedrock.alternate")}
        if _calls(history[problem.message_index]):
            found["gemini"] = _say("gemini.call_position")
        return found
    if kind == "consecutive_requests":  # merged on the wire: repair only normalizes them, but
        return _consecutive(history, problem)
    return {}


def mark_rejections(history: Sequence[ModelMessage], problems: Sequence[Problem]) -> list[Problem]:
    """``problems`` with ``rejected_by`` filled: the APIs that reject each (empty: only normalized)."""
    return [
        dataclasses.replace(problem, rejected_by=ordered_apis(rejections(history, problem)))
        for problem in problems
    ]


def rejected_kinds(history: Sequence[ModelMessage], problems: Sequence[Problem]) -> tuple[str, ...]:
    """The kinds of the ``problems`` some API rejects, in order: those :func:`mark_rejections` gives
    a ``rejected_by``, without making the marked records (the store's record keeps only kinds)."""
    return tuple(problem.kind for problem in problems if ordered_apis(rejections(history, problem)))


def _marked(problem: Problem, wording: Mapping[str, str]) -> Problem:
    """``problem`` rejected by the APIs of ``wording``, in their words (itself when it says so already)."""
    rejected_by = ordered_apis(wording)
    error = worded({api: wording[api] for api in rejected_by})
    if problem.rejected_by == rejected_by and problem.provider_error == error:
        return problem  # frozen: sharing it is safe
    return dataclasses.replace(problem, rejected_by=rejected_by, provider_error=error)


def check_for(
    history: Sequence[ModelMessage], target: ProviderTarget, problems: Sequence[Problem]
) -> list[Problem]:
    """What ``target``'s APIs reject in ``history``: the validator's ``problems`` they reject, and
    every finding of the profile rules that apply, each with ``rejected_by`` and ``provider_error``.

    A finding reported twice (by the validator and a rule, or by rules for several APIs) is listed
    once, with every API that rejects it. ``problems`` are all the validator found in ``history``
    (``check_history``, either way of its flag): where they hold no duplicate or late result, the
    rules for those skip their walk.
    """
    history = list(history)  # the detects' own list: one survey serves them all
    scan = Scan(pinned=history)
    if not KEPT_BY_REPAIR.intersection(problem.kind for problem in problems):
        scan.remember_results_in_place(history)  # the validator paired it as the repair does
    return _check_for(history, target, problems, scan)


def _check_for(
    history: list[ModelMessage], target: ProviderTarget, problems: Sequence[Problem], scan: Scan
) -> list[Problem]:
    found, merged, _, _ = _findings(history, target, problems, scan, counting=False)
    marked = [
        _marked(problem, words) if key in merged else problem for key, (problem, words) in found.items()
    ]
    marked.sort(key=lambda p: (p.message_index, -1 if p.part_index is None else p.part_index))
    return marked


_Place = tuple[object, ...]


def _findings(
    history: list[ModelMessage],
    target: ProviderTarget,
    problems: Sequence[Problem],
    scan: Scan,
    *,
    counting: bool,
) -> tuple[
    dict[_Place, tuple[Problem, Mapping[str, str]]], set[_Place], list[tuple[int, ProfileRule, Counted]], bool
]:
    """What :func:`check_for` lists, before it is sorted: place -> the first finding there and the
    words of every API that rejects it, in the order found; the places found twice; and, with
    ``counting``, the findings of every rule that can count them (:attr:`ProfileRule.count`), not
    made into Problems: each with how many findings were listed before it; and, with ``counting``,
    whether some pass may change the history where its detect found nothing
    (:attr:`ProfileRule.changes_unfound`)."""
    wanted = set(target.apis)
    # place -> the first finding there, and the words of every API that rejects it; a second
    # finding of the same place only adds APIs (the first one's words are kept as they are)
    found: dict[_Place, tuple[Problem, Mapping[str, str]]] = {}
    merged: set[_Place] = set()
    counted: list[tuple[int, ProfileRule, Counted]] = []
    unfound = False  # some pass may change what no detect found

    def add(problem: Problem, words: Mapping[str, str]) -> None:
        key = (problem.kind, problem.message_index, problem.part_index, problem.tool_call_id)
        if key not in found:
            found[key] = (problem, words)
            return
        first, known = found[key]
        found[key] = (first, {**words, **known})
        merged.add(key)

    for problem in problems:
        wording = {api: text for api, text in rejections(history, problem).items() if api in wanted}
        if wording:
            add(_marked(problem, wording), wording)
    for stage in _STAGES:
        for rule in rules_for(target, stage):
            if counting and rule.changes_unfound is not None and rule.changes_unfound(history, scan):
                unfound = True
            if counting and rule.count is not None:
                some = rule.count(history, target, scan)
                if some.places:
                    counted.append((len(found), rule, some))
                continue
            if rule.detect is None:
                continue
            for finding in rule.detect(history, target, scan):
                if finding.problem.rejected_by:  # the rule worded it for the target's APIs that reject it
                    add(*finding)
    return found, merged, counted, unfound


class Verdict(NamedTuple):
    """:func:`check_for`'s findings where only their kinds are wanted (the store's record)."""

    #: the kind of every problem ``check_for`` lists, in its order
    kinds: tuple[str, ...]
    #: where every finding is of rules that count them and name the one change their pass makes
    #: (:attr:`ProfileRule.sole_change`): those changes, one per such rule with findings; else None
    sole_changes: tuple[str, ...] | None


def verdict_for(
    history: Sequence[ModelMessage],
    target: ProviderTarget,
    problems: Sequence[Problem],
    pairing: Pairing | None = None,
) -> Verdict:
    """The kinds of :func:`check_for`'s findings, in its order, without a Problem for each finding of
    a rule that counts them (one per call id outside a format can be most of a history's parts).
    ``pairing``: a pairing walk of ``history`` already made (either way of the last response: the
    calls it reads are the same), whose calls the id rules then read instead of a survey's."""
    from itertools import repeat
    from operator import sub

    history = list(history)
    scan = Scan(pinned=history)
    if pairing is not None:
        scan.remember_pairing(history, pairing)  # a copy of the list it walked: the same messages
    if not KEPT_BY_REPAIR.intersection(problem.kind for problem in problems):
        scan.remember_results_in_place(history)
    found, _, counted, unfound = _findings(history, target, problems, scan, counting=True)
    sole = tuple(rule.sole_change for _, rule, _ in counted if rule.sole_change is not None)
    sole_changes = sole if not found and not unfound and len(sole) == len(counted) else None
    if not found and len(counted) == 1:
        kind, places = counted[0][2]
        return Verdict((kind,) * len(places), sole_changes)
    # Sorted as check_for sorts, by (message, part; a message's own finding before its parts), ties in
    # the order found; a counted finding's place is read from the survey's parts in bulk.
    entries: list[tuple[int, int, float, str]] = [
        (problem.message_index, -1 if problem.part_index is None else problem.part_index, order, problem.kind)
        for order, (problem, _) in enumerate(found.values())
    ]
    if counted:
        survey = scan.survey(history)
        owners, starts = survey.owners(), survey.starts()
        for before, _, (kind, places) in counted:
            messages = list(map(owners.__getitem__, places))
            indices = map(sub, places, map(starts.__getitem__, messages))
            entries += zip(messages, indices, repeat(before - 0.5), repeat(kind))
    entries.sort()
    return Verdict(tuple(kind for *_, kind in entries), sole_changes)

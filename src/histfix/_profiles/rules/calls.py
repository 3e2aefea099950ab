"""Profile rules about tool calls, their ids and their results.

Each rule is one rule a provider API enforces (or a release's model class, before sending), named
for it, used only by the APIs that enforce it. The before-stage rules only rename
``tool_call_id``s (the default repair then pairs what the wire will pair); the after-stage ones
work on the default repair's output. Nothing here imports pydantic-ai until a rule runs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import compress, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal

from ..._records.changes import Change
from ..._records.depth import text_or_depth
from ..._records.problems import ProblemKind
from ..rule import Detect, Finding, Fix, ProfileRule, moved, problem
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import PYDANTIC_AI, said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .call_ids import Renamed, Renames
    from .call_results import Misplaced

__all__ = ["call_rules"]

Stage = Literal["before", "after"]

# The rules' findings name no wire index: their texts say messages.N and fill the call id as {id}.
_UNINDEXED = {"n": "N", "m": "M", "ids": "{id}", "call_id": "{id}"}
UNIQUE_WORDING = said(
    {
        "anthropic": "ids_unique",
        # what 2.10.0-2.54.x's own repair makes of one id twice in a response (a surplus result):
        "openai-chat": "no_call",
        "openai-responses": "duplicate_output",
        "gemini": "count",
        "bedrock": "too_many",
        "mistral": "count",
    },
    **_UNINDEXED,
)
PRESENT_WORDING = said(
    {
        "openai-chat": "no_response",
        "openai-responses": "no_output",
        "anthropic": "no_result",
        "bedrock": "expected",
        "mistral": "id_format",
    },
    **_UNINDEXED,
)
FORMAT_WORDING = said({"anthropic": "id_pattern", "mistral": "id_format"}, **_UNINDEXED)
ONE_RESULT_WORDING = said(
    {
        "openai-chat": "no_call",
        "openai-responses": "duplicate_output",
        "anthropic": "multiple",
        "gemini": "count",
        "bedrock": "too_many",
        "mistral": "count",
    },
    **_UNINDEXED,
)
LATE_WORDING = said(
    {
        "openai-chat": "no_call",
        "anthropic": "unexpected",
        "gemini": "response_position",
        "bedrock": "too_many",
        "mistral": "tool_role",
    },
    role="assistant",
    **_UNINDEXED,
)
#: pydantic-ai's own error (the request never leaves the client), as 1.0.0 raises it.
ARGS_WORDING = dict.fromkeys(("anthropic", "gemini", "bedrock"), PYDANTIC_AI["args_not_object"])


def _renamed(
    history: list[ModelMessage], renames: Renames, renamed: Renamed, why: str
) -> tuple[list[ModelMessage], list[Change]]:
    """Apply ``renames``; one Change per call given a new id (``renamed``: the call's response,
    tool name and how many results follow it, in the order of the calls)."""
    from .call_ids import apply_renames

    if not renames:
        return history, []
    plural = {1: " and its 1 result"}
    changes = [
        Change(
            "renamed_call_id",
            i,
            f"id {old!r} ({name}){plural.get(count) or (f' and its {count} results' if count else '')} "
            f"renamed {new!r}: {why}",
            old,
            name,
        )
        for (old, new), (i, name, count) in renamed.items()
    ]
    return apply_renames(history, renames), changes


# --- before: ids ---------------------------------------------------------------------------------------


def unique_call_ids(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic: tool_use ids unique in the request (trycua/cua#524); two tool_result blocks with
    one id fail multiple_results (vectorize-io/hindsight#4250).
    OpenAI Chat, OpenAI Responses, Gemini, Bedrock, Mistral: one id twice in one response gets a
    surplus synthesized result from 2.10.0-2.54.x's own repair, which they
    reject as a second result for one call; fresh ids are harmless on every release, so the pass
    runs for them everywhere (no switch)."""
    from .call_ids import reused_id_renames

    renamed: Renamed = {}
    renames = reused_id_renames(history, scan, renamed)
    return _renamed(history, renames, renamed, "an earlier call has the same id")


def detect_unique_call_ids(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    from ..._release import switches as _compat

    # The APIs that count results per call: only one id twice in one response, and only where the
    # release's own repair then adds a surplus result; Anthropic: any reuse.
    counting = (
        frozenset(UNIQUE_WORDING) - {"anthropic"}
        if _compat.run_repair_adds_surplus_results()
        else frozenset()
    )
    if not scan.call_id_facts(history).reused:
        return []  # every call has an id of its own
    seen: set[str] = set()
    found: list[Finding] = []
    first: dict[tuple[str, str, frozenset[str]], Finding] = {}  # one id reused many times: worded once
    wanted = frozenset(target.apis)
    anthropic = frozenset({"anthropic"})
    for i, message in enumerate(history):
        if not isinstance(message, ModelResponse):
            continue
        here: set[str] = set()
        for j, part in enumerate(message.parts):
            if not isinstance(part, ToolCallPart):
                continue
            call_id = part.tool_call_id
            apis = anthropic if call_id in seen else frozenset()
            if call_id in here:
                apis |= counting
            if apis & wanted:
                known = first.get((call_id, part.tool_name, apis))
                if known is None:
                    known = first[call_id, part.tool_name, apis] = problem(
                        "reused_call_id",
                        UNIQUE_WORDING,
                        target,
                        at=i,
                        part_index=j,
                        part=part,
                        description=f"call {call_id!r} ({part.tool_name}) reuses the id of an earlier call",
                        apis=apis,
                        id=call_id,
                    )
                    found.append(known)
                else:
                    found.append(moved(known, at=i, part_index=j, part=part))
            seen.add(call_id)
            here.add(call_id)
    return found


def call_ids_present(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Every release sends an empty tool_call_id as a fresh random id, separately for the call and
    its result, so they never pair (the APIs that pair by id then reject both)."""
    from .call_ids import empty_id_renames

    renamed: Renamed = {}
    renames = empty_id_renames(history, scan, renamed)
    return _renamed(history, renames, renamed, "its id was empty, which the wire cannot pair")


def _empty_ids(history: Sequence[ModelMessage]) -> list[tuple[int, int, object]]:
    from pydantic_ai.messages import ToolCallPart

    from ..._records.parts import is_result

    return [
        (i, j, part)
        for i, message in enumerate(history)
        for j, part in enumerate(message.parts)
        if (isinstance(part, ToolCallPart) or is_result(part)) and not part.tool_call_id
    ]


def detect_call_ids_present(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    if all(scan.survey(history).tool_call_ids()):
        return []  # no id is empty
    found: list[Finding] = []
    for i, j, part in _empty_ids(history):
        description = f"{getattr(part, 'part_kind', 'part')} ({getattr(part, 'tool_name', None)}) has an empty tool_call_id"
        found.append(
            problem(
                "missing_call_id",
                PRESENT_WORDING,
                target,
                at=i,
                part_index=j,
                part=part,
                description=description,
                id="(random)",
            )
        )
    return found


def call_id_format(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Mistral: ids are 9 characters a-zA-Z0-9 (error code 3280); Anthropic: tool_use ids match
    ^[a-zA-Z0-9_-]+$ (earendil-works/pi#9048). Mistral's format satisfies both. From 2.59.0 MistralModel fits ids
    to it itself (stable hashes, call and result alike), so the pass renames for Mistral only on
    older releases, which send ids as stored (renaming every id of a long history is not free, and
    2.59.0+ puts equally valid ids on the wire from the ids as stored)."""
    from ..._release import switches as _compat
    from .call_ids import anthropic_ids, apply_renames, mistral_ids

    if "mistral" in target.apis and not _compat.PROFILE_FITS_TOOL_CALL_IDS:
        renames, why = mistral_ids(history, scan), "Mistral's format (9 letters or digits)"
    elif "anthropic" in target.apis:
        renames, why = anthropic_ids(history, scan), "Anthropic's pattern ^[a-zA-Z0-9_-]+$"
    else:
        return history, []  # MistralModel fits ids to Mistral's format itself on this release
    if not renames:
        return history, []
    # One change for the pass (it may rename every id of a long history): which ids, and to what.
    ((i, j), first), count = next(iter(renames.items())), len(set(renames.values()))
    old = history[i].parts[j]
    description = (
        f"renamed {count} tool call id{'s' if count != 1 else ''} to {why}, each call with its results "
        f"(the first: {getattr(old, 'tool_call_id', None)!r} -> {first!r})"
    )
    return apply_renames(history, renames), [Change("renamed_call_id", i, description)]


def detect_call_id_format(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ToolCallPart

    from ..._records.parts import is_result
    from ..._release import switches as _compat
    from .call_ids import ANTHROPIC_ID, MISTRAL_ID

    # (api, pattern, whether results count too): Anthropic checks tool_use ids, Mistral both; a
    # release that fits ids to Mistral's format itself (2.59.0+) sends none that Mistral rejects.
    checks = []
    if "anthropic" in target.apis:
        checks.append(("anthropic", ANTHROPIC_ID.match, False))
    if "mistral" in target.apis and not _compat.PROFILE_FITS_TOOL_CALL_IDS:
        checks.append(("mistral", MISTRAL_ID.match, True))
    ids = [i for i in scan.survey(history).tool_call_ids() if isinstance(i, str) and i]  # not an empty one
    if all(all(map(fits, ids)) for _, fits, _ in checks):
        return []  # also where there is nothing to check
    first: dict[tuple[str, tuple[str, ...]], Finding] = {}  # (id, APIs) -> its first finding
    found: list[Finding] = []
    for i, message in enumerate(history):
        for j, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                is_call = True
            elif is_result(part):
                is_call = False
            else:
                continue
            call_id = part.tool_call_id
            if not call_id:
                continue  # an empty id is call_ids_present's finding
            apis = tuple(api for api, fits, results in checks if (is_call or results) and not fits(call_id))
            if not apis:
                continue
            known = first.get((call_id, apis))
            if known is not None:  # a call's results (or a reused id) say what its first part said
                found.append(moved(known, at=i, part_index=j, part=part))
                continue
            known = first[call_id, apis] = problem(
                "invalid_call_id",
                FORMAT_WORDING,
                target,
                at=i,
                part_index=j,
                part=part,
                description=f"tool_call_id {call_id!r} is not in the format {' or '.join(apis)} accepts",
                apis=frozenset(apis),
                id=call_id,
            )
            found.append(known)
    return found


# --- after: results ------------------------------------------------------------------------------------


def _content(part: object) -> str:
    content = getattr(part, "content", None)
    return content if isinstance(content, str) else text_or_depth(repr, content)


def _dropped(history: list[ModelMessage], found: Sequence[Misplaced], kind: str, why: str) -> list[Change]:
    changes = []
    for m in found:
        part = history[m.message_index].parts[m.part_index]
        call_id = getattr(part, "tool_call_id", None)
        changes.append(
            Change(
                kind,  # type: ignore[arg-type]
                m.message_index,
                f"{why} {call_id!r} ({getattr(part, 'tool_name', None)}), made in messages[{m.call_index}]",
                call_id,
                getattr(part, "tool_name", None),
                preview=_content(part),
            )
        )
    return changes


def _duplicate_kinds(target: ProviderTarget) -> frozenset[str]:
    """The second results this rule drops: those in the call's own request, and where no target
    API places results (OpenAI Responses alone: results_follow_their_call does not run) late ones too."""
    if "openai-responses" in target.apis and not set(LATE_WORDING) & set(target.apis):
        return frozenset({"duplicate", "late_duplicate"})
    return frozenset({"duplicate"})


def one_result_per_call(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """One result per call, the first kept: Anthropic multiple_results, Gemini function_response_count,
    Bedrock too_many_tool_results, Mistral call_response_count, OpenAI Chat tool_without_tool_calls
    (wording in _profiles/wording.py), OpenAI Responses (quoted through a gateway only: keeping the
    first result, reported, is harmless where the rule does not hold); the default repair keeps duplicates by design."""
    from .call_results import misplaced_for_pass, without_misplaced

    kinds = _duplicate_kinds(target)
    drop = [m for m in misplaced_for_pass(history, scan) if m.kind in kinds]
    if not drop:
        return history, []
    changes = _dropped(history, drop, "dropped_duplicate_result", "dropped a second result for call")
    return without_misplaced(history, drop, ()), changes


def results_follow_their_call(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """A result sits in the request right after its call: OpenAI tool_without_tool_calls, Anthropic
    unexpected_tool_result, Gemini function_response_turn_position, Mistral unexpected_tool_role,
    Bedrock too_many_tool_results (pydantic-ai#562, openclaw#13896, gemini-cli#3692). A late copy of an answered call's result is
    dropped; a call's only result, late, is moved to right after the call."""
    from .call_results import misplaced_for_pass, without_misplaced

    found = misplaced_for_pass(history, scan)
    drop = [m for m in found if m.kind == "late_duplicate"]
    move = [m for m in found if m.kind == "late"]
    if not drop and not move:
        return history, []
    changes = _dropped(history, drop, "dropped_late_result", "dropped a late second result for call")
    for m in move:
        part = history[m.message_index].parts[m.part_index]
        changes.append(
            Change(
                "moved_late_result",
                m.message_index,
                f"moved the result for call {getattr(part, 'tool_call_id', None)!r} to right after its call "
                f"in messages[{m.call_index}]",
                getattr(part, "tool_call_id", None),
                getattr(part, "tool_name", None),
            )
        )
    changes.sort(key=lambda c: c.message_index)
    return without_misplaced(history, drop, move), changes


def _detect_misplaced(
    history: Sequence[ModelMessage],
    target: ProviderTarget,
    scan: Scan,
    kinds: frozenset[str],
    wording: dict[str, str],
) -> list[Finding]:
    from .call_results import misplaced_results

    if scan.results_in_place(history):  # check found no duplicate or late result
        return []
    facts = scan.pinned_survey(history)  # check's own list: both detects share one reading
    misplaced = (
        misplaced_results(history)
        if facts is None
        else facts.memo("misplaced", lambda: misplaced_results(history))
    )
    found: list[Finding] = []
    first: dict[tuple[str, str], Finding] = {}  # (kind, description) -> its first finding, worded once
    for m in misplaced:
        if m.kind not in kinds:
            continue
        part = history[m.message_index].parts[m.part_index]
        call_id = str(getattr(part, "tool_call_id", ""))
        if m.kind == "late":
            kind: ProblemKind = "late_result"
            description = f"result {call_id!r} answers the call in messages[{m.call_index}] after an intervening response"
        else:
            kind = "duplicate_result"
            description = (
                f"another result for call {call_id!r} of messages[{m.call_index}], which is already answered"
            )
        known = first.get((kind, description))
        if known is not None:
            found.append(moved(known, at=m.message_index, part_index=m.part_index, part=part))
            continue
        known = first[kind, description] = problem(
            kind,
            wording,
            target,
            at=m.message_index,
            part_index=m.part_index,
            part=part,
            description=description,
            id=call_id,
        )
        found.append(known)
    return found


def detect_one_result_per_call(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    return _detect_misplaced(history, target, scan, _duplicate_kinds(target), ONE_RESULT_WORDING)


def detect_results_follow_their_call(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    return _detect_misplaced(history, target, scan, frozenset({"late", "late_duplicate"}), LATE_WORDING)


# --- after: args ---------------------------------------------------------------------------------------


def _unsendable_args(history: Sequence[ModelMessage], scan: Scan) -> list[tuple[int, int, str]]:
    """(message, part, error) for every call whose string args are not a JSON object, where the
    release's ``args_as_dict`` raises on them (before 1.95.0)."""
    from pydantic_ai.messages import BaseToolCallPart, ModelResponse
    from pydantic_core import from_json

    from ..._release import switches as _compat

    if _compat.ARGS_AS_DICT_TOLERATES_INVALID:
        return []
    facts = scan.survey(history)
    calls = facts.classes(BaseToolCallPart)
    if facts.plain and not any(  # the cheap early exit: no call holds args as a string
        map(isinstance, map(attrgetter("args"), compress(facts.flat, facts.selected(calls))), repeat(str))
    ):
        return []
    found = []
    for i, message in enumerate(history):
        if not isinstance(message, ModelResponse):
            continue
        for j, part in enumerate(message.parts):
            if isinstance(part, BaseToolCallPart) and isinstance(part.args, str) and part.args:
                try:
                    parsed = from_json(part.args)
                except ValueError as error:
                    found.append((i, j, str(error)))
                    continue
                if not isinstance(parsed, dict):
                    found.append((i, j, "args should be a dict"))
    return found


def tool_args_sendable(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Before 1.95.0 AnthropicModel, GoogleModel and BedrockConverseModel raise on args that are not
    a JSON object (a truncated stream) before sending (``ValueError: EOF while parsing``); such args are kept whole as ``{'INVALID_JSON': raw}``, what 1.95.0+ sends itself."""
    from dataclasses import replace

    from ..._repair.folding import with_parts

    found = _unsendable_args(history, scan)
    if not found:
        return history, []
    out = list(history)
    changes = []
    for i, j, error in found:
        response: Any = out[i]
        part: Any = response.parts[j]
        raw = str(part.args)
        parts = list(response.parts)
        parts[j] = replace(part, args={"INVALID_JSON": raw})
        out[i] = with_parts(response, parts)
        changes.append(
            Change(
                "wrapped_tool_args",
                i,
                f"call {getattr(part, 'tool_call_id', None)!r} ({getattr(part, 'tool_name', None)}): its args are "
                f"not a JSON object ({error}); kept whole under 'INVALID_JSON'",
                getattr(part, "tool_call_id", None),
                getattr(part, "tool_name", None),
                preview=raw,
            )
        )
    return out, changes


def detect_tool_args_sendable(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    found = []
    for i, j, error in _unsendable_args(history, scan):
        part = history[i].parts[j]
        description = f"call args are not a JSON object, which this release cannot send: {error}"
        found.append(
            problem(
                "invalid_tool_args",
                ARGS_WORDING,
                target,
                at=i,
                part_index=j,
                part=part,
                description=description,
                error=error,
            )
        )
    return found


def _rule(
    name: str, stage: Stage, fix: Fix, detect: Detect, wording: dict[str, str], *, why: str
) -> ProfileRule:
    apis = frozenset(wording)

    def only_where_enforced(
        history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
    ) -> list[Finding]:
        return detect(history, target, scan) if apis & set(target.apis) else []

    only_where_enforced.__name__ = only_where_enforced.__qualname__ = detect.__name__
    return ProfileRule(name, apis, why, stage, fix, only_where_enforced, wording)


@functools.cache
def call_rules() -> tuple[ProfileRule, ...]:
    """This module's rules, in pass order: ids first (empty, then reused, then format, which must
    see the final set), then results (duplicates in one request, then late ones), then args."""
    return (
        _rule(
            "call_ids_present",
            "before",
            call_ids_present,
            detect_call_ids_present,
            PRESENT_WORDING,
            why=(
                "a call and its result under different ids, rejected by every API: pydantic-ai "
                "sends an empty tool_call_id as a fresh random id, separately for the call and the"
                " result (its models/*.py)"
            ),
        ),
        _rule(
            "unique_call_ids",
            "before",
            unique_call_ids,
            detect_unique_call_ids,
            UNIQUE_WORDING,
            why=(
                "Anthropic: one tool_use id twice (trycua/cua#524, anthropics/claude-code#20901); "
                "every other API: the surplus result 2.10.0-2.54.x's own repair adds for an id "
                "twice in one response (pydantic_ai/messages.py)"
            ),
        ),
        _rule(
            "call_id_format",
            "before",
            call_id_format,
            detect_call_id_format,
            FORMAT_WORDING,
            why=(
                "Anthropic: an id outside ^[a-zA-Z0-9_-]+$ (earendil-works/pi#9048); Mistral: an "
                "id that is not 9 characters a-zA-Z0-9 (Mistral error code 3280)"
            ),
        ),
        _rule(
            "one_result_per_call",
            "after",
            one_result_per_call,
            detect_one_result_per_call,
            ONE_RESULT_WORDING,
            why=(
                "two results for one call: Anthropic (vectorize-io/hindsight#4250), OpenAI Chat "
                "(langchain-mcp-adapters#61), Gemini (google/adk-python#1583), Bedrock and Mistral"
                " (their count errors), OpenAI Responses (through a gateway only: "
                "NousResearch/hermes-agent#102629)"
            ),
        ),
        _rule(
            "results_follow_their_call",
            "after",
            results_follow_their_call,
            detect_results_follow_their_call,
            LATE_WORDING,
            why=(
                "a result outside the message right after its call: OpenAI Chat (pydantic-ai#562),"
                " Anthropic (openclaw#13896), Gemini (gemini-cli#3692), Bedrock (crewAI#4749), "
                "Mistral (its role-order error, code 3230)"
            ),
        ),
        _rule(
            "tool_args_sendable",
            "after",
            tool_args_sendable,
            detect_tool_args_sendable,
            ARGS_WORDING,
            why=(
                "args that are not a JSON object: the Anthropic, Gemini and Bedrock model classes "
                "before 1.95.0 raise ValueError before sending (their models/*.py)"
            ),
        ),
    )

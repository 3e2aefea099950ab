"""Tool call ids the wire cannot pair or an API refuses: empty, reused, or in the wrong format.

The before-stage of the profiles: these passes only rename ``tool_call_id``s, a call together with
the results the default repair pairs with it (:mod:`..call_ids`), so that the default repair, which
runs after them, pairs what the wire will pair. Nothing is added, dropped or moved.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from itertools import compress, filterfalse
from operator import and_, attrgetter, or_
from typing import TYPE_CHECKING, NamedTuple

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has, run_adds_surplus_results
from ..rule import Counted, Finding, ProfileRule, moved, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget
from ..wording import UNINDEXED, said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..call_ids import IdFormat, Renamed, Renames

__all__ = [
    "FORMAT_WORDING",
    "PRESENT_WORDING",
    "RULES",
    "SURPLUS_RESULTS",
    "UNIQUE_WORDING",
    "call_id_format",
    "call_ids_present",
    "detect_call_id_format",
    "detect_call_ids_present",
    "detect_unique_call_ids",
    "unique_call_ids",
]

#: The releases whose run repairs the history by a dict, adding a surplus result for an id called twice
#: in one response: from ``table.RUN_REPAIRS_HISTORY`` to ``table.REPAIR_MATCHES_FIFO``.
SURPLUS_RESULTS = table.span(table.RUN_REPAIRS_HISTORY.release, table.REPAIR_MATCHES_FIFO.release)

UNIQUE_WORDING = said(
    {
        "anthropic": "ids_unique",
        # what the run's own repair makes of one id twice in a response (a surplus result), SURPLUS_RESULTS:
        "openai-chat": "no_call",
        "openai-responses": "duplicate_output",
        "gemini": "count",
        "bedrock": "too_many",
        "mistral": "count",
    },
    **UNINDEXED,
)

PRESENT_WORDING = said(
    {
        "openai-chat": "no_response",
        "openai-responses": "no_output",
        "anthropic": "no_result",
        "bedrock": "expected",
        "mistral": "id_format",
    },
    **UNINDEXED,
)

_tool_call_id = attrgetter("tool_call_id")

FORMAT_WORDING = said({"anthropic": "id_pattern", "mistral": "id_format"}, **UNINDEXED)


def _renamed(
    history: list[ModelMessage], renames: Renames, renamed: Renamed, why: str
) -> tuple[list[ModelMessage], list[Change]]:
    """Apply ``renames``; one Change per call given a new id (``renamed``: the call's response,
    tool name and how many results follow it, in the order of the calls)."""
    from ..call_ids import apply_renames

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


def unique_call_ids(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic: tool_use ids unique in the request (trycua/cua#524); two tool_result blocks with
    one id fail multiple_results (vectorize-io/hindsight#4250).
    OpenAI Chat, OpenAI Responses, Gemini, Bedrock, Mistral: one id twice in one response gets a
    surplus synthesized result from the run's own repair on :data:`SURPLUS_RESULTS`, which they
    reject as a second result for one call; fresh ids are harmless on every release, so the pass
    runs for them everywhere (no switch)."""
    from ..call_ids import reused_id_renames

    renamed: Renamed = {}
    renames = reused_id_renames(history, scan, renamed)
    return _renamed(history, renames, renamed, "an earlier call has the same id")


def detect_unique_call_ids(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    # The APIs that count results per call: only one id twice in one response, and only where the
    # release's own repair then adds a surplus result (SURPLUS_RESULTS); Anthropic: any reuse.
    surplus = run_adds_surplus_results()
    counting = frozenset(UNIQUE_WORDING) - {"anthropic"} if surplus else frozenset()
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
    from ..call_ids import empty_id_renames

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


class _Format(NamedTuple):
    """One API's tool call id format, as the id-format rule checks it."""

    api: str
    #: results are checked too (Mistral); else calls only (Anthropic's tool_use ids)
    results: bool
    #: the format itself, with what the pass makes of an id outside it
    into: IdFormat

    @property
    def fits(self) -> Callable[[str], object]:
        """Whether an id is in the format."""
        return self.into.fits


@functools.lru_cache(maxsize=256)
def _formats(target: ProviderTarget) -> tuple[_Format, ...]:
    """The formats ``target``'s APIs hold this release's ids to: the one description the detect, its
    count and the pass read. Mistral's only where the release sends ids as stored (before
    ``table.PROFILE_FITS_TOOL_CALL_IDS``, MistralModel fits them itself). Kept for each target, which
    is frozen (asked several times for every history a store's record checks)."""
    from ..call_ids import ANTHROPIC_FORMAT, MISTRAL_FORMAT

    found: list[_Format] = []
    if "anthropic" in target.apis:
        found.append(_Format("anthropic", False, ANTHROPIC_FORMAT))
    if "mistral" in target.apis and not has(table.PROFILE_FITS_TOOL_CALL_IDS):
        found.append(_Format("mistral", True, MISTRAL_FORMAT))
    return tuple(found)


def _renaming(target: ProviderTarget) -> tuple[IdFormat, _Format] | None:
    """The format the pass renames ids into, as checked: Mistral's where it is checked (it satisfies
    Anthropic's pattern too), else Anthropic's; None where no format is checked."""
    formats = {form.api: form for form in _formats(target)}
    for api in ("mistral", "anthropic"):
        if api in formats:
            return formats[api].into, formats[api]
    return None


_WHY = {
    "mistral": "Mistral's format (9 letters or digits)",
    "anthropic": "Anthropic's pattern ^[a-zA-Z0-9_-]+$",
}


def call_id_format_into(target: ProviderTarget) -> IdFormat | None:
    """The format :func:`call_id_format` renames ``target``'s call ids into, one id at a time (see
    :attr:`.rule.ProfileRule.id_format`); None where it renames nothing."""
    renaming = _renaming(target)
    return None if renaming is None else renaming[0]


def call_id_format(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Mistral: ids are 9 characters a-zA-Z0-9 (error code 3280); Anthropic: tool_use ids match
    ^[a-zA-Z0-9_-]+$ (earendil-works/pi#9048). Mistral's format satisfies both. Where the release has
    ``table.PROFILE_FITS_TOOL_CALL_IDS``, MistralModel fits ids to it itself (stable hashes, call and
    result alike), so the pass renames for Mistral only on older releases, which send ids as stored
    (renaming every id of a long history is not free, and those releases put equally valid ids on the
    wire from the ids as stored)."""
    from ..call_ids import calls_and_ids, id_map, with_ids_mapped

    renaming = _renaming(target)
    if renaming is None or all(map(renaming[1].fits, scan.call_id_facts(history).ids)):
        return history, []
    mapping = id_map(*calls_and_ids(history), renaming[0])
    mapped = with_ids_mapped(history, mapping, scan)
    if mapped.first is None:
        return history, []
    # One change for the pass (it may rename every id of a long history): which ids, and to what.
    i, old, new = mapped.first
    count = len(mapping)
    description = (
        f"renamed {count} tool call id{'s' if count != 1 else ''} to {_WHY[renaming[1].api]}, each call with "
        f"its results (the first: {old!r} -> {new!r})"
    )
    return mapped.messages, [Change("renamed_call_id", i, description)]


def invalid_id_places(history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan) -> Counted:
    """Every call and result whose id some format of ``target`` rejects (an empty id is
    call_ids_present's finding), as places among the survey's parts: what the detect words, one
    finding each, and what a caller that needs only counts takes as it is. Read in bulk, with the
    survey's C-level pipelines (no loop per part)."""
    from pydantic_ai.messages import RetryPromptPart, ToolCallPart, ToolReturnPart

    formats = _formats(target)
    found = Counted("invalid_call_id", [])
    if not formats:
        return found
    survey = scan.survey(history)
    ids = [i for i in survey.tool_call_ids() if isinstance(i, str) and i]  # not an empty one
    # each id tested once for each format (a call and its results share it), not once for each part
    outside = [set(filterfalse(form.fits, ids)) for form in formats]
    if not any(outside):
        return found  # also where there is nothing to check
    call_kinds = survey.classes(ToolCallPart)
    checked = [(form, bad) for form, bad in zip(formats, outside, strict=True) if bad]
    # results too: a format held to calls alone skips them
    chosen, parts, part_ids, kinds = survey.tool_parts()
    places = list(compress(range(len(survey.flat)), chosen))
    # which parts each kind of format holds to it: None where every part here
    is_call = None if call_kinds.issuperset(kinds) else list(map(call_kinds.__contains__, kinds))
    answering: list[bool] | None = None
    prompts = survey.classes(RetryPromptPart) - call_kinds - survey.classes(ToolReturnPart)
    if prompts and any(form.results for form, _ in checked):
        # a retry prompt without a tool is no result (``is_result``): only those are read
        answering = [True] * len(parts)
        for at in compress(range(len(parts)), map(prompts.__contains__, kinds)):
            if parts[at].tool_name is None:
                answering[at] = False
    rejected = [False] * len(parts)
    named = map(bool, part_ids)
    for form, bad in checked:
        held = answering if form.results else is_call
        if len(bad) < len(ids):  # where every id is outside, the parts that hold one are the places
            inside = map(bad.__contains__, part_ids)
            held = list(inside) if held is None else list(map(and_, held, inside))
        if held is None:  # every part: no other format adds one
            return Counted("invalid_call_id", list(compress(places, named)))
        rejected = list(map(or_, rejected, held))
    return Counted("invalid_call_id", list(compress(places, map(and_, rejected, named))))


def detect_call_id_format(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ToolCallPart

    places = invalid_id_places(history, target, scan).places
    if not places:
        return []
    formats = _formats(target)
    survey = scan.survey(history)
    first: dict[tuple[str, tuple[str, ...]], Finding] = {}  # (id, APIs) -> its first finding
    found: list[Finding] = []
    for place in places:
        i, j = survey.position(place)
        part = survey.flat[place]
        is_call = isinstance(part, ToolCallPart)
        call_id = part.tool_call_id
        apis = tuple(form.api for form in formats if (is_call or form.results) and not form.fits(call_id))
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


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
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
    rule(
        "unique_call_ids",
        "before",
        unique_call_ids,
        detect_unique_call_ids,
        UNIQUE_WORDING,
        changes_unfound=lambda history, scan: scan.call_id_facts(history).reused,
        why=(
            "Anthropic: one tool_use id twice (trycua/cua#524, anthropics/claude-code#20901); "
            f"every other API: the surplus result {SURPLUS_RESULTS}'s own repair adds for an id "
            "twice in one response (pydantic_ai/messages.py)"
        ),
    ),
    rule(
        "call_id_format",
        "before",
        call_id_format,
        detect_call_id_format,
        FORMAT_WORDING,
        count=invalid_id_places,
        id_format=call_id_format_into,
        sole_change="renamed_call_id",
        why=(
            "Anthropic: an id outside ^[a-zA-Z0-9_-]+$ (earendil-works/pi#9048); Mistral: an "
            "id that is not 9 characters a-zA-Z0-9 (Mistral error code 3280)"
        ),
    ),
)

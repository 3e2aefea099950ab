"""The repair of one call, from its plan: the default repair, and a provider profile around it.

:func:`repair_by_plan` is the one pipeline ``repair`` and ``repair_report`` run. Without a target
it is the default repair (after ``orphans="note"``'s notes); with one, :func:`run_profile`: the
profile's ``before`` passes, the default repair, then its ``after`` passes (see :mod:`.registry`).
Either way the default repair is the plan's engine's, and every change it reports names the
caller's list (:mod:`.lineage`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from operator import is_
from typing import TYPE_CHECKING

from .._records.changes import Change, RepairReport
from .._release.switches import upstream_repair_is_current
from .lineage import Lineage
from .plan import Plan
from .scan import CallIdFacts, Scan

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._repair.forward import Settled
    from .._repair.pairing import Pairing
    from .call_ids import IdFormat

__all__ = ["nothing_sendable", "repair_by_plan", "run_profile"]


def repair_by_plan(
    history: Sequence[ModelMessage], plan: Plan, pairing: Pairing | None = None
) -> RepairReport:
    """The repaired history and, when the plan wants them, its changes in input order (the default
    repair's sorted by index, then each pass's as it made them); none when it does not.
    ``pairing``: one already made of ``history`` with the plan's ``repair_last_response``, to reuse
    where the plan has no target (a profile makes its own)."""
    if plan.target is not None:
        messages, changes = run_profile(history, plan)
    else:
        messages, changes, _ = _default_stage(history, plan, pairing)
    return RepairReport(messages, tuple(changes) if plan.changes_wanted else ())


def _default_stage(
    history: Sequence[ModelMessage], plan: Plan, pairing: Pairing | None
) -> tuple[list[ModelMessage], list[Change], bool]:
    """``orphans="note"``'s notes, then the plan's engine's default repair (reusing ``pairing``, made
    of ``history`` itself, where the notes changed nothing): the messages, the changes sorted by
    index, and whether every result of the output is in the request right after its call (no
    duplicate or late one: the passes then skip their walk for those)."""
    from .._repair.engine import default_repair

    notes: list[Change] = []
    noted: Sequence[ModelMessage] = history
    if plan.orphans == "note":
        from .._repair.notes import note_orphans

        noted, notes = note_orphans(history)  # each note takes its orphan's place: the same indices
        pairing = None
    if pairing is None and plan.target is not None:  # the passes read its facts
        from .._repair.pairing import pair

        pairing = pair(noted, plan.repair_last_response)
    repaired, found = default_repair(
        noted, plan.repair_last_response, plan.engine, changes_wanted=plan.changes_wanted, pairing=pairing
    )
    in_place = pairing is not None and _results_in_place(pairing, plan)
    changes = sorted([*notes, *found], key=lambda change: change.message_index) if notes else found
    return repaired, changes, in_place


def _results_in_place(pairing: Pairing, plan: Plan) -> bool:
    """Whether every result of the default repair's output is in the request right after its call.

    The walk only drops orphans, adds each dangling call's return right after it and merges
    neighbours, which brings a late result next to its call, never one apart: what the pairing
    found of the input holds of the output. So does upstream's repair where it gives the walk's
    output: where it is the newest behaviour, and no in-memory tool-less retry prompt is there.
    """
    return (
        not pairing.duplicates
        and not pairing.late
        and (plan.engine == "histfix" or (upstream_repair_is_current() and not pairing.toolless_retry))
    )


#: How many times the ``after`` passes run at most: again on their own output while a round changed
#: it, since a later pass can hand an earlier one something new to judge (two responses merged into
#: one, whose provider decides a thinking signature's fate), so the output is a fixed point. Every
#: history the suite draws settles in two rounds; the bound only stops a pair of passes undoing
#: each other from looping (the fuzz's idempotence property would then fail).
AFTER_ROUNDS = 4


def run_profile(history: Sequence[ModelMessage], plan: Plan) -> tuple[list[ModelMessage], list[Change]]:
    """The ``before`` passes, the default repair, then the ``after`` passes of the plan's target
    (again on their own output while a round changes it: :data:`AFTER_ROUNDS`); every change, in
    order, named by the caller's indices.

    The input is paired first (as the default repair pairs it): the before-stage's early exits read
    its calls from that walk instead of surveying every part, and the default repair reuses it when
    the before-stage changed nothing. Where histfix's walk is the engine and no change of the
    default repair is wanted, the one-walk repair is tried first instead: where it settles the
    input, its ids serve the early exits, and its output is the default repair when the
    before-stage changed nothing (where it says every result is in place, the passes skip their
    walk for duplicate and late results too); where the last before-pass renames ids one at a time
    (:attr:`.rule.ProfileRule.id_format`), that walk renames as it repairs, and the pass itself runs
    only where an earlier one changed something. Where the default repair leaves the input as it is,
    it leaves the before-stage's list so too, and does not run: that stage only renames ids, each
    call and its results alike, keeping the pairing the default repair computes
    (:mod:`.call_ids`). Either way the output is the same.

    Raises ValueError when the profile leaves nothing a provider could be sent (no part other than
    a system prompt or a tool-availability delta) of a history that had something: sent as it is,
    that is an empty conversation, which every API rejects far from the cause. A history that had
    nothing to send is a conversation not started yet, as ``[]`` is: it is returned (repaired), and
    the run that continues it supplies the user's prompt.
    """
    from .registry import rules_for  # every rule module: imported only where a profile runs
    from .unsent import sends_nothing

    target = plan.target
    assert target is not None  # the caller's check: a plan without a target has no profile
    scan = Scan()  # what the passes learn about the lists they hand on, for this run only
    current = paired = list(history)
    lineage = Lineage(paired)  # a copy of the caller's list: the same indices
    before = rules_for(target, "before")
    into = before[-1].id_format(target) if before and before[-1].id_format is not None else None
    settled, pairing, kept_in_place = _first_walk(paired, plan, scan, into)
    found_by_step: list[tuple[int, list[Change]]] = []
    for rule in before:
        if rule is before[-1] and into is not None and settled is not None and current is paired:
            continue  # the walk renamed as it repaired
        step = lineage.step
        current, found = rule.fix(current, target, scan)
        found_by_step.append((step, found))
        lineage.hand_on(current)
    step = lineage.step
    if kept_in_place is not None:  # so is the before-stage's list: no default repair runs
        repaired, found, in_place = current, [], kept_in_place
    elif settled is not None and current is paired:
        repaired, found, in_place = settled.messages, [], settled.results_in_place
    else:
        repaired, found, in_place = _default_stage(current, plan, pairing if current is paired else None)
    if in_place:
        scan.remember_results_in_place(repaired)
    found_by_step.append((step, found))
    if found or len(repaired) != len(current) or not all(map(is_, repaired, current)):
        current = repaired
        lineage.hand_on(current)
    # else: the same messages; going on with the list the before-stage surveyed keeps its survey
    # (a copy of the caller's list that nothing mutates, as ``repaired`` would be)
    after = rules_for(target, "after")
    for _ in range(AFTER_ROUNDS):
        handed = current
        for rule in after:
            step = lineage.step
            current, found = rule.fix(current, target, scan)
            found_by_step.append((step, found))
            lineage.hand_on(current)
        if current is handed:
            break
    if (nothing_sendable(current, scan) or sends_nothing(current, target, scan)) and not nothing_sendable(
        history, Scan()
    ):
        raise ValueError(
            f"nothing in this history can be sent to {target.name}: it holds only system prompts, "
            "tool-availability deltas or response parts that provider's model class leaves out (no prompt, "
            "result or text); add the user's prompt to it, "
            "or start the run with the prompt and without this history"
        )
    if not plan.changes_wanted:
        return current, []
    return current, [change for step, found in found_by_step for change in lineage.in_input(step, found)]


def _first_walk(
    paired: list[ModelMessage], plan: Plan, scan: Scan, into: IdFormat | None
) -> tuple[Settled | None, Pairing | None, bool | None]:
    """The one forward walk's repair where it is tried and settles ``paired``, else its pairing,
    either one's facts remembered in ``scan`` for the passes' early exits; and, where the default
    repair leaves ``paired`` as it is, whether every result is in place (None where it changes
    something).

    ``into``: the format the last before-pass renames ids into (:attr:`.rule.ProfileRule.id_format`),
    which the walk then renames by as it repairs (the pass and the repair in one copy of each
    part). Its new ids are given without the history's ids at hand (the walk meets them as it
    goes), which gives the pass's ids wherever none is an id of the history: checked at the end
    (:func:`_renamed_as_the_pass_would`); where that fails, the walk's output is not used, and the
    pass runs on the input, the repair after it."""
    from .._repair import forward
    from .._repair.engine import leaves_as_is
    from .._repair.pairing import pair

    if plan.engine == "histfix" and not plan.changes_wanted and plan.orphans == "drop":
        taken: set[str] = set()
        rename = (
            None
            if into is None
            else forward.Rename(into.fits, lambda call_id: into.fitted(call_id, taken, ()), into.all_fit)
        )
        settled = forward.settled_with_ids(paired, plan.repair_last_response, rename)
        if settled is not None and taken and not _renamed_as_the_pass_would(settled, taken):
            settled = None
        if settled is not None:
            ids = settled.ids
            scan.remember_call_ids(paired, CallIdFacts("" in ids, False, ids))  # settled: no id called twice
            # only the messages from the one before where it started building can differ
            kept = max(settled.built_from - 1, 0)
            as_is = len(settled.messages) == len(paired) and all(
                map(is_, islice(settled.messages, kept, None), islice(paired, kept, None))
            )
            return settled, None, settled.results_in_place if as_is else None
    pairing = pair(paired, plan.repair_last_response)
    scan.remember_pairing(paired, pairing)
    return None, pairing, _results_in_place(pairing, plan) if leaves_as_is(pairing, plan.engine) else None


def _renamed_as_the_pass_would(settled: Settled, taken: set[str]) -> bool:
    """Whether the walk renamed as the pass would have on the input: no id given (``taken``) is an id
    of the history (every one it read: called, dropped, or a tool-less retry prompt's), and no
    tool-less retry prompt it left as it was has a renamed id (its call came after it)."""
    return (
        taken.isdisjoint(settled.ids)
        and taken.isdisjoint(settled.dropped)
        and taken.isdisjoint(settled.unpaired)
        and settled.renamed.keys().isdisjoint(settled.unpaired)
    )


def nothing_sendable(history: Sequence[ModelMessage], scan: Scan) -> bool:
    """Whether no message holds anything but parts never sent as a turn: system prompts and
    tool-availability deltas (an empty list counts as nothing)."""
    from .unsent import only_unsent_request_parts

    return only_unsent_request_parts(history, scan)

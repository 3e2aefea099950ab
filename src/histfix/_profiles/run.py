"""Running a provider profile around the default repair (see :mod:`.registry`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_
from typing import TYPE_CHECKING

from .._records.changes import Change
from .registry import rules_for
from .scan import CallIdFacts, Scan
from .targets import ProviderTarget

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._repair.forward import Settled
    from .._repair.pairing import Pairing

__all__ = ["nothing_sendable", "run_profile"]

#: The default repair of a list, reusing ``pairing`` (made of that very list) when it is not None:
#: the repaired list, its changes, and whether it holds every result in place (no duplicate or late
#: one: then the passes skip their walk for those).
DefaultRepair = Callable[
    ["Sequence[ModelMessage]", "Pairing | None"], "tuple[list[ModelMessage], list[Change], bool]"
]
#: The default repair of a list in one walk, with the facts the passes read, or None where it cannot
#: settle that list alone (``forward.settled_with_ids``); it records no changes.
Settle = Callable[["Sequence[ModelMessage]"], "Settled | None"]


def run_profile(
    history: Sequence[ModelMessage],
    target: ProviderTarget,
    default_repair: DefaultRepair,
    pair_input: Callable[[Sequence[ModelMessage]], Pairing],
    settle: Settle | None = None,
) -> tuple[list[ModelMessage], list[Change]]:
    """The ``before`` passes, the default repair, then the ``after`` passes; every change, in order.

    The input is paired first (``pair_input``, as the default repair pairs it): the before-stage's
    early exits read its calls from that walk instead of surveying every part, and the default
    repair reuses it when the before-stage changed nothing. With ``settle`` (when no change of the
    default repair is wanted), the one-walk repair is tried first instead: where it settles the
    input, its ids serve the early exits, and its output is the default repair when the
    before-stage changed nothing (where it says every result is in place, the passes skip their
    walk for duplicate and late results too). Either way the output is the same.

    Raises ValueError when the profile leaves nothing a provider could be sent (no part other than
    a system prompt or a tool-availability delta) of a history that had something: sent as it is,
    that is an empty conversation, which every API rejects far from the cause. A history that had
    nothing to send is a conversation not started yet, as ``[]`` is: it is returned (repaired), and
    the run that continues it supplies the user's prompt.
    """
    from .rules.turns import sends_nothing

    scan = Scan()  # what the passes learn about the lists they hand on, for this run only
    current = paired = list(history)
    settled = None if settle is None else settle(paired)
    pairing: Pairing | None = None
    if settled is None:
        pairing = pair_input(paired)
        scan.remember_pairing(paired, pairing)
    else:
        ids = settled.ids
        scan.remember_call_ids(paired, CallIdFacts("" in ids, False, ids))  # settled: no id called twice
    changes: list[Change] = []
    for rule in rules_for(target, "before"):
        current, found = rule.fix(current, target, scan)
        changes.extend(found)
    if settled is not None and current is paired:
        repaired, found, in_place = settled.messages, [], settled.results_in_place
    else:
        repaired, found, in_place = default_repair(current, pairing if current is paired else None)
    if in_place:
        scan.remember_results_in_place(repaired)
    changes.extend(found)
    if found or len(repaired) != len(current) or not all(map(is_, repaired, current)):
        current = repaired
    # else: the same messages; going on with the list the before-stage surveyed keeps its survey
    # (a copy of the caller's list that nothing mutates, as ``repaired`` would be)
    for rule in rules_for(target, "after"):
        current, found = rule.fix(current, target, scan)
        changes.extend(found)
    if (nothing_sendable(current, scan) or sends_nothing(current, target)) and not nothing_sendable(
        history, Scan()
    ):
        raise ValueError(
            f"nothing in this history can be sent to {target.name}: it holds only system prompts, "
            "tool-availability deltas or response parts that provider's model class leaves out (no prompt, "
            "result or text); add the user's prompt to it, "
            "or start the run with the prompt and without this history"
        )
    return current, changes


def nothing_sendable(history: Sequence[ModelMessage], scan: Scan) -> bool:
    """Whether no message holds anything but parts never sent as a turn: system prompts and
    tool-availability deltas (an empty list counts as nothing)."""
    from .rules.turns import only_unsent_request_parts

    return only_unsent_request_parts(history, scan)

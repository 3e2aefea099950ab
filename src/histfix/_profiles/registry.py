"""Provider profiles: the default repair, then the extra passes the target provider's API needs.

Upstream's repair guarantees call/result pairing only; each provider API enforces more. A profile
is the list of :class:`ProfileRule` whose ``apis`` include the target's API. Each rule is one
provider rule (named for it), with a pure ``fix`` pass and a ``detect`` for :func:`histfix.check`.

Order: the ``"before"`` rules run on the input, before the default repair (they only rewrite
identities, such as tool call ids, so that the default repair pairs what the wire will pair; they
never add, drop or reorder messages). Then the default repair runs, exactly as ``provider=None``
does. Then the ``"after"`` rules run, in the order of :data:`RULES`, each on the previous one's
output, and again over their own output while a round changes it (``run.AFTER_ROUNDS``). A
rule's ``Change`` and ``Problem`` indices point into the history that rule received; the runner
renumbers the changes into the caller's list (:mod:`.lineage`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from .rule import ProfileRule
from .rules import args, empty, files, ids, instructions, native, opening, order, reasoning, results, thinking
from .targets import ProviderTarget

__all__ = ["ORDER", "RULES", "in_pass_order", "rules_for"]

#: Every rule by name, in the order the passes run, each with why it stands there.
ORDER: tuple[tuple[str, str], ...] = (
    # before the default repair: ids only, so that it pairs what the wire will pair
    ("call_ids_present", "an empty id first: the renames below must see every call with an id"),
    ("unique_call_ids", "then reused ids, so that every call has an id of its own"),
    ("call_id_format", "then the format, which must see the final set of ids"),
    # after the default repair
    ("one_result_per_call", "results first: duplicates in one request"),
    ("results_follow_their_call", "then late results, once each call has one result"),
    ("tool_args_sendable", "then the calls' args"),
    ("native_calls_paired", "native parts before no_empty_content, which drops what they empty"),
    ("thinking_transfers", "removes parts, so before no_empty_content"),
    ("response_files_sendable", "removes parts, so before no_empty_content"),
    ("files_only_responses_sent", "removes parts, so before no_empty_content"),
    (
        "bedrock_thinking_signed",
        "after thinking_transfers (whose unsigned thinking it then sees); drops parts",
    ),
    (
        "calls_grouped",
        "reorders parts within responses only: before reasoning_followed, which must see the order",
    ),
    ("reasoning_followed", "after thinking_transfers; can drop parts, so before no_empty_content"),
    ("no_empty_content", "drops what the passes above emptied"),
    ("starts_with_user", "after no_empty_content: an emptied first request is gone"),
    ("agent_accepts_opening", "as starts_with_user, for every provider on the one release that needs it"),
    ("results_first", "orders the requests the passes above left"),
    (
        "requests_send_something",
        "turns the wire does not see: after the parts that will not be sent are gone",
    ),
    ("responses_send_something", "likewise, for responses"),
    ("opens_with_user_turn", "after both: a first request left with no user turn"),
    ("announcement_placed", "after the opening rules, which may already have put a request first"),
    (
        "tool_results_alone",
        "after results_first and the turn rules; the response it adds sits between requests",
    ),
    ("alternating_roles", "after the turn rules, which can make two responses neighbours"),
    ("instructions_placed", "last: it counts the wire messages every other rule may drop, merge or reorder"),
)


def in_pass_order(order: Sequence[tuple[str, str]], rules: Sequence[ProfileRule]) -> tuple[ProfileRule, ...]:
    """``rules`` in ``order``'s order; RuntimeError, naming each name at fault, unless ``order``
    names every rule exactly once and nothing else."""
    names = [name for name, _ in order]
    counted = Counter(names), Counter(rule.name for rule in rules)
    twice = sorted({name for count in counted for name, seen in count.items() if seen > 1})
    by_name = {rule.name: rule for rule in rules}
    unordered, unknown = sorted(set(by_name) - set(names)), sorted(set(names) - set(by_name))
    if unordered or unknown or twice:
        raise RuntimeError(
            f"ORDER and the rule modules disagree: not in ORDER {unordered}, no such rule {unknown}, "
            f"named twice {twice}"
        )
    return tuple(by_name[name] for name in names)


def _registered() -> tuple[ProfileRule, ...]:
    """Every rule in :data:`ORDER`'s order; each rule module's rules are ordered exactly once."""
    modules = (ids, results, args, native, thinking, reasoning, files, empty, opening, order, instructions)
    return in_pass_order(ORDER, tuple(rule for module in modules for rule in module.RULES))


#: Every profile rule in pass order. A profile is the subsequence whose ``apis`` meet the target's.
RULES: tuple[ProfileRule, ...] = _registered()


@functools.lru_cache(maxsize=256)
def rules_for(target: ProviderTarget, stage: Literal["before", "after"]) -> tuple[ProfileRule, ...]:
    """The rules of ``stage`` that apply to ``target``, in pass order (asked for every history a
    store's record checks: kept for each target, which is frozen, as the rules are)."""
    return tuple(rule for rule in RULES if rule.stage == stage and rule.applies_to(target))

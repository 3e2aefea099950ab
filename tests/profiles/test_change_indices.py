"""Every ``Change`` names, by its index in the caller's list, the input message it describes.

The passes of a profile work on lists the default repair (or an earlier pass) already merged,
shortened or split; each reports by the indices of the list it received, and the runner puts them
back into the caller's list. Checked on every corpus history and a sample of generated ones, for
every profile and without one, both ways of treating orphans: the message at ``message_index`` (and
at every index a description names as ``messages[i]``, and every merged index) must be the kind
of message the change is about, holding what the change says it held. A message the repair merged
from several is named by its first member, as the merge itself is, so what it held is looked for
in every member; a request made up for a response (its synthesized returns, or its late results
moved to right after it), which no input message became, is named by that response.
"""

from __future__ import annotations

import re

import pytest
from pydantic_ai import messages as pai

import histfix

from corpus import CASES
from dsl import Case, load, load_history, req, resp, text, user
from emulators import PROVIDER_APIS
from generate import random_history
from volume import sized
from wire import BEDROCK_LLAMA

TARGETS = [None, *PROVIDER_APIS, "any", BEDROCK_LLAMA]
#: Changes about a result, named by the request that holds it (its id, where no pass renamed it).
RESULT_KINDS = {"dropped_result", "noted_result", "dropped_duplicate_result", "dropped_late_result"}
#: Changes about a message of one kind.
REQUEST_KINDS = {"moved_parts", "separated_results", "moved_late_result", *RESULT_KINDS}
RESPONSE_KINDS = {
    "synthesized_return",
    "dropped_native",
    "dropped_signature",
    "dropped_unsent",
    "dropped_file",
    "dropped_thinking",
    "wrapped_tool_args",
    "renamed_native_return",
    "unfollowed_reasoning",
}
NAMED_KIND = re.compile(r"the (request|response) at messages\[(\d+)\]")


def _members(index: int, changes: list[histfix.Change]) -> set[int]:
    """``index`` and every input message merged with it (by the report's own merges)."""
    group = {index}
    for change in changes:
        if group & set(change.merged):
            group |= set(change.merged)
    return group


def _made_for(index: int, changes: list[histfix.Change]) -> bool:
    """Whether a request was made up for the response at ``index``: its synthesized returns, or its
    late results moved to right after its calls."""
    return any(
        (c.kind == "synthesized_return" and c.message_index == index)
        or (c.kind == "moved_late_result" and f"its call in messages[{index}]" in c.description)
        for c in changes
    )


def _names(
    change: histfix.Change, history: list[pai.ModelMessage], changes: list[histfix.Change]
) -> str | None:
    """What is wrong with ``change``'s indices against ``history`` (None: nothing)."""
    size = len(history)
    indices = [change.message_index, *change.merged]
    indices += [int(found) for found in re.findall(r"messages\[(\d+)\]", change.description)]
    if not all(0 <= index < size for index in indices):
        return f"an index out of the input's {size} messages"
    message = history[change.message_index]
    for kind, at in NAMED_KIND.findall(change.description):
        if history[int(at)].kind != kind:
            return f"names messages[{at}] a {kind}"
    if (
        change.kind in REQUEST_KINDS
        and message.kind != "request"
        and not _made_for(change.message_index, changes)
    ):
        return "is about a request"
    if change.kind in RESPONSE_KINDS and message.kind != "response":
        return "is about a response"
    if change.kind.startswith("merged_"):
        kind = "request" if change.kind == "merged_requests" else "response"
        members = change.merged or (change.message_index,)
        if change.message_index not in members or list(members) != sorted(set(members)):
            return "is not among its merged members, in order"
        if any(history[index].kind != kind for index in members):
            return f"merges {kind}s"
    held = [part for index in _members(change.message_index, changes) for part in history[index].parts]
    named = [part for part in held if getattr(part, "tool_name", None) == change.tool_name]
    if change.tool_name is not None and not named:
        return f"holds no part of tool {change.tool_name!r}"
    if change.kind == "renamed_call_id" and change.tool_call_id is None:  # one change for a whole format
        (first,) = re.findall(r"\(the first: '(.*?)' ->", change.description)
        if first not in {getattr(part, "tool_call_id", None) for part in held}:
            return f"holds no part with id {first!r}, the first renamed"
    elif change.kind in RESULT_KINDS | {"renamed_call_id", "dropped_native"}:
        ids = {getattr(part, "tool_call_id", None) for part in named}
        # a result's change names the id it has after the profile's renames, if any ran
        renamed = change.kind in RESULT_KINDS and any(c.kind == "renamed_call_id" for c in changes)
        if change.tool_call_id not in ids and not renamed:
            return f"holds no part with id {change.tool_call_id!r}"
    if change.kind == "dropped_signature":
        signatures = [getattr(part, "signature", None) or "" for part in held]
        if not any(signature.startswith((change.preview or "").rstrip("…")) for signature in signatures):
            return "holds no thinking with that signature"
    return None


def _check(history: list[pai.ModelMessage], label: str, last: bool = True) -> int:
    checked = 0
    for target in TARGETS:
        for orphans in ("drop", "note"):
            try:
                report = histfix.repair_report(
                    history, provider=target, repair_last_response=last, orphans=orphans
                )
            except ValueError:  # nothing sendable for that target: no report
                continue
            for change in report.changes:
                wrong = _names(change, history, list(report.changes))
                assert wrong is None, f"{label}, {target}, orphans={orphans}: {change!r} {wrong}"
                checked += 1
    return checked


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_change_names_the_input_message_it_describes(case: Case) -> None:
    _check(load_history(case), case.name, case.repair_last_response)


def test_generated_changes_name_their_input_messages() -> None:
    checked = sum(_check(load(random_history(seed)), f"seed {seed}") for seed in range(sized(40)))
    assert checked > sized(40) * 12  # the histories are broken enough to test something


def test_a_drop_after_a_merge_names_the_input_index() -> None:
    """The default repair merges the two opening requests; the blank response after them is input
    index 2 (index 1 of the list the profile's passes receive), and so is what the merge after
    its drop names."""
    history = load([req(user("hi")), req(user("again")), resp(text("   ")), req(user("q"))])
    report = histfix.repair_report(history, provider="anthropic")
    assert [(c.kind, c.message_index, c.merged) for c in report.changes] == [
        ("merged_requests", 0, (0, 1)),
        ("dropped_empty", 2, ()),
        ("dropped_empty", 2, ()),
        ("merged_requests", 0, (0, 3)),
    ]
    assert report.summary().splitlines()[2:] == [
        "messages[2]: dropped the response at messages[2]: nothing in it can be sent",
        "messages[0]: merged requests 0, 3 into one",
    ]

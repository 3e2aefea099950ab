"""The OpenAI Responses rule for reasoning items: each needs an output item right after it.

OpenAIResponsesModel replays thinking as ``reasoning`` input items, and OpenAI rejects one that is
not directly followed by an output item of the same response: "Item 'rs_...' of type 'reasoning'
was provided without its required following item." (vercel/ai#8321). A response cut off after its
reasoning, or whose text was evicted, goes out so. Which thinking becomes a reasoning item depends
on the release: none before ``table.THINKING_SENT``; *every* thinking part from it up to
``table.RESPONSES_REASONING_OWN_ONLY``; from that release OpenAI's own thinking with an id, for
reasoning models (the rest goes as tagged assistant text). Consecutive parts with one id become one item.

An assistant message the release sends without an id (text that was edited or never had one,
thinking sent as tagged text) is not that following item: OpenAI refused one after a reasoning
item (gpt-5, recorded in pydantic-ai's test_openai_responses_thinking_with_modified_history).

The pass: where such a run of thinking has no output item after it in its response, it loses its id
where only OpenAI's own thinking goes as items, so the release sends its text as tagged assistant
text (the text stays, the wire drops the encrypted reasoning, which OpenAI would refuse anyway);
where every thinking part goes as an item, the run is dropped, reported with its text. Judged without knowing the
model: a thinking part that the release might send as an item counts as one (clearing an id a
non-reasoning model would not have sent changes nothing on the wire). Pure: it returns the list it
was given and no changes when nothing applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, preview, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget, only_grouping_servers
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "REASONING_APIS",
    "REASONING_WORDING",
    "RULES",
    "detect_reasoning_followed",
    "reasoning_followed",
]

#: The APIs that replay thinking as reasoning items.
REASONING_APIS = frozenset({"openai-responses"})

REASONING_WORDING = said({"openai-responses": "reasoning_alone"})

#: The ``system`` of OpenAIResponsesModel: the provider name its own thinking and native calls carry.
_OPENAI = "openai"


@dataclasses.dataclass(frozen=True)
class _Wire:
    """What the installed OpenAIResponsesModel sends, as far as reasoning items are concerned."""

    #: which thinking parts go out as reasoning items: every one, or OpenAI's own with an id
    mode: Literal["every", "own"]
    native_calls_sent: bool


def _wire(target: ProviderTarget) -> _Wire | None:
    """The installed release's reasoning behaviour, or None where the target's Responses servers are not
    OpenAI's or the release sends no reasoning items."""
    if only_grouping_servers(target):
        return None  # the rule is OpenAI's: compatible servers take reasoning items in a row
    if not has(table.THINKING_SENT):
        return None  # no thinking goes out at all
    mode: Literal["every", "own"] = "own" if has(table.RESPONSES_REASONING_OWN_ONLY) else "every"
    return _Wire(mode, has(table.RESPONSES_NATIVE_CALLS_SENT))


def _thinking_class() -> type[Any]:
    from pydantic_ai.messages import ThinkingPart

    return ThinkingPart


def _becomes_item(part: Any, message: Any, wire: _Wire, thinking: type[Any]) -> bool:
    """Whether ``part`` may go out as a reasoning item (the union of every release's own test)."""
    if not isinstance(part, thinking):
        return False
    if wire.mode == "every":
        return True
    return bool(part.id) and _OPENAI in (part.provider_name, getattr(message, "provider_name", None))


def _is_output(part: Any, message: Any, wire: _Wire, thinking: type[Any]) -> bool | None:
    """Whether ``part`` goes out as an output item a reasoning item may precede (True), as something
    else that cannot (False), or not at all (None: look at the next part)."""
    kind = getattr(part, "part_kind", "")
    if kind == "text":
        if not part.content.strip():
            return None  # empty text may be dropped by another pass
        # an assistant message without the id of the stored one is no follower (recorded: gpt-5
        # refused one, pydantic-ai's test_openai_responses_thinking_with_modified_history)
        return bool(getattr(part, "id", None))
    if kind == "tool-call":
        return True
    if isinstance(part, thinking):
        if _becomes_item(part, message, wire, thinking):
            return False  # another reasoning item
        return False if part.content.strip() else None  # tagged assistant text, sent without an id
    if kind == "builtin-tool-call":
        if wire.native_calls_sent and part.provider_name == _OPENAI:
            return True
        return None
    return None  # native returns, files and other parts the Responses serializer leaves out


def _unfollowed(message: Any, wire: _Wire, thinking: type[Any]) -> list[list[int]]:
    """The runs of reasoning-item parts (their indices) in ``message`` with no output item after them."""
    parts = message.parts
    runs: list[list[int]] = []
    index = 0
    while index < len(parts):
        part = parts[index]
        if not _becomes_item(part, message, wire, thinking):
            index += 1
            continue
        run = [index]
        index += 1
        while (
            index < len(parts)
            and part.id
            and _becomes_item(parts[index], message, wire, thinking)
            and parts[index].id == part.id
        ):
            run.append(index)
            index += 1
        follower = None
        for later in parts[index:]:
            follower = _is_output(later, message, wire, thinking)
            if follower is not None:
                break
        if not follower:
            runs.append(run)
    return runs


def _found(history: Sequence[ModelMessage], wire: _Wire, scan: Scan) -> list[tuple[int, list[list[int]]]]:
    """Each response with unfollowed reasoning runs, after the cheap early exit (no thinking)."""

    thinking = _thinking_class()
    if not any(issubclass(kind, thinking) for kind in scan.survey(history).part_classes):
        return []
    found = []
    for index, message in enumerate(history):
        if message.kind == "response":
            runs = _unfollowed(message, wire, thinking)
            if runs:
                found.append((index, runs))
    return found


def reasoning_followed(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """OpenAI Responses "reasoning ... without its required following item": a reasoning item with
    no output item after it in its response loses its id (its text then goes as tagged text) or,
    where every thinking part is an item, is dropped with its text reported."""
    wire = _wire(target)
    found = _found(history, wire, scan) if wire is not None else []
    if not found:
        return history, []
    fixed = list(history)
    changes = []
    for index, runs in found:
        message = history[index]
        parts: list[Any] = list(message.parts)
        for run in runs:
            texts = "; ".join(parts[at].content for at in run)
            if wire is not None and wire.mode == "every":
                what = f"dropped {len(run)} thinking part(s)"
                for at in run:
                    parts[at] = None
            else:
                what = f"cleared the reasoning id {parts[run[0]].id!r} of {len(run)} thinking part(s) (the text is kept)"
                for at in run:
                    parts[at] = dataclasses.replace(parts[at], id=None)
            changes.append(
                Change(
                    "unfollowed_reasoning",
                    index,
                    f"{what} at the end of the response at messages[{index}]: {target.name}'s model class "
                    "sends them as a reasoning item with no output item after it, which OpenAI rejects",
                    preview=preview(texts),
                )
            )
        fixed[index] = dataclasses.replace(message, parts=[part for part in parts if part is not None])  # type: ignore[arg-type]
    return fixed, changes


def detect_reasoning_followed(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """Each reasoning item the installed OpenAIResponsesModel would send with nothing after it."""
    wire = _wire(target)
    if wire is None:
        return []
    return [
        problem(
            "unfollowed_reasoning",
            REASONING_WORDING,
            target,
            at=index,
            description=f"thinking at messages[{index}].parts[{run[0]}] goes out as a reasoning item with no "
            "output item (text or a call) after it in its response",
            id=getattr(history[index].parts[run[0]], "id", None) or "<a fresh id>",
        )
        for index, runs in _found(history, wire, scan)
        for run in runs
    ]


#: This module's rule.
RULES: tuple[ProfileRule, ...] = (
    rule(
        "reasoning_followed",
        "after",
        reasoning_followed,
        detect_reasoning_followed,
        REASONING_WORDING,
        why="OpenAI Responses: a reasoning item without its following output item (vercel/ai#8321,"
        " pydantic-ai#2861)",
    ),
)

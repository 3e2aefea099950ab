"""The records a repair report is made of (no pydantic-ai import, so they can be imported eagerly)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["Change", "ChangeKind", "RepairReport", "renumbered"]

ChangeKind = Literal[
    "dropped_result",
    "synthesized_return",
    "merged_requests",
    "merged_responses",
    "moved_parts",
    "noted_result",  # repair(..., orphans="note") kept an orphaned result as a user note
    # provider profiles (calls rules):
    "renamed_call_id",  # a call and its results carry a new id (reused, empty, or a format the API rejects)
    "dropped_duplicate_result",  # a second result for a call answered in the same request
    "dropped_late_result",  # a second result for a call answered in an earlier request
    "moved_late_result",  # a call's only result, moved from a later request to right after the call
    "wrapped_tool_args",  # args that are not a JSON object, kept as {'INVALID_JSON': raw}
    # provider profiles (shape, native rules):
    "inserted_prompt",  # a profile put histfix.STARTER_PROMPT before a history opening on a response
    "dropped_empty",  # a profile dropped empty text, an empty prompt, or a message with nothing to send
    "dropped_native",  # a profile dropped a native (server) tool call the API gets without its result
    "renamed_native_return",  # before 1.0.9: a native return renamed to the wire name the release sends
    "dropped_signature",  # a profile dropped a thinking signature the target cannot verify (text kept)
    # provider profiles (turns rules):
    "dropped_unsent",  # a response none of whose parts the release sends (it would go out empty)
    # provider profiles (files rules):
    "dropped_file",  # a response file the target's model class cannot send (Bedrock before 1.80.0)
    # provider profiles (bedrock_thinking rules):
    "dropped_thinking",  # thinking Claude on Bedrock refuses as 1.0.0-1.0.2 send it (unsigned, or foreign)
    # provider profiles (reasoning rules):
    "unfollowed_reasoning",  # thinking sent as a reasoning item with no output item after it
    # provider profiles (instructions rules):
    "moved_system_prompt",  # a later system prompt moved to the front (1.33-1.74 Chat/Mistral instructions)
    # provider profiles (results_alone rules):
    "separated_results",  # results put in a request of their own, a "." response before the rest (Bedrock)
]


#: How a change's description names a message: ``messages[3]``.
_NAMED_MESSAGE = re.compile(r"messages\[(\d+)\]")


@dataclass(frozen=True)
class Change:
    """One thing repair changed. ``message_index`` points into the input history: the list the
    caller passed, also under ``provider=``, where the profile's passes work on lists the repair
    has already merged or shortened (the message a change is about, or for a message repair
    made up, the message it was made for).

    For merges, ``merged`` lists the input indices that became one message (a request that
    repair itself created has no input index and is left out). ``preview`` shows the start of what
    was removed (a dropped result's content, a dropped part's text). A description that names
    another message names it by its input index too, as ``messages[i]``.
    """

    kind: ChangeKind
    message_index: int
    description: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    merged: tuple[int, ...] = ()
    preview: str | None = None

    def __str__(self) -> str:
        """``messages[i]: what changed``; whatever was removed also shows what it held, since a
        person deciding whether the drop was safe needs to see it."""
        text = f"messages[{self.message_index}]: {self.description}"
        if self.preview is not None:
            text += f"; its content was: {self.preview}"
        return text


@dataclass(frozen=True)
class RepairReport:
    """The repaired history together with what repair changed to get there."""

    messages: list[ModelMessage]
    changes: Sequence[Change] = field(default_factory=tuple)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def summary(self) -> str:
        """One line per change (or a line saying nothing changed), for logs and terminals."""
        if not self.changes:
            return "nothing to repair"
        return "\n".join(str(change) for change in self.changes)


def renumbered(
    change: Change, origin: Callable[[int], int], made_up: Callable[[int], bool] = lambda index: False
) -> Change:
    """``change`` with every message index it holds (``message_index``, ``merged``, and each
    ``messages[i]`` and the merge's members in its description) mapped through ``origin``: from the
    list it was found in to the one that list came from. A message ``made_up`` (no message of that
    list became it: a request of synthesized returns) is left out of ``merged``, as the default
    repair leaves it out, and counted in the description; a merge named by one is named by its
    first member instead. Two members from one message (a pass split it, a later merge joined the
    pieces) are that message once."""
    description = _NAMED_MESSAGE.sub(lambda named: f"messages[{origin(int(named[1]))}]", change.description)
    merged = tuple(dict.fromkeys(origin(index) for index in change.merged if not made_up(index)))
    if change.merged:  # the default repair's merges list their members: "merged requests i, j into one"
        invented = sum(map(made_up, change.merged))
        members = ", ".join(map(str, merged)) or "(synthesized)"
        if merged and invented:
            members += f" and {invented} made up"
        description = description.replace(
            f" {', '.join(map(str, change.merged))} into one", f" {members} into one", 1
        )
    index = change.message_index
    message_index = merged[0] if merged and made_up(index) else origin(index)
    return replace(change, message_index=message_index, description=description, merged=merged)

"""Turn-safe trimming: cut only where a user turn starts and no tool call is left behind."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    UserPromptPart,
)

from ._records.inputs import not_a_message
from ._records.parts import is_result
from ._records.tokens import BudgetExceededError, estimate_tokens

__all__ = ["keep_last_turns", "trim_to_budget", "turn_starts"]


def turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    """Indices where a user turn starts and a cut would separate no call from its result.

    A turn starts at a request that holds a user prompt and answers no tool call. A cut before
    index ``i`` is unsafe when a result at or after ``i`` answers a call made before ``i``; that
    covers parallel groups and tool-bound retries too, in one pass plus a prefix sum.
    """
    called_at: dict[str, int] = {}  # tool_call_id -> index of the latest response that called it
    unsafe = [0] * (len(messages) + 1)  # difference array over cut positions
    candidates: list[int] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    called_at[part.tool_call_id] = index
        elif isinstance(message, ModelRequest):
            answers = False
            prompt = False
            for piece in message.parts:
                if is_result(piece):
                    answers = True
                    call = called_at.get(piece.tool_call_id)
                    if call is not None:  # cuts at call+1 .. index would strand this result
                        unsafe[call + 1] += 1
                        unsafe[index + 1] -= 1
                elif isinstance(piece, UserPromptPart):
                    prompt = True
            if prompt and not answers:
                candidates.append(index)
        else:
            raise not_a_message(index, message)
    depth = 0
    safe: list[int] = []
    position = 0
    for index in candidates:
        while position <= index:
            depth += unsafe[position]
            position += 1
        if depth == 0:
            safe.append(index)
    return safe


def _leading_system_prompts(message: ModelMessage) -> list[SystemPromptPart]:
    if not isinstance(message, ModelRequest):
        return []
    head: list[SystemPromptPart] = []
    for part in message.parts:
        if not isinstance(part, SystemPromptPart):
            break
        head.append(part)
    return head


def _cut(messages: Sequence[ModelMessage], cut: int, keep_system_prompt: bool) -> list[ModelMessage]:
    """``messages[cut:]`` as a new list, with the opening system prompt carried over if asked."""
    kept = list(messages[cut:])
    if cut == 0 or not keep_system_prompt:
        return kept
    first = kept[0]
    carried = _leading_system_prompts(messages[0])
    if (
        carried
        and isinstance(first, ModelRequest)
        and not any(isinstance(p, SystemPromptPart) for p in first.parts)
    ):
        kept[0] = replace(first, parts=[*carried, *first.parts])
    return kept


def keep_last_turns(
    messages: Sequence[ModelMessage], turns: int, *, keep_system_prompt: bool = True
) -> list[ModelMessage]:
    """The last ``turns`` turns of ``messages`` as a new list (every turn if it has fewer).

    Whatever precedes the first turn (say, the orphaned result a slice opens on) belongs to no
    turn and is never kept, however many turns are asked for; a history with no turn start at
    all has no safe cut and is returned whole.
    """
    starts = turn_starts(messages)
    cut = starts[-min(turns, len(starts))] if starts else 0
    return _cut(messages, cut, keep_system_prompt)


# --- token budgets ------------------------------------------------------------------------------------


def trim_to_budget(
    messages: Sequence[ModelMessage],
    max_tokens: int,
    *,
    count_tokens: Callable[[ModelMessage], int] = estimate_tokens,
    keep_system_prompt: bool = True,
) -> list[ModelMessage]:
    """The longest run of whole turns at the end of ``messages`` whose size fits ``max_tokens``.

    As in :func:`keep_last_turns`, what precedes the first turn is never kept. Each message is counted once, so the work is linear. Raises :class:`BudgetExceededError`
    when not even the last turn fits, rather than returning an empty history.
    """
    sizes = [count_tokens(message) for message in messages]
    starts = turn_starts(messages)
    if (not starts or starts[0] == 0) and sum(sizes) <= max_tokens:
        return list(messages)
    carried = 0
    if keep_system_prompt and messages:
        head = _leading_system_prompts(messages[0])
        carried = count_tokens(ModelRequest(parts=list(head))) if head else 0
    # Walk the cut points from the newest backwards, growing the suffix while it fits.
    best: int | None = None
    suffix = 0
    end = len(messages)
    for start in reversed(starts):
        suffix += sum(sizes[start:end])
        end = start
        if suffix + (carried if start else 0) > max_tokens:
            break
        best = start
    if best is None:
        needed = suffix + carried if starts else sum(sizes)
        raise BudgetExceededError(needed, max_tokens)
    return _cut(messages, best, keep_system_prompt)

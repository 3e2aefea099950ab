"""What a strict provider says about a history's tool pairing, in the providers' own words.

OpenAI Responses, Anthropic and Gemini answer HTTP 400 when a call is not answered in the very
next message, or a result has no earlier call. ``histfix compare`` uses this as its "strict
provider"; it is deliberately simpler than :func:`histfix.check` (which also names what repair
would merge or move) and is cross-checked against the test suite's own oracle.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart

from .._profiles.wording import OPENAI_RESPONSES
from .._records.parts import is_result

__all__ = ["strict_provider_errors"]


def strict_provider_errors(messages: Sequence[ModelMessage]) -> list[str]:
    """The errors a strict provider would list for ``messages`` (empty when it accepts them)."""
    errors: list[str] = []
    seen: set[str] = set()  # every id some response called so far
    unanswered: dict[str, int] = {}  # id -> calls not answered yet
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            calls = [p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)]
            after = messages[index + 1] if index + 1 < len(messages) else None
            answered = (
                [p.tool_call_id for p in after.parts if is_result(p)]
                if after is not None and not isinstance(after, ModelResponse)
                else []
            )
            for call_id in dict.fromkeys(calls):
                seen.add(call_id)
                unanswered[call_id] = unanswered.get(call_id, 0) + calls.count(call_id)
                if answered.count(call_id) < calls.count(call_id):
                    errors.append(OPENAI_RESPONSES["no_output"].format(call_id=call_id))
            continue
        for part in message.parts:
            if not is_result(part):
                continue
            call_id = part.tool_call_id
            if call_id not in seen:
                errors.append(OPENAI_RESPONSES["no_call"].format(call_id=call_id))
            elif unanswered.get(call_id, 0) == 0:
                errors.append(f"Duplicate tool result for call_id {call_id}.")
            else:
                unanswered[call_id] -= 1
    return errors

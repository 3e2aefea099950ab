"""A strict provider's pairing rules, as one checker the whole suite shares.

Strict providers (OpenAI Responses, Anthropic, Gemini) reject a history where a tool call is not
answered in the very next message, or a tool result has no earlier call. The error texts are
modelled on the real ones quoted in shared/seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic_ai import messages as pai
from pydantic_ai.models.function import AgentInfo, FunctionModel


class StrictProviderError(Exception):
    """What a strict provider answers (as HTTP 400) to a history with broken tool pairing."""


def _is_result(part: object) -> bool:
    return isinstance(part, pai.ToolReturnPart) or (
        isinstance(part, pai.RetryPromptPart) and part.tool_name is not None
    )


def pairing_problems(messages: Sequence[pai.ModelMessage]) -> list[str]:
    """Every pairing rule a strict provider enforces that ``messages`` breaks (empty if valid)."""
    problems: list[str] = []
    called: set[str] = set()
    for index, message in enumerate(messages):
        if isinstance(message, pai.ModelResponse):
            calls = [p for p in message.parts if isinstance(p, pai.ToolCallPart)]
            called.update(c.tool_call_id for c in calls)
            if not calls:
                continue
            following = messages[index + 1] if index + 1 < len(messages) else None
            answered = (
                {p.tool_call_id for p in following.parts if _is_result(p)}  # type: ignore[attr-defined]
                if isinstance(following, pai.ModelRequest)
                else set()
            )
            for c in calls:
                if c.tool_call_id not in answered:
                    problems.append(
                        f"No tool output found for function call {c.tool_call_id} ({c.tool_name})."
                    )
        else:
            for p in message.parts:
                if _is_result(p) and p.tool_call_id not in called:  # type: ignore[attr-defined]
                    problems.append(
                        f"No tool call found for function call output with call_id {p.tool_call_id}."  # type: ignore[attr-defined]
                    )
    return problems


def assert_provider_valid(messages: Sequence[pai.ModelMessage]) -> None:
    problems = pairing_problems(messages)
    if problems:
        raise StrictProviderError("status_code: 400, " + " ".join(problems))


Reply = Callable[[list[pai.ModelMessage], AgentInfo], pai.ModelResponse]


def _say_done(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
    return pai.ModelResponse(parts=[pai.TextPart("done")])


class StrictModel:
    """A FunctionModel that rejects broken pairing like a strict provider and records what it got.

    ``reply`` decides the answer (default: the text "done") once the history passed the check.
    """

    def __init__(self, reply: Reply = _say_done) -> None:
        self.received: list[list[pai.ModelMessage]] = []
        self.reply = reply
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        self.received.append(list(messages))
        assert_provider_valid(messages)
        return self.reply(messages, info)

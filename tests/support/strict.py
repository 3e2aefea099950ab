"""A strict provider's pairing rules, as one checker the whole suite shares.

Strict providers (OpenAI Responses, Anthropic, Gemini) reject a history where a tool call is not
answered in the very next message, or a tool result has no earlier call. The error texts are
modelled on the real ones quoted in shared/seeds.
"""

from __future__ import annotations

from collections import Counter
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
    """Every pairing rule a strict provider enforces that ``messages`` breaks (empty if valid).

    Each call is answered exactly once, in the very next message; no result comes without an
    earlier call. (Worked out independently of histfix: this is the suite's oracle.)
    """
    problems: list[str] = []
    open_calls: Counter[str] = Counter()
    called: set[str] = set()
    for index, message in enumerate(messages):
        if isinstance(message, pai.ModelResponse):
            calls = Counter(p.tool_call_id for p in message.parts if isinstance(p, pai.ToolCallPart))
            called.update(calls)
            open_calls.update(calls)
            following = messages[index + 1] if index + 1 < len(messages) else None
            answers = Counter(
                p.tool_call_id  # type: ignore[attr-defined]
                for p in (following.parts if isinstance(following, pai.ModelRequest) else [])
                if _is_result(p)
            )
            for call_id, count in calls.items():
                if answers[call_id] < count:
                    problems.append(f"No tool output found for function call {call_id}.")
            continue
        for p in message.parts:
            if not _is_result(p):
                continue
            call_id = p.tool_call_id  # type: ignore[attr-defined]
            if call_id not in called:
                problems.append(f"No tool call found for function call output with call_id {call_id}.")
            elif open_calls[call_id] == 0:
                problems.append(f"Duplicate tool result for call_id {call_id}.")
            else:
                open_calls[call_id] -= 1
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

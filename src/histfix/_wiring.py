"""Wiring histfix into an Agent so that every model request sees a repaired history.

pydantic-ai 2.10+ repairs histories on the wire by itself; this gives 1.x and 2.0-2.9 the same,
with one line that reads the same on every release. Importing this module does not import
pydantic-ai; building the options does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._tokens import estimate_tokens

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["RepairProcessor", "agent_options", "process_history_class"]


class RepairProcessor:
    """A history processor that trims (if asked) and then repairs, before every model request.

    Use it through :func:`agent_options`, or hand it to ``history_processors=`` /
    ``ProcessHistory(...)`` yourself. pydantic-ai stores what a processor returns as the run's
    history, so the stored history ends up repaired (and trimmed) too.
    """

    def __init__(
        self,
        *,
        keep_last_turns: int | None = None,
        max_tokens: int | None = None,
        count_tokens: Callable[[ModelMessage], int] = estimate_tokens,
        keep_system_prompt: bool = True,
    ) -> None:
        for name, value in (("keep_last_turns", keep_last_turns), ("max_tokens", max_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        if not callable(count_tokens):
            raise TypeError(f"count_tokens must be callable, got {type(count_tokens).__name__}")
        self.keep_last_turns = keep_last_turns
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens
        self.keep_system_prompt = keep_system_prompt

    # pydantic-ai reads this annotation at run time to decide whether to pass a RunContext, so
    # it must resolve from this module's globals: hence ``list[Any]``.
    def __call__(self, messages: list[Any]) -> list[Any]:
        from ._api import keep_last_turns, repair, trim_to_budget

        history: Sequence[ModelMessage] = messages
        if self.keep_last_turns is not None:
            history = keep_last_turns(
                history, self.keep_last_turns, keep_system_prompt=self.keep_system_prompt
            )
        if self.max_tokens is not None:
            history = trim_to_budget(
                history,
                self.max_tokens,
                count_tokens=self.count_tokens,
                keep_system_prompt=self.keep_system_prompt,
            )
        return repair(history)

    def __repr__(self) -> str:
        return (
            f"RepairProcessor(keep_last_turns={self.keep_last_turns!r}, max_tokens={self.max_tokens!r}, "
            f"keep_system_prompt={self.keep_system_prompt!r})"
        )


def agent_options(
    *,
    keep_last_turns: int | None = None,
    max_tokens: int | None = None,
    count_tokens: Callable[[ModelMessage], int] = estimate_tokens,
    keep_system_prompt: bool = True,
    capabilities: Sequence[Any] = (),
) -> dict[str, Any]:
    """Keyword arguments for ``Agent(...)`` that repair (and optionally trim) before every request.

    ``Agent(model, **histfix.agent_options(keep_last_turns=20))`` works unchanged on every
    release: it uses ``capabilities=[ProcessHistory(...)]`` where that exists (1.87.0+) and
    ``history_processors=[...]`` before, so no release warns. Pass your own capabilities through
    ``capabilities=``; histfix's processor runs after them.
    """
    processor = RepairProcessor(
        keep_last_turns=keep_last_turns,
        max_tokens=max_tokens,
        count_tokens=count_tokens,
        keep_system_prompt=keep_system_prompt,
    )
    process_history = process_history_class()
    if process_history is not None:
        return {"capabilities": [*capabilities, process_history(processor)]}
    options: dict[str, Any] = {"history_processors": [processor]}
    if capabilities:
        options["capabilities"] = list(capabilities)
    return options


def process_history_class() -> type | None:
    """``pydantic_ai.capabilities.ProcessHistory``, first in 1.87.0 (the module itself in 1.71.0).

    Where it exists histfix wires itself in as a capability: ``Agent(history_processors=)`` warns
    from 1.96.0 and is rejected from 2.0.0. Before 1.87.0 ``history_processors=`` is the only way.
    """
    try:
        from pydantic_ai.capabilities import ProcessHistory
    except ImportError:
        return None
    return ProcessHistory  # type: ignore[no-any-return,unused-ignore]

"""Wiring histfix into an Agent so that every model request sees a repaired history.

pydantic-ai 2.10+ repairs histories on the wire by itself; this gives 1.x and 2.0-2.9 the same,
with one line that reads the same on every release, and (with ``provider=``) the history the
provider accepts, not only paired. Importing this module does not import pydantic-ai; building the
options does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._records.tokens import estimate_tokens

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model

__all__ = ["AUTO", "RepairProcessor", "agent_options", "process_history_class"]

#: ``provider=AUTO``: the profile of the model each run uses, read from the run context.
AUTO = "auto"


def _profile_of(model: Any) -> Any:
    """``provider=`` for the run's model: the model itself, or None (the default repair) when no
    profile is known for its class (a FunctionModel or TestModel, a custom Model)."""
    from ._profiles.targets import resolve_provider

    try:
        resolve_provider(model)
    except (TypeError, ValueError):
        return None
    return model


class RepairProcessor:
    """A history processor that trims (if asked) and then repairs, before every model request.

    Use it through ``agent_options``, or hand it to ``history_processors=`` /
    ``ProcessHistory(...)`` yourself. pydantic-ai stores what a processor returns as the run's
    history, so the stored history ends up repaired (and trimmed) too. ``provider`` (what
    ``histfix.repair`` takes) repairs for that provider's profile; ``provider="auto"`` reads it
    from the run's model, which only the processor ``for_run_context`` returns can see.

    Where it runs the default repair (no profile), it remembers the last history it found healthy
    and had met before (a conversation's, not one loaded anew for every run; its messages stay
    alive until a later one replaces them, or ``forget()``), so that the next request, which
    extends that history, costs only its new messages: within a run and from one run of a
    conversation to the next. What it returns is what it returns without
    memory; ``_repair/memory.py`` says why that stays exact when a capability or processor edits
    the history between requests. One instance may serve concurrent runs.
    """

    def __init__(
        self,
        *,
        keep_last_turns: int | None = None,
        max_tokens: int | None = None,
        count_tokens: Callable[[ModelMessage], int] = estimate_tokens,
        keep_system_prompt: bool = True,
        provider: str | Model | None = None,
    ) -> None:
        for name, value in (("keep_last_turns", keep_last_turns), ("max_tokens", max_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        if not callable(count_tokens):
            raise TypeError(f"count_tokens must be callable, got {type(count_tokens).__name__}")
        if provider is not None and provider != AUTO:
            from ._profiles.targets import resolve_provider

            resolve_provider(provider)  # a bad name fails here, not at the first model request
        self.keep_last_turns = keep_last_turns
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens
        self.keep_system_prompt = keep_system_prompt
        self.provider = provider
        from ._repair.memory import RepairMemory

        #: the last history the default repair left as it is (see ``_repair/memory.py``)
        self.memory = RepairMemory()

    # pydantic-ai reads this annotation at run time to decide whether to pass a RunContext, so
    # it must resolve from this module's globals: hence ``list[Any]``.
    def __call__(self, messages: list[Any]) -> list[Any]:
        if self.provider == AUTO:
            raise ValueError(
                "RepairProcessor(provider='auto') needs the run's model: hand pydantic-ai "
                "processor.for_run_context() (histfix.agent_options(provider='auto') does)"
            )
        return self.process(messages, self.provider)

    def process(self, messages: Sequence[ModelMessage], provider: object) -> list[ModelMessage]:
        """Trim as configured, then repair for ``provider``: a name, None, or a model (its profile
        if one is known for its class, else the default repair, through the memory)."""
        from ._api import keep_last_turns, remembering_repair, repair, trim_to_budget

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
        profile = provider if provider is None or isinstance(provider, str) else _profile_of(provider)
        if profile is None:
            return remembering_repair(history, self.memory)
        return repair(history, provider=profile)

    def forget(self) -> None:
        """Let go of the history remembered: the next request reads its history in full."""
        self.memory.forget()

    def for_run_context(self) -> Callable[[Any, list[Any]], list[Any]]:
        """This processor as one that takes the run context, and repairs for the run's model when
        ``provider="auto"`` (imports pydantic-ai)."""
        from ._wiring_auto import for_run_context

        return for_run_context(self.process)

    def __repr__(self) -> str:
        return (
            f"RepairProcessor(keep_last_turns={self.keep_last_turns!r}, max_tokens={self.max_tokens!r}, "
            f"keep_system_prompt={self.keep_system_prompt!r}, provider={self.provider!r})"
        )


def agent_options(
    *,
    keep_last_turns: int | None = None,
    max_tokens: int | None = None,
    count_tokens: Callable[[ModelMessage], int] = estimate_tokens,
    keep_system_prompt: bool = True,
    capabilities: Sequence[Any] = (),
    provider: str | Model | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``Agent(...)`` that repair (and optionally trim) before every request.

    ``Agent(model, **histfix.agent_options(keep_last_turns=20))`` works unchanged on every
    release: it uses ``capabilities=[ProcessHistory(...)]`` where that exists (1.87.0+) and
    ``history_processors=[...]`` before, so no release warns. Pass your own capabilities through
    ``capabilities=``; histfix's processor runs after them.

    ``provider="auto"`` repairs each request's history for the model the run uses (the run
    context's model, as ``run(model=)`` or the agent sets it): one line that stays right when the
    model changes, and for a ``FallbackModel`` a history all its models accept, whichever answers.
    A model class with no known profile (``FunctionModel``, ``TestModel``) gets the default
    repair. A provider name or a ``Model`` fixes the profile; ``None`` (the default) is the default
    repair, as before.
    """
    processor = RepairProcessor(
        keep_last_turns=keep_last_turns,
        max_tokens=max_tokens,
        count_tokens=count_tokens,
        keep_system_prompt=keep_system_prompt,
        provider=provider,
    )
    step: Callable[..., list[Any]] = processor.for_run_context() if provider == AUTO else processor
    process_history = process_history_class()
    if process_history is not None:
        return {"capabilities": [*capabilities, process_history(step)]}
    options: dict[str, Any] = {"history_processors": [step]}
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

"""The processor that reads the run's model: ``agent_options(provider="auto")``.

A separate module because pydantic-ai decides whether to pass a processor the run context by
resolving its first parameter's annotation at run time, in the processor's own module: that needs
``RunContext`` imported here, and importing :mod:`histfix._wiring` must not import pydantic-ai.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai.tools import RunContext

__all__ = ["for_run_context"]


def for_run_context(
    process: Callable[[list[Any], Any], list[Any]],
) -> Callable[[RunContext[Any], list[Any]], list[Any]]:
    """A history processor that runs ``process`` (``RepairProcessor.process``) with the run's model.

    Every release from 1.0.0 on gives such a processor the run context, whose ``model`` is the
    agent's model for this run (the ``model=`` of ``run``, else the agent's): a ``FallbackModel``
    itself, not the member that will answer, so its profile is that of all its models.
    """

    def repair_for_the_runs_model(ctx: RunContext[Any], messages: list[Any]) -> list[Any]:
        return process(messages, ctx.model)

    return repair_for_the_runs_model

"""The record ``histfix.classify`` returns (no pydantic-ai import, so it can be imported eagerly)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .problems import Problem

__all__ = ["HistoryState", "HistoryStateKind"]

HistoryStateKind = Literal["complete", "pending_calls", "pending_request", "interrupted", "broken"]


@dataclass(frozen=True)
class HistoryState:
    """Where a stored history stands: can it be persisted and continued, and how.

    ``kind`` is one of:

    - ``"complete"``: nothing is pending; continue with a new prompt.
    - ``"pending_calls"``: the last response has calls without results (``pending_call_ids``),
      possibly followed by a request holding the results of their siblings. They can still run
      (resume with no prompt), or be answered with deferred results or approvals.
    - ``"pending_request"``: the history ends with a request the model never answered; run with
      no prompt to continue.
    - ``"interrupted"``: pydantic-ai marked the last response or the trailing request
      ``state='interrupted'`` (on releases that have that field): ``pending_call_ids`` will never
      run; ``repair`` closes them.
    - ``"broken"``: ``problems`` lists what is wrong outside the frontier; ``repair`` fixes it.
      (Consecutive messages ``repair`` would merge do not count: pydantic-ai stores them itself.)

    ``problems`` is empty unless the kind is ``"broken"``; ``pending_call_ids`` names the last
    response's unanswered calls, in order, whatever the kind.
    """

    kind: HistoryStateKind
    pending_call_ids: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def resumable(self) -> bool:
        """Whether a run with no new prompt continues it as it is (pending calls or request)."""
        return self.kind in ("pending_calls", "pending_request")

    def __str__(self) -> str:
        text: str = self.kind
        if self.pending_call_ids:
            text += f" (calls without results: {', '.join(self.pending_call_ids)})"
        if self.problems:
            text += f" ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''})"
        return text

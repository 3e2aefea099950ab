"""The one selector for the default repair: upstream ``repair_messages``, the forward walk or the general walk.

``repair``, ``repair_report`` and a profile's default repair all run :func:`default_repair`;
which backend ``"auto"`` means is :func:`histfix._release.backend.choose_backend`'s decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from .._records.changes import Change

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .pairing import Pairing

__all__ = ["Engine", "default_repair", "select_engine", "upstream_missing", "upstream_repair"]

#: What makes the repaired messages: upstream's ``repair_messages``, histfix's forward walk (one
#: pass, handing over to the general walk where it stops) or the general walk.
Engine = Literal["upstream", "forward", "walk"]


def select_engine(backend: str, *, changes_wanted: bool, pairing: Pairing | None = None) -> Engine:
    """The engine for ``backend`` (``"upstream"`` or ``"histfix"``, already resolved).

    Upstream runs for ``"upstream"``, except where a pairing of the input shows the walk gives its
    output: a release whose ``repair_messages`` is the newest one, and no tool-less
    ``RetryPromptPart`` (the one input where the two differ). Otherwise the general walk where
    it records the changes or reuses a pairing, and the forward walk when neither is wanted.
    """
    if backend == "upstream":
        from .._release import switches as _compat

        if pairing is None or not _compat.UPSTREAM_REPAIR_IS_CURRENT or pairing.toolless_retry:
            return "upstream"
    if changes_wanted or pairing is not None:
        return "walk"
    return "forward"


def default_repair(
    history: Sequence[ModelMessage],
    repair_last_response: bool,
    backend: str,
    *,
    changes_wanted: bool,
    pairing: Pairing | None = None,
) -> tuple[list[ModelMessage], list[Change], Engine]:
    """The default repair of a checked history: its messages, the walk's changes (``[]`` unless
    ``changes_wanted``) and the engine whose messages they are."""
    from .report import repair_with_changes

    engine = select_engine(backend, changes_wanted=changes_wanted, pairing=pairing)
    changes: list[Change] = []
    messages: list[ModelMessage] = []
    if changes_wanted:
        report = repair_with_changes(history, repair_last_response, pairing)
        messages, changes = report.messages, list(report.changes)
    if engine == "upstream":
        messages = upstream_repair(history, repair_last_response)
    elif engine == "forward":
        from .forward import repair as forward_repair

        messages = forward_repair(history, repair_last_response)
    elif not changes_wanted:
        from .walk import repair_walk

        messages = repair_walk(history, repair_last_response=repair_last_response, pairing=pairing)
    return messages, changes, engine


def upstream_missing(version: str) -> str:
    """Why the upstream path cannot run on ``version`` (a release without ``repair_messages``)."""
    return f"pydantic-ai {version} has no pydantic_ai.messages.repair_messages (it arrived in 2.53.0)"


def upstream_repair(history: Sequence[ModelMessage], repair_last_response: bool) -> list[ModelMessage]:
    """Upstream ``repair_messages`` on a checked history, or a clear error where it does not exist."""
    from .._records.inputs import check_messages
    from .._release import installed as _release
    from .._release import switches as _compat

    if not _compat.HAS_REPAIR_MESSAGES:
        raise RuntimeError(
            f"backend='upstream' cannot run: {upstream_missing(_release.VERSION_STRING)}; "
            "use backend='auto' or 'histfix'"
        )
    from pydantic_ai import messages as pai

    check_messages(history, pai.ModelRequest, pai.ModelResponse)
    return pai.repair_messages(history, repair_last_response=repair_last_response)  # type: ignore[attr-defined,no-any-return,unused-ignore]

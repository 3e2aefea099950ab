"""The per-history record: what a stored value is and what repair would do to it.

:func:`examine` is a pure function over the raw bytes (plus its options), picklable and
deterministic, so the runner can hand it to worker processes and any store can use it. It says
what ``load_json``, ``classify``, ``check``, ``check(provider=)`` and ``repair_report`` say, with
the validator they share run once for all of them.

A stored value is either a history (a JSON list of messages) or an envelope: a JSON object with
one key field (:data:`KEY_FIELDS`) and one messages field (:data:`MESSAGES_FIELDS`), as JSONL
exports and many applications store them. A repaired envelope keeps its other fields.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._oneline import first_line

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from .._check.rejections import Verdict
    from .._profiles.targets import ProviderTarget
    from .._records.changes import RepairReport
    from .._records.problems import Problem
    from .._repair.pairing import Pairing

__all__ = [
    "KEY_FIELDS",
    "MESSAGES_FIELDS",
    "Action",
    "Options",
    "Record",
    "RemovedContent",
    "examine",
    "examine_loaded",
]

#: The key fields an envelope may carry, in the order they are looked for.
KEY_FIELDS = ("key", "id", "conversation_id", "session_id", "thread_id")
#: The messages fields an envelope may carry, in the order they are looked for.
MESSAGES_FIELDS = ("messages", "history", "message_history")
#: classify kinds a run can still resume: left byte for byte unless Options.include_pending
PENDING_KINDS = frozenset({"pending_calls", "pending_request"})

Action = Literal["unchanged", "repair", "left_pending", "not_loaded"]


@dataclass(frozen=True, slots=True)
class Options:
    """What a run checks and repairs for (picklable: it travels to worker processes)."""

    #: check and repair for this provider's API (``histfix.repair``'s ``provider``)
    provider: str | None = None
    #: also repair histories a run can still resume (pending_calls, pending_request)
    include_pending: bool = False
    #: compute the repaired bytes (``Record.new``); a scan does not need them
    want_new: bool = False


@dataclass(frozen=True, slots=True)
class RemovedContent:
    """Content a repair removes, for the report: where it was and what it held."""

    change: str
    message_index: int
    description: str
    preview: str


@dataclass(frozen=True, slots=True)
class Record:
    """One stored history, examined. ``new`` is set only when the action is ``repair`` and
    ``Options.want_new`` asked for it."""

    key: str
    size: int
    action: Action
    #: why it is not a history this release loads (or the store's own reason: NULL, symlink...)
    error: str | None = None
    messages: int = 0
    kind: str | None = None
    #: problem kinds ``check`` finds (repair would change each), in order
    problems: tuple[str, ...] = ()
    #: with a provider: problem kinds that provider rejects; without: kinds any provider rejects
    rejected: tuple[str, ...] = ()
    #: change kind -> count, from ``repair_report``
    changes: dict[str, int] = field(default_factory=dict)
    removed: tuple[RemovedContent, ...] = ()
    new: bytes | None = None

    @property
    def would_change(self) -> bool:
        return self.action == "repair"

    def as_json(self) -> dict[str, Any]:
        """The record as one JSON object (``histfix scan --jsonl``), without the new bytes."""
        row: dict[str, Any] = {
            "key": self.key,
            "size": self.size,
            "action": self.action,
            "loads": self.action != "not_loaded",
            "error": self.error,
            "messages": self.messages,
            "kind": self.kind,
            "problems": dict(Counter(self.problems)),
            "rejected": dict(Counter(self.rejected)),
            "changes": self.changes,
        }
        if self.removed:
            row["removed"] = [
                {"change": r.change, "message_index": r.message_index, "preview": r.preview}
                for r in self.removed
            ]
        return row


class _Steps(NamedTuple):
    """The functions a record runs, looked up once: this module loads without pydantic-ai, and an
    import statement or a package attribute per history costs more than a small history's check."""

    load_json: Callable[[str | bytes], list[ModelMessage]]
    pair: Callable[[Sequence[ModelMessage], bool], Pairing]
    check_paired: Callable[[Sequence[ModelMessage], Pairing], list[Problem]]
    state_kind: Callable[[Sequence[ModelMessage], Sequence[Problem]], str]
    rejected_kinds: Callable[[Sequence[ModelMessage], Sequence[Problem]], tuple[str, ...]]
    verdict_for: Callable[[Sequence[ModelMessage], ProviderTarget, Sequence[Problem], Pairing], Verdict]
    resolve_provider: Callable[[object], ProviderTarget]
    repair_report: Callable[[Sequence[ModelMessage], str | None, Pairing], RepairReport]
    dump_json: Callable[[Sequence[ModelMessage]], bytes]


@functools.cache
def _steps() -> _Steps:
    """:class:`_Steps`, imported on the first record (an ImportError saying what to install
    without pydantic-ai; not cached then, so the next record says it again)."""
    from .. import _api

    _api._require_pydantic_ai()
    from .._check.classify import state_kind
    from .._check.history import check_paired
    from .._check.rejections import rejected_kinds, verdict_for
    from .._portable import load_json
    from .._profiles.targets import resolve_provider
    from .._repair.pairing import pair

    return _Steps(
        load_json,
        pair,
        check_paired,
        state_kind,
        rejected_kinds,
        verdict_for,
        resolve_provider,
        _api._default_report,
        _api.dump_json,
    )


def _unwrap(raw: bytes) -> tuple[str, dict[str, Any] | None, str | None]:
    """The history's JSON and, for an envelope, the parsed object and its messages field."""
    # Decoded here, strictly: JSON parsers guess UTF-16/32 from leading bytes, which would turn
    # bytes that are no text at all into a confusing JSON syntax error.
    text = raw.decode("utf-8")
    if text.lstrip()[:1] != "{":
        return text, None, None
    try:
        envelope = json.loads(text)  # a malformed object raises JSONDecodeError, a ValueError
        if not isinstance(envelope, dict):
            raise ValueError("not a history")
        for name in MESSAGES_FIELDS:
            if name in envelope:
                return json.dumps(envelope[name]), envelope, name
    except RecursionError:  # nested deeper than Python's json goes: far past what a history may be
        from .._records.depth import too_deep_text

        raise ValueError(too_deep_text(raw) or "nested too deep to read") from None
    raise ValueError(f"a JSON object without a messages field (expected one of {', '.join(MESSAGES_FIELDS)})")


def _wrap(new: bytes, envelope: dict[str, Any] | None, name: str | None) -> bytes:
    if envelope is None or name is None:
        return new
    rewrapped = {**envelope, name: json.loads(new)}
    return json.dumps(rewrapped, ensure_ascii=False, separators=(",", ":")).encode()


def examine(key: str, raw: bytes, options: Options = Options(), *, error: str | None = None) -> Record:
    """Examine one stored value: does it load, its classify kind, its problems, what repair changes.

    Never raises for bad data: a value that is not a loadable history gets ``action="not_loaded"``
    and ``error`` in one line. ``error`` passes the store's own reason through (a NULL column).
    """
    size = len(raw)
    if error is not None:
        return Record(key=key, size=size, action="not_loaded", error=error)
    load_json = _steps().load_json
    # A bare list in ASCII is its own UTF-8 text, unless a NUL in its first four bytes makes JSON
    # readers guess UTF-16 or 32: loaded from the bytes, without the copy decoding makes. Anything
    # it cannot load goes the way below, which says why in its usual words.
    if raw.isascii() and b"\x00" not in raw[:4] and raw.lstrip()[:1] == b"[":
        try:
            history = load_json(raw)
        except (ValueError, TypeError):
            pass
        else:
            return examine_loaded(key, history, options, size=size)
    try:
        history_json, envelope, name = _unwrap(raw)
        history = load_json(history_json)
    except UnicodeDecodeError as exc:
        return Record(key=key, size=size, action="not_loaded", error=f"not UTF-8 text ({exc.reason})")
    except (ValueError, TypeError) as exc:
        return Record(key=key, size=size, action="not_loaded", error=first_line(exc))
    return examine_loaded(key, history, options, size=size, envelope=envelope, name=name)


def examine_loaded(
    key: str,
    history: list[ModelMessage],
    options: Options = Options(),
    *,
    size: int = 0,
    envelope: dict[str, Any] | None = None,
    name: str | None = None,
) -> Record:
    """:func:`examine` of a history already loaded, as a store that keeps messages rather than
    bytes (a ConversationStore) hands them over: ``size`` is what the stored value weighs, if known."""
    steps = _steps()
    # The validator runs once for classify, check and check(provider=) alike (each would run it
    # again), and once more only for a resumable history, whose open calls are then left alone.
    # The repair, if any, reuses the pairing too (it would make the same one again).
    pairing = steps.pair(history, True)
    found = steps.check_paired(history, pairing)
    kind = steps.state_kind(history, found)
    pending = kind in PENDING_KINDS and not options.include_pending
    # A resumable run's open calls are not a problem to fix while they can still run.
    last = not pending
    if not last:
        found = steps.check_paired(history, steps.pair(history, False))
    problems = tuple(p.kind for p in found)
    sole_changes: tuple[str, ...] | None = None
    if options.provider is None:
        rejected = steps.rejected_kinds(history, found) if found else ()
    else:
        # the kinds alone: a Problem for every call id outside a format would cost more than the rest
        verdict = steps.verdict_for(history, steps.resolve_provider(options.provider), found, pairing)
        rejected, sole_changes = verdict.kinds, verdict.sole_changes
    base = Record(
        key=key,
        size=size,
        action="unchanged",
        messages=len(history),
        kind=kind,
        problems=problems,
        rejected=rejected,
    )
    if pending:
        return replace(base, action="left_pending")
    if not problems and (options.provider is None or not rejected):
        # check finds everything repair would change (its contract), so repair is skipped
        return base
    if not problems and sole_changes and not options.want_new:
        # only findings of passes that each report one change and change nothing else (ids renamed):
        # what the repair would report, counted without running it
        return replace(base, action="repair", changes=dict(Counter(sole_changes)))
    try:
        report = steps.repair_report(history, options.provider, pairing)
    except ValueError as exc:  # a profile refusing a history with nothing it can send
        return replace(base, action="not_loaded", error=f"cannot repair: {first_line(exc)}")
    if report.messages == history:
        return base
    changes: dict[str, int] = dict(Counter(c.kind for c in report.changes))
    removed = tuple(
        RemovedContent(c.kind, c.message_index, c.description, c.preview)
        for c in report.changes
        if c.preview is not None
    )
    new = _wrap(steps.dump_json(report.messages), envelope, name) if options.want_new else None
    return replace(base, action="repair", changes=changes, removed=removed, new=new)

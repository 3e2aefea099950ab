"""Move every history of a legacy store (directory, JSONL, SQLite, PostgreSQL) into a ConversationStore.

Each history is loaded with ``histfix.load_json`` (so what any release wrote loads), repaired (a
history a run can resume is left as it is unless ``include_pending``), and saved as one new
conversation under its key, with ``expected_revision=None``: a conversation the store already has
is never overwritten, only reported (and recognised when it holds exactly this history, as after a
crash between a save and its journal line). Loading and repairing run in ``jobs`` processes; the
saves are made in order, in this process, one per conversation, so ``--resume`` continues after
the last key a batch committed in the journal.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from .._oneline import first_line
from ._conversation_journal import Journal, Saved
from ._record import PENDING_KINDS, Options, _unwrap
from ._runner import examine_batches
from ._source import Source
from ._workers import Item
from .sources._conversation import ConversationSource
from .sources._conversation_access import StoreTarget

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["MigrateResult", "Migration", "migrate"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One legacy history, ready to save: its messages as repaired, or why it cannot be moved."""

    key: str
    messages: list[ModelMessage] | None = None
    #: why it is not moved (does not load, no scope, a profile refusing it), in one line
    error: str | None = None
    #: the repair changed it
    repaired: bool = False
    #: a run can resume it: saved as it was, not repaired (without ``include_pending``)
    pending: bool = False
    scope: str | None = None
    #: what saving it did, when a worker saved it (``migrated``, ``already``, ...), and the detail
    outcome: str | None = None
    detail: str | None = None


@dataclass
class MigrateResult:
    """What a migration did (or, as a dry run, would do)."""

    #: histories read from the source
    total: int = 0
    #: saved as new conversations (dry run: would be)
    migrated: int = 0
    #: of those, changed by the repair
    repaired: int = 0
    #: of those, saved unrepaired because a run can resume them
    pending: int = 0
    #: already in the store holding exactly this history (a run resumed after a crash saved them)
    already: int = 0
    #: already in the store with another history: left as they are
    existing: list[str] = field(default_factory=list)
    #: (key, why) for histories that are not moved: they do not load, have no scope, ...
    not_loaded: list[tuple[str, str]] = field(default_factory=list)
    #: (key, why) for saves the store failed
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: (key, how) for migrated conversations that did not load back as saved (``verify``)
    mismatched: list[tuple[str, str]] = field(default_factory=list)
    #: the last key everything up to which is saved (what ``resume`` continues after)
    committed: str | None = None

    @property
    def complete(self) -> bool:
        """Every history moved, or found already moved, and loaded back as saved where verified."""
        return not (self.existing or self.not_loaded or self.failed or self.mismatched)


def _migration(item: Item, options: Options, scope_field: str | None) -> Migration:
    import histfix

    key, raw, error = item
    if error is not None:
        return Migration(key, error=error)
    try:
        history_json, envelope, _ = _unwrap(raw)
        history = histfix.load_json(history_json)
    except UnicodeDecodeError as exc:
        return Migration(key, error=f"not UTF-8 text ({exc.reason})")
    except (ValueError, TypeError) as exc:
        return Migration(key, error=first_line(exc))
    scope = None
    if scope_field is not None:
        value = envelope.get(scope_field) if envelope is not None else None
        if not isinstance(value, str):
            return Migration(key, error=f"no text field {scope_field!r} to take its scope from")
        scope = value
    if histfix.classify(history).kind in PENDING_KINDS and not options.include_pending:
        return Migration(key, messages=history, pending=True, scope=scope)
    try:
        repaired = histfix.repair(history, provider=options.provider)
    except ValueError as exc:  # a profile refusing a history with nothing it can send
        return Migration(key, error=f"cannot repair: {first_line(exc)}")
    return Migration(key, messages=repaired, repaired=repaired != history, scope=scope)


@dataclass(frozen=True, slots=True)
class Saving:
    """How a worker saves the migrations it prepares itself: the target it opens once (a factory,
    or the ``py:`` name of one), and the run's settings."""

    target: StoreTarget
    write: bool
    scope: str | None
    verify: bool
    #: the process that runs the migration: a batch it prepares itself (one batch, no pool) it
    #: saves itself, through the target it already has open
    parent: int = field(default_factory=os.getpid)


#: The ConversationSource each worker process opened for its saves, by target.
_WORKER_TARGETS: dict[str, ConversationSource] = {}


def prepare_batch(
    items: list[Item], options: Options, *, scope_field: str | None = None, saving: Saving | None = None
) -> list[Migration]:
    """Each legacy history of a batch loaded and repaired (runs in the worker processes), and with
    ``saving`` saved there too, each returned with its outcome and without its messages."""
    migrations = [_migration(item, options, scope_field) for item in items]
    if saving is None or os.getpid() == saving.parent:
        return migrations
    name = repr(saving.target)
    target = _WORKER_TARGETS.get(name)
    if target is None:
        target = _WORKER_TARGETS[name] = ConversationSource(saving.target)
    outcomes = target.run(
        _save_all(target, migrations, write=saving.write, scope=saving.scope, verify=saving.verify)
    )
    return [
        replace(migration, messages=None, outcome=outcome, detail=detail)
        for migration, (outcome, detail) in zip(migrations, outcomes, strict=True)
    ]


def _saves_in_workers(target: ConversationSource, jobs: int) -> StoreTarget | None:
    """What each worker opens to save by itself, when the target is a factory whose stores are
    distinct objects (a database each one connects to, not one object in this process) and can
    be sent to a worker; None when the saves are made here, one after another."""
    if jobs <= 1 or not target.concurrent:
        return None
    try:
        pickle.dumps(target.target)
    except Exception:  # a lambda, a closure: the workers could not be given it
        return None
    return target.target


def migrate(
    source: Source,
    target: ConversationSource,
    *,
    write: bool = False,
    scope: str | None = None,
    scope_field: str | None = None,
    provider: str | None = None,
    include_pending: bool = False,
    journal: Journal | None = None,
    verify: bool = False,
    jobs: int = 1,
    batch_size: int = 500,
    after: str | None = None,
    on_history: Callable[[Migration, str], None] = lambda migration, outcome: None,
) -> MigrateResult:
    """Move every history of ``source`` into ``target``'s store, one new conversation per key.

    Without ``write`` nothing is saved: each history is loaded and repaired, and the store is asked
    whether it already has the key. ``scope`` saves every conversation with that scope, or
    ``scope_field`` with the named field of each stored envelope object. With a ``journal``, each
    save is recorded and each batch's last key committed (what ``after`` continues past);
    ``verify`` loads every migrated conversation back and compares its messages with what was saved.
    ``on_history`` hears each history with its outcome: ``migrated``, ``already``, ``existing``,
    ``not_loaded``, ``failed`` or ``mismatched``.

    With ``jobs`` > 1 and a target made by a factory (or named ``py:`` as one) whose stores are
    distinct objects, each worker makes its own store and saves what it prepared, so the
    backend's own work (serializing, writing) runs side by side too; otherwise the saves are made
    in this process, in order.
    """
    if scope is not None and scope_field is not None:
        raise ValueError("give a fixed scope or the field to take it from, not both")
    if verify and not write:
        raise ValueError("verify compares what a migration saved: it needs write")
    result = MigrateResult(committed=after)
    in_workers = _saves_in_workers(target, jobs)
    saving = None if in_workers is None else Saving(in_workers, write, scope, verify)
    work = partial(prepare_batch, scope_field=scope_field, saving=saving)
    options = Options(provider=provider, include_pending=include_pending)
    batches = source.read(after=after, batch_size=batch_size)
    for batch, migrations in examine_batches(batches, options, jobs=jobs, work=work):
        if all(m.outcome is not None for m in migrations):  # saved by the workers
            outcomes = [(m.outcome or "", m.detail) for m in migrations]
        else:
            outcomes = target.run(_save_all(target, migrations, write=write, scope=scope, verify=verify))
        for migration, (outcome, detail) in zip(migrations, outcomes, strict=True):
            _tally(result, migration, outcome, detail, on_history)
            if journal is not None and outcome == "migrated":
                journal.saved(Saved(migration.key))
        if batch:
            result.committed = batch[-1].key
            if journal is not None:
                journal.commit(result.committed)
    return result


def _tally(
    result: MigrateResult,
    migration: Migration,
    outcome: str,
    detail: str | None,
    on_history: Callable[[Migration, str], None],
) -> None:
    result.total += 1
    if outcome == "migrated":
        result.migrated += 1
        result.repaired += migration.repaired
        result.pending += migration.pending
        if detail is not None:  # saved, but it did not load back as saved
            result.mismatched.append((migration.key, detail))
            on_history(migration, "mismatched")
    elif outcome == "already":
        result.already += 1
    elif outcome == "existing":
        result.existing.append(migration.key)
    elif outcome == "not_loaded":
        result.not_loaded.append((migration.key, detail or "not loadable"))
    else:
        result.failed.append((migration.key, detail or "the store failed"))
    on_history(migration, outcome)


async def _save_all(
    target: ConversationSource,
    migrations: Sequence[Migration],
    *,
    write: bool,
    scope: str | None,
    verify: bool,
) -> list[tuple[str, str | None]]:
    """Each migration saved (a dry run asks whether the store has it), with its outcome and detail:
    ``migrated`` (detail: how it did not load back, with ``verify``), ``already``, ``existing``,
    ``not_loaded`` or ``failed`` (detail: why)."""
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import ConversationConflict

    store = target.store
    outcomes: list[tuple[str, str | None]] = []
    for migration in migrations:
        if migration.messages is None:
            outcomes.append(("not_loaded", migration.error))
            continue
        try:
            if write:
                conversation = Conversation(messages=list(migration.messages), conversation_id=migration.key)
                await store.save(conversation, scope=scope if scope is not None else migration.scope)
            elif await store.read_record(migration.key) is not None:
                raise ConversationConflict(migration.key)
        except ConversationConflict:
            outcomes.append((await _existing(target, migration), None))
            continue
        except Exception as exc:
            outcomes.append(("failed", f"the store failed: {type(exc).__name__}: {first_line(exc)}"))
            continue
        outcomes.append(("migrated", await _loads_back(target, migration) if verify else None))
    return outcomes


async def _existing(target: ConversationSource, migration: Migration) -> str:
    """``already`` when the stored conversation holds exactly this history, else ``existing``."""
    try:
        loaded = await target.store.load(migration.key)
    except Exception:
        return "existing"
    return "already" if loaded is not None and loaded.messages == migration.messages else "existing"


async def _loads_back(target: ConversationSource, migration: Migration) -> str | None:
    """None when the conversation loads back as saved, else how it differs, in one line."""
    assert migration.messages is not None
    try:
        loaded = await target.store.load(migration.key)
    except Exception as exc:
        return f"does not load back: {type(exc).__name__}: {first_line(exc)}"
    if loaded is None:
        return "not in the store after its save"
    if len(loaded.messages) != len(migration.messages):
        return f"loads back with {len(loaded.messages)} messages, {len(migration.messages)} saved"
    for index, (back, sent) in enumerate(zip(loaded.messages, migration.messages, strict=True)):
        if back != sent:
            return f"message {index} loads back different from what was saved"
    return None

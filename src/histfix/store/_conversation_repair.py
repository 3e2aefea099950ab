"""Scan and repair a ConversationStore by its own rules, and restore by branching back.

:func:`repair_conversations` runs the same record as every other store (``examine``, in ``jobs``
processes) over a :class:`ConversationSource`; with a journal it saves each repair with the
revision read (:meth:`ConversationSource.save_repair`), so the store keeps the history it
replaces as a branch, and a conversation saved by someone else meanwhile is a conflict, reported
and left alone (a second run or ``--resume`` picks it up). A conversation paused for deferred
calls is left as it is unless ``include_pending``. :func:`restore_conversations` branches each
repaired conversation back to the entry its history ended at before the repair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .._oneline import first_line
from ._backup import RestoreResult
from ._conversation_journal import Journal, Saved, read_journal
from ._record import Options, Record, examine_loaded
from ._runner import RepairResult, examine_batches
from ._source import Stored, WriteOutcome
from .sources._conversation import ConversationBatch, ConversationSource, Read, ReadConversation

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["examine_conversations", "repair_conversations", "restore_conversations"]


def _left_pending(record: Record) -> Record:
    """A record of a paused conversation, as ``examine`` leaves a resumable history: unchanged."""
    if record.action in ("not_loaded", "left_pending"):
        return record
    return replace(record, action="left_pending", changes={}, removed=(), new=None)


def examine_conversations(items: list[Read], options: Options) -> list[Record]:
    """Each conversation's record, from its messages (runs in the worker processes)."""
    return [
        examine_loaded(key, messages, options)
        if messages is not None
        else Record(key=key, size=0, action="not_loaded", error=error)
        for key, messages, error in items
    ]


def _items(batch: list[Stored]) -> list[Read]:
    assert isinstance(batch, ConversationBatch)
    return batch.items()


def repair_conversations(
    source: ConversationSource,
    options: Options | None = None,
    *,
    journal: Journal | None = None,
    jobs: int = 1,
    batch_size: int = 500,
    after: str | None = None,
    on_record: Callable[[Record], None] = lambda record: None,
) -> RepairResult:
    """Examine every conversation in ``source``; with a ``journal``, save each repair.

    Without a journal nothing is written (a dry run). With one, each repair is saved by the
    store's own rules with the revision read and recorded in the journal, and after each batch
    its last conversation id is committed there (what ``after`` resumes past). The records are
    ``examine``'s, of the messages as read (``size`` is 0: the store keeps messages, not bytes).
    """
    import histfix

    options = options or Options()
    result = RepairResult(committed=after)
    batches = source.conversations(after=after, batch_size=batch_size)
    for batch, records in examine_batches(
        batches, options, jobs=jobs, work=examine_conversations, pack=_items
    ):
        assert isinstance(batch, ConversationBatch)
        saves: list[tuple[ReadConversation, list[ModelMessage]]] = []
        for stored, examined in zip(batch, records, strict=True):
            read = batch.read.get(stored.key)
            paused = read is not None and read.paused and not options.include_pending
            record = _left_pending(examined) if paused else examined
            on_record(record)
            messages = batch.messages(stored.key)
            if journal is not None and read is not None and record.would_change and messages is not None:
                saves.append((read, messages))
        for read, messages in saves:
            # The repair the record reported, made again here from the same messages (deterministic):
            # cheaper than carrying each repaired history back from the worker.
            repaired = histfix.repair_report(messages, provider=options.provider).messages
            outcome = source.save_repair(read, repaired)
            conversation_id = read.record.conversation_id
            if outcome.outcome is WriteOutcome.WRITTEN:
                assert journal is not None
                journal.saved(Saved(conversation_id, left=read.record.head_id, revision=outcome.revision))
                result.written += 1
            else:
                result.skipped.append((conversation_id, outcome.reason or outcome.outcome.value))
        last = _last_conversation(batch)
        if last is not None:
            if journal is not None:
                journal.commit(last)
            result.committed = last
    return result


def _last_conversation(batch: ConversationBatch) -> str | None:
    """The id of the batch's last conversation (its records come in ascending id)."""
    return max(batch.read) if batch.read else None


def restore_conversations(journal: Path | str, source: ConversationSource) -> RestoreResult:
    """Branch every conversation a repair saved back to the entry its history ended at before,
    where it still holds the revision the repair wrote; anything else is named and left alone."""
    _, _, saved = read_journal(Path(journal), "repair")
    result = RestoreResult()
    for item in saved:
        outcome = source.run(_branch_back(source, item))
        if outcome is None:
            result.restored += 1
        elif outcome == "already":
            result.already += 1
        else:
            result.skipped.append((item.conversation_id, outcome))
    return result


async def _branch_back(source: ConversationSource, saved: Saved) -> str | None:
    """Branch ``saved`` back; None when done, ``"already"`` when it already was, else why not."""
    from pydantic_ai.conversation_store import ConversationConflict
    from pydantic_ai.exceptions import UserError

    store = source.store
    try:
        record = await store.read_record(saved.conversation_id)
    except Exception as exc:
        return f"the store failed: {type(exc).__name__}: {first_line(exc)}"
    if record is None:
        return "gone from the store"
    if record.revision != saved.revision:
        if record.head_id == saved.left:
            return "already"
        return "saved since the repair wrote it: left as it is"
    try:
        if saved.left is None:
            await store.branch(
                saved.conversation_id, at=0, expected_revision=saved.revision, scope=record.scope
            )
        else:
            await store.branch(
                saved.conversation_id,
                from_entry=saved.left,
                expected_revision=saved.revision,
                scope=record.scope,
            )
    except ConversationConflict:
        return "saved since the repair wrote it: left as it is"
    except UserError as exc:
        return f"cannot branch back: {first_line(exc)}"
    except Exception as exc:
        return f"the store failed: {type(exc).__name__}: {first_line(exc)}"
    return None

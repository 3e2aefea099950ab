"""A pydantic-ai ``ConversationStore`` as a store source: every conversation's history as bytes.

It reads only through the store's public reading methods: ``read_records`` (with ``scope=``), then
each record's history from its head with ``read_history`` (and with ``branches=True`` every branch
the record lists, as histories of their own). Keys are conversation ids, in ascending order, so
a run resumes after one like after any other key. A history that cannot be read (a head naming an
entry the store lacks, a backend failing on that conversation) is a ``Stored.error`` with its key:
reported, and the run goes on.

A repaired history is saved by the store's own rules (:meth:`ConversationSource.save_repair`): a
``save`` of the conversation with the revision read, so the store appends what the repair added and
keeps the history it rewrote as a branch the record lists, and a conversation changed since it was
read is a ``ConversationConflict``: left as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..._oneline import first_line
from .._source import Replacement, Stored, StoreError, WriteOutcome
from ._conversation_access import StoreLoop, StoreTarget, resolve_target

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationRecord, ConversationStore
    from pydantic_ai.messages import ModelMessage
    from typing_extensions import Self

__all__ = ["BRANCH_MARK", "ConversationBatch", "ConversationSource", "ReadConversation", "SaveOutcome"]

T = TypeVar("T")
#: A branch's key: the conversation id, this mark, and the branch's last entry.
BRANCH_MARK = "#branch="
#: How often a history is read again when the record moved under the read (a concurrent save).
REREADS = 3


@dataclass(frozen=True, slots=True)
class ReadConversation:
    """A conversation as read: its record (revision, scope, usage) and whether it is paused."""

    record: ConversationRecord

    @property
    def paused(self) -> bool:
        """Its last run paused for deferred tool calls the record carries: a run can resume it."""
        return self.record.deferred_tool_requests is not None


#: One history as read: its key, its messages (None when it does not read) and why not.
Read = tuple[str, "list[ModelMessage] | None", "str | None"]


class ConversationBatch(list[Stored]):
    """A batch of histories as read: a :class:`Stored` per history (the store's reason when it
    does not read, no bytes otherwise), its messages by key, and each conversation's record."""

    def __init__(self, read: Sequence[Read], records: dict[str, ReadConversation]) -> None:
        super().__init__(Stored(key, b"", error=error) for key, _, error in read)
        self._read = list(read)
        self._messages = {key: messages for key, messages, _ in self._read}
        self.read = records

    def items(self) -> list[Read]:
        """``(key, messages, error)`` of each history: what a scan's worker examines."""
        return self._read

    def messages(self, key: str) -> list[ModelMessage] | None:
        """The messages read under ``key`` (None when it did not read)."""
        return self._messages.get(key)


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    """What saving one repaired conversation did: written with ``revision``, or skipped with why."""

    outcome: WriteOutcome
    revision: str | None = None
    #: why it was not written, in one line (the store's own failure, or a conflict)
    reason: str | None = None


class ConversationSource:
    """A ``ConversationStore`` as a :class:`~histfix.store.Source`: read by its public methods.

    ``target`` is the store, a zero-argument factory of one (sync or async), or a
    ``py:module.path:attr`` string naming either. ``scope`` lists only that scope's conversations
    (``read_records(scope=...)``); ``branches`` also reads every branch a record lists. With a
    factory, ``readers`` stores are made and read side by side (a backend whose instances each hold
    their own connection reads concurrently); a store object is read one call at a time, since
    nothing says its methods may overlap.
    """

    rewrites_whole_store = False

    def __init__(
        self,
        target: StoreTarget,
        *,
        scope: str | None = None,
        branches: bool = False,
        readers: int = 1,
    ) -> None:
        self._loop = StoreLoop()
        try:
            self._make, from_factory = resolve_target(target, self._loop)
            self.store: ConversationStore = self._make()
        except BaseException:
            self._loop.close()
            raise
        self.target = target
        self._from_factory = from_factory
        self._readers = max(1, readers) if from_factory else 1
        self._lanes: list[ConversationStore] = [self.store]
        self.scope = scope
        self.branches = branches
        named = target if isinstance(target, str) else f"{type(self.store).__qualname__} object"
        self.url = named if scope is None else f"{named} (scope {scope!r})"

    @property
    def concurrent(self) -> bool:
        """Whether the target is a factory whose stores are distinct objects (each its own
        connection to the same data), so that other processes can open their own and use them
        side by side; a factory that hands out one object, like a store in memory, is not."""
        if not self._from_factory:
            return False
        if len(self._lanes) < 2:
            self._lanes.append(self._make())
        return self._lanes[1] is not self.store

    # --- reading ------------------------------------------------------------------------------

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run one of the store's coroutines in this source's event loop."""
        return self._loop.run(awaitable)

    def records(self, *, after: str | None = None) -> list[ConversationRecord]:
        """The records ``scope`` lets this source see, in ascending conversation id, after ``after``."""
        try:
            found = self.run(self.store.read_records(scope=self.scope))
        except Exception as exc:
            raise StoreError(f"{self.url}: cannot list its conversations: {first_line(exc)}") from exc
        listed = sorted(found, key=lambda record: record.conversation_id)
        # A backend that lists other scopes anyway is held to the scope asked for.
        wanted = (r for r in listed if self.scope is None or r.scope == self.scope)
        return [r for r in wanted if after is None or r.conversation_id > after]

    def count(self, *, after: str | None = None) -> int | None:
        listed = self.records(after=after)
        return len(listed) + (sum(len(r.branches) for r in listed) if self.branches else 0)

    def read(self, *, after: str | None = None, batch_size: int = 500) -> Iterator[list[Stored]]:
        """The :class:`~histfix.store.Source` read: every history as its JSON bytes, in ascending
        conversation id (with ``branches`` each branch after its conversation); ``after`` resumes
        past an id. histfix's own scan reads :meth:`conversations` instead, without the JSON."""
        for batch in self.conversations(after=after, batch_size=batch_size):
            yield [
                Stored(key, _dump(messages)) if messages is not None else Stored(key, b"", error=error)
                for key, messages, error in batch.items()
            ]

    def conversations(
        self, *, after: str | None = None, batch_size: int = 500
    ) -> Iterator[ConversationBatch]:
        """Every conversation as read, in batches, in ascending conversation id: the messages
        themselves (a history's JSON would cost more to make than to scan: 2.78.0's serializer)."""
        listed = self.records(after=after)
        lanes = self._stores()  # made here: an async factory runs in the loop, not inside it
        for start in range(0, len(listed), batch_size):
            yield self.run(self._read_batch(lanes, listed[start : start + batch_size]))

    def _stores(self) -> list[ConversationStore]:
        while len(self._lanes) < self._readers:
            self._lanes.append(self._make())
        return self._lanes[: self._readers]

    async def _read_batch(
        self, lanes: list[ConversationStore], records: list[ConversationRecord]
    ) -> ConversationBatch:
        read: list[tuple[ConversationRecord, list[Read]]] = [(r, []) for r in records]

        async def lane(store: ConversationStore, first: int) -> None:
            for index in range(first, len(records), len(lanes)):
                read[index] = await self._read_conversation(store, records[index])

        await asyncio.gather(*(lane(store, first) for first, store in enumerate(lanes)))
        known = {record.conversation_id: ReadConversation(record) for record, _ in read}
        return ConversationBatch([item for _, items in read for item in items], known)

    async def _read_conversation(
        self, store: ConversationStore, record: ConversationRecord
    ) -> tuple[ConversationRecord, list[Read]]:
        """The record the history was read under (the current one, if a save moved it during the
        read) and the conversation's history, then with ``branches`` each branch it lists."""
        key = record.conversation_id
        items: list[Read]
        try:
            record, messages = await self._history(store, record)
        except Exception as exc:
            items = [
                (key, None, f"its history does not read from its head {record.head_id!r}: {_failure(exc)}")
            ]
        else:
            items = [(key, messages, None)]
        for tip in record.branches if self.branches else ():
            branch = f"{key}{BRANCH_MARK}{tip}"
            try:
                entries = await store.read_history(tip)
            except Exception as exc:
                items.append((branch, None, f"the branch does not read: {_failure(exc)}"))
            else:
                items.append((branch, [entry.message for entry in entries], None))
        return record, items

    async def _history(
        self, store: ConversationStore, record: ConversationRecord
    ) -> tuple[ConversationRecord, list[ModelMessage]]:
        """``record``'s history, read again from the current record when a save moved it meanwhile."""
        for attempt in range(REREADS):
            try:
                entries = await store.read_history(record.head_id)
            except LookupError:
                # An entry a concurrent save released: a failure only while the record is unchanged.
                current = await store.read_record(record.conversation_id)
                if current is None or current.revision == record.revision or attempt == REREADS - 1:
                    raise
                record = current
                continue
            return record, [entry.message for entry in entries]
        raise AssertionError("unreachable: the last attempt returns or raises")

    # --- writing ------------------------------------------------------------------------------

    def save_repair(self, conversation: ReadConversation, messages: Sequence[ModelMessage]) -> SaveOutcome:
        """Save ``messages`` as the conversation's history the way the store rewrites one, expecting
        the revision read: the history it replaces stays stored, as a branch the record lists."""
        return self.run(self._save_repair(conversation.record, messages))

    async def _save_repair(self, record: ConversationRecord, messages: Sequence[ModelMessage]) -> SaveOutcome:
        from pydantic_ai.conversation import Conversation
        from pydantic_ai.conversation_store import ConversationConflict

        conversation = Conversation(
            messages=list(messages),
            usage=record.usage,
            conversation_id=record.conversation_id,
            # The repair answered every call the conversation waited on: it waits on none now.
            deferred_tool_requests=None,
            revision=record.revision,
        )
        try:
            await self.store.save(conversation, scope=record.scope)
        except ConversationConflict:
            try:
                gone = await self.store.read_record(record.conversation_id) is None
            except Exception:
                gone = False
            if gone:
                return SaveOutcome(WriteOutcome.GONE, reason="gone from the store since it was read")
            return SaveOutcome(
                WriteOutcome.CHANGED_SINCE_READ,
                reason="saved by someone else since it was read (ConversationConflict): left as they saved it",
            )
        except Exception as exc:
            return SaveOutcome(WriteOutcome.CHANGED_SINCE_READ, reason=f"the store failed: {_failure(exc)}")
        return SaveOutcome(WriteOutcome.WRITTEN, revision=conversation.revision)

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        """The :class:`~histfix.store.Source` write: each history saved where it still reads as
        ``old`` (checked on a fresh read, then saved with that read's revision)."""
        return [self.run(self._replace(item)) for item in batch]

    async def _replace(self, item: Replacement) -> WriteOutcome:
        import histfix

        record = await self.store.read_record(item.key)
        if record is None or (self.scope is not None and record.scope != self.scope):
            return WriteOutcome.GONE
        record, messages = await self._history(self.store, record)
        if _dump(messages) != item.old:
            return WriteOutcome.CHANGED_SINCE_READ
        saved = await self._save_repair(record, histfix.load_json(item.new))
        return saved.outcome

    # --- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _failure(exc: BaseException) -> str:
    """A backend's exception in one line, its type named (a bare ``KeyError('x')`` says only ``'x'``)."""
    return f"{type(exc).__name__}: {first_line(exc)}"


def _dump(messages: Sequence[ModelMessage]) -> bytes:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_json(list(messages))

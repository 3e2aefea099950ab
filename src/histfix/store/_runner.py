"""Runs the per-history record over a store: batches, worker processes, ordered output, writes.

Batches stream from the source to ``jobs`` worker processes (:mod:`._workers`) with at most
``2 * jobs`` batches in flight, so memory stays bounded whatever the store's size, and results
come back in the order read, so output is deterministic. The source is read and written in this
process only; workers see raw bytes and return records, and hold nothing of the store.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

from ._backup import BatchBackup
from ._record import Options, Record
from ._source import Replacement, Source, Stored, StoreError, WriteOutcome
from ._workers import Item, WorkerLost, Workers, can_start_workers, examine_items

__all__ = ["RepairResult", "claim", "default_jobs", "examine_all", "examine_batches", "repair_source"]

#: A whole-store rewrite (JSONL) gathers replacements up to this many bytes before it writes.
WHOLE_STORE_WRITE_BYTES = 64 << 20


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _items(batch: list[Stored]) -> list[Item]:
    return [(s.key, s.raw, s.error) for s in batch]


def _returned(workers: Workers, batch: list[Stored], worker: int) -> tuple[list[Stored], list[Record]]:
    try:
        return batch, workers.receive(worker)
    except WorkerLost as lost:
        span = f"the histories {batch[0].key!r} to {batch[-1].key!r}" if batch else "an empty batch"
        raise WorkerLost(f"{lost} while it examined {span}") from None


def examine_batches(
    batches: Iterable[list[Stored]],
    options: Options,
    *,
    jobs: int = 1,
    work: Callable[[list[Any], Options], list[Any]] = examine_items,
    pack: Callable[[list[Stored]], list[Any]] = _items,
) -> Iterator[tuple[list[Stored], list[Any]]]:
    """Each batch with its records, in the order given, examined by ``jobs`` worker processes
    (:mod:`._workers`); WorkerLost if one ends before it returns a batch.

    ``work`` (a module-level function, or a partial of one: the workers get it pickled) may do
    other per-history work than ``examine`` in the same processes, on the items ``pack`` makes of
    each batch: a migration prepares each history to save, a ConversationStore's scan hands over
    messages, not bytes.
    """
    iterator = iter(batches)
    first = list(islice(iterator, 2))
    # A store of one batch is done before worker processes would have started.
    if jobs <= 1 or len(first) < 2 or not can_start_workers():
        for batch in chain(first, iterator):
            yield batch, work(pack(batch), options)
        return
    # Batch n goes to worker n % jobs, and each worker answers in order, so the records come
    # back in the order read whichever worker is faster.
    in_flight: deque[tuple[list[Stored], int]] = deque()
    with Workers(jobs, options, work) as workers:
        for number, batch in enumerate(chain(first, iterator)):
            workers.send(number % jobs, pack(batch))
            in_flight.append((batch, number % jobs))
            if len(in_flight) >= 2 * jobs:
                yield _returned(workers, *in_flight.popleft())
        while in_flight:
            yield _returned(workers, *in_flight.popleft())


def examine_all(
    items: Iterable[tuple[str, bytes]],
    *,
    provider: str | None = None,
    include_pending: bool = False,
    repair: bool = False,
    jobs: int = 1,
    batch_size: int = 500,
) -> Iterator[Record]:
    """Examine any ``(key, raw bytes)`` pairs, in order: the store API for any other store.

    With ``repair=True`` each record that would change carries ``new``, the bytes to store
    instead (write them back with your store's own compare-and-swap)::

        for record in examine_all((k, redis.get(k)) for k in redis.scan_iter("chat:*")), repair=True):
            if record.new is not None:
                redis.set(record.key, record.new)
    """
    options = Options(provider=provider, include_pending=include_pending, want_new=repair)
    iterator = iter(items)
    stored = (
        [Stored(key, raw) for key, raw in chunk]
        for chunk in iter(lambda: list(islice(iterator, batch_size)), [])
    )
    for _, records in examine_batches(stored, options, jobs=jobs):
        yield from records


@dataclass
class RepairResult:
    written: int = 0
    #: (key, reason): histories that needed a change and did not get it
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: the last key everything up to which is written (what --resume continues after)
    committed: str | None = None
    #: rows whose key is NULL (SQL sources): never read, so neither examined nor repaired
    null_keys: int = 0


_REASONS = {
    WriteOutcome.CHANGED_SINCE_READ: "changed by someone else since it was read: left as they wrote it",
    WriteOutcome.GONE: "gone from the store since it was read",
}


def _reason(outcome: WriteOutcome, source: Source) -> str:
    if outcome is WriteOutcome.BUSY:
        waited = getattr(source, "lock_timeout", None)
        held = f"for over {waited:g} s (the lock timeout)" if waited is not None else "past the lock timeout"
        return f"held locked by another session {held}: left as it is; resuming the run tries it again"
    return _REASONS[outcome]


class _Retried(list[Stored]):
    """Rows a resume tries again because the run found them busy: ``keys`` are the keys tried
    (a row gone since is among them, though not in the list)."""

    def __init__(self, rows: list[Stored], keys: list[str]) -> None:
        super().__init__(rows)
        self.keys = keys


def _retries(source: Source, keys: list[str], batch_size: int) -> Iterator[list[Stored]]:
    read_keys: Callable[[list[str]], list[Stored]] | None = getattr(source, "read_keys", None)
    if read_keys is None:
        raise StoreError(
            f"{source.url}: the backup records rows found busy, and this store cannot read rows by key"
        )
    for start in range(0, len(keys), batch_size):
        chunk = keys[start : start + batch_size]
        yield _Retried(read_keys(chunk), chunk)


def claim(source: Source, *, writing: bool) -> None:
    """Take the store for this run where the source can tell another histfix run is working on it
    (a PostgreSQL table by an advisory lock; a directory, JSONL or SQLite file by ``flock``: see
    each source's ``claim``): StoreError naming that run if one is; a writing run needs the store
    to itself, reading runs share it. Held until the source closes."""
    take: Callable[..., None] | None = getattr(source, "claim", None)
    if take is not None:
        take(writing=writing)


def repair_source(
    source: Source,
    options: Options,
    *,
    backup: BatchBackup | None,
    jobs: int = 1,
    batch_size: int = 500,
    after: str | None = None,
    on_record: Callable[[Record], None] = lambda record: None,
    on_null_keys: Callable[[int], None] = lambda count: None,
) -> RepairResult:
    """Examine every history in ``source`` and, with a backup, write each repair back.

    Without a backup nothing is written (a dry run). With one, each batch's originals are saved
    first (fsynced to a file, or in the batch's own transaction to a backup table), the batch is
    written (one transaction, or one atomic replace per file; a whole-store rewrite gathers
    batches), and its last key is committed in the backup. Another histfix run working on the
    same store (where the source can tell, see :func:`claim`) stops it before anything is read.
    A row another session holds locked
    past the source's lock timeout is left as it is (skipped, BUSY) and recorded in the backup; a
    resume tries those rows again first, then goes on after ``after``. ``on_null_keys`` hears,
    before the first record, how many rows an SQL source cannot read for a NULL key.
    """
    claim(source, writing=backup is not None)
    result = RepairResult(committed=after)
    # A row without a key cannot be paged to or written back; counted so the report says so.
    null_keys = getattr(source, "null_keys", None)
    if null_keys is not None:
        result.null_keys = null_keys()
        on_null_keys(result.null_keys)
    pending: list[Replacement] = []
    pending_bytes = 0
    last_key: str | None = after

    def flush(through: str | None, retried: Sequence[str] = ()) -> None:
        nonlocal pending_bytes
        if backup is None:
            return
        if pending or retried:
            outcomes = backup.write(source, pending, through, retried=retried)
            for item, outcome in zip(pending, outcomes, strict=True):
                if outcome is WriteOutcome.WRITTEN:
                    result.written += 1
                else:
                    result.skipped.append((item.key, _reason(outcome, source)))
            pending.clear()
            pending_bytes = 0
        elif through is not None and through != result.committed:
            backup.commit(through)
        if through is not None:
            result.committed = through

    wanted = Options(options.provider, options.include_pending, want_new=backup is not None)
    busy = _retries(source, backup.busy, batch_size) if backup is not None and backup.busy else iter(())
    batches = chain(busy, source.read(after=after, batch_size=batch_size))
    for batch, records in examine_batches(batches, wanted, jobs=jobs):
        for stored, record in zip(batch, records, strict=True):
            on_record(record)
            if record.new is not None:
                pending.append(Replacement(stored.key, stored.raw, record.new))
                pending_bytes += len(stored.raw) + len(record.new)
        if isinstance(batch, _Retried):  # written at once, and the run's place stays where it was
            flush(None, batch.keys)
            continue
        if batch:
            last_key = batch[-1].key
        if not source.rewrites_whole_store or pending_bytes >= WHOLE_STORE_WRITE_BYTES:
            flush(last_key)
    flush(last_key)
    return result

"""Runs the per-history record over a store: batches, worker processes, ordered output, writes.

Batches stream from the source to ``jobs`` worker processes with at most ``2 * jobs`` batches in
flight, so memory stays bounded whatever the store's size, and results come back in the order
read, so output is deterministic. The source is read and written in this process only; workers
see raw bytes and return records.
"""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import chain, islice

from ._backup import BatchBackup
from ._record import Options, Record, examine
from ._source import Replacement, Source, Stored, WriteOutcome

__all__ = ["RepairResult", "default_jobs", "examine_all", "examine_batches", "repair_source"]

#: A whole-store rewrite (JSONL) gathers replacements up to this many bytes before it writes.
WHOLE_STORE_WRITE_BYTES = 64 << 20

Item = tuple[str, bytes, str | None]


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _examine_batch(batch: list[Item], options: Options) -> list[Record]:
    return [examine(key, raw, options, error=error) for key, raw, error in batch]


def _worker_start() -> None:
    # Ctrl-C is the parent's to handle; workers just stop when it shuts the pool down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import histfix

    histfix.backend_info()  # imports pydantic-ai once, before the first batch


def examine_batches(
    batches: Iterable[list[Stored]], options: Options, *, jobs: int = 1
) -> Iterator[tuple[list[Stored], list[Record]]]:
    """Each batch with its records, in the order given, examined by ``jobs`` processes."""
    iterator = iter(batches)
    first = list(islice(iterator, 2))
    # A store of one batch is done before worker processes would have started.
    if jobs <= 1 or len(first) < 2:
        for batch in chain(first, iterator):
            yield batch, _examine_batch([(s.key, s.raw, s.error) for s in batch], options)
        return
    batches = chain(first, iterator)
    import histfix

    histfix.backend_info()  # so forked workers start with pydantic-ai already imported
    in_flight: deque[tuple[list[Stored], Future[list[Record]]]] = deque()
    with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_start) as pool:
        try:
            for batch in batches:
                items = [(s.key, s.raw, s.error) for s in batch]
                in_flight.append((batch, pool.submit(_examine_batch, items, options)))
                if len(in_flight) >= 2 * jobs:
                    done, future = in_flight.popleft()
                    yield done, future.result()
            while in_flight:
                done, future = in_flight.popleft()
                yield done, future.result()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


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
    batches), and its last key is committed in the backup. ``on_null_keys`` hears, before the
    first record, how many rows an SQL source cannot read for a NULL key.
    """
    result = RepairResult(committed=after)
    # A row without a key cannot be paged to or written back; counted so the report says so.
    null_keys = getattr(source, "null_keys", None)
    if null_keys is not None:
        result.null_keys = null_keys()
        on_null_keys(result.null_keys)
    pending: list[Replacement] = []
    pending_bytes = 0
    last_key: str | None = after

    def flush() -> None:
        nonlocal pending_bytes
        if backup is None:
            return
        if pending:
            outcomes = backup.write(source, pending, last_key)
            for item, outcome in zip(pending, outcomes, strict=True):
                if outcome is WriteOutcome.WRITTEN:
                    result.written += 1
                else:
                    result.skipped.append((item.key, _REASONS[outcome]))
            pending.clear()
            pending_bytes = 0
        elif last_key is not None and last_key != result.committed:
            backup.commit(last_key)
        result.committed = last_key

    wanted = Options(options.provider, options.include_pending, want_new=backup is not None)
    for batch, records in examine_batches(source.read(after=after, batch_size=batch_size), wanted, jobs=jobs):
        for stored, record in zip(batch, records, strict=True):
            on_record(record)
            if record.new is not None:
                pending.append(Replacement(stored.key, stored.raw, record.new))
                pending_bytes += len(stored.raw) + len(record.new)
        if batch:
            last_key = batch[-1].key
        if not source.rewrites_whole_store or pending_bytes >= WHOLE_STORE_WRITE_BYTES:
            flush()
    flush()
    return result

"""The backup a repair writes before it changes anything, and ``restore`` from it.

Two kinds, named by the ``--backup`` string (:func:`open_backup`):

- a JSONL file: a header naming the source, then per replaced history its key, the original bytes
  and the bytes written (text when they are UTF-8, else base64), and after each committed batch a
  ``committed`` line with the last key the run got through (``--resume`` goes on from there),
  after a ``busy`` line for each row another session held locked (``--resume`` tries those
  first, and a ``retried`` line says it did).
  Every line is fsynced before the source is written, so a history is never changed without its
  original being on disk first. A torn last line (a crash while appending) belonged to a batch
  that was never written and is ignored.
- ``table:NAME``: a table in an SQL source's own database (the source module makes it, see
  ``open_backup_table`` there), written in the same transaction as the batch it backs up, so a
  crash leaves both the batch and its originals, or neither.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ._source import TABLE_NAME, Replacement, Source, StoreError, WriteOutcome

__all__ = [
    "TABLE_PREFIX",
    "Backup",
    "BatchBackup",
    "RestoreResult",
    "batch_rows",
    "open_backup",
    "read_backup",
    "restore",
    "still_busy",
]

FORMAT = 1
#: ``--backup table:NAME`` names a backup table in the source's own database.
TABLE_PREFIX = "table:"


class BatchBackup(Protocol):
    """Where a repair run keeps the originals: a :class:`Backup` file or an SQL source's table."""

    #: the last key the run got through (None: no batch committed yet)
    last_committed: str | None
    #: keys of rows the run found busy (another session held them locked) and has not tried
    #: again since, as recorded when the backup was opened: a resume tries them first
    busy: list[str]

    def write(
        self,
        source: Source,
        batch: Sequence[Replacement],
        last_key: str | None,
        *,
        retried: Sequence[str] = (),
    ) -> list[WriteOutcome]:
        """Save the batch's originals, write the batch to ``source``, record each key it found
        BUSY and each key of ``retried`` (busy ones the batch tried again), and commit
        ``last_key``; one outcome per replacement."""
        ...

    def commit(self, key: str) -> None:
        """Record that the run got through ``key`` (a batch with nothing to write)."""
        ...

    def close(self) -> None: ...


class BackupTableHost(Protocol):
    """A source that can keep a backup table in its own database (SQLite, PostgreSQL)."""

    def open_backup_table(self, name: str, *, resume: bool) -> BatchBackup: ...

    def backup_originals(self, name: str, *, batch_size: int) -> Iterator[list[tuple[str, bytes, bytes]]]: ...


def _table_host(source: Source, name: str) -> BackupTableHost:
    if not TABLE_NAME.fullmatch(name):
        raise StoreError(f"{TABLE_PREFIX}{name}: not a plain SQL table name (letters, digits, _)")
    host: Any = source
    if not hasattr(host, "open_backup_table"):
        raise StoreError(
            f"{TABLE_PREFIX}{name}: a backup table lives in the database of an SQLite or "
            f"PostgreSQL source, and {source.url} is not one; name a JSONL file instead"
        )
    found: BackupTableHost = host
    return found


def open_backup(backup: str, source: Source, *, resume: bool) -> BatchBackup:
    """The backup ``backup`` names for a run over ``source``: ``table:NAME`` (a table in the
    source's database, created unless ``resume``), else a JSONL file (new unless ``resume``)."""
    if backup.startswith(TABLE_PREFIX):
        name = backup.removeprefix(TABLE_PREFIX)
        return _table_host(source, name).open_backup_table(name, resume=resume)
    return Backup(Path(backup), source.url, resume=resume)


def batch_rows(
    batch: Sequence[Replacement],
    outcomes: Sequence[WriteOutcome],
    last_key: str | None,
    retried: Sequence[str],
) -> list[tuple[str, str, bytes | None, bytes | None]]:
    """What a backup table records of one batch, (kind, key, old, new) in order: each key tried
    again, the original and the bytes written of each row written, each key found busy, and the
    last key the run got through."""
    rows: list[tuple[str, str, bytes | None, bytes | None]] = [
        ("retried", key, None, None) for key in retried
    ]
    for item, outcome in zip(batch, outcomes, strict=True):
        if outcome is WriteOutcome.WRITTEN:
            rows.append(("original", item.key, item.old, item.new))
        elif outcome is WriteOutcome.BUSY:
            rows.append(("busy", item.key, None, None))
    if last_key is not None:
        rows.append(("committed", last_key, None, None))
    return rows


def still_busy(marks: Iterable[tuple[str, str]]) -> list[str]:
    """The keys recorded busy and not tried again since, from (kind, key) in the order recorded."""
    pending: dict[str, None] = {}
    for kind, key in marks:
        if kind == "busy":
            pending[key] = None
        elif kind == "retried":
            pending.pop(key, None)
    return list(pending)


def _encode(name: str, data: bytes) -> dict[str, str]:
    try:
        return {name: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_b64": base64.b64encode(data).decode("ascii")}


def _decode(row: dict[str, Any], name: str) -> bytes:
    if name in row:
        return str(row[name]).encode("utf-8")
    return base64.b64decode(row[f"{name}_b64"])


def _open_regular(path: Path, flags: int, *, what: str = "backup") -> int:
    """An fd on ``path`` as a regular file: never through a symlink, never a FIFO or device.
    ``what`` names the file in the one-line errors (a backup, a journal)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o600)
    except FileExistsError:
        raise StoreError(
            f"{what} {path}: already exists; --resume continues that run, or name a new {what}"
        ) from None
    except OSError as exc:
        raise StoreError(f"{what} {path}: cannot open it ({exc.strerror})") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StoreError(f"{what} {path}: not a regular file")
    return fd


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    fd = _open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                return  # torn by a crash while appending: its batch was never written
            try:
                row = json.loads(line)
            except ValueError:
                raise StoreError(f"backup {path}: line {number} is not a backup record") from None
            if not isinstance(row, dict):
                raise StoreError(f"backup {path}: line {number} is not a backup record")
            yield row


def read_backup(path: Path) -> tuple[str, str | None]:
    """The source a backup was made from and the last key its run committed (None: none yet)."""
    source, last = None, None
    for row in _rows(path):
        if "histfix_backup" in row:
            source = str(row.get("source"))
        elif "committed" in row:
            last = str(row["committed"])
    if source is None:
        raise StoreError(f"backup {path}: not a histfix backup (no header line)")
    return source, last


def _end_of_last_line(fd: int) -> int:
    """The offset just after the file's last newline (0 if none), read backwards from its end."""
    end = os.fstat(fd).st_size
    while end > 0:
        start = max(0, end - (1 << 16))
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


class Backup:
    """An open backup file, appended to and fsynced batch by batch."""

    def __init__(self, path: Path, source_url: str, *, resume: bool) -> None:
        self.path = path
        self.last_committed: str | None = None
        self.busy: list[str] = []
        if resume:
            recorded, self.last_committed = read_backup(path)
            self.busy = still_busy(
                (kind, str(row[kind])) for row in _rows(path) for kind in ("busy", "retried") if kind in row
            )
            if recorded != source_url:
                raise StoreError(f"backup {path}: made from {recorded}, not {source_url}")
            self._fd = _open_regular(path, os.O_RDWR)
            os.ftruncate(self._fd, _end_of_last_line(self._fd))  # a torn last line is dropped
            os.lseek(self._fd, 0, os.SEEK_END)
        else:
            self._fd = _open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            self._append([{"histfix_backup": FORMAT, "source": source_url}])

    def _append(self, rows: Sequence[dict[str, Any]]) -> None:
        # ASCII escapes: a file name that is not UTF-8 (a lone surrogate in Python) still round-trips
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(f"backup {self.path}: cannot write it ({exc.strerror})") from exc

    def save(self, batch: Sequence[Replacement]) -> None:
        """Put the originals on disk (fsynced) before the batch is written to the source."""
        self._append([{"key": r.key, **_encode("old", r.old), **_encode("new", r.new)} for r in batch])

    def write(
        self,
        source: Source,
        batch: Sequence[Replacement],
        last_key: str | None,
        *,
        retried: Sequence[str] = (),
    ) -> list[WriteOutcome]:
        """Save the originals, write the batch, then record what was retried and found busy, and
        commit ``last_key``."""
        if batch:
            self.save(batch)
        outcomes = source.write(batch) if batch else []
        marks = [
            {kind: key}
            for kind, key, _, _ in batch_rows(batch, outcomes, last_key, retried)
            if kind != "original"
        ]
        if marks:
            self._append(marks)
        if last_key is not None:
            self.last_committed = last_key
        return outcomes

    def commit(self, key: str) -> None:
        """Record that the run got through ``key``: everything up to it is written."""
        self._append([{"committed": key}])
        self.last_committed = key

    def close(self) -> None:
        os.close(self._fd)


@dataclass
class RestoreResult:
    restored: int = 0
    #: originals the store already held again (a batch saved but never written: a crash, Ctrl-C)
    already: int = 0
    #: (key, reason) for every original not put back
    skipped: list[tuple[str, str]] = field(default_factory=list)


#: Why restore left a row another session held locked past the lock timeout.
_HELD = "held locked by another session past the lock timeout: left as it is; run restore again for it"


def _file_originals(path: Path, batch_size: int) -> Iterator[list[tuple[str, bytes, bytes]]]:
    read_backup(path)  # a header first, or one clear line
    page: list[tuple[str, bytes, bytes]] = []
    for row in _rows(path):
        if "key" not in row:
            continue
        try:
            original, written = _decode(row, "old"), _decode(row, "new")
        except (KeyError, ValueError):
            raise StoreError(f"backup {path}: a record for {row['key']!r} is damaged") from None
        page.append((str(row["key"]), original, written))
        if len(page) >= batch_size:
            yield page
            page = []
    if page:
        yield page


def restore(backup: Path | str, source: Source, *, batch_size: int = 500) -> RestoreResult:
    """Put every original in the backup (a file, or ``table:NAME`` in the source's database) back,
    byte for byte, where the store still holds what the repair wrote; anything else (changed since,
    never written, gone) is skipped and named."""
    text = str(backup)
    originals: Iterable[list[tuple[str, bytes, bytes]]]
    if isinstance(backup, str) and text.startswith(TABLE_PREFIX):
        name = text.removeprefix(TABLE_PREFIX)
        originals = _table_host(source, name).backup_originals(name, batch_size=batch_size)
    else:
        originals = _file_originals(Path(backup), batch_size)
    result = RestoreResult()
    for page in originals:
        pending = [Replacement(key, old=written, new=original) for key, original, written in page]
        outcomes = source.write(pending)
        different = []
        for item, outcome in zip(pending, outcomes, strict=True):
            if outcome is WriteOutcome.WRITTEN:
                result.restored += 1
            elif outcome is WriteOutcome.GONE:
                result.skipped.append((item.key, "gone from the store"))
            elif outcome is WriteOutcome.BUSY:
                result.skipped.append((item.key, _HELD))
            else:
                different.append(item)
        if different:
            # Writing the original over itself succeeds exactly where the store holds it already.
            same = [Replacement(item.key, item.new, item.new) for item in different]
            for item, outcome in zip(different, source.write(same), strict=True):
                if outcome is WriteOutcome.WRITTEN:
                    result.already += 1
                elif outcome is WriteOutcome.BUSY:
                    result.skipped.append((item.key, _HELD))
                else:
                    result.skipped.append((item.key, "changed since the repair wrote it: left as it is"))
    return result

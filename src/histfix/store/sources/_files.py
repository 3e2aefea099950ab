"""File stores: a directory of ``*.json`` histories and a JSONL file of one history per line.

Nothing here follows a symlink or treats a FIFO, socket or device as a file: such entries are
reported (``Stored.error``) and never written. Directory files are replaced one by one, each
atomically (``histfix._atomic_write.write_atomically``); a JSONL file is rewritten whole through a
temporary file and one rename (``histfix._atomic_write.TemporaryFile``: on Linux nameless until
that rename), so a crash leaves the old file or the new one, and no temporary file.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from .._record import KEY_FIELDS
from .._source import Replacement, Stored, StoreError, WriteOutcome
from ._claim import FileClaim

__all__ = ["DirectorySource", "JSONLSource", "jsonl_entry", "read_regular"]


class _NotRegular(OSError):
    """The path is a symlink, FIFO, socket or device, not a regular file."""


def read_regular(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO or device), else OSError.

    Opened without following a symlink and without blocking on a FIFO, then checked on the open
    descriptor, so a path swapped for something else after a check is never read as a file.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _NotRegular(exc.errno, "a symlink: never followed") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular(errno.EINVAL, "not a regular file (FIFO, socket or device)")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class DirectorySource:
    """Every ``*.json`` file below a directory, recursively; the key is the relative POSIX path.

    Keys come in ascending (code point) order, so ``after`` resumes exactly. Symlinks (to files
    or directories) and special files named ``*.json`` are reported, never followed or written.
    """

    rewrites_whole_store = False

    def __init__(self, root: Path) -> None:
        if root.is_symlink():
            raise StoreError(f"{root}: is a symlink; name the directory itself")
        self.root = root
        self.url = str(root)
        self._claim = FileClaim(self.url, root, directory=True)

    def _walk(self, folder: Path, prefix: str, after: str | None) -> Iterator[tuple[str, os.DirEntry[str]]]:
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise StoreError(f"{folder}: cannot list it ({_reason(exc)})") from exc
        # A directory sorts as "name/" so the walk yields keys in plain string order.
        named = []
        for entry in entries:
            is_dir = entry.is_dir(follow_symlinks=False)
            named.append((entry.name + "/" if is_dir else entry.name, is_dir, entry))
        for name, is_dir, entry in sorted(named, key=lambda item: item[0]):
            key = prefix + name
            if is_dir:
                if after is not None and key < after and not after.startswith(key):
                    continue
                yield from self._walk(Path(entry.path), key, after)
            elif entry.name.endswith(".json") and (after is None or key > after):
                yield key, entry

    def keys(self, *, after: str | None = None) -> Iterator[str]:
        """Every key ``read(after=...)`` yields, in order, without reading a file."""
        for key, _ in self._walk(self.root, "", after):
            yield key

    def read_key(self, key: str) -> Stored:
        """The history stored under ``key``, or a Stored with the reason it is none."""
        try:
            return Stored(key, read_regular(self.root / key))
        except _NotRegular as exc:
            return Stored(key, b"", error=f"skipped: {exc.strerror}")
        except OSError as exc:
            return Stored(key, b"", error=f"cannot read it ({_reason(exc)})")

    def read(self, *, after: str | None = None, batch_size: int = 500) -> Iterator[list[Stored]]:
        batch: list[Stored] = []
        for key in self.keys(after=after):
            batch.append(self.read_key(key))
            if len(batch) >= batch_size:
                yield batch
                batch = []
        if batch:
            yield batch

    def count(self, *, after: str | None = None) -> int | None:
        return sum(1 for _ in self.keys(after=after))

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        from histfix._atomic_write import write_atomically

        outcomes = []
        for item in batch:
            path = self.root / item.key
            try:
                current = read_regular(path)
            except FileNotFoundError:
                outcomes.append(WriteOutcome.GONE)
                continue
            except OSError:  # now a symlink, FIFO or unreadable: never written through
                outcomes.append(WriteOutcome.CHANGED_SINCE_READ)
                continue
            if current != item.old:
                outcomes.append(WriteOutcome.CHANGED_SINCE_READ)
                continue
            try:
                write_atomically(path, item.new)
            except OSError as exc:
                raise StoreError(f"{path}: cannot write it ({_reason(exc)})") from exc
            outcomes.append(WriteOutcome.WRITTEN)
        return outcomes

    def claim(self, *, writing: bool) -> None:
        """Take the directory for this run until the source closes (``flock`` on the directory
        itself: nothing is created in it): a writing run alone, reading runs together; StoreError
        in one line, naming the other histfix run's process where Linux tells, if one holds it.
        Without ``fcntl`` (Windows) this does nothing."""
        self._claim.take(writing=writing)

    def close(self) -> None:
        self._claim.release()

    def __enter__(self) -> DirectorySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The JSONL reader's buffer: a line is a whole history (tens of kilobytes), which this reads in
#: one copy where the default 8 KiB buffer gathers it from several reads.
_READ_BUFFER = 1 << 20

#: A key field written first in an envelope line, found without parsing the whole line.
_LEADING_KEY = re.compile(
    rb'\s*\{\s*"(' + b"|".join(f.encode() for f in KEY_FIELDS) + rb')"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)\s*[,}]'
)


def _line_key(line: bytes, number: int) -> str:
    """A JSONL line's key: its envelope's key field, else its 1-based line number."""
    if line.lstrip()[:1] != b"{":
        return str(number)
    found = _LEADING_KEY.match(line)
    if found is not None:
        value = json.loads(found.group(2))
        return str(value)
    try:
        envelope = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read: the record says which
        return str(number)
    if isinstance(envelope, dict):
        for name in KEY_FIELDS:
            value = envelope.get(name)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return str(value)
    return str(number)


def jsonl_entry(body: bytes, number: int) -> Stored | None:
    """Line ``number`` (from 1) of a JSONL store, its newline taken off; None for a blank line.

    The one reading of a JSONL line, shared by the file source and the Dask reader.
    """
    if not body.strip():
        return None
    return Stored(_line_key(body, number), body)


class JSONLSource:
    """A JSONL file, one history per line: a bare message list, or an envelope object with a
    key field (``key``, ``id``, ``conversation_id``, ``session_id``, ``thread_id``) and a messages
    field (``messages``, ``history``, ``message_history``).

    The key is the envelope's key field, else the line number (from 1). Histories come in file
    order; ``after`` resumes after the line with that key. Blank lines are kept and skipped.
    """

    rewrites_whole_store = True

    def __init__(self, path: Path) -> None:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise StoreError(f"{path}: no such file") from None
        except OSError as exc:
            raise StoreError(f"{path}: cannot read it ({_reason(exc)})") from exc
        if stat.S_ISLNK(mode):
            raise StoreError(f"{path}: is a symlink; name the file itself (never written through)")
        if not stat.S_ISREG(mode):
            raise StoreError(f"{path}: not a regular file (a FIFO, socket or device)")
        self.path = path
        self.url = str(path)
        self._claim = FileClaim(self.url, path)

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read it ({_reason(exc)})") from exc
        with os.fdopen(fd, "rb", buffering=_READ_BUFFER) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise StoreError(f"{self.path}: not a regular file")
            yield from enumerate(handle, start=1)

    def read(self, *, after: str | None = None, batch_size: int = 500) -> Iterator[list[Stored]]:
        batch: list[Stored] = []
        skipping = after is not None
        for number, line in self._lines():
            stored = jsonl_entry(line.rstrip(b"\n"), number)
            if stored is None:
                continue
            if skipping:
                skipping = stored.key != after
                continue
            batch.append(stored)
            if len(batch) >= batch_size:
                yield batch
                batch = []
        if skipping:
            raise StoreError(f"{self.path}: no line with key {after!r} to resume after")
        if batch:
            yield batch

    def count(self, *, after: str | None = None) -> int | None:
        if after is not None:
            return None
        return sum(1 for _, line in self._lines() if line.strip())

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        from histfix._atomic_write import TemporaryFile

        wanted = {item.key: item for item in batch}
        done: dict[str, WriteOutcome] = {}
        try:
            before = os.lstat(self.path)
            temporary = TemporaryFile(self.path)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write it ({_reason(exc)})") from exc
        try:
            with os.fdopen(temporary.fd, "wb", closefd=False) as out:
                for number, line in self._lines():
                    body = line.rstrip(b"\n")
                    item = wanted.get(_line_key(body, number)) if body.strip() else None
                    if item is not None and body == item.old:
                        out.write(item.new + line[len(body) :])
                        done[item.key] = WriteOutcome.WRITTEN
                        continue
                    if item is not None and item.key not in done:
                        done[item.key] = WriteOutcome.CHANGED_SINCE_READ
                    out.write(line)
                out.flush()
                os.fsync(out.fileno())
            temporary.set_mode(stat.S_IMODE(before.st_mode))
            after = os.lstat(self.path)
            if (after.st_ino, after.st_size, after.st_mtime_ns) != (
                before.st_ino,
                before.st_size,
                before.st_mtime_ns,
            ):
                # Someone wrote the file while it was copied: everything is left as they wrote it.
                temporary.discard()
                return [WriteOutcome.CHANGED_SINCE_READ for _ in batch]
            temporary.replace()
        except BaseException as exc:
            temporary.discard()
            if isinstance(exc, OSError):
                raise StoreError(f"{self.path}: cannot write it ({_reason(exc)})") from exc
            raise
        self._claim.move_to(self.path)  # the claim was on the old file, no longer the store's
        return [done.get(item.key, WriteOutcome.GONE) for item in batch]

    def claim(self, *, writing: bool) -> None:
        """Take the file for this run until the source closes (``flock`` on the file itself:
        nothing is created beside it), kept across each rewrite's replace: a writing run alone,
        reading runs together; StoreError in one line, naming the other histfix run's process
        where Linux tells, if one holds it. Without ``fcntl`` (Windows) this does nothing."""
        self._claim.take(writing=writing)

    def close(self) -> None:
        self._claim.release()

    def __enter__(self) -> JSONLSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

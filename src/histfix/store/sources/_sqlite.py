"""An SQLite table of histories: ``sqlite:///path.db?table=T&key=K&column=C``.

Three slashes and a relative path, four for an absolute one (``sqlite:////data/app.db``). The
column may hold TEXT or BLOB; values are read as their exact bytes (``CAST(c AS BLOB)``), so
invalid UTF-8 is reported rather than replaced, and written back as the type they had. Each batch
is one transaction whose UPDATE compares the stored bytes in its WHERE clause. A backup table
(``--backup table:NAME``, :class:`SQLiteBackupTable`) lives in the same file and is written in
that same transaction.

SQLite locks the whole file, not rows: a statement that finds it locked by another connection
tries again for up to ``lock_timeout`` seconds, then the run stops with one line saying so. The
wait is taken in short slices, so Ctrl-C and SIGTERM stop it at once (a signal handler does not
run while SQLite itself waits).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ..._oneline import first_line
from .._backup import batch_rows, still_busy
from .._source import (
    DEFAULT_LOCK_TIMEOUT,
    Replacement,
    Stored,
    StoreError,
    TableSpec,
    WriteOutcome,
)
from ._claim import FileClaim

__all__ = ["SQLiteBackupTable", "SQLiteSource"]

_T = TypeVar("_T")

#: Seconds SQLite itself waits for a lock before it hands back to Python (which then tries again
#: until the lock timeout): how soon a signal is seen while the file is locked.
BUSY_SLICE = 0.1
#: SQLITE_BUSY, the primary result code of "database is locked" (extended codes add high bits).
_SQLITE_BUSY = 5


#: A backup table (``--backup table:NAME``): ``seq`` orders its rows; ``kind`` is 'source' (``key``
#: names the store), 'original' (``old`` the bytes read, ``new`` the bytes written), 'committed',
#: 'busy' or 'retried' (the PostgreSQL backup table's kinds: SQLite locks files, not rows).
BACKUP_COLUMNS = "seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, key TEXT, old BLOB, new BLOB"
#: What an existing backup table must look like: each column's name and declared type, in order.
BACKUP_SHAPE = [("seq", "INTEGER"), ("kind", "TEXT"), ("key", "TEXT"), ("old", "BLOB"), ("new", "BLOB")]


def _quote(name: str) -> str:
    return ".".join(f'"{part}"' for part in name.split("."))


def _table_info_sql(name: str) -> str:
    """``PRAGMA table_info`` for ``table`` or ``schema.table``: SQLite takes the schema before the
    pragma's name (``PRAGMA "s".table_info("t")``), not inside its argument."""
    schema, _, table = name.rpartition(".")
    prefix = f'"{schema}".' if schema else ""
    return f'PRAGMA {prefix}table_info("{table}")'


def _split_points_sql(table: str, key: str) -> str:
    """The last key of each of ``?`` equal tiles of the keys in order, but the last tile's (SQL both
    SQLite and PostgreSQL run; ``table`` and ``key`` quoted, the tile count a parameter)."""
    return (
        f"SELECT {key} FROM (SELECT {key}, tile, lead(tile) OVER (ORDER BY {key}) AS next_tile FROM "
        f"(SELECT {key}, ntile(?) OVER (ORDER BY {key}) AS tile FROM {table} WHERE {key} IS NOT NULL) "
        f"AS tiles) AS ends WHERE next_tile <> tile ORDER BY {key}"
    )


def _busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite refused because another connection holds the file locked."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 and later
    if code is not None:
        return int(code) & 0xFF == _SQLITE_BUSY
    return str(exc).startswith("database is locked")


class SQLiteSource:
    """One SQLite table's histories (see the module docstring); ``lock_timeout`` is how many
    seconds a statement waits for a file another connection holds locked."""

    rewrites_whole_store = False

    def __init__(self, spec: TableSpec, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.url = spec.masked
        self.lock_timeout = lock_timeout
        # sqlite:///rel.db -> "/rel.db" (relative), sqlite:////abs.db -> "//abs.db" (absolute)
        path = spec.connect.split("?", 1)[0].removeprefix("sqlite://")
        self.path = Path(path.removeprefix("/"))
        if not self.path.is_file():
            raise StoreError(f"{self.url}: no SQLite file at {self.path}")
        # opened before SQLite's own descriptors and closed after them: see FileClaim
        self._claim = FileClaim(self.url, self.path, follow=True, open_now=True)
        try:
            self._open(spec)
        except BaseException:
            if hasattr(self, "_db"):
                self._db.close()
            self._claim.release()
            raise

    def _open(self, spec: TableSpec) -> None:
        try:
            # mode=rw: never create a database by mistake; a write-protected file opens read-only
            self._db = sqlite3.connect(
                f"file:{quote(str(self.path))}?mode=rw",
                uri=True,
                isolation_level=None,
                timeout=BUSY_SLICE,
            )
            info = self._execute(_table_info_sql(spec.table)).fetchall()
            columns = {row[1]: str(row[2]).upper() for row in info}
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot open it ({first_line(exc)})") from exc
        if not columns:
            raise StoreError(f"{self.url}: no table {spec.table!r}")
        for what, name in (("key column", spec.key), ("column", spec.column)):
            if name not in columns:
                raise StoreError(f"{self.url}: table {spec.table!r} has no {what} {name!r}")
        # Keys travel as text; an INTEGER key column compares them as numbers again.
        self._integer_keys = "INT" in columns[spec.key]
        self._key_name = _quote(spec.key)
        table, key, column = _quote(spec.table), _quote(spec.key), _quote(spec.column)
        self._select = (
            f"SELECT {key}, typeof({column}), CAST({column} AS BLOB) FROM {table} "
            f"WHERE {key} IS NOT NULL{{after}}{{upto}} ORDER BY {key} LIMIT ?"
        )
        self._split_points = _split_points_sql(table, key)
        self._count = f"SELECT count(*) FROM {table} WHERE {key} IS NOT NULL{{after}}"
        self._null_keys = f"SELECT count(*) FROM {table} WHERE {key} IS NULL"
        self._update = (
            f"UPDATE {table} SET {column} = CASE WHEN typeof({column}) = 'text' THEN CAST(? AS TEXT) "
            f"ELSE ? END WHERE {key} = ? AND CAST({column} AS BLOB) = ?"
        )
        self._exists = f"SELECT 1 FROM {table} WHERE {key} = ?"

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement, trying again while another connection holds the file locked, up to
        the lock timeout; then a StoreError saying so. Between tries, Python runs its signal
        handlers (Ctrl-C, SIGTERM), which it cannot while SQLite waits."""
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                return self._db.execute(statement, params)
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{self.url}: the database is locked: another connection has held it for over "
                        f"{self.lock_timeout:g} s (the lock timeout)"
                    ) from None

    def _key(self, text: str) -> str | int:
        return int(text) if self._integer_keys else text

    def _page(
        self, last: str | int | None, upto: str | int | None, size: int
    ) -> list[tuple[object, str, bytes | None]]:
        after = "" if last is None else f" AND {self._key_name} > ?"
        through = "" if upto is None else f" AND {self._key_name} <= ?"
        params = [value for value in (last, upto) if value is not None]
        return self._execute(self._select.format(after=after, upto=through), (*params, size)).fetchall()

    def read(
        self, *, after: str | None = None, upto: str | None = None, batch_size: int = 500
    ) -> Iterator[list[Stored]]:
        """Rows with a key after ``after`` and up to ``upto`` (inclusive), in key order."""
        # Keyset pages: no read transaction stays open between batches, so writers are never blocked.
        last: str | int | None = self._key(after) if after is not None else None
        through = self._key(upto) if upto is not None else None
        while True:
            try:
                rows = self._page(last, through, batch_size)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.url}: cannot read it ({first_line(exc)})") from exc
            if not rows:
                return
            batch = []
            for key, kind, raw in rows:
                if kind == "null" or raw is None:
                    batch.append(Stored(str(key), b"", error="NULL value: not a history"))
                else:
                    batch.append(Stored(str(key), bytes(raw)))
            last = rows[-1][0]  # type: ignore[assignment]
            yield batch

    def split_points(self, parts: int) -> list[str]:
        """Up to ``parts - 1`` keys that cut the table into ``parts`` key ranges of nearly equal
        row counts (``read(after=a, upto=b)`` between neighbours), from one pass over the keys."""
        try:
            rows = self._execute(self._split_points, (parts,)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot read it ({first_line(exc)})") from exc
        return [str(row[0]) for row in rows]

    def count(self, *, after: str | None = None) -> int | None:
        try:
            if after is None:
                row = self._execute(self._count.format(after="")).fetchone()
            else:
                query = self._count.format(after=f" AND {self._key_name} > ?")
                row = self._execute(query, (self._key(after),)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot read it ({first_line(exc)})") from exc
        return int(row[0])

    def _write_rows(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        """The batch's compare-and-swap UPDATEs, inside a transaction the caller holds."""
        outcomes = []
        for item in batch:
            key = self._key(item.key)
            cursor = self._execute(self._update, (item.new, item.new, key, item.old))
            if cursor.rowcount == 1:
                outcomes.append(WriteOutcome.WRITTEN)
            elif self._execute(self._exists, (key,)).fetchone() is None:
                outcomes.append(WriteOutcome.GONE)
            else:
                outcomes.append(WriteOutcome.CHANGED_SINCE_READ)
        return outcomes

    def transaction(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` in one write transaction: committed whole, or rolled back whole."""
        try:
            self._execute("BEGIN IMMEDIATE")  # the write lock first: nothing is done, then refused
            try:
                done = body()
                self._execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot write it ({first_line(exc)})") from exc
        return done

    def null_keys(self) -> int:
        """How many rows have a NULL key: never read, since each row is found and written by its key."""
        try:
            return int(self._execute(self._null_keys).fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot read it ({first_line(exc)})") from exc

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        return self.transaction(lambda: self._write_rows(batch))

    def open_backup_table(self, name: str, *, resume: bool) -> SQLiteBackupTable:
        """A backup table ``name`` in this database (``--backup table:NAME``), created unless ``resume``."""
        return SQLiteBackupTable(self, name, resume=resume)

    def backup_originals(self, name: str, *, batch_size: int) -> Iterator[list[tuple[str, bytes, bytes]]]:
        """(key, original, written) from backup table ``name``, in the order they were saved."""
        table = _quote(name)
        self._check_backup_table(name, must_exist=True)
        query = (
            f"SELECT seq, key, old, new FROM {table} WHERE kind = 'original' AND seq > ? ORDER BY seq LIMIT ?"
        )
        last = 0
        while True:
            try:
                rows = self._execute(query, (last, batch_size)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(
                    f"{self.url}: cannot read backup table {name!r} ({first_line(exc)})"
                ) from exc
            if not rows:
                return
            yield [(str(key), bytes(old), bytes(new)) for _, key, old, new in rows]
            last = rows[-1][0]

    def _check_backup_table(self, name: str, *, must_exist: bool) -> bool:
        """Whether backup table ``name`` exists; StoreError if it has another shape (or is missing
        when ``must_exist``)."""
        try:
            info = self._execute(_table_info_sql(name)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot read backup table {name!r} ({first_line(exc)})") from exc
        if not info:
            if must_exist:
                raise StoreError(f"{self.url}: no backup table {name!r}")
            return False
        shape = [(row[1], str(row[2]).upper()) for row in info]
        if shape != BACKUP_SHAPE:
            have = ", ".join(f"{column} {kind}" for column, kind in shape)
            raise StoreError(
                f"{self.url}: table {name!r} is not a histfix backup table (it has {have}); "
                "name another table"
            )
        return True

    def claim(self, *, writing: bool) -> None:
        """Take the database file for this run until the source closes (``flock`` on the file
        itself, which SQLite's own locks ignore: nothing is created beside it): a writing run
        alone, reading runs together; StoreError in one line, naming the other histfix run's
        process where Linux tells, if one holds it. Without ``fcntl`` (Windows) this does nothing."""
        self._claim.take(writing=writing)

    def close(self) -> None:
        self._db.close()
        self._claim.release()  # after SQLite's own descriptors: see FileClaim

    def __enter__(self) -> SQLiteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SQLiteBackupTable:
    """``--backup table:NAME`` in the source's own SQLite file: a row per original (``kind``
    'original': key, original bytes, bytes written), a 'source' row naming the store and a
    'committed' row per batch, each batch's rows in the same transaction as its writes."""

    def __init__(self, source: SQLiteSource, name: str, *, resume: bool) -> None:
        self._source, self.name = source, name
        self._table = _quote(name)
        self.last_committed: str | None = None
        self.busy: list[str] = []
        exists = source._check_backup_table(name, must_exist=resume)
        try:
            if resume:
                self._resume()
            elif exists:
                raise StoreError(
                    f"{source.url}: backup table {name!r} already exists; --resume continues that run, "
                    "or name a new backup"
                )
            else:

                def create() -> None:
                    source._execute(f"CREATE TABLE {self._table} ({BACKUP_COLUMNS})")
                    self._insert("source", source.url)

                source.transaction(create)
        except sqlite3.Error as exc:
            raise StoreError(f"{source.url}: cannot use backup table {name!r} ({first_line(exc)})") from exc

    def _resume(self) -> None:
        run = self._source._execute
        header = run(f"SELECT key FROM {self._table} WHERE kind = 'source' ORDER BY seq LIMIT 1").fetchone()
        if header is None:
            raise StoreError(
                f"{self._source.url}: backup table {self.name!r} names no source (not a histfix backup)"
            )
        if header[0] != self._source.url:
            raise StoreError(f"backup table {self.name!r}: made from {header[0]}, not {self._source.url}")
        last = run(
            f"SELECT key FROM {self._table} WHERE kind = 'committed' ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        self.last_committed = None if last is None else str(last[0])
        marks = run(f"SELECT kind, key FROM {self._table} WHERE kind IN ('busy', 'retried') ORDER BY seq")
        self.busy = still_busy((str(kind), str(key)) for kind, key in marks.fetchall())

    def _insert(self, kind: str, key: str, old: bytes | None = None, new: bytes | None = None) -> None:
        self._source._execute(
            f"INSERT INTO {self._table} (kind, key, old, new) VALUES (?, ?, ?, ?)", (kind, key, old, new)
        )

    def write(
        self,
        source: object,
        batch: Sequence[Replacement],
        last_key: str | None,
        *,
        retried: Sequence[str] = (),
    ) -> list[WriteOutcome]:
        """The batch, the originals of what it wrote, the keys it retried and ``last_key``: one
        transaction."""
        if source is not self._source:
            raise ValueError("a backup table backs up the source it was opened from")

        def body() -> list[WriteOutcome]:
            outcomes = self._source._write_rows(batch)
            for row in batch_rows(batch, outcomes, last_key, retried):
                self._insert(*row)
            return outcomes

        outcomes = self._source.transaction(body)
        if last_key is not None:
            self.last_committed = last_key
        return outcomes

    def commit(self, key: str) -> None:
        self._source.transaction(lambda: self._insert("committed", key))
        self.last_committed = key

    def close(self) -> None:
        """Nothing to close: the table lives on the source's connection."""

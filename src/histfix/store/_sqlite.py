"""An SQLite table of histories: ``sqlite:///path.db?table=T&key=K&column=C``.

Three slashes and a relative path, four for an absolute one (``sqlite:////data/app.db``). The
column may hold TEXT or BLOB; values are read as their exact bytes (``CAST(c AS BLOB)``), so
invalid UTF-8 is reported rather than replaced, and written back as the type they had. Each batch
is one transaction whose UPDATE compares the stored bytes in its WHERE clause.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from ._source import Replacement, Stored, StoreError, TableSpec, WriteOutcome

__all__ = ["SQLiteSource"]

#: How long a write waits for another connection's lock before the batch fails (seconds).
BUSY_TIMEOUT = 30.0


def _quote(name: str) -> str:
    return ".".join(f'"{part}"' for part in name.split("."))


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class SQLiteSource:
    rewrites_whole_store = False

    def __init__(self, spec: TableSpec) -> None:
        self.url = spec.masked
        # sqlite:///rel.db -> "/rel.db" (relative), sqlite:////abs.db -> "//abs.db" (absolute)
        path = spec.connect.split("?", 1)[0].removeprefix("sqlite://")
        self.path = Path(path.removeprefix("/"))
        if not self.path.is_file():
            raise StoreError(f"{self.url}: no SQLite file at {self.path}")
        try:
            # mode=rw: never create a database by mistake; a write-protected file opens read-only
            self._db = sqlite3.connect(
                f"file:{quote(str(self.path))}?mode=rw",
                uri=True,
                isolation_level=None,
                timeout=BUSY_TIMEOUT,
            )
            info = self._db.execute(f"PRAGMA table_info({_quote(spec.table)})").fetchall()
            columns = {row[1]: str(row[2]).upper() for row in info}
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot open it ({_one_line(exc)})") from exc
        if not columns:
            raise StoreError(f"{self.url}: no table {spec.table!r}")
        for what, name in (("key", spec.key), ("column", spec.column)):
            if name not in columns:
                raise StoreError(f"{self.url}: table {spec.table!r} has no {what} column {name!r}")
        # Keys travel as text; an INTEGER key column compares them as numbers again.
        self._integer_keys = "INT" in columns[spec.key]
        self._key_name = _quote(spec.key)
        table, key, column = _quote(spec.table), _quote(spec.key), _quote(spec.column)
        self._select = (
            f"SELECT {key}, typeof({column}), CAST({column} AS BLOB) FROM {table} "
            f"WHERE {key} IS NOT NULL{{after}} ORDER BY {key} LIMIT ?"
        )
        self._count = f"SELECT count(*) FROM {table} WHERE {key} IS NOT NULL{{after}}"
        self._update = (
            f"UPDATE {table} SET {column} = CASE WHEN typeof({column}) = 'text' THEN CAST(? AS TEXT) "
            f"ELSE ? END WHERE {key} = ? AND CAST({column} AS BLOB) = ?"
        )
        self._exists = f"SELECT 1 FROM {table} WHERE {key} = ?"

    def _key(self, text: str) -> str | int:
        return int(text) if self._integer_keys else text

    def _page(self, last: str | int | None, size: int) -> list[tuple[object, str, bytes | None]]:
        if last is None:
            return self._db.execute(self._select.format(after=""), (size,)).fetchall()
        query = self._select.format(after=f" AND {self._key_name} > ?")
        return self._db.execute(query, (last, size)).fetchall()

    def read(self, *, after: str | None = None, batch_size: int = 500) -> Iterator[list[Stored]]:
        # Keyset pages: no read transaction stays open between batches, so writers are never blocked.
        last: str | int | None = self._key(after) if after is not None else None
        while True:
            try:
                rows = self._page(last, batch_size)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.url}: cannot read it ({_one_line(exc)})") from exc
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

    def count(self, *, after: str | None = None) -> int | None:
        try:
            if after is None:
                row = self._db.execute(self._count.format(after="")).fetchone()
            else:
                query = self._count.format(after=f" AND {self._key_name} > ?")
                row = self._db.execute(query, (self._key(after),)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot read it ({_one_line(exc)})") from exc
        return int(row[0])

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        outcomes = []
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for item in batch:
                    key = self._key(item.key)
                    cursor = self._db.execute(self._update, (item.new, item.new, key, item.old))
                    if cursor.rowcount == 1:
                        outcomes.append(WriteOutcome.WRITTEN)
                    elif self._db.execute(self._exists, (key,)).fetchone() is None:
                        outcomes.append(WriteOutcome.GONE)
                    else:
                        outcomes.append(WriteOutcome.CHANGED_SINCE_READ)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"{self.url}: cannot write it ({_one_line(exc)})") from exc
        return outcomes

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SQLiteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Two small SQL backends of pydantic-ai's ``ConversationStore`` (2.66.0 on), for the store tests.

Each implements the five primitives and nothing more (``read_history`` is the ABC's walk over
``read_entry``), keeps a record and its new entries in one transaction, and checks the revision in
the one statement that writes the record: ``UPDATE ... WHERE conversation_id = ? AND revision = ?``
(an ``INSERT`` that a primary key refuses when none is expected), which also requires the head to be
an entry the store has. ``delete_record`` keeps the entries.

``py:conversation_backends:sqlite_store`` and ``py:conversation_backends:postgres_store`` are the
command line's names for them: factories reading the database from ``CONVERSATION_DB`` and the
table prefix from ``CONVERSATION_TABLES``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

RECORD = TypeAdapter(ConversationRecord)
ENTRY = TypeAdapter(ConversationEntry)


def _record(data: bytes | str) -> ConversationRecord:
    return RECORD.validate_json(data)


class SQLiteConversationStore(ConversationStore):
    """A ConversationStore in an SQLite file: ``records`` and ``entries`` tables, one connection."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        # A commit survives the process being killed; only a power cut could lose the last ones.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS records (conversation_id TEXT PRIMARY KEY, revision TEXT NOT NULL,"
            " scope TEXT, updated_at TEXT NOT NULL, record TEXT NOT NULL)"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, entry TEXT NOT NULL)")

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        row = self.db.execute(
            "SELECT record FROM records WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        return None if row is None else _record(row[0])

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        rows = self.db.execute(
            "SELECT record FROM records WHERE ? IS NULL OR scope = ? ORDER BY updated_at DESC LIMIT ?",
            (scope, scope, -1 if limit is None else limit),
        )
        return [_record(row[0]) for row in rows]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        # Serialized before the transaction: another writer waits only for the statements.
        entries = [(entry.id, ENTRY.dump_json(entry).decode()) for entry in new_entries]
        values = (
            record.revision,
            record.scope,
            record.updated_at.isoformat(),
            RECORD.dump_json(record).decode(),
        )
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("INSERT INTO entries (id, entry) VALUES (?, ?)", entries)
            head_known = "(? IS NULL OR EXISTS (SELECT 1 FROM entries WHERE id = ?))"
            if expected_revision is None:
                written = self.db.execute(
                    "INSERT INTO records (conversation_id, revision, scope, updated_at, record)"
                    f" SELECT ?, ?, ?, ?, ? WHERE {head_known} ON CONFLICT DO NOTHING",
                    (record.conversation_id, *values, record.head_id, record.head_id),
                )
            else:
                written = self.db.execute(
                    "UPDATE records SET revision = ?, scope = ?, updated_at = ?, record = ?"
                    f" WHERE conversation_id = ? AND revision = ? AND {head_known}",
                    (*values, record.conversation_id, expected_revision, record.head_id, record.head_id),
                )
            if written.rowcount != 1:
                raise ConversationConflict(record.conversation_id)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        deleted = self.db.execute(
            "DELETE FROM records WHERE conversation_id = ? AND revision = ?",
            (conversation_id, expected_revision),
        )
        if deleted.rowcount != 1:
            raise ConversationConflict(conversation_id)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        row = self.db.execute("SELECT entry FROM entries WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise KeyError(entry_id)
        return ENTRY.validate_json(row[0])

    def close(self) -> None:
        self.db.close()


class PostgresConversationStore(ConversationStore):
    """A ConversationStore in two PostgreSQL tables, on one async psycopg connection."""

    def __init__(self, connection: Any, prefix: str) -> None:
        self.db = connection
        self.records = f"{prefix}_records"
        self.entries = f"{prefix}_entries"

    @classmethod
    async def connect(cls, conninfo: str, prefix: str) -> PostgresConversationStore:
        import psycopg

        connection = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        store = cls(connection, prefix)
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {store.records} (conversation_id text PRIMARY KEY,"
            " revision text NOT NULL, scope text, updated_at timestamptz NOT NULL, record jsonb NOT NULL)"
        )
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {store.entries} (id text PRIMARY KEY, entry jsonb NOT NULL)"
        )
        return store

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        cursor = await self.db.execute(
            f"SELECT record::text FROM {self.records} WHERE conversation_id = %s", (conversation_id,)
        )
        row = await cursor.fetchone()
        return None if row is None else _record(row[0])

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        cursor = await self.db.execute(
            f"SELECT record::text FROM {self.records} WHERE %s::text IS NULL OR scope = %s"
            " ORDER BY updated_at DESC LIMIT %s",
            (scope, scope, limit),
        )
        return [_record(row[0]) for row in await cursor.fetchall()]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        values = (record.revision, record.scope, record.updated_at, RECORD.dump_json(record).decode())
        head_known = f"(%s::text IS NULL OR EXISTS (SELECT 1 FROM {self.entries} WHERE id = %s))"
        async with self.db.transaction():
            async with self.db.cursor() as cursor:
                await cursor.executemany(
                    f"INSERT INTO {self.entries} (id, entry) VALUES (%s, %s)",
                    [(entry.id, ENTRY.dump_json(entry).decode()) for entry in new_entries],
                )
            if expected_revision is None:
                written = await self.db.execute(
                    f"INSERT INTO {self.records} (conversation_id, revision, scope, updated_at, record)"
                    f" SELECT %s, %s, %s, %s, %s WHERE {head_known} ON CONFLICT DO NOTHING",
                    (record.conversation_id, *values, record.head_id, record.head_id),
                )
            else:
                written = await self.db.execute(
                    f"UPDATE {self.records} SET revision = %s, scope = %s, updated_at = %s, record = %s"
                    f" WHERE conversation_id = %s AND revision = %s AND {head_known}",
                    (*values, record.conversation_id, expected_revision, record.head_id, record.head_id),
                )
            if written.rowcount != 1:
                raise ConversationConflict(record.conversation_id)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        deleted = await self.db.execute(
            f"DELETE FROM {self.records} WHERE conversation_id = %s AND revision = %s",
            (conversation_id, expected_revision),
        )
        if deleted.rowcount != 1:
            raise ConversationConflict(conversation_id)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        cursor = await self.db.execute(f"SELECT entry::text FROM {self.entries} WHERE id = %s", (entry_id,))
        row = await cursor.fetchone()
        if row is None:
            raise KeyError(entry_id)
        return ENTRY.validate_json(row[0])

    async def close(self) -> None:
        await self.db.close()


def sqlite_store() -> SQLiteConversationStore:
    """``py:conversation_backends:sqlite_store``: the store in the file ``CONVERSATION_DB`` names."""
    return SQLiteConversationStore(os.environ["CONVERSATION_DB"])


async def postgres_store() -> PostgresConversationStore:
    """``py:conversation_backends:postgres_store``: the store at ``CONVERSATION_DB`` (a conninfo),
    in the tables prefixed ``CONVERSATION_TABLES``; made in the loop that will use its connection."""
    return await PostgresConversationStore.connect(
        os.environ["CONVERSATION_DB"], os.environ["CONVERSATION_TABLES"]
    )

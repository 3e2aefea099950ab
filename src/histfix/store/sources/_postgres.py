"""A PostgreSQL table of histories through psycopg 3 (``pip install 'histfix[postgres]'``).

``postgresql://user:pw@host:port/db?table=T&key=K&column=C`` (also ``postgres://``; any other
query parameter, such as ``sslmode``, goes to libpq). The column may be ``json``, ``jsonb``,
``text`` (or ``varchar``) or ``bytea``; its type is read from the catalog. Names are matched as the
catalog spells them (an unquoted ``CREATE TABLE`` folds them to lower case); the table is found
on the ``search_path`` unless written ``schema.table``. The key column must carry a unique index
of its own (a primary key, typically): rows are addressed by it, and the scan pages through that
index (``WHERE key > last ORDER BY key LIMIT n``), so a table of any size streams in constant
memory and no transaction stays open between batches.

What is read, per column type, is the value's bytes exactly as the server stores or prints them:
``bytea`` as is, ``text`` in UTF-8, ``json`` as the text the application wrote (``json`` keeps it
verbatim), ``jsonb`` as the server's text form of the value. ``jsonb`` never kept the text it was
given (it sorts keys, drops duplicate keys and whitespace), so for ``jsonb`` "byte for byte" means
that text form: a restore gives back a value whose text form is, byte for byte, the one read
before the repair.

Each ``write`` batch is one transaction of ``UPDATE ... WHERE key = %s AND <stored value is still
what was read>`` (rows another session holds locked past the session's ``lock_timeout`` are left
out and reported busy, the rest written): for ``bytea``, ``text`` and ``json`` a SHA-256 of the stored bytes against the
hash of what was read (32 bytes back to the server instead of the whole history); for ``jsonb``
the text form of the stored value against the text form the server gives what was read, since
the server normalises what histfix writes (so a later restore can name the value histfix wrote
and still match it). A backup table (``--backup table:NAME``, :class:`PostgresBackupTable`) lives
in the same database and gets each batch's originals in the batch's own transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..._oneline import first_line, squeezed
from .._backup import batch_rows, still_busy
from .._source import DEFAULT_LOCK_TIMEOUT, Replacement, Stored, StoreError, TableSpec, WriteOutcome
from ._claim import another_run

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["PostgresBackupTable", "PostgresSource", "open_postgres"]

_T = TypeVar("_T")

#: Seconds to wait for the server to answer a connection (libpq waits forever by default); a
#: ``connect_timeout`` in the URL wins.
CONNECT_TIMEOUT = 10


#: What the session asks of the server, where the server has the setting and nothing already asks
#: for less (milliseconds): a transaction left idle (its client stuck, or gone without the server
#: noticing) is ended and its locks released; a statement whose client has gone is cancelled
#: rather than left waiting on a lock (PostgreSQL 14 and later).
SESSION_LIMITS = {"idle_in_transaction_session_timeout": 30_000, "client_connection_check_interval": 1_000}

#: The first half of the advisory lock key a run takes on a table (the table's oid is the second):
#: 'hfx1', so that histfix's locks are told apart from an application's own.
RUN_LOCK_SPACE = 0x68667831

#: A backup table (``--backup table:NAME``): ``seq`` orders its rows; ``kind`` is 'source' (``key``
#: names the store), 'original' (``old`` the bytes read, ``new`` the bytes written), 'committed',
#: 'busy' (``key`` a row held locked past the lock timeout) or 'retried' (``key`` tried again).
BACKUP_COLUMNS = (
    "seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind text NOT NULL, key text, old bytea, new bytea"
)
#: What an existing backup table must look like: each column's name and type, in order.
BACKUP_SHAPE = [("seq", "bigint"), ("kind", "text"), ("key", "text"), ("old", "bytea"), ("new", "bytea")]


def _sha256(raw: bytes) -> bytes:
    return hashlib.sha256(raw).digest()


def _same(raw: bytes) -> bytes:
    return raw


@dataclass(frozen=True, slots=True)
class _ColumnKind:
    """How one column type is read as bytes, written from bytes, and compared with what was read.

    Templates name the column ``{col}`` and take the bytes as a ``bytea`` parameter ``%s``.
    """

    #: the stored value as ``bytea``: exactly the bytes ``read`` hands out
    read: str
    #: the column's new value from the new bytes
    write: str
    #: true when the stored value still equals the bytes read (the parameter: ``expected(old)``)
    unchanged: str
    expected: Callable[[bytes], bytes]


_TEXT_BYTES = "convert_to({col}::text, 'UTF8')"
_KINDS = {
    "bytea": _ColumnKind("{col}", "%s", "sha256({col}) = %s", _sha256),
    "text": _ColumnKind(_TEXT_BYTES, "convert_from(%s, 'UTF8')", f"sha256({_TEXT_BYTES}) = %s", _sha256),
    "json": _ColumnKind(
        _TEXT_BYTES, "convert_from(%s, 'UTF8')::json", f"sha256({_TEXT_BYTES}) = %s", _sha256
    ),
    "jsonb": _ColumnKind(
        _TEXT_BYTES,
        "convert_from(%s, 'UTF8')::jsonb",
        "{col}::text = convert_from(%s, 'UTF8')::jsonb::text",
        _same,
    ),
}
_KINDS["character varying"] = _KINDS["text"]
#: What the error for another column type lists.
SUPPORTED = "json, jsonb, text, varchar or bytea"


def _one_line(error: BaseException) -> str:
    """A psycopg error as one line: libpq's messages span lines (and repeat per address tried)."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None)
    if primary:
        return squeezed(str(primary))
    lines = [squeezed(line) for line in str(error).splitlines()]
    return "; ".join(line for line in lines if line) or first_line(error)


@dataclass(frozen=True, slots=True)
class _Table:
    """The table, key and column as found in the catalog."""

    oid: int
    name: sql.Composable
    key: sql.Identifier
    key_type: str
    column: sql.Identifier
    column_name: str
    kind: _ColumnKind


def _find_table(conn: psycopg.Connection[Any], spec: TableSpec, url: str) -> _Table:
    schema, _, table = spec.table.rpartition(".")
    found = conn.execute(
        "SELECT c.oid, n.nspname, c.relname, c.relkind FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = %(table)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
        "AND (n.nspname = %(schema)s OR (%(schema)s = '' AND pg_table_is_visible(c.oid)))",
        {"table": table, "schema": schema},
    ).fetchone()
    if found is None:
        raise StoreError(f"{url}: no table {spec.table!r} in database {conn.info.dbname!r}")
    oid, nspname, relname, relkind = found
    if relkind not in ("r", "p"):
        what = {"v": "a view", "m": "a materialized view", "f": "a foreign table"}[relkind]
        raise StoreError(f"{url}: {spec.table!r} is {what}, not a table histfix can update")
    columns = {
        name: (attnum, type_name, base_type)
        for name, attnum, type_name, base_type in conn.execute(
            "SELECT a.attname, a.attnum, format_type(a.atttypid, a.atttypmod), "
            "format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END, NULL) "
            "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped",
            (oid,),
        ).fetchall()
    }
    for what, name in (("key column", spec.key), ("column", spec.column)):
        if name not in columns:
            raise StoreError(
                f"{url}: table {spec.table!r} has no {what} {name!r} (it has {', '.join(columns)})"
            )
    key_attnum, key_type, _ = columns[spec.key]
    _, column_type, base_type = columns[spec.column]
    kind = _KINDS.get(base_type)
    if kind is None:
        raise StoreError(f"{url}: column {spec.column!r} is {column_type}; histfix reads {SUPPORTED}")
    unique = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_index WHERE indrelid = %s AND indisunique "
        "AND indnkeyatts = 1 AND indkey[0] = %s AND indpred IS NULL)",
        (oid, key_attnum),
    ).fetchone()
    # Rows are addressed by the key (an UPDATE must reach one row) and paged in its order.
    if not (unique and unique[0]):
        raise StoreError(
            f"{url}: key column {spec.key!r} has no unique index of its own (a primary key, say): "
            "histfix addresses each row by it"
        )
    return _Table(
        oid=int(oid),
        name=sql.Identifier(nspname, relname),
        key=sql.Identifier(spec.key),
        key_type=key_type,
        column=sql.Identifier(spec.column),
        column_name=spec.column,
        kind=kind,
    )


def _limit_session(conn: psycopg.Connection[Any], lock_timeout: float) -> None:
    """Bound every wait of the session: its lock waits (``lock_timeout``), and SESSION_LIMITS."""
    wanted = {**SESSION_LIMITS, "lock_timeout": max(1, round(lock_timeout * 1000))}
    for name, limit in wanted.items():
        # Only where the server has the setting and nothing asks for less (0 is none at all).
        forced = name == "lock_timeout"
        with contextlib.suppress(psycopg.Error):  # a server that refuses one: the others still hold
            conn.execute(
                "SELECT set_config(name, %s, false) FROM pg_settings WHERE name = %s "
                "AND (%s OR setting::bigint = 0 OR setting::bigint > %s)",
                (f"{limit}ms", name, forced, limit),
            )


class PostgresSource:
    """One table's histories: keys in index order, values as bytes (see the module docstring).

    ``lock_timeout`` (seconds) bounds how long any statement waits for a lock another session
    holds; a row a write cannot lock within it is left alone and reported :attr:`WriteOutcome.BUSY`.
    """

    rewrites_whole_store = False

    def __init__(self, spec: TableSpec, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.url = spec.masked
        self.lock_timeout = lock_timeout
        settings = conninfo_to_dict(spec.connect)
        settings.setdefault("connect_timeout", CONNECT_TIMEOUT)
        settings.setdefault("application_name", "histfix")
        try:
            # Autocommit: each page is a statement of its own, and each write batch an explicit
            # transaction, so nothing holds a snapshot or a lock between batches.
            self._conn = psycopg.connect(make_conninfo("", **settings), autocommit=True)
        except psycopg.Error as error:
            raise StoreError(f"{self.url}: cannot connect: {_one_line(error)}") from None
        try:
            _limit_session(self._conn, lock_timeout)
            self._table = _find_table(self._conn, spec, self.url)
        except psycopg.Error as error:
            self._conn.close()
            raise StoreError(f"{self.url}: cannot read the catalog: {_one_line(error)}") from None
        except BaseException:
            self._conn.close()
            raise
        self._statements = self._build_statements()
        self._claimed = False

    def _build_statements(self) -> dict[str, sql.Composed]:
        table = self._table
        kind = table.kind
        names = {"table": table.name, "key": table.key, "col": table.column}
        after = sql.SQL("{key} > CAST(%s::text AS {key_type})").format(
            key=table.key, key_type=sql.SQL(table.key_type)
        )
        # The key comes back as text under another name: ORDER BY must sort the column itself.
        select = sql.SQL("SELECT {key}::text AS histfix_key, {read} FROM {table} ").format(
            read=sql.SQL(kind.read).format(col=table.column), **names
        )
        upto = sql.SQL(" AND {key} <= CAST(%s::text AS {key_type})").format(
            key=table.key, key_type=sql.SQL(table.key_type)
        )
        order = sql.SQL(" ORDER BY {key} LIMIT %s").format(key=table.key)
        where_key = sql.SQL("{key} = CAST(%s::text AS {key_type})").format(
            key=table.key, key_type=sql.SQL(table.key_type)
        )
        among = sql.SQL("{key} = ANY(CAST(%s::text[] AS {key_type}[]))").format(
            key=table.key, key_type=sql.SQL(table.key_type)
        )
        return {
            "first_page": select + sql.SQL("WHERE {key} IS NOT NULL").format(key=table.key) + order,
            "next_page": select + sql.SQL("WHERE ") + after + order,
            "first_page_upto": select
            + sql.SQL("WHERE {key} IS NOT NULL").format(key=table.key)
            + upto
            + order,
            "next_page_upto": select + sql.SQL("WHERE ") + after + upto + order,
            # the last key of each of %s equal tiles in key order, but the last tile's
            "split_points": sql.SQL(
                "SELECT {key}::text AS histfix_key FROM (SELECT {key}, tile, lead(tile) OVER (ORDER BY {key}) "
                "AS next_tile "
                "FROM (SELECT {key}, ntile(%s) OVER (ORDER BY {key}) AS tile FROM {table} "
                "WHERE {key} IS NOT NULL) AS tiles) AS ends WHERE next_tile <> tile ORDER BY {key}"
            ).format(**names),
            "count_all": sql.SQL("SELECT count(*) FROM {table} WHERE {key} IS NOT NULL").format(**names),
            "null_keys": sql.SQL("SELECT count(*) FROM {table} WHERE {key} IS NULL").format(**names),
            "count_after": sql.SQL("SELECT count(*) FROM {table} WHERE ").format(**names) + after,
            "update": sql.SQL("UPDATE {table} SET {col} = {write} WHERE ").format(
                write=sql.SQL(kind.write), **names
            )
            + where_key
            + sql.SQL(" AND ")
            + sql.SQL(kind.unchanged).format(col=table.column)
            + sql.SQL(" RETURNING 1"),
            "exists": sql.SQL("SELECT 1 FROM {table} WHERE ").format(**names) + where_key,
            # of the given keys, those whose rows are there / those this transaction could lock now
            "present": sql.SQL("SELECT {key}::text FROM {table} WHERE ").format(**names) + among,
            "lock_free": sql.SQL("SELECT {key}::text FROM {table} WHERE ").format(**names)
            + among
            + sql.SQL(" FOR UPDATE SKIP LOCKED"),
            "by_keys": select + sql.SQL("WHERE ") + among + sql.SQL(" ORDER BY {key}").format(key=table.key),
        }

    def claim(self, *, writing: bool) -> None:
        """Take the table for this run, for as long as the connection lasts: a writing run alone,
        reading runs together; StoreError naming the other histfix run's server session when one
        holds it. A session-level advisory lock, so a run that dies (its connection with it)
        never leaves the table taken."""
        if self._claimed:
            return
        key = (RUN_LOCK_SPACE << 32) | self._table.oid
        take = "pg_try_advisory_lock" if writing else "pg_try_advisory_lock_shared"
        try:
            row = self._conn.execute(f"SELECT {take}(%s)", (key,)).fetchone()
            if row and row[0]:
                self._claimed = True
                return
            holders = self._conn.execute(
                "SELECT l.mode, a.pid, host(a.client_addr), to_char(a.backend_start AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD HH24:MI:SS') FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s AND l.objid::bigint = %s "
                "AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = "
                "current_database()) ORDER BY l.mode = 'ExclusiveLock' DESC",
                (RUN_LOCK_SPACE, self._table.oid),
            ).fetchall()
        except psycopg.Error as error:
            raise self._lost("cannot check for another histfix run", error) from None
        doing, who = "working on", "its server session has ended"
        if holders:
            mode, pid, client, since = holders[0]
            doing = "writing" if mode == "ExclusiveLock" else "reading"
            where = f" from {client}" if client else ""
            who = f"server session {pid}{where}, connected {since} UTC"
        raise another_run(self.url, doing=doing, what="this table", who=who)

    def _lost(self, doing: str, error: psycopg.Error) -> StoreError:
        return StoreError(f"{self.url}: {doing}: {_one_line(error)}")

    def read(
        self, *, after: str | None = None, upto: str | None = None, batch_size: int = 500
    ) -> Iterator[list[Stored]]:
        """Every row with a key after ``after`` and up to ``upto`` (inclusive), in key order,
        ``batch_size`` at a time; a NULL value is a Stored with ``error``."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        last = after
        null = f"NULL in column {self._table.column_name!r}: not a history"
        bounded = "_upto" if upto is not None else ""
        through = (upto,) if upto is not None else ()
        while True:
            try:
                # Binary results: bytea arrives as raw bytes, not hex text to decode.
                with self._conn.cursor(binary=True) as cursor:
                    if last is None:
                        cursor.execute(self._statements["first_page" + bounded], (*through, batch_size))
                    else:
                        cursor.execute(self._statements["next_page" + bounded], (last, *through, batch_size))
                    rows: list[tuple[str, bytes | None]] = cursor.fetchall()
            except psycopg.Error as error:
                raise self._lost("cannot read it", error) from None
            if not rows:
                return
            yield [Stored(key, b"", error=null) if raw is None else Stored(key, raw) for key, raw in rows]
            if len(rows) < batch_size:
                return
            last = rows[-1][0]

    def split_points(self, parts: int) -> list[str]:
        """Up to ``parts - 1`` keys that cut the table into ``parts`` key ranges of nearly equal
        row counts (``read(after=a, upto=b)`` between neighbours), from one pass over the key's index."""
        try:
            rows = self._conn.execute(self._statements["split_points"], (parts,)).fetchall()
        except psycopg.Error as error:
            raise self._lost("cannot read its keys", error) from None
        return [str(row[0]) for row in rows]

    def count(self, *, after: str | None = None) -> int | None:
        """The rows ``read(after=...)`` yields (one count over the key's index)."""
        try:
            if after is None:
                row = self._conn.execute(self._statements["count_all"]).fetchone()
            else:
                row = self._conn.execute(self._statements["count_after"], (after,)).fetchone()
        except psycopg.Error as error:
            raise self._lost("cannot count its rows", error) from None
        return int(row[0]) if row else 0

    def null_keys(self) -> int:
        """How many rows have a NULL key (a unique index allows them): never read, since each row
        is found and written by its key."""
        try:
            row = self._conn.execute(self._statements["null_keys"]).fetchone()
        except psycopg.Error as error:
            raise self._lost("cannot count its rows", error) from None
        return int(row[0]) if row else 0

    def read_keys(self, keys: Sequence[str]) -> list[Stored]:
        """The rows with these keys, in key order (a key whose row is gone is left out)."""
        try:
            with self._conn.cursor(binary=True) as cursor:
                cursor.execute(self._statements["by_keys"], (list(keys),))
                rows: list[tuple[str, bytes | None]] = cursor.fetchall()
        except psycopg.Error as error:
            raise self._lost("cannot read it", error) from None
        null = f"NULL in column {self._table.column_name!r}: not a history"
        return [Stored(key, b"", error=null) if raw is None else Stored(key, raw) for key, raw in rows]

    def _update(self, cursor: psycopg.Cursor[Any], batch: Sequence[Replacement]) -> list[bool]:
        """Each compare-and-swap UPDATE of the batch: whether it wrote its row."""
        if not batch:
            return []
        kind = self._table.kind
        params = [(item.new, item.key, kind.expected(item.old)) for item in batch]
        cursor.executemany(self._statements["update"], params, returning=True)
        written = []
        while True:  # one result per UPDATE, in order
            written.append(cursor.fetchone() is not None)
            if not cursor.nextset():
                break
        return written

    def _busy_keys(self, cursor: psycopg.Cursor[Any], batch: Sequence[Replacement]) -> set[str]:
        """Lock, without waiting, every row of the batch no other session holds; the keys of the
        rows another session holds."""
        keys = [item.key for item in batch]
        free = {row[0] for row in cursor.execute(self._statements["lock_free"], (keys,))}
        present = {row[0] for row in cursor.execute(self._statements["present"], (keys,))}
        return present - free

    def _write_rows(self, cursor: psycopg.Cursor[Any], batch: Sequence[Replacement]) -> list[WriteOutcome]:
        """The batch's compare-and-swap UPDATEs, inside a transaction the caller holds.

        Each UPDATE waits at most the session's lock_timeout for a row another session holds;
        should one wait that long, the batch starts over without waiting, on the rows it can
        lock at once, and the others are BUSY: left as they are, never waited on without end.
        """
        busy: set[str] = set()
        cursor.execute("SAVEPOINT histfix_batch")
        try:
            written = self._update(cursor, batch)
        except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected):
            cursor.execute("ROLLBACK TO SAVEPOINT histfix_batch")
            busy = self._busy_keys(cursor, batch)
            written = self._update(cursor, [item for item in batch if item.key not in busy])
        cursor.execute("RELEASE SAVEPOINT histfix_batch")
        done = iter(written)
        outcomes: list[WriteOutcome] = []
        for item in batch:
            if item.key in busy:
                outcomes.append(WriteOutcome.BUSY)
            elif next(done):
                outcomes.append(WriteOutcome.WRITTEN)
            else:
                cursor.execute(self._statements["exists"], (item.key,))
                exists = cursor.fetchone() is not None
                outcomes.append(WriteOutcome.CHANGED_SINCE_READ if exists else WriteOutcome.GONE)
        return outcomes

    def transaction(self, doing: str, body: Callable[[psycopg.Cursor[Any]], _T]) -> _T:
        """Run ``body`` in one transaction: committed whole, or rolled back whole (StoreError)."""
        try:
            with self._conn.transaction(), self._conn.cursor() as cursor:
                return body(cursor)
        except psycopg.Error as error:
            raise self._lost(doing, error) from None

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        """One transaction; each UPDATE writes only if the stored value is still what was read."""
        if not batch:
            return []
        doing = f"cannot write a batch of {len(batch)} (written whole or not at all)"
        return self.transaction(doing, lambda cursor: self._write_rows(cursor, batch))

    def open_backup_table(self, name: str, *, resume: bool) -> PostgresBackupTable:
        """A backup table ``name`` in this database (``--backup table:NAME``), created unless ``resume``."""
        return PostgresBackupTable(self, name, resume=resume)

    def backup_originals(self, name: str, *, batch_size: int) -> Iterator[list[tuple[str, bytes, bytes]]]:
        """(key, original, written) from backup table ``name``, in the order they were saved."""
        table = self._backup_table(name, must_exist=True)
        assert table is not None
        query = sql.SQL(
            "SELECT seq, key, old, new FROM {table} WHERE kind = 'original' AND seq > %s ORDER BY seq LIMIT %s"
        ).format(table=table)
        last = 0
        while True:
            try:
                rows = self._conn.execute(query, (last, batch_size)).fetchall()
            except psycopg.Error as error:
                raise self._lost(f"cannot read backup table {name!r}", error) from None
            if not rows:
                return
            yield [(str(key), bytes(old), bytes(new)) for _, key, old, new in rows]
            last = rows[-1][0]

    def _backup_table(self, name: str, *, must_exist: bool) -> sql.Composable | None:
        """Backup table ``name`` (``schema.table`` or on the search_path) if it exists, else None;
        StoreError if it has another shape (or is missing when ``must_exist``)."""
        identifier = sql.Identifier(*name.split("."))
        try:
            found = self._conn.execute(
                "SELECT to_regclass(%s::text)::oid", (identifier.as_string(self._conn),)
            ).fetchone()
            oid = found[0] if found else None
            shape = []
            if oid is not None:
                shape = self._conn.execute(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    (oid,),
                ).fetchall()
        except psycopg.Error as error:
            raise self._lost(f"cannot look up backup table {name!r}", error) from None
        if oid is None:
            if must_exist:
                raise StoreError(f"{self.url}: no backup table {name!r}")
            return None
        if [tuple(column) for column in shape] != BACKUP_SHAPE:
            have = ", ".join(f"{column} {kind}" for column, kind in shape)
            raise StoreError(
                f"{self.url}: table {name!r} is not a histfix backup table (it has {have}); name another table"
            )
        return identifier

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PostgresBackupTable:
    """``--backup table:NAME`` in the source's own database: a row per original (``kind``
    'original': key, original bytes, bytes written), a 'source' row naming the store, a
    'committed' row per batch and a 'busy' or 'retried' row per key found busy or tried again,
    each batch's rows in the same transaction as its writes."""

    def __init__(self, source: PostgresSource, name: str, *, resume: bool) -> None:
        self._source, self.name = source, name
        self.last_committed: str | None = None
        self.busy: list[str] = []
        found = source._backup_table(name, must_exist=resume)
        self._table: sql.Composable = sql.Identifier(*name.split("."))
        self._insert = sql.SQL("INSERT INTO {table} (kind, key, old, new) VALUES (%s, %s, %s, %s)").format(
            table=self._table
        )
        if resume:
            self._resume()
        elif found is not None:
            raise StoreError(
                f"{source.url}: backup table {name!r} already exists; --resume continues that run, "
                "or name a new backup"
            )
        else:
            create = sql.SQL("CREATE TABLE {table} (" + BACKUP_COLUMNS + ")").format(table=self._table)

            def body(cursor: psycopg.Cursor[Any]) -> None:
                cursor.execute(create)
                cursor.execute(self._insert, ("source", source.url, None, None))

            source.transaction(f"cannot create backup table {name!r}", body)

    def _resume(self) -> None:
        def body(cursor: psycopg.Cursor[Any]) -> tuple[Any, Any, list[Any]]:
            select = "SELECT key FROM {table} WHERE kind = %s ORDER BY seq {order} LIMIT 1"
            header = cursor.execute(
                sql.SQL(select).format(table=self._table, order=sql.SQL("ASC")), ("source",)
            ).fetchone()
            last = cursor.execute(
                sql.SQL(select).format(table=self._table, order=sql.SQL("DESC")), ("committed",)
            ).fetchone()
            marks = cursor.execute(
                sql.SQL(
                    "SELECT kind, key FROM {table} WHERE kind IN ('busy', 'retried') ORDER BY seq"
                ).format(table=self._table)
            ).fetchall()
            return header, last, marks

        header, last, marks = self._source.transaction(f"cannot read backup table {self.name!r}", body)
        if header is None:
            raise StoreError(
                f"{self._source.url}: backup table {self.name!r} names no source (not a histfix backup)"
            )
        if header[0] != self._source.url:
            raise StoreError(f"backup table {self.name!r}: made from {header[0]}, not {self._source.url}")
        self.last_committed = None if last is None else str(last[0])
        self.busy = still_busy((str(kind), str(key)) for kind, key in marks)

    def write(
        self,
        source: object,
        batch: Sequence[Replacement],
        last_key: str | None,
        *,
        retried: Sequence[str] = (),
    ) -> list[WriteOutcome]:
        """The batch, the originals of what it wrote, the keys it retried and found busy, and
        ``last_key``: one transaction."""
        if source is not self._source:
            raise ValueError("a backup table backs up the source it was opened from")

        def body(cursor: psycopg.Cursor[Any]) -> list[WriteOutcome]:
            outcomes = self._source._write_rows(cursor, batch) if batch else []
            saved = batch_rows(batch, outcomes, last_key, retried)
            if saved:
                cursor.executemany(self._insert, saved)
            return outcomes

        doing = f"cannot write a batch of {len(batch)} with its backup (written whole or not at all)"
        outcomes = self._source.transaction(doing, body)
        if last_key is not None:
            self.last_committed = last_key
        return outcomes

    def commit(self, key: str) -> None:
        self._source.transaction(
            f"cannot write backup table {self.name!r}",
            lambda cursor: cursor.execute(self._insert, ("committed", key, None, None)),
        )
        self.last_committed = key

    def close(self) -> None:
        """Nothing to close: the table lives on the source's connection."""


def open_postgres(spec: TableSpec, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> PostgresSource:
    """The PostgreSQL source ``spec`` names, connected and checked against the catalog."""
    return PostgresSource(spec, lock_timeout=lock_timeout)

"""What every store source is: the protocol the runner reads and writes through, and its values.

A source hands out stored histories as raw bytes, in ascending key order and in batches, and
writes replacements back with compare-and-swap on the bytes it read, so a history someone else
changed in between is skipped, never overwritten. Parsing, repairing and reporting live elsewhere
(``_record.py``, ``_runner.py``): a source only moves bytes.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "TABLE_NAME",
    "RangeSource",
    "Replacement",
    "Source",
    "StoreError",
    "Stored",
    "TableSpec",
    "WriteOutcome",
]


#: Seconds a write waits for a row (PostgreSQL) or the database file (SQLite) that another
#: connection holds locked, before it gives up on it (``--lock-timeout``): long enough for an
#: application's own short transactions, short enough that a repair never stalls on (or stalls
#: the application behind) one that stays open.
DEFAULT_LOCK_TIMEOUT = 5.0


#: A table name, optionally schema-qualified: quoted into SQL, so only plain identifiers.
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


class StoreError(ValueError):
    """A store the run cannot use (missing table or column, wrong password, server gone...).

    Its message is the one line the user sees; the CLI prints it and exits 2.
    """


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A table source string taken apart (``sources.parse_table_url`` makes it; the SQL sources open it)."""

    #: the connection string without the table/key/column parameters (password intact)
    connect: str
    #: the whole string with any password masked: for messages and ``Source.url``
    masked: str
    table: str
    key: str
    column: str


@dataclass(frozen=True, slots=True)
class Stored:
    """One stored history exactly as read.

    ``error`` says why a stored entry is no history at all before any parsing (a NULL column, a
    symlink or FIFO in a directory, an unreadable file): the runner reports it with its key and
    goes on; ``raw`` is then ``b""``.
    """

    key: str
    raw: bytes
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Replacement:
    """Write ``new`` under ``key``, only if the stored value still equals ``old`` (what was read)."""

    key: str
    old: bytes
    new: bytes


class WriteOutcome(enum.Enum):
    WRITTEN = "written"
    #: someone else wrote it between read and write: skipped, never overwritten
    CHANGED_SINCE_READ = "changed_since_read"
    #: the row or file disappeared
    GONE = "gone"
    #: another session held its row locked past the lock timeout: left as it is, recorded in the
    #: backup, and tried again by a resume of the run
    BUSY = "busy"


class Source(Protocol):
    """A store of histories: a directory, a JSONL file, an SQLite or PostgreSQL table."""

    #: what it was opened from, password masked
    url: str
    #: True when ``write`` rewrites the whole store (a JSONL file): the runner then gathers many
    #: replacements per write instead of writing once per read batch.
    rewrites_whole_store: bool

    def read(self, *, after: str | None = None, batch_size: int = 500) -> Iterator[list[Stored]]:
        """Every stored history, in ascending key order, in batches; ``after`` resumes past a key."""
        ...

    def count(self, *, after: str | None = None) -> int | None:
        """How many histories ``read(after=...)`` yields, for progress and ETA; None if not cheap."""
        ...

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        """Write the batch: one transaction (SQL) or one atomic replace per file.

        Compare-and-swap on ``old`` in the same statement that writes (SQL:
        ``UPDATE ... WHERE key = %s AND col = %s``, or a hash of it). One outcome per
        replacement, in order. Raises StoreError when the store cannot be written at all.
        """
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


class RangeSource(Source, Protocol):
    """A source that also reads one range of its keys (the SQL tables): a partitioned read, on
    Dask say, cuts the table at ``split_points`` and reads each range on its own."""

    def read(
        self, *, after: str | None = None, upto: str | None = None, batch_size: int = 500
    ) -> Iterator[list[Stored]]:
        """The histories with a key after ``after`` and up to ``upto`` (inclusive), in key order."""
        ...

    def split_points(self, parts: int) -> list[str]:
        """At most ``parts - 1`` ascending keys cutting the keys into ``parts`` ranges of nearly
        equal row counts."""
        ...

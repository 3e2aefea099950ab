"""Scan and repair every stored history in a store: a directory, a JSONL file, SQLite, PostgreSQL.

Imported only when asked for (``import histfix`` does not import it).
"""

from __future__ import annotations

from ._source import Replacement, Source, Stored, StoreError, WriteOutcome
from ._url import TableSpec, is_store, open_source, parse_table_url

__all__ = [
    "Replacement",
    "Source",
    "StoreError",
    "Stored",
    "TableSpec",
    "WriteOutcome",
    "is_store",
    "open_source",
    "parse_table_url",
]

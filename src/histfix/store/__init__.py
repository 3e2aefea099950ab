"""Scan and repair every stored history in a store: a directory, a JSONL file, SQLite, PostgreSQL.

``open_source(url)`` opens a store named by one string (see docs/stores.md); ``repair_source``
runs the per-history record (``examine``) over it, writing repairs with a backup first
(``open_backup``: a ``Backup`` file or a table in an SQL source's database);
``restore`` puts the originals back (checking a store on other pydantic-ai releases before an
upgrade is :mod:`histfix.upgrade`, above the stores). ``examine_all`` does the same over any
``(key, raw bytes)`` pairs, for a store histfix has no source for; ``histfix.store.dask`` runs the same scan on a
Dask cluster (``histfix[dask]``). A pydantic-ai ``ConversationStore`` (2.66.0 on) is a source too
(``ConversationSource``): ``repair_conversations`` saves repairs by the store's own rules (the old
history stays as a branch), ``restore_conversations`` branches back, and ``migrate`` moves any
other store into one. Imported only when asked for (``import histfix`` does not import it).
"""

from __future__ import annotations

from ._backup import Backup, BatchBackup, RestoreResult, open_backup, restore
from ._conversation_journal import Journal
from ._conversation_repair import repair_conversations, restore_conversations
from ._migrate import MigrateResult, Migration, migrate
from ._record import KEY_FIELDS, MESSAGES_FIELDS, Options, Record, RemovedContent, examine
from ._runner import RepairResult, examine_all, repair_source
from ._source import Replacement, Source, Stored, StoreError, TableSpec, WriteOutcome
from ._workers import WorkerLost
from .sources import open_source, parse_table_url
from .sources._conversation import ConversationSource
from .sources._conversation_access import NoConversationStore

__all__ = [
    "KEY_FIELDS",
    "MESSAGES_FIELDS",
    "Backup",
    "BatchBackup",
    "ConversationSource",
    "Journal",
    "MigrateResult",
    "Migration",
    "NoConversationStore",
    "Options",
    "Record",
    "RemovedContent",
    "RepairResult",
    "Replacement",
    "RestoreResult",
    "Source",
    "StoreError",
    "Stored",
    "TableSpec",
    "WorkerLost",
    "WriteOutcome",
    "examine",
    "examine_all",
    "migrate",
    "open_backup",
    "open_source",
    "parse_table_url",
    "repair_conversations",
    "repair_source",
    "restore",
    "restore_conversations",
]

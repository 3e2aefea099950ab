"""The journal of a run that writes to a ConversationStore: what it saved, and how far it got.

A JSONL file: a header naming the run's kind and the store, then one line per conversation saved
and, after each batch, a ``committed`` line with the last key the run got through (``--resume``
continues after it). A repair's line names the entry the conversation's history ended at before
(the history the store keeps as a branch) and the revision the repair wrote, which is what
``histfix restore`` needs to branch back. Each line is written as soon as its save returns and the
file is fsynced after each batch; a torn last line (a crash while appending) is ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ._backup import _end_of_last_line, _open_regular
from ._source import StoreError

__all__ = ["Journal", "JournalKind", "Saved", "read_journal"]

FORMAT = 1
#: What the journal records: a repair's rewrites, or a migration's new conversations.
JournalKind = Literal["repair", "migrate"]


@dataclass(frozen=True, slots=True)
class Saved:
    """One conversation a run saved: for a repair, the entry its history ended at before
    (``None`` for an empty history) and the revision the repair wrote."""

    conversation_id: str
    left: str | None = None
    revision: str | None = None


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    fd = _open_regular(path, os.O_RDONLY, what="journal")
    with os.fdopen(fd, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                return  # torn by a crash while appending
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict):
                raise StoreError(f"journal {path}: line {number} is not a journal record")
            yield row


def read_journal(path: Path, kind: JournalKind) -> tuple[str, str | None, list[Saved]]:
    """The store a journal was written for, the last key its run committed, and what it saved."""
    store, last, saved = None, None, []
    for row in _rows(path):
        if row.get("histfix_journal") == kind:
            store = str(row.get("store"))
        elif "committed" in row:
            last = str(row["committed"])
        elif "saved" in row:
            left, revision = row.get("left"), row.get("revision")
            saved.append(
                Saved(
                    str(row["saved"]),
                    left=None if left is None else str(left),
                    revision=None if revision is None else str(revision),
                )
            )
    if store is None:
        raise StoreError(f"journal {path}: not the journal of a histfix {kind} (no header line)")
    return store, last, saved


class Journal:
    """An open journal, appended to as the run saves, fsynced after each batch."""

    def __init__(self, path: Path, kind: JournalKind, store_url: str, *, resume: bool) -> None:
        self.path = path
        self.last_committed: str | None = None
        if resume:
            recorded, self.last_committed, _ = read_journal(path, kind)
            if recorded != store_url:
                raise StoreError(f"journal {path}: written for {recorded}, not {store_url}")
            self._fd = _open_regular(path, os.O_RDWR, what="journal")
            os.ftruncate(self._fd, _end_of_last_line(self._fd))  # a torn last line is dropped
            os.lseek(self._fd, 0, os.SEEK_END)
        else:
            self._fd = _open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, what="journal")
            self._append({"histfix_journal": kind, "format": FORMAT, "store": store_url}, sync=True)

    def _append(self, row: dict[str, Any], *, sync: bool = False) -> None:
        data = (json.dumps(row) + "\n").encode()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(f"journal {self.path}: cannot write it ({exc.strerror})") from exc

    def saved(self, saved: Saved) -> None:
        """Record a save as soon as it returned (on disk with the batch's commit)."""
        row: dict[str, Any] = {"saved": saved.conversation_id}
        if saved.revision is not None:
            row |= {"left": saved.left, "revision": saved.revision}
        self._append(row)

    def commit(self, key: str) -> None:
        """Record that the run got through ``key``, and put the batch's lines on disk."""
        self._append({"committed": key}, sync=True)
        self.last_committed = key

    def close(self) -> None:
        os.close(self._fd)

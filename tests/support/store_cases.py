"""Realistic stores for the store tests: the corpus histories and examples/*.json, as bytes.

Every store holds the same histories under the same keys: complete, broken, pending and
unloadable ones, so each test can check what happens to each kind in every source.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from corpus import CASES

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
#: How many of :func:`histories` a repair run writes (on every release the stores tests run on): the
#: broken corpus histories and examples; the rest are complete, pending or not histories at all.
REPAIRED = 68


def histories() -> dict[str, bytes]:
    """key -> stored bytes: every corpus history, the examples, and values that are no history."""
    found = {f"corpus-{i:03d}-{case.name}": json.dumps(case.history).encode() for i, case in enumerate(CASES)}
    for path in sorted(EXAMPLES.glob("*.json")):
        found[f"example-{path.stem}"] = path.read_bytes()
    found["bad-truncated"] = found["example-aborted_mid_tool"][:-40]
    found["bad-not-a-history"] = b'{"name": "not a history"}'
    found["bad-number"] = b"42"
    found["bad-utf8"] = (
        b'[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "\xff\xfe"}]}]'
    )
    return found


def write_directory(root: Path, stored: dict[str, bytes]) -> Path:
    """One file per history; every fourth one in a subfolder, so the walk is recursive."""
    for number, (key, raw) in enumerate(stored.items()):
        path = root / (f"sub/{key}.json" if number % 4 == 0 else f"{key}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    return root


def directory_snapshot(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*.json"))
        if path.is_file() and not path.is_symlink()
    }


def write_jsonl(path: Path, stored: dict[str, bytes]) -> Path:
    """Envelope lines (``{"id": ..., "messages": [...]}``) for the loadable JSON, bare lines else."""
    lines = []
    for key, raw in stored.items():
        try:
            value = json.loads(raw)
        except ValueError:
            lines.append(raw.replace(b"\n", b" "))
            continue
        if isinstance(value, list):
            lines.append(json.dumps({"id": key, "messages": value, "user": "ü"}, ensure_ascii=False).encode())
        else:
            lines.append(json.dumps(value).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def write_sqlite(path: Path, stored: dict[str, bytes], *, blob: bool = False) -> str:
    """A table ``chats(id TEXT PRIMARY KEY, messages TEXT|BLOB)``; its source string."""
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE chats (id TEXT PRIMARY KEY, messages {'BLOB' if blob else 'TEXT'})")
        for key, raw in stored.items():
            try:
                value: str | bytes = raw if blob else raw.decode("utf-8")
            except UnicodeDecodeError:
                value = raw  # invalid UTF-8 stays bytes, as a careless writer stores it
            db.execute("INSERT INTO chats VALUES (?, ?)", (key, value))
        db.execute("INSERT INTO chats VALUES ('bad-null', NULL)")
    db.close()
    return f"sqlite:///{path}?table=chats&key=id&column=messages"


def sqlite_snapshot(path: Path) -> dict[str, tuple[str, bytes | None]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT id, typeof(messages), CAST(messages AS BLOB) FROM chats ORDER BY id")
        return {key: (kind, raw) for key, kind, raw in rows}
    finally:
        db.close()


class StoreUnderTest:
    """One store of ``histories()`` in one of the sources: its string and its bytes by key."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.stored = histories()
        if kind == "dir":
            self.path = write_directory(folder / "chats", self.stored)
            self.url = str(self.path)
        elif kind == "jsonl":
            self.path = write_jsonl(folder / "chats.jsonl", self.stored)
            self.url = str(self.path)
        else:
            self.path = folder / "chats.db"
            self.url = write_sqlite(self.path, self.stored, blob=kind == "sqlite-blob")

    def snapshot(self) -> object:
        """Everything the store holds, exactly (file bytes, or every row's type and bytes)."""
        if self.kind == "dir":
            return directory_snapshot(self.path)
        if self.kind == "jsonl":
            return self.path.read_bytes()
        return sqlite_snapshot(self.path)

    def values(self) -> dict[str, bytes]:
        """The stored value per key, as the source reads it."""
        from histfix.store import open_source

        with open_source(self.url) as source:
            return {s.key: s.raw for batch in source.read() for s in batch}

    def overwrite(self, key: str, raw: bytes) -> bytes:
        """Write ``raw`` under ``key`` as another program would (the concurrent writer); what the
        source reads there now (a JSONL line wraps it in its envelope)."""
        if self.kind == "dir":
            (self.path / key).write_bytes(raw)
            return raw
        if self.kind == "jsonl":
            lines = self.path.read_bytes().split(b"\n")
            values = self.values()
            line = b'{"id": "%s", "messages": %s}' % (key.encode(), raw)
            lines[lines.index(values[key])] = line
            self.path.write_bytes(b"\n".join(lines))
            return line
        db = sqlite3.connect(self.path)
        with db:
            db.execute("UPDATE chats SET messages = ? WHERE id = ?", (raw.decode(), key))
        db.close()
        return raw


STORE_KINDS = ["dir", "jsonl", "sqlite-text", "sqlite-blob"]

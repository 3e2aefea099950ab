"""Rows whose key is NULL: an SQL source cannot page to them or write them back, so they are never
read; every report says how many there are (the scan summary, the repair report, ``--jsonl``).

Real SQLite files (a TEXT PRIMARY KEY takes NULLs there) and the real PostgreSQL server (a key
column with a UNIQUE index, which allows NULLs).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from histfix._cli.commands import main
from histfix.store import examine

from postgres_server import USER
from store_cases import histories

#: A history repair changes (and jsonb keeps as it is: no NUL escapes).
BROKEN = next(
    raw.decode()
    for key, raw in histories().items()
    if key.startswith("corpus-") and examine(key, raw).action == "repair" and b"\\u0000" not in raw
)
#: (key, value): one history to repair, two rows without a key (one of them broken too).
ROWS = [("a", BROKEN), (None, BROKEN), (None, "[]")]


def make_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[str, Callable[[], list[tuple[Any, ...]]]]:
    """The rows in a table; the source string and a way to snapshot it with the test's own SQL."""
    if kind == "sqlite":
        path = tmp_path / "chats.db"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE chats (id TEXT PRIMARY KEY, messages TEXT)")
            db.executemany("INSERT INTO chats VALUES (?, ?)", ROWS)
        db.close()

        def rows() -> list[tuple[object, ...]]:
            db = sqlite3.connect(path)
            try:
                return db.execute("SELECT id, messages FROM chats ORDER BY id, messages").fetchall()
            finally:
                db.close()

        return f"sqlite:///{path}?table=chats&key=id&column=messages", rows
    server = request.getfixturevalue("pg_server")
    table = f"t_{uuid.uuid4().hex[:12]}"
    server.execute(f"CREATE TABLE {table} (id text UNIQUE, messages jsonb)")
    for key, value in ROWS:
        server.execute(f"INSERT INTO {table} VALUES (%s, %s)", (key, value))
    server.execute(f"GRANT SELECT, UPDATE ON {table} TO {USER}")

    def snapshot() -> list[tuple[Any, ...]]:
        return server.execute(f"SELECT id, messages::text FROM {table} ORDER BY id, messages::text")

    return server.url(table), snapshot


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_scan_counts_rows_with_a_null_key_in_its_summary_and_its_jsonl(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = make_store(kind, tmp_path, request)
    assert main(["scan", url, "--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("1 histories in ")
    assert "  not read, NULL key: 2 rows\n" in out
    assert err.count("\n") == 1 and "2 rows have a NULL key: not read" in err, err

    assert main(["scan", url, "--jobs", "1", "--jsonl"]) == 1
    first, *records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert first == {
        "key": None,
        "rows": 2,
        "action": "not_loaded",
        "loads": False,
        "error": "2 rows have a NULL key: not read (histfix finds and writes each row by its key; give them one)",
    }
    assert [r["key"] for r in records] == ["a"]


def test_repair_reports_rows_with_a_null_key_leaves_them_and_exits_1(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    url, snapshot = make_store(kind, tmp_path, request)
    before = snapshot()
    assert main(["repair", url, "--write", "--backup", str(tmp_path / "b.jsonl"), "--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    assert "repaired 1 histories" in out and "  not read, NULL key: 2 rows\n" in out
    assert err.count("\n") == 1 and "2 rows have a NULL key" in err, err
    after = snapshot()
    assert after != before
    null_rows = [row for row in after if row[0] is None]
    assert null_rows == [row for row in before if row[0] is None]


def test_a_table_without_null_keys_says_nothing_of_them(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = make_store("sqlite", tmp_path, request)
    db = sqlite3.connect(url.split("///", 1)[1].split("?")[0])
    with db:
        db.execute("DELETE FROM chats WHERE id IS NULL")
    db.close()
    assert main(["scan", url, "--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    assert "NULL key" not in out + err

"""The SQLite source on its own (histfix.store.sources._sqlite.SQLiteSource): what it reads, what it writes.

The store commands' tests run it through the CLI beside every other source; these pin the promises
docs/stores.md makes for SQLite alone: exact bytes in and out in the column's own type, keys in the
key column's order (numbers as numbers), compare-and-swap per row in one transaction per batch,
NULLs reported rather than read, and a store it cannot use refused in one line, never created.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from histfix.store import Replacement, StoreError, WriteOutcome, open_source
from histfix.store.sources._sqlite import SQLiteSource

INVALID_UTF8 = b'[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "\xff"}]}]'


def table(path: Path, rows: list[tuple[object, object]], *, key_type: str = "TEXT") -> str:
    """A table ``chats(id, messages)`` holding ``rows``; the source string naming it."""
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE chats (id {key_type} PRIMARY KEY, messages)")
        db.executemany("INSERT INTO chats VALUES (?, ?)", rows)
    db.close()
    return f"sqlite:///{path}?table=chats&key=id&column=messages"


def stored(path: Path) -> dict[object, tuple[str, object]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT id, typeof(messages), messages FROM chats").fetchall()
    db.close()
    return {key: (kind, value) for key, kind, value in rows}


def read_all(source: SQLiteSource, **kwargs: object) -> list[tuple[str, bytes, str | None]]:
    return [(s.key, s.raw, s.error) for batch in source.read(**kwargs) for s in batch]


def test_values_are_read_as_their_exact_bytes_text_and_blob_alike(tmp_path: Path) -> None:
    url = table(tmp_path / "app.db", [("t", "[]"), ("b", INVALID_UTF8), ("n", None)])
    with open_source(url) as source:
        assert isinstance(source, SQLiteSource)
        assert read_all(source) == [
            ("b", INVALID_UTF8, None),  # a BLOB, invalid UTF-8 kept for the record to report
            ("n", b"", "NULL value: not a history"),
            ("t", b"[]", None),
        ]
        assert source.count() == 3


def test_a_write_keeps_each_value_in_the_type_it_had(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    url = table(path, [("t", "[1]"), ("b", b"[2]")])
    with open_source(url) as source:
        outcomes = source.write([Replacement("t", b"[1]", b"[10]"), Replacement("b", b"[2]", b"[20]")])
    assert outcomes == [WriteOutcome.WRITTEN, WriteOutcome.WRITTEN]
    assert stored(path) == {"t": ("text", "[10]"), "b": ("blob", b"[20]")}


def test_integer_keys_come_in_numeric_order_and_resume_by_number(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    url = table(path, [(key, "[]") for key in (10, 2, 33, 1)], key_type="INTEGER")
    with open_source(url) as source:
        assert [key for key, _, _ in read_all(source)] == ["1", "2", "10", "33"]  # not "1", "10", "2"
        assert [key for key, _, _ in read_all(source, after="2")] == ["10", "33"]
        assert [key for key, _, _ in read_all(source, after="2", upto="10")] == ["10"]
        assert source.count(after="2") == 2
        assert source.write([Replacement("10", b"[]", b"[0]")]) == [WriteOutcome.WRITTEN]
    assert stored(path)[10] == ("text", "[0]")


def test_batches_hold_at_most_batch_size_rows_and_cover_the_table_once(tmp_path: Path) -> None:
    url = table(tmp_path / "app.db", [(f"k{n:02d}", "[]") for n in range(7)])
    with open_source(url) as source:
        batches = [[s.key for s in batch] for batch in source.read(batch_size=3)]
        assert batches == [["k00", "k01", "k02"], ["k03", "k04", "k05"], ["k06"]]
        points = source.split_points(3)
        assert points == sorted(points) and 1 <= len(points) <= 2
        ranges = zip([None, *points], [*points, None], strict=True)
        assert [s.key for lo, hi in ranges for b in source.read(after=lo, upto=hi) for s in b] == [
            f"k{n:02d}" for n in range(7)
        ]


def test_a_row_changed_or_deleted_since_read_is_not_overwritten_and_the_rest_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    url = table(path, [("a", "[1]"), ("b", "[2]"), ("c", "[3]")])
    with open_source(url) as source:
        read_all(source)
        with sqlite3.connect(path) as other:  # another application, between read and write
            other.execute("UPDATE chats SET messages = '[theirs]' WHERE id = 'b'")
            other.execute("DELETE FROM chats WHERE id = 'c'")
        other.close()
        batch = [Replacement(k, old, b"[new]") for k, old in (("a", b"[1]"), ("b", b"[2]"), ("c", b"[3]"))]
        assert source.write(batch) == [
            WriteOutcome.WRITTEN,
            WriteOutcome.CHANGED_SINCE_READ,
            WriteOutcome.GONE,
        ]
    assert stored(path) == {"a": ("text", "[new]"), "b": ("text", "[theirs]")}


def test_a_batch_is_one_transaction(tmp_path: Path) -> None:
    """A failure part-way (here: the backup table's row refused) leaves none of the batch written."""
    path = tmp_path / "app.db"
    url = table(path, [("a", "[1]"), ("b", "[2]")])
    with open_source(url) as source:
        assert isinstance(source, SQLiteSource)

        def half_then_fail() -> None:
            source._write_rows([Replacement("a", b"[1]", b"[new]")])
            raise sqlite3.OperationalError("disk I/O error")

        with pytest.raises(StoreError, match=r"cannot write it \(disk I/O error\)"):
            source.transaction(half_then_fail)
    assert stored(path) == {"a": ("text", "[1]"), "b": ("text", "[2]")}


def test_rows_with_a_null_key_are_counted_not_read(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as db:  # a TEXT key that is not the rowid allows NULLs
        db.execute("CREATE TABLE chats (id TEXT, messages TEXT)")
        db.executemany("INSERT INTO chats VALUES (?, ?)", [("a", "[]"), (None, "[]"), (None, "[]")])
    db.close()
    with open_source(f"sqlite:///{path}?table=chats&key=id&column=messages") as source:
        assert isinstance(source, SQLiteSource)
        assert [key for key, _, _ in read_all(source)] == ["a"]
        assert (source.count(), source.null_keys()) == (1, 2)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("table=missing&key=id&column=messages", "no table 'missing'"),
        ("table=chats&key=nope&column=messages", "table 'chats' has no key column 'nope'"),
        ("table=chats&key=id&column=nope", "table 'chats' has no column 'nope'"),
    ],
)
def test_a_table_it_cannot_use_is_one_line(tmp_path: Path, query: str, message: str) -> None:
    table(tmp_path / "app.db", [("a", "[]")])
    with pytest.raises(StoreError) as refused:
        open_source(f"sqlite:///{tmp_path / 'app.db'}?{query}")
    assert str(refused.value).endswith(message) and "\n" not in str(refused.value)


def test_a_missing_file_is_refused_and_never_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(StoreError, match="no SQLite file at"):
        open_source(f"sqlite:///{missing}?table=chats&key=id&column=messages")
    assert not missing.exists()


def test_relative_and_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three slashes and a relative path, four for an absolute one (``sqlite:////data/app.db``)."""
    table(tmp_path / "app.db", [("a", "[]")])
    monkeypatch.chdir(tmp_path)
    for url in ("sqlite:///app.db", f"sqlite:///{tmp_path}/app.db"):
        with open_source(f"{url}?table=chats&key=id&column=messages") as source:
            assert [key for key, _, _ in read_all(source)] == ["a"]

"""``--backup table:NAME``: the originals in a table of the SQL source's own database.

Against real SQLite files and the real PostgreSQL server: the table is created, refused when it
holds something else, written in the same transaction as each batch (a `kill -9` while a batch's
transaction is open leaves both or neither), restored from byte for byte, and resumed from.
Snapshots and the backup table's rows are read with the tests' own SQL, not through histfix.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from histfix._cli.commands import main
from histfix.store._record import Options, examine

from postgres_server import USER, PgServer
from store_cases import histories, sqlite_snapshot, write_sqlite

ROOT = Path(__file__).resolve().parents[2]


def json_rows(copies: int) -> dict[str, bytes]:
    """The corpus values a json column accepts (UTF-8 JSON), ``copies`` times each."""
    found = {}
    for key, raw in histories().items():
        try:
            json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        for copy in range(copies):
            found[f"{key}-{copy:02d}"] = raw
    return found


class TableStore:
    """The corpus in an SQLite file or a PostgreSQL json table, seen through the tests' own SQL."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest, *, copies: int = 1) -> None:
        self.kind = kind
        rows = json_rows(copies)
        if kind == "sqlite":
            self.path = tmp_path / "chats.db"
            self.url = write_sqlite(self.path, rows)
            self.backup = "histfix_backup"
            return
        self.server: PgServer = request.getfixturevalue("pg_server")
        # PostgreSQL 15 lets only a schema's owner create tables in it; the backup table needs that.
        self.server.execute(f"GRANT CREATE ON SCHEMA public TO {USER}")
        pairs: list[tuple[Any, Any]] = [(k, v.decode()) for k, v in rows.items()]
        self.table = self.server.make_table("json", [*pairs, ("bad-null", None)], key_type="text")
        self.url = self.server.url(self.table)
        self.backup = f"{self.table}_backup"  # the tests share one database

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        if self.kind == "postgres":
            return self.server.execute(statement)
        db = sqlite3.connect(self.path)
        try:
            return db.execute(statement).fetchall()
        finally:
            db.close()

    def snapshot(self) -> dict[str, Any]:
        """Every row exactly: SQLite's type and bytes, or the json column's text (kept verbatim)."""
        if self.kind == "sqlite":
            return sqlite_snapshot(self.path)
        return dict(self.query(f"SELECT id, messages::text FROM {self.table} ORDER BY id"))

    def values(self) -> dict[str, bytes]:
        if self.kind == "sqlite":
            return {k: raw for k, (_, raw) in sqlite_snapshot(self.path).items() if raw is not None}
        return {k: v.encode() for k, v in self.snapshot().items() if v is not None}

    def originals(self) -> dict[str, tuple[bytes, bytes]]:
        rows = self.query(f"SELECT key, old, new FROM {self.backup} WHERE kind = 'original' ORDER BY seq")
        assert len({key for key, _, _ in rows}) == len(rows), "a key saved twice"
        return {key: (bytes(old), bytes(new)) for key, old, new in rows}

    @contextmanager
    def holding_up_commits(self) -> Iterator[None]:
        """Block the next batch's transaction from committing until the block ends: PostgreSQL,
        a SHARE lock on the backup table (its INSERT waits); SQLite, an open read transaction
        (COMMIT waits for it, the batch's changes held in the writer's journal)."""
        if self.kind == "postgres":
            with self.server.admin() as conn, conn.transaction():
                conn.execute(f"LOCK TABLE {self.backup} IN SHARE MODE")
                yield
            return
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            db.execute("BEGIN")
            db.execute("SELECT count(*) FROM chats").fetchone()
            yield
            db.execute("COMMIT")
        finally:
            db.close()

    def writer_is_waiting(self) -> bool:
        """Whether histfix is inside a batch's transaction, waiting on the block above."""
        if self.kind == "postgres":
            waiting = self.query(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'histfix' "
                "AND wait_event_type = 'Lock'"
            )
            return bool(waiting[0][0])
        return Path(f"{self.path}-journal").exists()

    def wait_for_no_histfix_session(self) -> None:
        """A killed client's PostgreSQL session ends (rolling back) once it next reads from it."""
        if self.kind != "postgres":
            return
        deadline = time.monotonic() + 30
        query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'histfix'"
        while self.query(query)[0][0] and time.monotonic() < deadline:
            time.sleep(0.02)


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def repaired(values: dict[str, bytes]) -> dict[str, bytes]:
    wanted = Options(want_new=True)
    return {k: examine(k, v, wanted).new or v for k, v in values.items()}


def repair(store: TableStore, *extra: str) -> int:
    return main(["repair", store.url, "--write", "--backup", f"table:{store.backup}", "--jobs", "1", *extra])


def test_repair_into_a_backup_table_then_restore_gives_back_every_byte(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    store = TableStore(kind, tmp_path, request)
    before, old = store.snapshot(), store.values()
    new = repaired(old)
    assert repair(store, "--batch-size", "7") == 0
    assert f"originals in table:{store.backup}" in capsys.readouterr().out
    assert store.values() == new
    changed = {k for k in old if new[k] != old[k]}
    assert len(changed) > 10
    assert store.originals() == {k: (old[k], new[k]) for k in sorted(changed)}
    assert store.query(f"SELECT key FROM {store.backup} WHERE kind = 'source'") == [
        (store_url_masked(store),)
    ]

    assert repair(store, "--resume") == 0  # finished: resuming writes nothing more
    assert "nothing to repair" in capsys.readouterr().out
    assert main(["restore", f"table:{store.backup}", store.url]) == 0
    assert f"restored {len(changed)} histories from table:{store.backup}" in capsys.readouterr().out
    assert store.snapshot() == before


def store_url_masked(store: TableStore) -> str:
    return store.url.replace(":s3cret%20pw@", ":***@")


def test_a_backup_table_that_exists_is_refused_in_one_line_unless_resumed(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    store = TableStore(kind, tmp_path, request)
    before = store.snapshot()
    store.query(f"CREATE TABLE {store.backup} (id text, note text)")
    assert repair(store) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"table '{store.backup}' is not a histfix backup table" in err, err
    assert "id text" in err.lower()
    store.query(f"DROP TABLE {store.backup}")

    assert repair(store) == 0
    after = store.snapshot()
    assert repair(store) == 2  # a second run without --resume never mixes into the first's table
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists; --resume continues that run" in err, err
    assert main(["restore", "table:no_such_backup", store.url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no backup table 'no_such_backup'" in err, err
    assert store.snapshot() == after != before


@pytest.mark.parametrize("source", ["dir", "jsonl"])
def test_a_table_backup_for_a_file_source_is_one_line(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / ("chats" if source == "dir" else "chats.jsonl")
    if source == "dir":
        store.mkdir()
        (store / "a.json").write_text("[]")
    else:
        store.write_text("[]\n")
    before = sorted((p, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())
    assert main(["repair", str(store), "--write", "--backup", "table:histfix_backup"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a backup table lives in the database of an SQLite or PostgreSQL" in err
    assert "name a JSONL file instead" in err
    assert sorted((p, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file()) == before


def test_a_backup_table_name_that_is_no_plain_name_is_one_line(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    store = TableStore("sqlite", tmp_path, request)
    before = store.snapshot()
    assert main(["repair", store.url, "--write", "--backup", "table:x; DROP TABLE chats"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a plain SQL table name" in err
    assert store.snapshot() == before


def test_kill_9_inside_a_batch_transaction_leaves_batch_and_backup_both_or_neither_and_resume_finishes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    # Copies make the store longer than the pipe's buffer lets the child run ahead of the test.
    store = TableStore(kind, tmp_path, request, copies=4)
    before, old = store.snapshot(), store.values()
    new = repaired(old)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    argv = [
        sys.executable,
        "-m",
        "histfix",
        "repair",
        store.url,
        "--write",
        "--backup",
        f"table:{store.backup}",
    ]
    argv += ["--jsonl", "--jobs", "1", "--batch-size", "5"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdout is not None
    # Reads the rest as it comes once started: a child that ran ahead would otherwise wait on a
    # full pipe, never reaching the commit the test holds up.
    draining = threading.Thread(target=child.stdout.read, daemon=True)
    try:
        # Up to the first history to repair and a batch further: its batch is committed.
        while json.loads(child.stdout.readline() or b"null")["action"] != "repair":
            pass
        for _ in range(5):
            assert child.stdout.readline()
        with store.holding_up_commits():
            draining.start()
            deadline = time.monotonic() + 60
            while not store.writer_is_waiting():
                assert child.poll() is None and time.monotonic() < deadline, "the run never waited"
                time.sleep(0.005)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        if draining.is_alive():
            draining.join(timeout=30)
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    store.wait_for_no_histfix_session()

    now, saved = store.values(), store.originals()
    for key, value in now.items():
        if key in saved:
            assert saved[key] == (old[key], new[key]) and value == new[key], key
        else:
            assert value == old[key], f"{key}: written without its original in the backup table"
    assert 0 < len(saved) < sum(new[k] != old[k] for k in old)

    assert repair(store, "--resume") == 0
    assert store.values() == new
    assert len(store.originals()) == sum(new[k] != old[k] for k in old)
    capsys.readouterr()
    assert main(["restore", f"table:{store.backup}", store.url]) == 0
    assert store.snapshot() == before


def test_a_server_stopped_under_a_running_repair_is_one_line_and_resume_finishes(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    store = TableStore("postgres", tmp_path, request, copies=4)
    before, old = store.snapshot(), store.values()
    new = repaired(old)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    argv = [
        sys.executable,
        "-m",
        "histfix",
        "repair",
        store.url,
        "--write",
        "--backup",
        f"table:{store.backup}",
    ]
    argv += ["--jsonl", "--jobs", "1", "--batch-size", "5"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert child.stdout is not None
        while json.loads(child.stdout.readline() or "null")["action"] != "repair":
            pass
        for _ in range(5):  # a batch further: the first batch with a repair is committed
            assert child.stdout.readline()
        store.server.stop()  # a fast shutdown: the server ends every session
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=30)
        store.server.start()
    assert child.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("histfix: postgresql://") and "--resume" in err, err
    assert "s3cret" not in err

    now, saved = store.values(), store.originals()
    for key, value in now.items():
        assert value == (new[key] if key in saved else old[key]), key
    assert 0 < len(saved) < sum(new[k] != old[k] for k in old)
    assert repair(store, "--resume") == 0
    assert store.values() == new
    capsys.readouterr()
    assert main(["restore", f"table:{store.backup}", store.url]) == 0
    assert store.snapshot() == before

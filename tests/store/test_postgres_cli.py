"""histfix scan / repair --write / restore on a real PostgreSQL table, per column type.

The same realistic histories as the other store tests (store_cases.py): complete, broken, pending
and unloadable ones, and a NULL row, in `json`, `jsonb`, `text` and `bytea` columns. Snapshots are
taken with the test's own SQL, never through the source under test.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from histfix._cli.commands import main
from histfix.store import open_source
from histfix.store._record import Options, examine
from histfix.store._runner import repair_source
from histfix.store._source import Replacement, WriteOutcome

from postgres_server import PgServer
from store_cases import histories, write_sqlite

ROOT = Path(__file__).resolve().parents[2]
COLUMN_TYPES = ["json", "jsonb", "text", "bytea"]


def storable(column_type: str, raw: bytes) -> Any:
    """`raw` as the parameter that stores it in `column_type`, or None where the type refuses it."""
    if column_type == "bytea":
        return raw
    try:
        text = raw.decode("utf-8")
        if column_type != "text":
            json.loads(text)
    except ValueError:  # not UTF-8, or no JSON: the column type itself refuses it
        return None
    if column_type == "jsonb" and "\\u0000" in text:
        return None
    return text


class PgStore:
    """The corpus in one table of one column type, and how to look at it without histfix."""

    def __init__(self, server: PgServer, column_type: str, *, copies: int = 1) -> None:
        self.server = server
        self.column_type = column_type
        stored = histories()
        if copies > 1:
            stored = {f"{k}-{i}": raw for k, raw in stored.items() for i in range(copies)}
        rows = [(k, storable(column_type, raw)) for k, raw in stored.items()]
        self.table = server.make_table(
            column_type, [(k, v) for k, v in rows if v is not None] + [("bad-null", None)], key_type="text"
        )
        self.url = server.url(self.table)

    def snapshot(self) -> dict[str, Any]:
        """Every row's value exactly: the column's text form (json keeps it verbatim), or bytea's bytes."""
        value = "messages" if self.column_type == "bytea" else "messages::text"
        return dict(self.server.execute(f"SELECT id, {value} FROM {self.table} ORDER BY id"))

    def values(self) -> dict[str, bytes]:
        with open_source(self.url) as source:
            return {s.key: s.raw for batch in source.read() for s in batch if s.error is None}

    def as_stored(self, raw: bytes) -> Any:
        """What the column holds once `raw` is written to it (jsonb normalises it)."""
        if self.column_type == "bytea":
            return raw
        if self.column_type == "jsonb":
            return self.server.execute("SELECT %s::jsonb::text", (raw.decode(),))[0][0]
        return raw.decode()


@pytest.fixture(params=COLUMN_TYPES)
def store(request: pytest.FixtureRequest, pg_server: PgServer) -> PgStore:
    return PgStore(pg_server, request.param)


def expected_after_repair(store: PgStore) -> dict[str, Any]:
    """Each row as the column holds it after a full repair: the record's new bytes, else as before."""
    wanted = Options(want_new=True)
    before = store.snapshot()
    for key, raw in store.values().items():
        new = examine(key, raw, wanted).new
        if new is not None:
            before[key] = store.as_stored(new)
    return before


def test_scan_of_a_text_column_says_what_a_scan_of_the_same_rows_in_sqlite_says(
    pg_server: PgServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = PgStore(pg_server, "text")
    assert main(["scan", store.url, "--jsonl", "--jobs", "1", "--batch-size", "7"]) == 1
    on_postgres = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    in_text = {k: v for k, v in histories().items() if storable("text", v) is not None}
    sqlite_url = write_sqlite(tmp_path / "same.db", in_text)
    assert main(["scan", sqlite_url, "--jsonl", "--jobs", "1"]) == 1
    on_sqlite = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    null = on_postgres.pop([r["key"] for r in on_postgres].index("bad-null"))
    assert null["loads"] is False and "NULL" in null["error"] and "messages" in null["error"]
    assert on_postgres == [r for r in on_sqlite if r["key"] != "bad-null"]
    assert sum(r["action"] == "repair" for r in on_postgres) > 10


@pytest.mark.parametrize("column_type", COLUMN_TYPES)
def test_scan_reads_only_and_reports_each_row_in_key_order(
    pg_server: PgServer, column_type: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = PgStore(pg_server, column_type)
    before = store.snapshot()
    assert main(["scan", store.url, "--jsonl", "--jobs", "2", "--batch-size", "9"]) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["key"] for r in records] == sorted(before)
    assert store.snapshot() == before
    by_key = {r["key"]: r for r in records}
    assert by_key["bad-null"]["loads"] is False
    assert by_key["bad-number"]["loads"] is False
    if column_type == "bytea":  # the only type that can hold bytes that are no UTF-8
        assert "not UTF-8" in by_key["bad-utf8"]["error"]


def test_repair_writes_then_a_second_run_changes_nothing_then_restore_gives_the_originals_back(
    store: PgStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store.snapshot()
    expected = expected_after_repair(store)
    changed = sum(expected[k] != before[k] for k in before)
    assert changed > 10
    backup = tmp_path / "backup.jsonl"
    args = ["repair", store.url, "--write", "--backup", str(backup), "--jobs", "2", "--batch-size", "7"]
    assert main(args) == 0
    assert f"repaired {changed} histories" in capsys.readouterr().out
    assert store.snapshot() == expected

    again = ["repair", store.url, "--write", "--backup", str(tmp_path / "again.jsonl"), "--jobs", "1"]
    assert main(again) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert store.snapshot() == expected

    assert main(["restore", str(backup), store.url]) == 0
    assert f"restored {changed} histories" in capsys.readouterr().out
    assert store.snapshot() == before  # byte for byte (jsonb: its text form, all it ever kept)


class WriterBetweenReadAndWrite:
    """A source whose first write is preceded by another program's UPDATE of one row."""

    def __init__(self, source: Any, store: PgStore, key: str) -> None:
        self._source, self._store, self._key = source, store, key
        self.url = source.url
        self.rewrites_whole_store = False

    def read(self, **kwargs: Any) -> Any:
        return self._source.read(**kwargs)

    def write(self, batch: list[Replacement]) -> list[WriteOutcome]:
        if self._key is not None:
            theirs = '[{"kind": "request", "parts": []}]'
            self._store.server.execute(
                f"UPDATE {self._store.table} SET messages = %s WHERE id = %s",
                (theirs.encode() if self._store.column_type == "bytea" else theirs, self._key),
            )
            self._key = None
        return list(self._source.write(batch))


def test_a_row_changed_between_read_and_write_is_skipped_and_reported(
    pg_server: PgServer, tmp_path: Path
) -> None:
    from histfix.store._backup import Backup

    store = PgStore(pg_server, "jsonb")
    expected = expected_after_repair(store)
    victim = next(k for k in sorted(expected) if expected[k] != store.snapshot()[k])
    with open_source(store.url) as source:
        backup = Backup(tmp_path / "b.jsonl", source.url, resume=False)
        try:
            result = repair_source(
                WriterBetweenReadAndWrite(source, store, victim),  # type: ignore[arg-type]
                Options(),
                backup=backup,
                batch_size=1000,
            )
        finally:
            backup.close()
    assert [key for key, _ in result.skipped] == [victim]
    assert "changed by someone else" in result.skipped[0][1]
    after = store.snapshot()
    assert after[victim] == '[{"kind": "request", "parts": []}]'
    assert {k: v for k, v in after.items() if k != victim} == {
        k: v for k, v in expected.items() if k != victim
    }


def histfix(*args: str, **popen: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "histfix", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def committed_batches(backup: Path) -> int:
    return backup.read_bytes().count(b'{"committed"') if backup.exists() else 0


def test_kill_9_during_repair_leaves_every_row_old_or_new_and_resume_finishes(
    pg_server: PgServer, tmp_path: Path
) -> None:
    store = PgStore(pg_server, "jsonb")
    before = store.snapshot()
    expected = expected_after_repair(store)
    batches = len(before) // 2
    seed = random.randrange(1_000_000)
    chance = random.Random(seed)
    backup = tmp_path / "backup.jsonl"
    run = ["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1", "--batch-size", "2"]
    for attempt in range(2):
        # Killed after a random number of committed batches, give or take a few milliseconds:
        # while examining the next batch, saving its originals, or inside its transaction.
        target = committed_batches(backup) + chance.randint(1, batches // 4)
        child = histfix(*run, *(["--resume"] if attempt else []))
        deadline = time.monotonic() + 120
        while committed_batches(backup) < target and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(chance.uniform(0, 0.02))
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL, f"the run ended before its kill (seed {seed})"
        now = store.snapshot()
        assert all(now[k] in (before[k], expected[k]) for k in now), f"a row half written (seed {seed})"
        assert now != expected, f"the kill landed after the end (seed {seed})"
    # Killed twice, each time after at least one more batch: the first rows of the corpus were
    # repaired, so the kills landed mid-run (a batch may commit with nothing to write).
    assert now != before, f"no kill landed mid-run (seed {seed})"
    finished = histfix(*run, "--resume")
    _, err = finished.communicate(timeout=120)
    assert finished.returncode == 0, err
    assert store.snapshot() == expected
    main(["restore", str(backup), store.url])
    assert store.snapshot() == before


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"password": "wrong"}, "password authentication failed"),
        ({"table": "no_such_table"}, "no table 'no_such_table'"),
        ({"column": "history"}, "has no column 'history'"),
    ],
)
def test_a_store_histfix_cannot_use_is_one_line_and_exit_2(
    pg_server: PgServer, change: dict[str, str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    table = pg_server.make_table("jsonb", [(1, "[]")])
    url = pg_server.url(
        change.get("table", table),
        column=change.get("column", "messages"),
        **({"password": change["password"]} if "password" in change else {}),
    )
    assert main(["scan", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and err.startswith("histfix: postgresql://")


def test_a_server_stopped_mid_scan_is_one_line_and_exit_2(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from histfix.store.sources._postgres import PostgresSource

    store = PgStore(pg_server, "jsonb")
    read = PostgresSource.read

    def read_then_stop(self: PostgresSource, **kwargs: Any) -> Any:
        batches = read(self, **kwargs)
        yield next(batches)
        pg_server.stop()
        yield from batches

    monkeypatch.setattr(PostgresSource, "read", read_then_stop)
    try:
        code = main(["scan", store.url, "--jsonl", "--jobs", "1", "--batch-size", "3"])
    finally:
        pg_server.start()
    assert code == 2
    out, err = capsys.readouterr()
    assert len(out.splitlines()) < len(store.snapshot())
    assert err.count("\n") == 1 and "cannot read it" in err, err

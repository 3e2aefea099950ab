"""The PostgreSQL source against a real server (tests/support/postgres_server.py starts it).

Each test makes tables of its own in the session's server. What goes through the store core
(scan, repair --write, restore, the CLI) is in test_postgres_cli.py; here the source itself:
bytes per column type, key order and resuming, compare-and-swap, one transaction per batch,
crashes, and every failure as one line.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from histfix.store import Replacement, Stored, StoreError, WriteOutcome, open_source

from postgres_server import PASSWORD, PgServer

SRC = Path(__file__).resolve().parents[2] / "src"

#: A history as an application might have stored it: keys in its own order, its own spacing.
APP_JSON = '[ {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "h\\u00e9"}]} ]'
#: What jsonb makes of it (the server's text form: keys sorted, escapes decoded, its spacing).
APP_JSONB = '[{"kind": "request", "parts": [{"content": "hé", "part_kind": "user-prompt"}]}]'


def column_value(column_type: str, text: str) -> Any:
    """`text` as the parameter that stores it in a column of `column_type`."""
    return text.encode() if column_type == "bytea" else text


def read_all(url: str, **read: Any) -> list[Stored]:
    with open_source(url) as source:
        return [stored for batch in source.read(**read) for stored in batch]


def stored_values(server: PgServer, table: str) -> dict[int, Any]:
    return dict(server.execute(f"SELECT id, messages::text FROM {table} ORDER BY id"))


def assert_one_line(error: pytest.ExceptionInfo[BaseException], *needles: str) -> None:
    message = str(error.value)
    assert "\n" not in message, message
    assert PASSWORD not in message, message
    assert quote(PASSWORD) not in message, message
    for needle in needles:
        assert needle in message, message


# --- reading --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column_type", "expected"),
    [
        ("json", APP_JSON),  # json keeps the text the application wrote
        ("text", APP_JSON),
        ("varchar", APP_JSON),
        ("bytea", APP_JSON),
        ("jsonb", APP_JSONB),
    ],
    ids=["json", "text", "varchar", "bytea", "jsonb"],
)
def test_each_column_type_is_read_as_its_stored_bytes(
    pg_server: PgServer, column_type: str, expected: str
) -> None:
    table = pg_server.make_table(column_type, [(1, column_value(column_type, APP_JSON))])
    assert read_all(pg_server.url(table)) == [Stored("1", expected.encode())]


def test_bytea_is_read_as_is_even_when_it_is_no_text(pg_server: PgServer) -> None:
    raw = b"\xff\xfe[\x00]\x80"
    table = pg_server.make_table("bytea", [(1, raw)])
    assert read_all(pg_server.url(table)) == [Stored("1", raw)]


def test_the_column_type_comes_from_the_catalog_through_a_domain(pg_server: PgServer) -> None:
    pg_server.execute(
        "DO $$ BEGIN CREATE DOMAIN history_doc AS jsonb; EXCEPTION WHEN duplicate_object THEN END $$"
    )
    table = pg_server.make_table("history_doc", [(1, APP_JSON)])
    assert read_all(pg_server.url(table)) == [Stored("1", APP_JSONB.encode())]


def test_rows_come_in_the_key_columns_order_in_batches(pg_server: PgServer) -> None:
    # As text "10" < "9": the order must be the integer column's own.
    keys = [10, 9, 1, 100, 2]
    table = pg_server.make_table("jsonb", [(k, f"[{k}]") for k in keys])
    with open_source(pg_server.url(table)) as source:
        batches = [[s.key for s in batch] for batch in source.read(batch_size=2)]
    assert batches == [["1", "2"], ["9", "10"], ["100"]]


@pytest.mark.parametrize("key_type", ["bigint", "text", "uuid"])
def test_after_resumes_past_a_key_of_any_type(pg_server: PgServer, key_type: str) -> None:
    keys = {
        "bigint": ["3", "20", "100"],
        "text": ["a", "b b", "c'd"],
        "uuid": [f"00000000-0000-0000-0000-00000000000{i}" for i in (1, 2, 3)],
    }[key_type]
    table = pg_server.make_table("text", [(k, "[]") for k in keys], key_type=key_type)
    url = pg_server.url(table)
    assert [s.key for s in read_all(url)] == keys
    assert [s.key for s in read_all(url, after=keys[0])] == keys[1:]
    assert read_all(url, after=keys[-1]) == []
    with open_source(url) as source:
        assert source.count() == 3
        assert source.count(after=keys[0]) == 2


def test_a_null_value_is_a_bad_row_with_its_key_and_the_read_goes_on(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [(1, "[]"), (2, None), (3, "[]")])
    rows = read_all(pg_server.url(table))
    assert [(s.key, s.error is None) for s in rows] == [("1", True), ("2", False), ("3", True)]
    assert rows[1].raw == b""
    assert rows[1].error is not None
    assert "NULL" in rows[1].error
    assert "messages" in rows[1].error


# --- writing --------------------------------------------------------------------------------------


@pytest.mark.parametrize("column_type", ["json", "jsonb", "text", "varchar", "bytea"])
def test_write_compares_and_swaps_in_one_statement(pg_server: PgServer, column_type: str) -> None:
    table = pg_server.make_table(
        column_type, [(1, column_value(column_type, "[1]")), (2, column_value(column_type, "[2]"))]
    )
    url = pg_server.url(table)
    first, second = read_all(url)
    with open_source(url) as source:
        outcomes = source.write(
            [
                Replacement("1", first.raw, b"[10]"),
                Replacement("2", b"[22]", b"[20]"),  # not what is stored: someone else wrote it
                Replacement("3", b"[3]", b"[30]"),  # no such row
            ]
        )
    assert outcomes == [WriteOutcome.WRITTEN, WriteOutcome.CHANGED_SINCE_READ, WriteOutcome.GONE]
    assert [s.raw for s in read_all(url)] == [b"[10]", second.raw]


def test_a_concurrent_writer_between_read_and_write_is_never_overwritten(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [(1, "[1]"), (2, "[2]")])
    url = pg_server.url(table)
    with open_source(url) as source:
        first, second = next(source.read())
        pg_server.execute(f"UPDATE {table} SET messages = '[\"theirs\"]' WHERE id = 2")
        outcomes = source.write([Replacement("1", first.raw, b"[10]"), Replacement("2", second.raw, b"[20]")])
    assert outcomes == [WriteOutcome.WRITTEN, WriteOutcome.CHANGED_SINCE_READ]
    assert stored_values(pg_server, table) == {1: "[10]", 2: '["theirs"]'}


def test_a_writer_holding_the_row_wins_when_it_commits_while_histfix_waits(pg_server: PgServer) -> None:
    # READ COMMITTED: our UPDATE waits for their lock, then re-checks its WHERE on their version.
    table = pg_server.make_table("text", [(1, "[1]")])
    url = pg_server.url(table)
    outcome: list[WriteOutcome] = []
    with open_source(url) as source, pg_server.admin() as theirs:
        (stored,) = next(source.read())
        theirs.execute("BEGIN")
        theirs.execute(f"UPDATE {table} SET messages = '[\"theirs\"]' WHERE id = 1")
        writer = threading.Thread(
            target=lambda: outcome.extend(source.write([Replacement("1", stored.raw, b"[10]")]))
        )
        writer.start()
        deadline = time.monotonic() + 30
        waiting = [(0,)]
        while waiting[0][0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
            waiting = pg_server.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'histfix' AND wait_event_type = 'Lock'"
            )
        assert waiting[0][0] == 1, "histfix's UPDATE never waited for the other writer's lock"
        theirs.execute("COMMIT")
        writer.join(timeout=30)
    assert outcome == [WriteOutcome.CHANGED_SINCE_READ]
    assert stored_values(pg_server, table) == {1: '["theirs"]'}


def test_libpq_parameters_in_the_string_reach_libpq_as_written(pg_server: PgServer) -> None:
    # Percent-encoded in the string, as in any libpq URI: a "+" is a plus there, not a space.
    table = pg_server.make_table("text", [(1, "[1]")])
    url = pg_server.url(table).replace("?", "?application_name=my%20app%2B1&", 1)
    with open_source(url) as source:
        assert source._conn.execute("SHOW application_name").fetchone() == ("my app+1",)  # type: ignore[attr-defined]


def test_a_batch_is_one_transaction(pg_server: PgServer) -> None:
    table = pg_server.make_table("json", [(1, "[1]"), (2, "[2]")])
    url = pg_server.url(table)
    first, second = read_all(url)
    with open_source(url) as source, pytest.raises(StoreError) as error:
        # The second value is no JSON: the server refuses it, so the first is not written either.
        source.write([Replacement("1", first.raw, b"[10]"), Replacement("2", second.raw, b"[20")])
    assert_one_line(error, "batch of 2", "json")
    assert stored_values(pg_server, table) == {1: "[1]", 2: "[2]"}


@pytest.mark.parametrize("column_type", ["json", "jsonb", "text", "bytea"])
def test_writing_back_what_was_read_restores_it_byte_for_byte(pg_server: PgServer, column_type: str) -> None:
    table = pg_server.make_table(column_type, [(1, column_value(column_type, APP_JSON))])
    url = pg_server.url(table)
    (before,) = read_all(url)
    # What histfix writes: compact, its own key order (jsonb normalises it on the way in).
    written = b'[{"parts":[{"part_kind":"user-prompt","content":"x"}],"kind":"request"}]'
    with open_source(url) as source:
        assert source.write([Replacement("1", before.raw, written)]) == [WriteOutcome.WRITTEN]
        # A restore names the value histfix wrote as the one it expects to find.
        assert source.write([Replacement("1", written, before.raw)]) == [WriteOutcome.WRITTEN]
    assert read_all(url) == [before]
    if column_type == "jsonb":
        assert before.raw == APP_JSONB.encode()


def test_a_restore_does_not_overwrite_a_jsonb_value_changed_since_the_repair(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [(1, "[1]")])
    url = pg_server.url(table)
    written = b'{"b":1,"a":2}'
    with open_source(url) as source:
        assert source.write([Replacement("1", b"[1]", written)]) == [WriteOutcome.WRITTEN]
        pg_server.execute(f"""UPDATE {table} SET messages = '{{"a": 2, "b": 1.0}}' WHERE id = 1""")
        # 1 and 1.0 are equal jsonb values, but not the same text: the value changed.
        assert source.write([Replacement("1", written, b"[1]")]) == [WriteOutcome.CHANGED_SINCE_READ]
    assert stored_values(pg_server, table) == {1: '{"a": 2, "b": 1.0}'}


CRASH_CHILD = """
import sys
from histfix.store import Replacement, open_source
with open_source(sys.argv[1]) as source:
    batches = list(source.read(batch_size=int(sys.argv[2])))
    for batch in batches:
        if sys.stdin.readline() != "go\\n":
            break
        source.write([Replacement(s.key, s.raw, s.raw.replace(b'"old"', b'"new"')) for s in batch])
        print("wrote", flush=True)
"""


def test_kill_9_while_writing_leaves_every_batch_old_or_new(pg_server: PgServer) -> None:
    rows, batch = 2000, 200
    batches = rows // batch
    seed = random.randrange(1_000_000)
    chance = random.Random(seed)
    for _ in range(4):
        table = pg_server.make_table("jsonb", [(k, f'["old", {k}, "{"x" * 100}"]') for k in range(rows)])
        child = subprocess.Popen(
            [sys.executable, "-c", CRASH_CHILD, pg_server.url(table), str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        # In step with the child: `done` batches written, then one more started and killed at a
        # random moment of its write (a batch of 200 takes some milliseconds), or just after.
        done = chance.randrange(batches - 1)
        for _ in range(done):
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline() == "wrote\n"
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(chance.uniform(0, 0.02))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        states = [json.loads(value)[0] for value in stored_values(pg_server, table).values()]
        per_batch = [set(states[i : i + batch]) for i in range(0, rows, batch)]
        assert all(len(kinds) == 1 for kinds in per_batch), f"a batch half written (seed {seed})"
        assert [kinds.pop() for kinds in per_batch].count("new") in (done, done + 1), f"seed {seed}"


# --- failures: one line each ------------------------------------------------------------------------


def test_a_wrong_password_is_one_line_without_the_password(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [])
    with pytest.raises(StoreError) as error:
        open_source(pg_server.url(table, password="not-" + PASSWORD))
    assert_one_line(error, "cannot connect", "password authentication failed", "***")
    assert "not-" not in str(error.value)


def test_an_unreachable_server_is_one_line(pg_server: PgServer) -> None:
    import port_for

    url = pg_server.url("t").replace(f":{pg_server.port}/", f":{port_for.get_port(None)}/")
    with pytest.raises(StoreError) as error:
        open_source(url)
    assert_one_line(error, "cannot connect", "refused")


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"table": "no_such_table"}, ["no table 'no_such_table'"]),
        ({"column": "history"}, ["has no column 'history'", "id, messages"]),
        ({"key": "pk"}, ["has no key column 'pk'"]),
    ],
)
def test_a_missing_table_or_column_is_one_line(
    pg_server: PgServer, change: dict[str, str], needles: list[str]
) -> None:
    table = pg_server.make_table("jsonb", [])
    url = pg_server.url(
        change.get("table", table), key=change.get("key", "id"), column=change.get("column", "messages")
    )
    with pytest.raises(StoreError) as error:
        open_source(url)
    assert_one_line(error, *needles)


def test_a_column_of_another_type_is_one_line(pg_server: PgServer) -> None:
    table = pg_server.make_table("integer", [])
    with pytest.raises(StoreError) as error:
        open_source(pg_server.url(table))
    assert_one_line(error, "column 'messages' is integer", "json, jsonb")


def test_a_key_without_a_unique_index_is_refused(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [])
    pg_server.execute(f"ALTER TABLE {table} ADD COLUMN other int")
    with pytest.raises(StoreError) as error:
        open_source(pg_server.url(table, key="other"))
    assert_one_line(error, "'other' has no unique index")


def test_a_schema_qualified_table_and_a_view(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [(1, "[]")])
    assert [s.key for s in read_all(pg_server.url(f"public.{table}"))] == ["1"]
    pg_server.execute(f"CREATE VIEW v_{table} AS SELECT * FROM {table}")
    pg_server.execute(f"GRANT SELECT ON v_{table} TO histfix")
    with pytest.raises(StoreError) as error:
        open_source(pg_server.url(f"v_{table}"))
    assert_one_line(error, "is a view")


def test_no_permission_to_write_is_one_line_and_nothing_is_written(pg_server: PgServer) -> None:
    table = pg_server.make_table("jsonb", [(1, "[1]")])
    pg_server.execute(f"REVOKE UPDATE ON {table} FROM histfix")
    url = pg_server.url(table)
    (stored,) = read_all(url)
    with open_source(url) as source, pytest.raises(StoreError) as error:
        source.write([Replacement("1", stored.raw, b"[2]")])
    assert_one_line(error, "permission denied")
    assert stored_values(pg_server, table) == {1: "[1]"}


@pytest.fixture
def stopped_midway(pg_server: PgServer) -> Any:
    """Stop the session's server for one test and start it again after."""
    yield pg_server.stop
    pg_server.start()


def test_a_server_that_goes_away_mid_read_is_one_line(pg_server: PgServer, stopped_midway: Any) -> None:
    table = pg_server.make_table("jsonb", [(k, "[]") for k in range(10)])
    with open_source(pg_server.url(table)) as source:
        batches = source.read(batch_size=4)
        assert len(next(batches)) == 4
        stopped_midway()
        with pytest.raises(StoreError) as error:
            next(batches)
    assert_one_line(error, "cannot read it")


def test_a_server_that_goes_away_before_a_write_is_one_line(pg_server: PgServer, stopped_midway: Any) -> None:
    table = pg_server.make_table("jsonb", [(1, "[1]")])
    with open_source(pg_server.url(table)) as source:
        (stored,) = next(source.read())
        stopped_midway()
        with pytest.raises(StoreError) as error:
            source.write([Replacement("1", stored.raw, b"[2]")])
    assert_one_line(error, "cannot write a batch of 1")

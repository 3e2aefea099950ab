"""The store's Python API: the record over any (key, bytes) pairs, and restore's own safety."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest

from histfix._cli.commands import main
from histfix.store import Options, examine, examine_all

from store_cases import REPAIRED, StoreUnderTest, histories


def test_examine_all_over_any_pairs_is_ordered_and_matches_the_record_with_two_workers() -> None:
    stored = list(histories().items())
    one = list(examine_all(stored, repair=True, batch_size=7))
    two = list(examine_all(iter(stored), repair=True, jobs=2, batch_size=7))
    assert one == two == [examine(k, v, Options(want_new=True)) for k, v in stored]
    assert [r.key for r in two] == [k for k, _ in stored]
    repaired = [r for r in two if r.new is not None]
    assert len(repaired) == REPAIRED
    # what it writes is itself a history repair leaves alone: a second pass changes nothing
    for record in repaired:
        assert record.new is not None
        assert examine(record.key, record.new).action in ("unchanged", "left_pending")
        assert examine(record.key, record.new, Options(include_pending=True)).action == "unchanged"


def test_the_record_is_picklable_and_the_same_after_a_round_trip() -> None:
    record = examine("k", histories()["example-trimmed_slice"], Options(provider="anthropic", want_new=True))
    assert record.removed and record.new is not None
    assert pickle.loads(pickle.dumps(record)) == record


def test_envelopes_keep_their_other_fields_and_name_their_accepted_fields() -> None:
    broken = histories()["example-aborted_mid_tool"].decode()
    for field in ("messages", "history", "message_history"):
        raw = f'{{"thread_id": "t", "{field}": {broken}, "meta": {{"a": 1}}}}'.encode()
        record = examine("k", raw, Options(want_new=True))
        assert record.action == "repair" and record.new is not None
        assert record.new.startswith(b'{"thread_id":"t","' + field.encode()) and record.new.endswith(
            b',"meta":{"a":1}}'
        )
    record = examine("k", b'{"id": 1, "msgs": []}')
    assert record.action == "not_loaded" and "messages, history, message_history" in (record.error or "")


def test_restore_skips_and_names_a_history_changed_since_the_repair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    before = store.values()
    backup = tmp_path / "backup.jsonl"
    assert main(["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1"]) == 0
    theirs = store.overwrite("example-trimmed_slice", b"[]")
    capsys.readouterr()
    assert main(["restore", str(backup), store.url]) == 1
    captured = capsys.readouterr()
    assert f"restored {REPAIRED - 1} histories" in captured.out
    assert "example-trimmed_slice: not restored" in captured.err
    after = store.values()
    assert after["example-trimmed_slice"] == theirs
    assert {k: v for k, v in after.items() if k != "example-trimmed_slice"} == {
        k: v for k, v in before.items() if k != "example-trimmed_slice"
    }


def test_restore_refuses_what_is_no_backup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = StoreUnderTest("dir", tmp_path)
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    assert main(["restore", str(tmp_path / "notes.jsonl"), store.url]) == 2
    assert "not a histfix backup" in capsys.readouterr().err


def test_workers_read_ahead_a_bounded_number_of_batches_whatever_the_store_size() -> None:
    from itertools import count

    from histfix.store import Stored
    from histfix.store._runner import examine_batches

    raw = histories()["example-aborted_mid_tool"]
    produced = 0

    def endless() -> Iterator[list[Stored]]:
        nonlocal produced
        for number in count():
            produced += 1
            yield [Stored(f"{number:09d}", raw)]

    results = examine_batches(endless(), Options(), jobs=2)
    for _ in range(3):
        next(results)
    results.close()
    # in flight at most 2 batches per worker, plus the one being handed out
    assert produced <= 3 + 2 * 2


def test_an_sqlite_table_named_with_its_schema_opens_and_reads(tmp_path: Path) -> None:
    """``table=main.T`` (or an attached database's name): the table's columns are looked up in
    that schema, where SQLite wants the schema named (before the pragma, not in its argument)."""
    import sqlite3

    from histfix.store import open_source

    path = tmp_path / "store.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE chats (id TEXT PRIMARY KEY, messages TEXT)")
        db.execute("INSERT INTO chats VALUES ('a', '[]')")
    db.close()
    with open_source(f"sqlite:///{path}?table=main.chats&key=id&column=messages") as source:
        assert [(s.key, s.raw) for batch in source.read() for s in batch] == [("a", b"[]")]


@pytest.mark.parametrize("provider", [None, "mistral", "any", "openai-responses"])
def test_the_record_reports_what_check_reports(provider: str | None) -> None:
    """The record's kind is ``classify``'s, its problems ``check``'s and its rejected kinds
    ``check(provider=...)``'s (or, without one, those some provider rejects), on every corpus
    history this release loads."""
    import histfix
    from histfix.store._record import PENDING_KINDS

    compared = 0
    for key, raw in histories().items():
        try:
            history = histfix.load_json(raw.decode())
        except (ValueError, UnicodeDecodeError):
            continue
        record = examine(key, raw, Options(provider=provider))
        kind = histfix.classify(history).kind
        assert record.kind == kind, key
        last = kind not in PENDING_KINDS
        found = histfix.check(history, repair_last_response=last)
        assert record.problems == tuple(p.kind for p in found), key
        if provider is None:
            assert record.rejected == tuple(p.kind for p in found if p.rejected_by), key
        else:
            marked = histfix.check(history, provider=provider, repair_last_response=last)
            assert record.rejected == tuple(p.kind for p in marked), key
        compared += 1
    assert compared > 50

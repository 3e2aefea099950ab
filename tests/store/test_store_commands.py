"""The store commands end to end on real directories, JSONL files and SQLite databases."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from histfix._cli.commands import main
from histfix.store._record import PENDING_KINDS, Options, examine

from store_cases import REPAIRED, STORE_KINDS, StoreUnderTest, histories, write_sqlite

ROOT = Path(__file__).parent.parent.parent


def expected_after_repair(store: StoreUnderTest, **options: object) -> dict[str, bytes]:
    """What each key must hold after a full repair run: the record's new bytes, else the original."""
    before = store.values()
    wanted = Options(want_new=True, **options)  # type: ignore[arg-type]
    return {key: examine(key, raw, wanted).new or raw for key, raw in before.items()}


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    return StoreUnderTest(request.param, tmp_path)


def test_scan_reads_only_and_exits_1_when_repair_would_change(
    store: StoreUnderTest, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store.snapshot()
    assert main(["scan", store.url, "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert f"repair would change: {REPAIRED} " in out
    assert "not loaded:" in out and "not UTF-8 text" in out and "truncated?" in out
    assert store.snapshot() == before


def test_scan_records_are_ordered_and_the_same_with_two_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    assert main(["scan", store.url, "--jsonl", "--jobs", "1", "--batch-size", "5"]) == 1
    one = capsys.readouterr().out
    assert main(["scan", store.url, "--jsonl", "--jobs", "2", "--batch-size", "5"]) == 1
    two = capsys.readouterr().out
    assert one == two
    keys = [json.loads(line)["key"] for line in one.splitlines()]
    assert keys == sorted(keys) and len(keys) == len(store.stored) + 1  # + the NULL row
    null = json.loads(one.splitlines()[keys.index("bad-null")])
    assert null["loads"] is False and "NULL" in null["error"]


def test_scan_exits_0_on_a_clean_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = {k: v for k, v in histories().items() if examine(k, v).action in ("unchanged", "left_pending")}
    url = write_sqlite(tmp_path / "clean.db", clean)
    with sqlite3.connect(tmp_path / "clean.db") as db:
        db.execute("DELETE FROM chats WHERE messages IS NULL")
    assert main(["scan", url, "--jobs", "1"]) == 0
    assert "repair would change: 0 " in capsys.readouterr().out


def test_dry_run_writes_nothing_and_says_what_it_would_do(
    store: StoreUnderTest, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store.snapshot()
    assert main(["repair", store.url, "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert f"dry run: {REPAIRED} histories would be repaired" in out
    # each history it would repair, with its changes, and the content it would remove
    trimmed = "example-trimmed_slice" + (".json" if store.kind == "dir" else "")
    assert f"\n{trimmed}: dropped_result 1\n" in out
    assert f"\n{trimmed}: messages[0]:" in out and "'status': 'shipped'" in out
    assert store.snapshot() == before


def test_repair_writes_each_repair_then_a_second_run_changes_nothing_then_restore_gives_originals(
    store: StoreUnderTest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store.snapshot()
    expected = expected_after_repair(store)
    backup = tmp_path / "backup.jsonl"
    assert (
        main(["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1", "--batch-size", "7"])
        == 0
    )
    assert f"repaired {REPAIRED} histories" in capsys.readouterr().out
    assert store.values() == expected

    after = store.snapshot()
    again = tmp_path / "again.jsonl"
    assert main(["repair", store.url, "--write", "--backup", str(again), "--jobs", "1"]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert store.snapshot() == after

    assert main(["restore", str(backup), store.url]) == 0
    assert f"restored {REPAIRED} histories" in capsys.readouterr().out
    assert store.snapshot() == before


def test_resumable_histories_stay_byte_for_byte_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("dir", tmp_path)
    before = store.values()
    pending = {k for k, v in before.items() if examine(k, v).kind in PENDING_KINDS}
    assert len(pending) >= 10  # 11 before the release that marks a run interrupted
    assert main(["repair", store.url, "--write", "--backup", str(tmp_path / "b1"), "--jobs", "1"]) == 0
    after = store.values()
    assert {k: after[k] for k in pending} == {k: before[k] for k in pending}
    capsys.readouterr()

    assert main(["repair", store.url, "--include-pending", "--jobs", "1"]) == 1
    assert "would be repaired" in capsys.readouterr().out
    args = ["repair", store.url, "--include-pending", "--write", "--backup", str(tmp_path / "b2")]
    assert main([*args, "--jobs", "1"]) == 0
    changed = {k for k, v in store.values().items() if v != after[k]}
    assert changed and changed <= pending


def test_provider_repair_writes_the_profile_and_reports_removed_content_with_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    expected = expected_after_repair(store, provider="anthropic")
    args = ["repair", store.url, "--provider", "anthropic", "--write", "--backup", str(tmp_path / "b")]
    assert main([*args, "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert store.values() == expected
    # the trimmed example's orphaned result is dropped: its key and its content are in the report
    assert "example-trimmed_slice: messages[0]:" in out and "'status': 'shipped'" in out
    assert main(["scan", store.url, "--provider", "anthropic", "--jobs", "1"]) == 0


def test_a_bad_provider_or_store_string_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = write_sqlite(tmp_path / "a.db", {"k": b"[]"})
    cases = [
        (["scan", url, "--provider", "nope"], "--provider"),
        (["scan", url.replace("table=chats", "table=nope")], "no table 'nope'"),
        (["scan", url.replace("column=messages", "column=nope")], "has no column 'nope'"),
        (["scan", url.replace("key=id", "key=nope")], "no key column 'nope'"),
        (["scan", url.replace("&column=messages", "")], "missing column"),
        (["scan", url.replace("table=chats", "table=x;drop")], "not a plain SQL name"),
        (["scan", f"sqlite:///{tmp_path}/missing.db?table=t&key=k&column=c"], "no SQLite file"),
        (["scan", "redis://localhost/0"], "unknown store scheme"),
        (["scan", str(tmp_path / "nothing-here")], "no such directory or file"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)
    for argv, message in [
        (["repair", url, "--write"], "--write needs --backup"),
        (["repair", url, "--resume"], "--resume needs --write"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)


def test_postgres_without_psycopg_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what a missing package looks like to import
    assert main(["scan", "postgresql://u:secret@127.0.0.1:1/db?table=t&key=k&column=c"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'histfix[postgres]'" in err and "secret" not in err


def test_an_existing_backup_is_never_overwritten(
    store: StoreUnderTest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backup = tmp_path / "backup.jsonl"
    backup.write_text("precious\n")
    before = store.snapshot()
    assert main(["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert backup.read_text() == "precious\n" and store.snapshot() == before


def test_symlinks_fifos_and_symlinked_folders_are_reported_never_followed_or_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("dir", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.json"
    broken = store.stored["example-aborted_mid_tool"]
    target.write_bytes(broken)
    (store.path / "link.json").symlink_to(target)
    (store.path / "linked-folder").symlink_to(outside, target_is_directory=True)
    os.mkfifo(store.path / "fifo.json")
    backup = tmp_path / "backup.jsonl"
    assert main(["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1", "--jsonl"]) == 0
    records = {r["key"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert "symlink" in records["link.json"]["error"]
    assert "FIFO" in records["fifo.json"]["error"]
    assert not any(key.startswith("linked-folder") for key in records)
    assert target.read_bytes() == broken
    assert (store.path / "link.json").is_symlink()
    assert os.path.exists(store.path / "fifo.json") and not (store.path / "fifo.json").is_file()

    # a backup or a JSONL store that is a symlink is refused, not written through
    (tmp_path / "store-link.jsonl").symlink_to(tmp_path / "x.jsonl")
    assert main(["scan", str(tmp_path / "store-link.jsonl")]) == 2
    assert "symlink" in capsys.readouterr().err
    (tmp_path / "backup-link.jsonl").symlink_to(target)
    args = ["repair", store.url, "--write", "--backup", str(tmp_path / "backup-link.jsonl"), "--jobs", "1"]
    assert main(args) == 2
    assert target.read_bytes() == broken


def test_jsonl_keeps_blank_lines_and_untouched_lines_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = histories()
    path = tmp_path / "mixed.jsonl"
    broken = stored["example-aborted_mid_tool"]
    clean = next(v for k, v in stored.items() if examine(k, v).action == "unchanged")
    clean_line = (
        b'{ "conversation_id" : 7, "history": '
        + json.dumps(json.loads(clean), indent=None).encode()
        + b', "x": [1,  2] }'
    )
    lines = [
        b"",
        broken.replace(b"\n", b""),
        b"   ",
        clean_line,
        b'{"messages": ' + broken.replace(b"\n", b"") + b', "key": "late"}',
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert main(["scan", str(path), "--jsonl", "--jobs", "1"]) == 1
    keys = [json.loads(line)["key"] for line in capsys.readouterr().out.splitlines()]
    assert keys == ["2", "7", "late"]
    assert main(["repair", str(path), "--write", "--backup", str(tmp_path / "b"), "--jobs", "1"]) == 0
    written = path.read_bytes().split(b"\n")
    assert written[0] == b"" and written[2] == b"   " and written[3] == clean_line
    assert json.loads(written[4])["key"] == "late" and written[1] != lines[1]


def test_help_and_info_import_nothing_of_the_store() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from histfix._cli.commands import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(['--help'])\n"
        "    except SystemExit: pass\n"
        "    main(['info'])\n"
        "loaded = [m for m in sys.modules if m.startswith('histfix.store') or m in ('sqlite3', 'tqdm', 'concurrent.futures.process')]\n"
        "print(loaded)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert ran.stdout.strip() == "[]"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_rate_and_eta_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tqdm")
    url = write_sqlite(tmp_path / "a.db", histories())
    assert main(["scan", url, "--jobs", "1"]) == 1
    assert capsys.readouterr().err == ""  # not a terminal: silent

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["scan", url, "--jobs", "1"]) == 1
    shown = terminal.getvalue()
    count = len(histories()) + 1  # and the NULL row write_sqlite adds
    assert f"{count}/{count}" in shown and "histories/s" in shown and "<00:00" in shown  # count, rate, ETA

    monkeypatch.setitem(sys.modules, "tqdm", None)  # not installed: silent too
    quiet = _Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main(["scan", url, "--jobs", "1"]) == 1
    assert quiet.getvalue() == ""


def test_repair_tells_a_store_from_one_history_file(tmp_path: Path) -> None:
    from histfix._cli.commands import command_forms

    (tmp_path / "folder").mkdir()
    form = command_forms("repair").form
    assert form([str(tmp_path / "folder")]) == "store"
    assert form(["chats.jsonl", "--write"]) == "store"
    assert form(["--provider", "anthropic", "sqlite:///a.db?table=t&key=k&column=c"]) == "store"
    assert form(["history.json", "-o", "out.jsonl"]) == "file"
    assert form(["-o", "out.jsonl", "history.json"]) == "file"
    assert form(["-"]) == "file"
    assert form(["py:app:store", "--write"]) == "conversation"


def test_store_repair_rejects_a_bad_backend_setting_like_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = write_sqlite(tmp_path / "a.db", {"k": b"[]"})
    monkeypatch.setenv("HISTFIX_BACKEND", "nonsense")
    assert main(["repair", url]) == 2
    assert "HISTFIX_BACKEND" in capsys.readouterr().err

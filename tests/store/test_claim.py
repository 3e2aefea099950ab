"""A file store (directory, JSONL, SQLite) is claimed by one histfix run at a time.

A writing run (``repair --write``, ``restore``) needs the store to itself, reading runs (scans,
dry runs) share it; the claim is an ``flock`` on the store itself, so it dies with its process
however the process dies, and a JSONL store keeps it across the rewrite that replaces its file.
The PostgreSQL claim is tested with the other process faults (test_process_faults.py).
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from histfix._cli.commands import main
from histfix.store import Backup, Options, StoreError, open_source, repair_source

from store_cases import EXAMPLES

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no flock: a file store is not claimed")

BROKEN = (EXAMPLES / "aborted_mid_tool.json").read_bytes().replace(b"\n", b" ")
COMPLETE = b"[]"
KINDS = ["dir", "jsonl", "sqlite"]


class Store:
    """A small store of one broken and one complete history: its string, its path and its bytes."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        if kind == "dir":
            self.path = folder / "chats"
            self.path.mkdir()
            (self.path / "a.json").write_bytes(BROKEN)
            (self.path / "b.json").write_bytes(COMPLETE)
            self.url = str(self.path)
        elif kind == "jsonl":
            self.path = folder / "chats.jsonl"
            lines = [b'{"id": "a", "messages": %s}' % BROKEN, b'{"id": "b", "messages": []}']
            self.path.write_bytes(b"\n".join(lines) + b"\n")
            self.url = str(self.path)
        else:
            self.path = folder / "chats.db"
            with sqlite3.connect(self.path) as db:
                db.execute("CREATE TABLE chats (id TEXT PRIMARY KEY, messages TEXT)")
                db.executemany("INSERT INTO chats VALUES (?, ?)", [("a", BROKEN.decode()), ("b", "[]")])
            db.close()
            self.url = f"sqlite:///{self.path}?table=chats&key=id&column=messages"

    def snapshot(self) -> object:
        if self.kind == "dir":
            return {path.name: path.read_bytes() for path in sorted(self.path.iterdir())}
        if self.kind == "jsonl":
            return self.path.read_bytes()
        db = sqlite3.connect(self.path)
        try:
            return db.execute("SELECT id, messages FROM chats ORDER BY id").fetchall()
        finally:
            db.close()


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return Store(request.param, tmp_path)


def refusal(doing: str, pid: int, path: Path) -> str:
    """The refusal's line; it names the holder where Linux's /proc/locks lists its lock on the file."""
    inode = f":{os.stat(path).st_ino} "
    try:
        listed = any(
            f" {pid} " in line and inode in line for line in Path("/proc/locks").read_text().splitlines()
        )
    except OSError:
        listed = False
    who = f" (process {pid})" if listed else ""
    return f"another histfix run is {doing} this store{who}; let it finish, or stop it, then run this again"


def test_a_second_writing_run_is_refused_in_one_line_with_nothing_read_or_written(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store.snapshot()
    backup = tmp_path / "backup.jsonl"
    with open_source(store.url) as first:
        first.claim(writing=True)  # type: ignore[attr-defined]
        for second in (
            ["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1"],
            ["scan", store.url, "--jobs", "1"],
            ["repair", store.url, "--jobs", "1"],
        ):
            assert main(second) == 2
            out, err = capsys.readouterr()
            assert out == ""
            assert err == f"histfix: {store.url}: {refusal('writing', os.getpid(), store.path)}\n"
        with open_source(store.url) as second_source:
            with pytest.raises(StoreError, match=re.escape(refusal("writing", os.getpid(), store.path))):
                second_source.claim(writing=True)  # type: ignore[attr-defined]
            records: list[object] = []
            with pytest.raises(StoreError, match="another histfix run is writing this store"):
                repair_source(second_source, Options(), backup=None, on_record=records.append)
            assert records == []
    assert not backup.exists()
    assert store.snapshot() == before
    # the first run gone, the store is free again
    assert main(["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1"]) == 0
    assert store.snapshot() != before


def test_reading_runs_share_the_store_and_a_writing_run_is_refused_beside_them(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_source(store.url) as first:
        first.claim(writing=False)  # type: ignore[attr-defined]
        assert main(["scan", store.url, "--jobs", "1"]) == 1
        assert main(["repair", store.url, "--jobs", "1"]) == 1
        capsys.readouterr()
        before = store.snapshot()
        assert (
            main(["repair", store.url, "--write", "--backup", str(tmp_path / "bk.jsonl"), "--jobs", "1"]) == 2
        )
        assert (
            capsys.readouterr().err
            == f"histfix: {store.url}: {refusal('reading', os.getpid(), store.path)}\n"
        )
        assert store.snapshot() == before
        assert [stored.key for batch in first.read() for stored in batch] == (
            ["a.json", "b.json"] if store.kind == "dir" else ["a", "b"]
        )


def test_a_reading_run_beside_a_writing_run_is_refused(store: Store) -> None:
    with open_source(store.url) as writer, open_source(store.url) as reader:
        writer.claim(writing=True)  # type: ignore[attr-defined]
        with pytest.raises(StoreError, match="another histfix run is writing this store"):
            reader.claim(writing=False)  # type: ignore[attr-defined]


HOLDER = """
import fcntl, os, sys, time
flags = os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(sys.argv[1]) else 0)
fcntl.flock(os.open(sys.argv[1], flags), fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_the_claim_dies_with_a_holder_killed_by_sigkill(store: Store) -> None:
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(store.path)], stdout=subprocess.PIPE) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
            with open_source(store.url) as source:
                with pytest.raises(StoreError) as refused:
                    source.claim(writing=False)  # type: ignore[attr-defined]
                assert refusal("writing", holder.pid, store.path) in str(refused.value)
                holder.send_signal(signal.SIGKILL)
                assert holder.wait(timeout=10) == -signal.SIGKILL
                source.claim(writing=True)  # type: ignore[attr-defined]
        finally:
            holder.kill()


def test_the_claim_is_never_inherited_by_a_child_process(store: Store) -> None:
    with open_source(store.url) as source:
        source.claim(writing=True)  # type: ignore[attr-defined]
        fd = source._claim._fd  # type: ignore[attr-defined]
        assert fd is not None and not os.get_inheritable(fd)


def test_sqlite_works_for_the_run_holding_the_claim_and_beside_a_refused_one(tmp_path: Path) -> None:
    store = Store("sqlite", tmp_path)
    db = sqlite3.connect(store.path)
    db.execute("PRAGMA journal_mode=WAL")  # SQLite keeps a lock on the file while a WAL database is open
    db.close()
    with open_source(store.url) as first, open_source(store.url) as second:
        first.claim(writing=True)  # type: ignore[attr-defined]
        with pytest.raises(StoreError):
            second.claim(writing=True)  # type: ignore[attr-defined]
        assert [s.key for batch in second.read() for s in batch] == ["a", "b"]
        result = repair_source(
            first, Options(), backup=Backup(tmp_path / "bk.jsonl", first.url, resume=False)
        )
        assert result.written == 1
    assert dict(store.snapshot())["a"] != BROKEN.decode()  # type: ignore[call-overload]


def test_a_jsonl_repair_keeps_its_claim_across_the_replace_of_its_file(tmp_path: Path) -> None:
    store = Store("jsonl", tmp_path)
    inode = store.path.stat().st_ino
    with open_source(store.url) as source:
        source.claim(writing=True)  # type: ignore[attr-defined]
        result = repair_source(
            source, Options(), backup=Backup(tmp_path / "bk.jsonl", source.url, resume=False)
        )
        assert result.written == 1 and store.path.stat().st_ino != inode
        with (
            open_source(store.url) as other,
            pytest.raises(StoreError, match="another histfix run is writing"),
        ):
            other.claim(writing=False)  # type: ignore[attr-defined]
    with open_source(store.url) as other:
        other.claim(writing=True)  # type: ignore[attr-defined]


def test_a_run_that_takes_the_new_jsonl_file_as_it_is_put_in_place_stops_the_writer_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histfix._atomic_write import TemporaryFile

    store = Store("jsonl", tmp_path)
    put_in_place = TemporaryFile.replace
    intruder = open_source(store.url)

    def replace_and_be_overtaken(self: TemporaryFile) -> None:
        put_in_place(self)
        intruder.claim(writing=False)  # type: ignore[attr-defined]

    monkeypatch.setattr(TemporaryFile, "replace", replace_and_be_overtaken)
    try:
        with open_source(store.url) as source:
            source.claim(writing=True)  # type: ignore[attr-defined]
            with pytest.raises(StoreError, match="another histfix run is working on this store") as stopped:
                repair_source(
                    source, Options(), backup=Backup(tmp_path / "bk.jsonl", source.url, resume=False)
                )
            assert "\n" not in str(stopped.value)
    finally:
        intruder.close()


@pytest.mark.parametrize("replacements", [1, 99])
def test_a_claim_is_taken_on_the_file_the_name_holds_once_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replacements: int
) -> None:
    """A JSONL file replaced between the claim's open and its lock: the claim is tried again on the
    new file, and given up in one line if the name never holds still."""
    from histfix.store.sources import _claim

    store = Store("jsonl", tmp_path)
    lock = _claim._try_lock
    left = [replacements]

    def replaced_first(fd: int, *, writing: bool) -> bool:
        if left[0]:
            left[0] -= 1
            copy = tmp_path / "copy.jsonl"
            copy.write_bytes(store.path.read_bytes())
            os.replace(copy, store.path)
        return lock(fd, writing=writing)

    monkeypatch.setattr(_claim, "_try_lock", replaced_first)
    with open_source(store.url) as source:
        if replacements > 1:
            with pytest.raises(
                StoreError, match="replaced again and again while histfix claimed it; run this"
            ):
                source.claim(writing=True)  # type: ignore[attr-defined]
            return
        source.claim(writing=True)  # type: ignore[attr-defined]
        monkeypatch.setattr(_claim, "_try_lock", lock)
        with (
            open_source(store.url) as other,
            pytest.raises(StoreError, match="another histfix run is writing"),
        ):
            other.claim(writing=False)  # type: ignore[attr-defined]

"""The JSONL source's rewrite: another writer's change made while the file is copied is kept.

A JSONL file is rewritten whole, through a temporary file and one rename, so a line someone else
appends (or a file they replace) while histfix copies it would be lost by the rename. The source
compares the file before and after the copy and then leaves it as the other writer left it,
reporting the whole batch as changed since read (docs/stores.md, Safety).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from histfix.store import Backup, Options, Replacement, WriteOutcome, repair_source
from histfix.store.sources._files import JSONLSource

from store_cases import EXAMPLES

BROKEN = (EXAMPLES / "aborted_mid_tool.json").read_bytes().replace(b"\n", b" ")
THEIRS = b'{"id": "added-by-them", "messages": []}\n'


class RacedJSONL(JSONLSource):
    """A real JSONL source whose file another writer changes while ``write`` copies it.

    ``_lines`` is the one reader of the file; during the next ``races`` rewrites the other writer
    acts once the copy has read every line, the moment before the source decides whether to rename
    its copy over the file. Reads outside a rewrite are left alone.
    """

    def __init__(self, path: Path, other_writer: Callable[[Path], None], races: int) -> None:
        super().__init__(path)
        self.other_writer = other_writer
        self.races = races
        self.rewriting = False

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        self.rewriting = True
        try:
            return super().write(batch)
        finally:
            self.rewriting = False

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        yield from super()._lines()
        if self.rewriting and self.races:
            self.races -= 1
            self.other_writer(self.path)


def append_a_line(path: Path) -> None:
    with open(path, "ab") as handle:
        handle.write(THEIRS)


def replace_the_file(path: Path) -> None:
    """What an application writing atomically does: a new file renamed over the old one."""
    fresh = path.with_name("theirs.tmp")
    fresh.write_bytes(path.read_bytes() + THEIRS)
    os.replace(fresh, path)


def store(tmp_path: Path) -> Path:
    path = tmp_path / "chats.jsonl"
    path.write_bytes(b'{"id": "a", "messages": ' + BROKEN + b"}\n" + b'{"id": "b", "messages": []}\n')
    return path


@pytest.mark.parametrize("other_writer", [append_a_line, replace_the_file], ids=["append", "replace"])
def test_a_write_made_during_the_rewrite_is_kept_and_the_batch_reported(
    tmp_path: Path, other_writer: Callable[[Path], None]
) -> None:
    path = store(tmp_path)
    before = path.read_bytes()
    source = RacedJSONL(path, other_writer, races=1)
    old = b'{"id": "a", "messages": ' + BROKEN + b"}"
    outcomes = source.write([Replacement("a", old, b'{"id": "a", "messages": []}')])
    assert outcomes == [WriteOutcome.CHANGED_SINCE_READ]
    assert path.read_bytes() == before + THEIRS  # their line kept, our repair not written over it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.jsonl"]  # no temporary file left


def test_the_same_rewrite_without_another_writer_is_written(tmp_path: Path) -> None:
    path = store(tmp_path)
    source = RacedJSONL(path, append_a_line, races=0)  # nobody else writes
    old = b'{"id": "a", "messages": ' + BROKEN + b"}"
    assert source.write([Replacement("a", old, b'{"id": "a", "messages": []}')]) == [WriteOutcome.WRITTEN]
    assert path.read_bytes() == b'{"id": "a", "messages": []}\n{"id": "b", "messages": []}\n'


def test_a_repair_run_reports_the_raced_history_and_writes_nothing(tmp_path: Path) -> None:
    path = store(tmp_path)
    before = path.read_bytes()
    source = RacedJSONL(path, append_a_line, races=1)
    backup = Backup(tmp_path / "backup.jsonl", source.url, resume=False)
    try:
        result = repair_source(source, Options(), backup=backup, jobs=1)
    finally:
        backup.close()
    assert result.written == 0
    assert result.skipped == [("a", "changed by someone else since it was read: left as they wrote it")]
    assert path.read_bytes() == before + THEIRS

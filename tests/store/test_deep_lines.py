"""One stored history nested deeper than pydantic-ai reads: its key is reported with why, the rest run.

A JSONL store is the case a broken exporter makes (one line among good ones), scanned by the
command in a child process as a user runs it, and repaired with ``--write``; a directory and a
SQLite table go through the same record, checked in this process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from histfix._cli.commands import main
from histfix.store._record import examine

from deep import deep_history, opening_column, too_deep
from store_cases import EXAMPLES, write_directory, write_sqlite

LEVELS = 3000


def good() -> dict[str, bytes]:
    return {f"example-{path.stem}": path.read_bytes() for path in sorted(EXAMPLES.glob("*.json"))}


def jsonl(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Good envelope lines around a deep envelope, a deep bare list and a deep envelope whose key
    comes last (its key is then its line number, as for any line whose key cannot be read);
    returns the file and the line each deep key must be reported with."""
    deep = deep_history(LEVELS)
    first, second, third, fourth = (
        json.dumps({"id": key, "messages": json.loads(raw)}) for key, raw in good().items()
    )
    deep_lines = {
        "deep-envelope": f'{{"id": "deep-envelope", "messages": {deep}}}',
        "5": deep,  # keyed by its line number
        "7": f'{{"messages": {deep}, "id": "deep-key-last"}}',
    }
    lines = [first, deep_lines["deep-envelope"], second, third, deep_lines["5"], fourth, deep_lines["7"]]
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    levels = {"deep-envelope": LEVELS + 1, "5": LEVELS, "7": LEVELS + 1}
    return path, {key: too_deep(levels[key], opening_column(line)) for key, line in deep_lines.items()}


def test_a_scan_reports_the_deep_lines_and_scans_the_rest(tmp_path: Path) -> None:
    path, reasons = jsonl(tmp_path)
    before = path.read_bytes()
    ran = subprocess.run(
        [sys.executable, "-m", "histfix", "scan", str(path), "--jsonl"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 1, ran.stderr  # the good histories need repair: nothing stopped the run
    assert "Traceback" not in ran.stderr
    records = {row["key"]: row for row in map(json.loads, ran.stdout.splitlines())}
    assert {key: row["error"] for key, row in records.items() if not row["loads"]} == reasons
    assert all(records[key]["loads"] for key in good())
    assert path.read_bytes() == before


def test_a_repair_writes_the_rest_and_leaves_the_deep_lines_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, reasons = jsonl(tmp_path)
    deep_lines = [line for line in path.read_bytes().split(b"\n") if line.count(b"[") > LEVELS]
    assert main(["repair", str(path), "--write", "--backup", str(tmp_path / "backup.jsonl")]) in (0, 1)
    out = capsys.readouterr().out
    for key, reason in reasons.items():
        assert f"{key}: {reason}" in out
    after = path.read_bytes().split(b"\n")
    assert [line for line in after if line.count(b"[") > LEVELS] == deep_lines
    assert main(["scan", str(path)]) == 0  # every good history repaired, the deep ones still reported
    assert "not loaded:" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["dir", "sqlite"])
def test_every_store_kind_reports_it_through_the_same_record(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = {**good(), "deep": deep_history(LEVELS).encode()}
    url = (
        str(write_directory(tmp_path / "chats", stored))
        if kind == "dir"
        else write_sqlite(tmp_path / "c.db", stored)
    )
    assert main(["scan", url, "--jsonl"]) == 1
    records = {row["key"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    deep_key = next(key for key in records if "deep" in key)
    text = deep_history(LEVELS)
    assert records[deep_key]["error"] == too_deep(LEVELS, opening_column(text))
    assert sum(row["loads"] for row in records.values()) == len(good())


def test_the_record_itself_never_raises() -> None:
    """The worker's unit of work, on a value past Python's recursion limit: a record, not an error."""
    raw = b'{"key": "k", "history": ' + deep_history(100_000).encode() + b"}"
    record = examine("k", raw)
    assert (record.action, record.error) == ("not_loaded", too_deep(100_001, opening_column(raw.decode())))

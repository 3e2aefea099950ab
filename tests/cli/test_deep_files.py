"""A history file nested deeper than pydantic-ai reads: one line and exit 2, never a traceback.

Run in a child process, as a user runs it; the other commands that read one history file are
run in this process (the same loading path, without another interpreter's start-up).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from histfix._cli.commands import main

from deep import deep_history, opening_column, too_deep


@pytest.fixture
def deep_file(tmp_path: Path) -> tuple[Path, str]:
    """A real history whose tool arguments nest 3000 levels, and the line that names it."""
    text = deep_history(3000)
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    return path, too_deep(3000, opening_column(text))


def test_check_in_a_child_process_prints_one_line_and_exits_2(deep_file: tuple[Path, str]) -> None:
    path, line = deep_file
    ran = subprocess.run(
        [sys.executable, "-m", "histfix", "check", str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (2, "", f"histfix: {path}: {line}\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["repair", "{file}", "-o", "{out}"],
        ["trim", "{file}", "--turns", "1"],
        ["show", "{file}"],
        ["compare", "{file}"],
    ],
    ids=["repair", "trim", "show", "compare"],
)
def test_every_command_that_reads_a_history_says_the_same(
    argv: list[str], deep_file: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, line = deep_file
    out = tmp_path / "out.json"
    assert main([a.format(file=path, out=out) for a in argv]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"histfix: {path}: {line}\n")
    assert not out.exists()


def test_standard_input_is_named_as_such(
    deep_file: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, line = deep_file
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert main(["check", "-"]) == 2
    assert capsys.readouterr().err == f"histfix: standard input: {line}\n"

"""A stdout whose reader goes away (``histfix scan ... --jsonl | head``): every command ends quietly
with 141, as standard tools do, with no traceback and no ``Exception ignored`` message, and a
``repair --write`` leaves every history the original or the repair, resumable and restorable.

Each test runs histfix in a process of its own on a real pipe and closes the pipe's reading end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from histfix._cli.commands import main

from store_cases import StoreUnderTest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "aborted_mid_tool.json"


def run_until_closed(argv: list[str], *, lines_read: int) -> tuple[int, str]:
    """histfix ``argv`` with stdout on a pipe whose reader leaves after ``lines_read`` lines; its
    exit status and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen(
        [sys.executable, "-m", "histfix", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert child.stdout is not None and child.stderr is not None
    for _ in range(lines_read):
        assert child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read().decode()
    return child.wait(timeout=120), err


def assert_quiet(err: str) -> None:
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "{store}", "--jsonl", "--jobs", "1"],
        ["repair", "{store}", "--jobs", "2"],  # the dry run's report, from worker processes
        ["repair", str(EXAMPLE)],  # one history, to stdout
    ],
    ids=["scan-jsonl", "repair-dry-run", "repair-file"],
)
def test_a_reader_that_leaves_ends_the_command_quietly_with_141(argv: list[str], tmp_path: Path) -> None:
    store = StoreUnderTest("dir", tmp_path)
    argv = [arg.replace("{store}", store.url) for arg in argv]
    before = store.snapshot()
    # A reader gone before the first line: every command meets it, however little it prints.
    status, err = run_until_closed(argv, lines_read=0)
    assert status == 141, err
    assert_quiet(err)
    assert err == ""
    assert store.snapshot() == before


def test_a_write_run_whose_reader_leaves_stops_between_batches_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    before, old = store.snapshot(), store.values()
    backup = tmp_path / "backup.jsonl"
    argv = ["repair", store.url, "--write", "--backup", str(backup), "--jsonl", "--batch-size", "3"]
    status, err = run_until_closed([*argv, "--jobs", "1"], lines_read=10)
    assert status == 141, err
    assert_quiet(err)
    assert err.count("\n") == 1 and "output closed, stopped; written through" in err, err
    now = store.values()
    assert now != old  # some batches were written before the reader left

    assert main([*argv, "--resume", "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["restore", str(backup), store.url]) == 0
    assert store.snapshot() == before

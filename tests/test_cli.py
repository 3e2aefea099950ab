"""The histfix command line: every command, every error case (exit code and message), --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._cli import build_parser, main, write_atomically

from corpus import CASES
from dsl import Case, load_history
from strict import pairing_problems

EXAMPLES = Path(__file__).parent.parent / "examples"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def histfix_command(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "histfix", *argv], input=stdin, capture_output=True, check=False
    )


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "history.json"
    path.write_bytes((EXAMPLES / "aborted_mid_tool.json").read_bytes())
    return path


# --- the commands -----------------------------------------------------------------------------------


def test_check_finds_problems_and_exits_1(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    code, out, err = run(capsys, "check", str(broken))
    assert code == 1
    assert "dangling_call" in out and "call_1 (retrieve_documents)" in out
    assert out.strip().endswith("1 problem; `histfix repair` fixes what it can")
    assert err == ""


def test_check_json(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    code, out, _ = run(capsys, "check", str(broken), "--json")
    assert code == 1
    (problem,) = json.loads(out)
    assert problem == {
        "kind": "dangling_call",
        "message_index": 1,
        "part_index": 0,
        "tool_call_id": "call_1",
        "tool_name": "retrieve_documents",
        "description": "tool call 'call_1' (retrieve_documents) has no result",
    }


def test_repair_writes_json_and_report(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    out_file = tmp_path / "fixed.json"
    code, out, err = run(capsys, "repair", str(broken), "-o", str(out_file), "--report")
    assert (code, out) == (0, "")
    assert err == "messages[1]: closed call 'call_1' (retrieve_documents) with a synthesized return\n"
    repaired = pai.ModelMessagesTypeAdapter.validate_json(out_file.read_bytes())
    assert repaired == histfix.repair(pai.ModelMessagesTypeAdapter.validate_json(broken.read_bytes()))
    assert run(capsys, "check", str(out_file))[0] == 0


def test_repair_from_stdin_to_stdout(broken: Path) -> None:
    done = histfix_command("repair", "-", stdin=broken.read_bytes())
    assert done.returncode == 0, done.stderr
    assert pai.ModelMessagesTypeAdapter.validate_json(done.stdout)[2].parts[0].tool_call_id == "call_1"


def test_repair_keep_last_response(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "trailing.json"
    path.write_bytes((EXAMPLES / "aborted_mid_tool.json").read_bytes())
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data[:2]))
    code, out, _ = run(capsys, "repair", str(path), "--keep-last-response")
    assert code == 0
    assert len(json.loads(out)) == 2  # the trailing call stays open for the run to execute


def test_repair_in_place(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    before = broken.read_bytes()
    broken.chmod(0o640)
    assert run(capsys, "repair", str(broken), "--in-place")[0] == 0
    assert broken.read_bytes() != before
    assert broken.stat().st_mode & 0o777 == 0o640  # permissions survive the rename
    assert run(capsys, "check", str(broken))[0] == 0
    assert [p.name for p in broken.parent.iterdir()] == [broken.name]  # no temporary left behind


def test_trim(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    history = [
        m
        for t in range(3)
        for m in (
            {
                "kind": "request",
                "parts": [
                    {"part_kind": "user-prompt", "content": f"q{t}", "timestamp": "2026-01-01T00:00:00Z"}
                ],
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": f"a{t}"}],
                "timestamp": "2026-01-01T00:00:01Z",
            },
        )
    ]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(history))
    code, out, _ = run(capsys, "trim", str(path), "--turns", "1")
    assert code == 0
    assert [m["parts"][0]["content"] for m in json.loads(out)] == ["q2", "a2"]
    code, _, err = run(capsys, "trim", str(path), "--max-tokens", "1")
    assert code == 2
    assert err.startswith("histfix: the last turn alone needs an estimated")


def test_show_prints_before_and_after(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", str(EXAMPLES / "parallel_call_crash.json"))
    assert code == 0
    assert "before (4 messages):" in out and "after (3 messages):" in out
    assert "[synthesized]" in out


def test_info(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "info")
    assert code == 0
    info = histfix.backend_info()
    assert f"pydantic-ai: {info.distribution} {info.version}" in out
    assert f"repair path: {info.backend}: {info.reason}" in out


# --- every error case: one line on stderr, exit 2 ---------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "is empty, expected a pydantic-ai message history"),
        (b"  \n", "is empty"),
        (
            b'[{"kind": "request", "parts": [',
            "not valid JSON (line 1, column 32: Expecting value); the document ends early",
        ),
        (b"\xff\xfe\x00", "not UTF-8 text"),
        (b'{"kind": "request"}', "not a history: expected a JSON list of messages, got an object"),
        (
            b'[{"kind": "request", "parts": [{"part_kind": "tool-return", "tool_call_id": "x"}]}]',
            "messages[0].parts[0].tool_name: Field required (pydantic-ai ",
        ),
        (
            b'[{"kind": "memo", "parts": []}]',
            "messages[0]: expected kind 'request' or 'response', found kind 'memo'",
        ),
    ],
)
def test_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "in.json"
    if content is not None:
        path.write_bytes(content)
    for command in ("check", "repair", "show"):
        code, out, err = run(capsys, command, str(path))
        assert code == 2
        assert out == ""
        assert err.startswith(f"histfix: {path}: ") and message in err
        assert err.count("\n") == 1


def test_directory_and_unreadable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "check", str(tmp_path))
    assert (code, err) == (2, f"histfix: {tmp_path}: is a directory, not a history file\n")
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.json"
        locked.write_text("[]")
        locked.chmod(0)
        code, _, err = run(capsys, "check", str(locked))
        assert code == 2 and "cannot read it" in err


def test_unwritable_output_leaves_nothing_behind(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    code, out, err = run(capsys, "repair", str(broken), "-o", str(tmp_path / "missing" / "out.json"))
    assert code == 2
    assert err.startswith(f"histfix: {tmp_path / 'missing' / 'out.json'}: cannot write it")
    assert out == ""


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "kept.json"
    target.write_text("old")

    def boom(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomically(target, b"new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["trim", "x.json"], "trim needs --turns N and/or --max-tokens N"),
        (["trim", "x.json", "--turns", "0"], "expected a positive whole number, got 0"),
        (["repair", "-", "--in-place"], "--in-place needs a file, not stdin"),
        (["repair", "x.json", "--in-place", "-o", "y.json"], "not allowed with argument"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["check"], "the following arguments are required: file"),
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


# --- help ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "repair", "trim", "show", "info"])
def test_every_command_has_help_with_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: histfix {command}")
    assert f"example:\n  histfix {command}" in out


def test_top_level_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    help_text = build_parser().format_help()
    for command in ("check", "repair", "trim", "show", "info"):
        assert command in help_text
    assert "examples:" in help_text
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"histfix {histfix.__version__}\n"
    assert main([]) == 2  # no command: the help, and a usage exit status


@pytest.mark.parametrize("argv", [["info"], ["--help"], ["--version"]])
def test_fast_paths_do_not_import_pydantic_ai(argv: list[str]) -> None:
    code = (
        "import sys, time; t = time.perf_counter(); from histfix._cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print('IMPORTED' if 'pydantic_ai' in sys.modules else 'clean', time.perf_counter() - t)"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-2] == "clean"
    assert time.perf_counter() - start < 3  # generous for CI; measured ~0.06-0.09 s on the 2-core machine


# --- the corpus through the command line --------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_flags_broken_and_passes_repaired(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: Case
) -> None:
    history = load_history(case)
    path = tmp_path / "h.json"
    path.write_bytes(pai.ModelMessagesTypeAdapter.dump_json(history))
    code, _, _ = run(capsys, "check", str(path))
    assert code == (1 if histfix.check(history) else 0)
    if pairing_problems(history) or histfix.repair(history) != history:
        assert code == 1  # every broken history is flagged
    fixed = tmp_path / "fixed.json"
    assert run(capsys, "repair", str(path), "-o", str(fixed))[0] == 0
    repaired = pai.ModelMessagesTypeAdapter.validate_json(fixed.read_bytes())
    if not pairing_problems(repaired):
        assert run(capsys, "check", str(fixed))[0] == 0  # every repaired (valid) history passes

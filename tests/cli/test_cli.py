"""The histfix command line: every command, every error case (exit code and message), --help.

In-process, on every release; what needs a fresh process (the fast paths' import graph, the early
HISTFIX_BACKEND error, a real stdin pipe) is release-independent: tests/test_processes.py."""

from __future__ import annotations

import io
import json
import os
import select
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._atomic_write import write_atomically
from histfix._cli.commands import build_parser, main
from histfix._release import table
from histfix._release.pinned import release_pins
from histfix._release.switches import has
from histfix._trim import turn_starts

from corpus import CASES
from dsl import Case, call, load_history, real, req, ret, system, text, to_json, user
from strict import pairing_problems

EXAMPLES = Path(__file__).parents[2] / "examples"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "history.json"
    path.write_bytes((EXAMPLES / "aborted_mid_tool.json").read_bytes())
    return path


# --- the commands -----------------------------------------------------------------------------------


def test_check_finds_problems_and_exits_1(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    code, out, err = run(capsys, "check", str(broken))
    assert code == 1
    assert "dangling_call" in out and "call_1 (retrieve_documents)  every provider" in out
    assert out.strip().endswith("1 problem some provider rejects; `histfix repair` fixes it")
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
        "rejected_by": ["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock", "mistral"],
        "provider_error": None,
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


def test_repair_from_stdin_to_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, broken: Path
) -> None:
    """``-`` reads the history from stdin's bytes (the real process and pipe: tests/test_processes.py)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(broken.read_bytes())))
    code, out, err = run(capsys, "repair", "-")
    assert (code, err) == (0, "")
    repaired = pai.ModelMessagesTypeAdapter.validate_json(out)
    assert repaired[2].parts[0].tool_call_id == "call_1"
    assert repaired == histfix.repair(pai.ModelMessagesTypeAdapter.validate_json(broken.read_bytes()))


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
    assert "  [synthesized" in out


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


def test_a_nameless_temporary_file_that_cannot_be_linked_is_copied_to_a_named_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Some sandboxes' /proc refuses the link that names an O_TMPFILE file: the write still lands.
    target = tmp_path / "kept.json"
    target.write_text("old")
    target.chmod(0o640)

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refused)
    write_atomically(target, b"new" * 100_000)
    assert target.read_bytes() == b"new" * 100_000
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["trim", "x.json"], "trim needs --turns N and/or --max-tokens N (see histfix trim --help)"),
        (["trim", "x.json", "--turns", "0"], "expected a positive whole number, got 0"),
        (["repair", "-", "--in-place"], "--in-place needs a file, not stdin (see histfix repair --help)"),
        (["trim", "x.json", "--turns", "1", "--provider", "anthropic"], "--provider needs --repair"),
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


@pytest.mark.parametrize("command", ["check", "repair", "trim", "show", "info", "compare"])
def test_every_command_has_help_with_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: histfix {command}")
    assert f"example:\n  histfix {command}" in out


def test_top_level_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    help_text = build_parser().format_help()
    for command in ("check", "repair", "trim", "show", "info", "compare"):
        assert command in help_text
    assert "examples:" in help_text
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"histfix {histfix.__version__}\n"
    assert main([]) == 2  # no command: the help, and a usage exit status


# --- the corpus through the command line --------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_flags_broken_and_passes_repaired(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: Case
) -> None:
    history = load_history(case)
    path = tmp_path / "h.json"
    path.write_bytes(pai.ModelMessagesTypeAdapter.dump_json(history))
    code, _, _ = run(capsys, "check", str(path))
    assert code == (1 if any(p.rejected_by for p in histfix.check(history)) else 0)
    if pairing_problems(history):
        assert code == 1  # every history a strict provider rejects is flagged
    fixed = tmp_path / "fixed.json"
    assert run(capsys, "repair", str(path), "-o", str(fixed))[0] == 0
    repaired = pai.ModelMessagesTypeAdapter.validate_json(fixed.read_bytes())
    if not pairing_problems(repaired):
        assert run(capsys, "check", str(fixed))[0] == 0  # every repaired (valid) history passes


# --- issue 12: the command line as a new user meets it ------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_output_files_follow_the_umask(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path, umask: int
) -> None:
    old = os.umask(umask)
    try:
        target = tmp_path / f"new-{umask:o}.json"
        assert run(capsys, "repair", str(broken), "-o", str(target))[0] == 0
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_replaced_file_keeps_its_mode(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    target = tmp_path / "existing.json"
    target.write_text("old")
    target.chmod(0o604)
    assert run(capsys, "repair", str(broken), "-o", str(target))[0] == 0
    assert target.stat().st_mode & 0o777 == 0o604


def test_in_place_with_nothing_to_repair_leaves_the_file_untouched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    valid = tmp_path / "valid.json"
    original = json.dumps(json.loads((EXAMPLES / "aborted_mid_tool.json").read_text())[:1])  # compact
    valid.write_text(original)
    os.utime(valid, (1_000_000_000, 1_000_000_000))
    inode = valid.stat().st_ino
    code, out, err = run(capsys, "repair", str(valid), "--in-place", "--report")
    assert (code, out) == (0, "")
    assert err == f"nothing to repair; {valid} left untouched\n"
    assert valid.read_text() == original
    assert (valid.stat().st_mtime, valid.stat().st_ino) == (1_000_000_000, inode)
    assert run(capsys, "repair", str(valid), "--in-place")[0] == 0
    assert valid.read_text() == original and valid.stat().st_mtime == 1_000_000_000
    assert run(capsys, "trim", str(valid), "--turns", "5", "--in-place")[0] == 0  # nothing to trim
    assert valid.read_text() == original and valid.stat().st_mtime == 1_000_000_000


def test_report_shows_the_content_of_a_dropped_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "orphan.json"
    path.write_bytes(
        to_json(
            [
                req(user("q")),
                real(text("a")),
                req(ret("transfer", "gone", {"status": "sent", "amount": 120}), user("did it work?")),
            ]
        )
    )
    code, _, err = run(capsys, "repair", str(path), "--report")
    assert code == 0
    assert err == (
        "messages[2]: dropped result 'gone' (transfer): no earlier call has its id;"
        " its content was: {'status': 'sent', 'amount': 120}\n"
    )
    (change,) = histfix.repair_report(histfix.load_json(path.read_bytes())).changes
    assert str(change) == err.strip()


def test_trim_does_not_repair_unless_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "dangling.json"
    path.write_bytes(
        to_json([req(user("one")), real(text("a")), req(user("two")), real(call("get", "c1"), at=2)])
    )
    code, out, _ = run(capsys, "trim", str(path), "--turns", "1")
    assert code == 0
    trimmed = tmp_path / "trimmed.json"
    trimmed.write_text(out)
    assert run(capsys, "check", str(trimmed))[0] == 1  # the open call is still there: trim only cuts
    code, out, _ = run(capsys, "trim", str(path), "--turns", "1", "--repair")
    assert code == 0
    trimmed.write_text(out)
    assert run(capsys, "check", str(trimmed))[0] == 0
    assert len(json.loads(out)) == 3  # the turn, with the call closed by a synthesized return
    with pytest.raises(SystemExit):
        main(["trim", "--help"])
    assert "does not repair" in capsys.readouterr().out


def test_trim_repairs_for_a_provider(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    history = [
        req(user("one")),
        real(text("a")),
        req(user("two")),
        real(call("get", "c1"), at=2),
        req(ret("get", "c1"), ret("get", "c1", "again")),  # a second result: Mistral counts them
        real(text("ok"), at=3),
    ]
    path.write_bytes(to_json(history))
    trimmed = tmp_path / "trimmed.json"
    code, out, _ = run(capsys, "trim", str(path), "--turns", "1", "--repair")
    trimmed.write_text(out)
    assert code == 0 and run(capsys, "check", str(trimmed), "--provider", "mistral")[0] == 1
    code, out, _ = run(capsys, "trim", str(path), "--turns", "1", "--repair", "--provider", "mistral")
    assert code == 0
    cut = histfix.keep_last_turns(histfix.load_json(path.read_bytes()), 1)
    assert histfix.load_json(out) == histfix.repair(cut, provider="mistral")
    trimmed.write_text(out)
    assert run(capsys, "check", str(trimmed), "--provider", "mistral")[:2] == (
        0,
        "valid for mistral: nothing it rejects\n",
    )
    code, _, err = run(capsys, "trim", str(path), "--turns", "1", "--repair", "--provider", "nope")
    assert code == 2 and err.startswith("histfix: --provider:") and err.count("\n") == 1


def test_trim_of_a_slice_with_exactly_n_turns_passes_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "slice.json"
    path.write_bytes((EXAMPLES / "trimmed_slice.json").read_bytes())
    turns = len(turn_starts(histfix.load_json(path.read_bytes())))
    assert turns >= 1
    for asked in (turns, turns + 1):
        code = run(capsys, "trim", str(path), "--turns", str(asked), "-o", str(tmp_path / "t.json"))[0]
        assert code == 0
        assert run(capsys, "check", str(tmp_path / "t.json"))[0] == 0, asked


@pytest.mark.parametrize("indent", [None, 2])
def test_every_cut_of_a_document_says_it_ends_early(indent: int | None) -> None:
    """Cut a history at every byte: each cut must say it ends early, in a complete sentence."""
    document = json.dumps(json.loads((EXAMPLES / "parallel_call_crash.json").read_text()), indent=indent)
    document = document.replace('"Paris"', '"Par\\u00eds \\"P\\""', 1)  # escapes to cut through too
    missing = []
    for cut in range(1, len(document)):
        head = document[:cut]
        if not head.strip():
            continue
        with pytest.raises(ValueError) as info:
            histfix.load_json(head)
        message = str(info.value)
        if not message.endswith("; the document ends early (truncated?)"):
            missing.append((cut, message))
        assert not message.rstrip(")").endswith((" at", " starting")), message
    assert missing == []


@pytest.mark.parametrize(
    "document",
    ["[1,]", '[{"a" 1}]', "[tru, 1]", "[1] x", '["\\q"]', "[01]", '[{"kind": "request"} {}]', "[-]"],
)
def test_a_document_broken_in_the_middle_is_not_called_truncated(document: str) -> None:
    with pytest.raises(ValueError, match="not valid JSON") as info:
        histfix.load_json(document)
    assert "truncated" not in str(info.value)
    assert not str(info.value).rstrip(")").endswith(" at")


# --- --provider -----------------------------------------------------------------------------------------


def test_check_with_a_provider_quotes_it(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    code, out, err = run(capsys, "check", str(broken), "--provider", "anthropic")
    assert (code, err) == (1, "")
    assert "dangling_call" in out
    assert "what anthropic answers:\n  messages[1].parts[0]: messages.1: tool_use ids were found" in out
    assert out.strip().endswith(
        "1 problem anthropic rejects; `histfix repair --provider anthropic` fixes them"
    )
    code, out, _ = run(capsys, "check", str(broken), "--provider", "mistral:mistral-large-latest", "--json")
    # (releases before 2.59 also send the id 'call_1' as stored, which is not Mistral's format)
    (problem,) = [p for p in json.loads(out) if p["kind"] == "dangling_call"]
    assert code == 1
    assert problem["rejected_by"] == ["mistral"]
    assert problem["provider_error"] == "Not the same number of function calls and responses"


def test_repair_with_a_provider_gives_what_it_accepts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(
        to_json(
            [
                req(user("q")),
                real(call("get", "c1"), at=1),
                req(ret("get", "c1")),
                real(text("ok"), at=2),
                req(instructions="be brief"),  # sends nothing: Mistral wants the last turn from the user
            ]
        )
    )
    assert run(capsys, "check", str(path), "--provider", "openai-chat")[0] == 0  # Chat accepts it
    assert run(capsys, "check", str(path), "--provider", "mistral")[0] == 1
    fixed = tmp_path / "fixed.json"
    code, _, err = run(capsys, "repair", str(path), "--provider", "mistral", "-o", str(fixed), "--report")
    assert code == 0 and err
    expected = histfix.repair(histfix.load_json(path.read_bytes()), provider="mistral")
    assert histfix.load_json(fixed.read_bytes()) == expected
    code, out, _ = run(capsys, "check", str(fixed), "--provider", "mistral")
    assert (code, out) == (0, "valid for mistral: nothing it rejects\n")
    code, out, _ = run(capsys, "show", str(path), "--provider", "mistral")
    assert code == 0 and ", then the mistral profile" in out.splitlines()[0]


@pytest.mark.parametrize("command", ["check", "repair", "show"])
def test_an_unknown_provider_is_one_line_naming_the_valid_ones(
    capsys: pytest.CaptureFixture[str], broken: Path, command: str
) -> None:
    code, out, err = run(capsys, command, str(broken), "--provider", "opneai")
    assert (code, out) == (2, "")
    assert err == (
        "histfix: --provider: unknown provider 'opneai': use one of any, openai-chat, openai-responses, "
        "anthropic, gemini, bedrock, mistral, a pydantic-ai model-name prefix (openai, google-gla, "
        "groq, ...: histfix.PROVIDER_NAMES lists them) or a model string such as "
        "anthropic:claude-sonnet-4-5\n"
    )  # the canonical names, not every prefix; and nothing about a Model, which a command cannot take


@pytest.mark.parametrize("command", ["check", "repair", "show"])
def test_a_prefix_without_a_profile_is_one_line_saying_why(
    capsys: pytest.CaptureFixture[str], broken: Path, command: str
) -> None:
    code, out, err = run(capsys, command, str(broken), "--provider", "google-interactions:gemini-2.5-flash")
    assert (code, out) == (2, "")
    assert err == (
        "histfix: --provider: no provider profile for google-interactions: GoogleInteractionsModel sends "
        "Google's Interactions API (one list of steps, not Gemini's turns), whose rules for a history no "
        "public source documents and no emulator here proves; repair it with provider=None (pairing only)\n"
    )


@pytest.mark.parametrize("name", ["Anthropic", "ANTHROPIC", " anthropic "])
def test_provider_names_are_case_insensitive_on_the_command_line(
    capsys: pytest.CaptureFixture[str], broken: Path, name: str
) -> None:
    assert run(capsys, "check", str(broken), "--provider", name) == run(
        capsys, "check", str(broken), "--provider", "anthropic"
    )


def test_an_empty_conversation_is_alike_whether_it_holds_a_system_prompt_or_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty, system_only = tmp_path / "empty.json", tmp_path / "system-only.json"
    empty.write_bytes(to_json([]))
    system_only.write_bytes(to_json([req(system("be brief"))]))
    for path in (empty, system_only):
        assert run(capsys, "check", str(path), "--provider", "anthropic") == (
            0,
            "valid for anthropic: nothing it rejects\n",
            "",
        )
        code, out, err = run(capsys, "repair", str(path), "--provider", "any")
        assert (code, err) == (0, "")
        assert histfix.load_json(out) == histfix.repair(histfix.load_json(path.read_bytes()))


def test_provider_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("check", "repair", "show"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--provider NAME" in capsys.readouterr().out


# --- what sits at the output path decides how it is written ----------------------------------------


def _read_fifo(fifo: Path, into: list[bytes], seconds: float = 30) -> None:
    """A FIFO's reader: opened without waiting for a writer, read until the writer closes it."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    deadline = time.monotonic() + seconds
    seen_writer = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if chunk:
                seen_writer = True
                into.append(chunk)
            elif seen_writer:
                return  # end of file: the writer closed it
            else:
                time.sleep(0.01)  # no writer yet (a FIFO reads empty until one opens it)
    finally:
        os.close(fd)


def test_output_to_a_fifo_is_written_through(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=_read_fifo, args=(fifo, received), daemon=True)
    reader.start()
    code, out, err = run(capsys, "repair", str(broken), "-o", str(fifo))
    reader.join(timeout=30)
    assert (code, out, err) == (0, "", "")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO, not a file put in its place
    assert histfix.load_json(b"".join(received)) == histfix.repair(histfix.load_json(broken.read_bytes()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.json", "pipe"]


def _null_device(tmp_path: Path) -> Path:
    """A character device to write to. As root, a null device of the test's own: a writer that
    replaced it would otherwise replace the machine's /dev/null (root may rename over it)."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as exc:
        pytest.skip(f"root without mknod ({exc.strerror}): /dev/null is not risked")
    return device


def test_output_to_a_character_device_is_written_through(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    device = _null_device(tmp_path)
    before = os.stat(device)
    assert run(capsys, "repair", str(broken), "-o", str(device))[:2] == (0, "")
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_output_to_a_symlink_replaces_the_file_it_points_to(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    real_file = store / "conversation.json"
    real_file.write_text("old")
    real_file.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real_file)
    assert run(capsys, "repair", str(broken), "-o", str(link))[:2] == (0, "")
    assert link.is_symlink() and os.readlink(link) == str(real_file)
    assert real_file.stat().st_mode & 0o777 == 0o640
    assert histfix.load_json(real_file.read_bytes()) == histfix.repair(histfix.load_json(broken.read_bytes()))
    assert [p.name for p in store.iterdir()] == ["conversation.json"]  # no temporary left in its folder


def test_in_place_on_a_symlink_replaces_its_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    real_file = store / "conversation.json"
    real_file.write_bytes((EXAMPLES / "aborted_mid_tool.json").read_bytes())
    real_file.chmod(0o604)
    link = tmp_path / "link.json"
    link.symlink_to(Path("store") / "conversation.json")  # relative, as links into a store often are
    assert run(capsys, "repair", str(link), "--in-place")[:2] == (0, "")
    assert link.is_symlink() and real_file.stat().st_mode & 0o777 == 0o604
    assert run(capsys, "check", str(real_file))[0] == 0


def test_a_dangling_symlink_creates_the_file_it_names(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "new.json")
    assert run(capsys, "repair", str(broken), "-o", str(link))[:2] == (0, "")
    assert link.is_symlink() and (tmp_path / "new.json").is_file()
    assert run(capsys, "check", str(link))[0] == 0


def test_a_hard_linked_file_is_refused_and_keeps_its_links(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = tmp_path / "history.json"
    original = (EXAMPLES / "aborted_mid_tool.json").read_bytes()
    first.write_bytes(original)
    second = tmp_path / "backup.json"
    os.link(first, second)
    for argv in (["--in-place"], ["-o", str(second)]):
        code, out, err = run(capsys, "repair", str(first), *argv)
        assert (code, out) == (2, "")
        assert err.startswith(f"histfix: {first if argv == ['--in-place'] else second}: has 2 hard links")
        assert err.count("\n") == 1
        assert first.stat().st_ino == second.stat().st_ino and first.stat().st_nlink == 2
        assert first.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.json", "history.json"]


def test_a_directory_or_socket_is_refused(
    capsys: pytest.CaptureFixture[str], broken: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        for target, kind in ((folder, "a directory"), (sock_path, "a socket")):
            code, out, err = run(capsys, "repair", str(broken), "-o", str(target))
            assert (code, out) == (2, "")
            assert err.startswith(f"histfix: {target}: is {kind}; -o and --in-place write only to")
            assert err.count("\n") == 1
        assert stat.S_ISSOCK(sock_path.lstat().st_mode) and folder.is_dir() and not any(folder.iterdir())


def test_in_place_on_a_fifo_is_refused_before_reading_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # a writer that gives up at once, so that a command that did read the FIFO fails, not hangs
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    code, out, err = run(capsys, "repair", str(fifo), "--in-place")
    # lets the writer go if nothing read it: again until it has, since a reader opened and closed
    # before the writer's open began leaves that open waiting for the next one
    deadline = time.monotonic() + 10
    while writer.is_alive() and time.monotonic() < deadline:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=0.01)
    assert not writer.is_alive()
    assert (code, out) == (2, "")
    assert err == f"histfix: {fifo}: is a FIFO; --in-place needs a regular file (use -o)\n"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


# --- HISTFIX_BACKEND=upstream where the release has no repair_messages -------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["repair", "{file}"],
        ["show", "{file}"],
        ["trim", "{file}", "--turns", "1", "--repair"],
        ["check", "{file}"],
        ["info"],
    ],
)
def test_forcing_upstream_before_2_53_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, broken: Path, argv: list[str]
) -> None:
    monkeypatch.setenv("HISTFIX_BACKEND", "upstream")
    code, out, err = run(capsys, *(a.format(file=broken) for a in argv))
    if has(table.REPAIR_MESSAGES):  # there it is in force, as `info` says
        assert code in (0, 1) and err == ""
        if argv == ["info"]:
            assert "repair path: upstream: forced by HISTFIX_BACKEND=upstream" in out
        return
    assert (code, out) == (2, "")
    version = histfix.backend_info().version
    assert err == (
        f"histfix: HISTFIX_BACKEND=upstream cannot be in force: pydantic-ai {version} has no "
        "pydantic_ai.messages.repair_messages (it arrived in 2.53.0); unset it or set HISTFIX_BACKEND=histfix\n"
    )


# --- a release that is installed but cannot be imported ----------------------------------------------


def _histfix_process(shim: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """histfix in a fresh process with ``shim`` first on its path (in front of site-packages)."""
    source = Path(histfix.__file__).parent.parent
    return subprocess.run(
        [sys.executable, "-m", "histfix", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), str(source)])},
    )


def _opentelemetry_without_events(shim: Path, version: str) -> None:
    """Into ``shim``: today's opentelemetry-api as far as an old release can tell, the installed
    one without ``opentelemetry._events`` (removed in 1.44.0), its metadata saying ``version``."""
    import importlib.metadata

    import opentelemetry

    package = shim / "opentelemetry"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")  # a regular package: the namespace portions stay hidden
    for portion in opentelemetry.__path__:
        for entry in Path(portion).iterdir():
            if entry.name != "_events" and not (package / entry.name).exists():
                (package / entry.name).symlink_to(entry)
    info = shim / f"opentelemetry_api-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: opentelemetry-api\nVersion: {version}\n")
    points = importlib.metadata.distribution("opentelemetry-api").read_text("entry_points.txt")
    (info / "entry_points.txt").write_text(points or "")  # its context loads through an entry point


@pytest.mark.parametrize("argv", [["check", "{file}"], ["info"]])
def test_a_release_that_needs_an_older_opentelemetry_says_so(
    broken: Path, tmp_path: Path, argv: list[str]
) -> None:
    _opentelemetry_without_events(tmp_path / "shim", "1.45.0")
    done = _histfix_process(tmp_path / "shim", *(a.format(file=broken) for a in argv))
    info = histfix.backend_info()
    if release_pins(info.version) != ["opentelemetry-api<1.39"]:  # 1.32.0 on: imports without _events
        assert done.returncode == (1 if argv[0] == "check" else 0), done.stderr
        assert "cannot be imported" not in done.stderr
        return
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"histfix: {info.distribution} {info.version} is installed but cannot be imported "
        "(ModuleNotFoundError: No module named 'opentelemetry._events'): it needs "
        "'opentelemetry-api<1.39' (found opentelemetry-api 1.45.0); run "
        "`pip install 'opentelemetry-api<1.39'` in the same environment\n"
    )


def test_an_import_failure_inside_pydantic_ai_is_not_called_not_installed(
    broken: Path, tmp_path: Path
) -> None:
    broken_dependency = tmp_path / "shim" / "pydantic_graph"  # every release's Agent imports it
    broken_dependency.mkdir(parents=True)
    (broken_dependency / "__init__.py").write_text("raise ImportError('pydantic_graph is broken here')\n")
    done = _histfix_process(tmp_path / "shim", "repair", str(broken))
    info = histfix.backend_info()
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"histfix: {info.distribution} {info.version} is installed but cannot be imported "
        "(ImportError: pydantic_graph is broken here); repair that install\n"
    )


# --- check: exit 1 for what some provider rejects, and what fixes it --------------------------------


def test_what_no_provider_rejects_is_reported_and_exits_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "two-prompts.json"
    path.write_bytes(to_json([req(user("q")), req(user("again?")), real(text("ok"), at=2)]))
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0
    assert "consecutive_requests             none" in out
    assert out.strip().endswith(
        "1 problem no provider rejects (consecutive_requests): `histfix repair` normalizes it; not an error"
    )
    code, out, _ = run(capsys, "check", str(path), "--json")
    assert code == 0 and [p["rejected_by"] for p in json.loads(out)] == [[]]


def test_what_only_a_profile_fixes_points_to_provider(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "duplicate.json"
    path.write_bytes(
        to_json(
            [
                req(user("q")),
                real(call("get", "c1"), at=1),
                req(ret("get", "c1"), ret("get", "c1", "again")),
                real(text("ok"), at=2),
            ]
        )
    )
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1
    assert out.strip().endswith(
        "1 problem some provider rejects (duplicate_result); `histfix repair` keeps it: "
        "`histfix repair --provider P` fixes it for P, the provider you send to "
        "(openai-chat, openai-responses, anthropic, gemini, bedrock, mistral, or any)"
    )
    code, out, _ = run(capsys, "check", str(path), "--json")
    (problem,) = json.loads(out)
    assert problem["rejected_by"] == [
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "bedrock",
        "mistral",
    ]
    assert run(capsys, "repair", str(path), "--in-place", "--report")[2].startswith("nothing to repair")
    assert run(capsys, "repair", str(path), "--in-place", "--provider", "any")[0] == 0  # the way out
    assert run(capsys, "check", str(path))[:2] == (0, "valid: no problems found\n")


def test_a_mix_says_what_repair_fixes_and_what_needs_a_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mixed.json"
    path.write_bytes(
        to_json(
            [
                req(user("q")),
                real(call("get", "c1"), at=1),
                req(ret("get", "c1"), ret("get", "c1", "again")),
                real(text("ok"), call("x", "c2"), at=2),
                req(user("u")),
                req(user("v")),
            ]
        )
    )
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1
    assert out.strip().splitlines()[-2:] == [
        "2 problems some provider rejects; `histfix repair` fixes 1, and keeps 1 (duplicate_result): "
        "`histfix repair --provider P` fixes those for P, the provider you send to "
        "(openai-chat, openai-responses, anthropic, gemini, bedrock, mistral, or any)",
        "1 more, which no provider rejects (consecutive_requests): `histfix repair` normalizes it; "
        "not an error on its own",
    ]


def test_check_keeps_the_last_responses_calls_open_when_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "pending.json"
    path.write_bytes(to_json([req(user("q")), real(call("get", "c1"), at=1)]))
    assert run(capsys, "check", str(path))[0] == 1
    assert run(capsys, "check", str(path), "--keep-last-response")[:2] == (0, "valid: no problems found\n")
    code, out, _ = run(capsys, "check", str(path), "--keep-last-response", "--provider", "anthropic")
    assert (code, out) == (0, "valid for anthropic: nothing it rejects\n")


# --- --report wherever content can go ------------------------------------------------------------


def test_trim_reports_what_it_cut_and_what_the_repair_removed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "h.json"
    history = [
        req(system("be brief"), user("one")),
        real(text("a")),
        req(user("two")),
        real(text("b"), at=2),
        req(ret("transfer", "gone", {"status": "sent"}), user("did it work?")),  # an orphan: dropped
        real(text("c"), at=3),
    ]
    path.write_bytes(to_json(history))
    code, out, err = run(capsys, "trim", str(path), "--turns", "1", "--repair", "--report", "-o", "-")
    assert code == 0
    cut = histfix.keep_last_turns(histfix.load_json(path.read_bytes()), 1)
    report = histfix.repair_report(cut)
    assert histfix.load_json(out) == report.messages
    assert err.splitlines() == [
        "messages[0]-messages[1]: dropped by the trim (2 messages); the opening system prompt carried "
        "over into messages[2]",
        "then the repair, in the trimmed history's indices:",
        *(str(change) for change in report.changes),
    ]
    assert "its content was: {'status': 'sent'}" in err
    code, _, err = run(capsys, "trim", str(path), "--turns", "5", "--report", "--in-place")
    assert (code, err) == (0, f"nothing to trim; {path} left untouched\n")


def test_show_reports_its_changes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "orphan.json"
    path.write_bytes(
        to_json([req(user("q")), real(text("a")), req(ret("transfer", "gone", "sent"), user("ok?"))])
    )
    code, out, err = run(capsys, "show", str(path), "--report")
    assert code == 0 and "after (3 messages):" in out
    assert err == str(histfix.repair_report(histfix.load_json(path.read_bytes())).summary()) + "\n"
    assert "its content was: sent" in err

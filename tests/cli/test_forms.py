"""``repair``, ``scan`` and ``restore`` each have forms (one history file, a store, a
ConversationStore), and argparse decides which runs: every form's options are known while the
targets are found, so no option's value is ever taken for a target."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from histfix._cli.commands import build_parser, command_forms, main

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
STORE_COMMANDS = ("repair", "scan", "restore")
#: A target of each store form; a directory is a store.
CONVERSATIONS = "py:app.storage:store"


def _valued_options() -> list[tuple[str, str, str]]:
    """(command, form, option) for every option of every store form that takes a value, read
    from the parsers themselves."""
    found = []
    for command in STORE_COMMANDS:
        forms = command_forms(command)
        for form in forms.names:
            if form == "file":
                continue
            found += [(command, form, option) for option, valued in forms.options(form).items() if valued]
    return found


VALUED = _valued_options()


def test_the_store_forms_have_options_that_take_a_value() -> None:
    options = {option for _, _, option in VALUED}
    assert {"--batch-size", "--jobs", "--provider", "--backup", "--lock-timeout", "--scope"} <= options


@pytest.mark.parametrize(("command", "form", "option"), VALUED, ids=[" ".join(v) for v in VALUED])
def test_an_option_in_front_of_a_store_leaves_the_store_the_target(
    command: str, form: str, option: str, tmp_path: Path
) -> None:
    target = CONVERSATIONS if form == "conversation" else str(tmp_path)
    backup = ["backup.jsonl"] if command == "restore" else []
    args = build_parser().parse_args([command, option, "1", *backup, target])
    assert (args.command, args.form, args.source) == (command, form, target)


def test_repair_of_a_store_with_its_batch_size_in_front(tmp_path: Path) -> None:
    (tmp_path / "chats").mkdir()
    shutil.copy(EXAMPLES / "aborted_mid_tool.json", tmp_path / "chats" / "a.json")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["repair", "--batch-size", "10", "--lock-timeout", "3", str(tmp_path / "chats")])
    assert status == 1  # a dry run that would repair one history
    assert "dry run: 1 histories would be repaired" in out.getvalue()


@pytest.mark.parametrize(
    ("argv", "form", "shows"),
    [
        (["repair", "--help"], "file", "--in-place"),
        (["repair", "{store}", "--help"], "store", "--write"),
        (["repair", "-h", CONVERSATIONS], "conversation", "--scope"),
        (["scan", "--help"], "store", "--dask"),
        (["scan", CONVERSATIONS, "--help"], "conversation", "--branches"),
        (["restore", "--help"], "store", "BACKUP"),
        (["restore", "journal.jsonl", CONVERSATIONS, "--help"], "conversation", "JOURNAL"),
    ],
)
def test_help_is_the_chosen_forms(
    argv: list[str], form: str, shows: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [arg.format(store=tmp_path) for arg in argv]
    assert command_forms(argv[0]).form(argv[1:]) == form
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 0
    assert shows in capsys.readouterr().out


def test_a_store_forms_unknown_argument_names_its_own_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, error in [
        (
            [str(tmp_path), "--in-place"],
            "histfix repair: unrecognized arguments: --in-place (see histfix repair --help)",
        ),
        (
            ["history.json", "--write"],
            "histfix: unrecognized arguments: --write (see histfix --help)",
        ),  # left to histfix
        (
            ["--write=1", str(tmp_path)],  # a flag given a value: the store form says so
            "histfix repair: argument --write: ignored explicit argument '1' (see histfix repair --help)",
        ),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(["repair", *argv])
        assert exit_.value.code == 2
        assert capsys.readouterr().err == error + "\n"


def test_an_unknown_provider_reads_the_same_for_a_file_and_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "h.json"
    shutil.copy(EXAMPLES / "aborted_mid_tool.json", history)
    assert main(["check", str(history), "--provider", "nope"]) == 2
    for_a_file = capsys.readouterr().err
    assert main(["scan", str(tmp_path), "--provider", "nope"]) == 2
    assert capsys.readouterr().err == for_a_file
    assert for_a_file.startswith("histfix: --provider: unknown provider 'nope': use one of any, ")


@pytest.mark.parametrize("argv", [["scan", CONVERSATIONS], ["repair", CONVERSATIONS], ["repair", "{store}"]])
def test_every_form_rejects_a_bad_backend_setting(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HISTFIX_BACKEND", "nonsense")
    assert main([arg.format(store=tmp_path) for arg in argv]) == 2
    assert capsys.readouterr().err.startswith("histfix: HISTFIX_BACKEND")


def test_the_store_options_defaults_are_the_stores_own() -> None:
    """The command line states ``--lock-timeout``'s and ``--batch-size``'s defaults without
    importing the store (``--help`` stays fast): they must be the store's own."""
    import inspect

    from histfix._cli import store_commands
    from histfix.store import _runner, _source

    assert store_commands.DEFAULT_LOCK_TIMEOUT == _source.DEFAULT_LOCK_TIMEOUT
    for function in (_runner.repair_source, _runner.examine_all):
        assert (
            inspect.signature(function).parameters["batch_size"].default == store_commands.DEFAULT_BATCH_SIZE
        )

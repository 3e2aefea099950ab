"""The ``histfix`` command line: check, repair, trim and show stored pydantic-ai histories.

Every command reads pydantic-ai JSON from a file or ``-`` (stdin). Bad input gets one line on
stderr; every exit status is one of :mod:`.exits`. Output goes where
:func:`.output.write_output` says (a file replaced atomically, never half-written; a device or
FIFO written through; a link followed). Ctrl-C and SIGTERM end a command without a traceback.
``repair``, ``scan`` and ``restore`` each have forms (a history file, a store, a
ConversationStore): :func:`command_forms`.
``info``, ``--help`` and ``--version`` never import pydantic-ai, so they answer at once.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys

from .. import __version__
from . import conversation_commands, store_commands
from .exits import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED
from .output import refuse_in_place, write_output
from .shared import (
    Forms,
    InputError,
    Parser,
    Terminated,
    add_provider,
    check_environment,
    described,
    fail,
    positive,
    provider_name,
    stdout_gone,
)

# The fast paths (--help, --version, info) import nothing these modules need: not even typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from pydantic_ai.messages import ModelMessage

__all__ = ["build_parser", "main"]

# --- reading and writing ------------------------------------------------------------------------------


def _read(source: str) -> bytes:
    if source == "-":
        data = sys.stdin.buffer.read()
        name = "standard input"
    else:
        from pathlib import Path

        path = Path(source)
        if not path.exists():
            raise InputError(f"{source}: no such file")
        if path.is_dir():
            raise InputError(f"{source}: is a directory, not a history file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"{source}: cannot read it ({exc.strerror})") from exc
        name = source
    if not data.strip():
        raise InputError(f"{name}: is empty, expected a pydantic-ai message history (a JSON list)")
    return data


def _load(source: str) -> list[ModelMessage]:
    """The history in ``source``, loaded portably (written by any release) into this one's types."""
    raw = _read(source)
    name = "standard input" if source == "-" else source
    from .._api import load_json

    try:
        return load_json(raw)
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from exc


def _dump(messages: Sequence[ModelMessage]) -> bytes:
    """Indented JSON for people and diffs (any release loads it, through ``histfix.load_json``)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_json(list(messages), indent=2) + b"\n"


def _emit(args: argparse.Namespace, messages: Sequence[ModelMessage], *, unchanged: bool) -> bool:
    """Write ``messages`` where the command was told to; False when ``--in-place`` had nothing to do.

    An unchanged history is not written back over its own file: nothing to do leaves the file
    exactly as it was (bytes, formatting, mtime).
    """
    in_place = getattr(args, "in_place", False)
    if in_place and unchanged:
        return False
    target = args.file if in_place else getattr(args, "output", None)
    write_output("-" if target is None else target, _dump(messages))
    return True


# --- commands -----------------------------------------------------------------------------------------


def _rejected_by(problem: Any) -> str:
    from .._profiles.targets import PROVIDER_APIS

    if not problem.rejected_by:
        return "none"
    return (
        "every provider" if set(problem.rejected_by) >= set(PROVIDER_APIS) else ", ".join(problem.rejected_by)
    )


def _problems_table(problems: Sequence[Any], *, rejected_by: bool) -> str:
    """One row per problem; ``rejected_by`` adds which provider APIs reject each (plain ``check``)."""
    head = ("message", "part", "kind", "tool call", *(("rejected by",) if rejected_by else ()), "problem")
    rows = [head]
    for p in problems:
        call = f"{p.tool_call_id} ({p.tool_name})" if p.tool_call_id is not None else ""
        part = "" if p.part_index is None else str(p.part_index)
        who = (_rejected_by(p),) if rejected_by else ()
        rows.append((str(p.message_index), part, p.kind, call, *who, p.description))
    columns = len(head) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(columns)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:columns], widths, strict=True))
        + "  "
        + row[-1]
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths) + "  " + "-" * len("problem"))
    return "\n".join(line.rstrip() for line in lines)


def _count(items: Sequence[Any], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _kinds(problems: Sequence[Any]) -> str:
    return ", ".join(dict.fromkeys(p.kind for p in problems))


def _verdict(problems: Sequence[Any], repair: str) -> str:
    """What plain ``check`` concludes: what some provider rejects (the exit status) and what fixes
    it, then what repair only normalizes. ``repair`` is the command that matches the check."""
    from .._profiles.targets import PROVIDER_APIS
    from .._records.problems import KEPT_BY_REPAIR

    rejected = [p for p in problems if p.rejected_by]
    normalized = [p for p in problems if not p.rejected_by]
    lines = []
    if rejected:
        plain = [p for p in rejected if p.kind not in KEPT_BY_REPAIR]
        profile_only = [p for p in rejected if p.kind in KEPT_BY_REPAIR]
        apis = {api for p in profile_only for api in p.rejected_by}
        names = ", ".join(api for api in PROVIDER_APIS if api in apis)
        profile = f"`{repair} --provider P` fixes {{}} for P, the provider you send to ({names}, or any)"
        line = f"{_count(rejected, 'problem')} some provider rejects"
        if not profile_only:
            line += f"; `{repair}` fixes {'it' if len(rejected) == 1 else 'them'}"
        elif not plain:
            line += f" ({_kinds(profile_only)}); `{repair}` keeps {'it' if len(rejected) == 1 else 'them'}: "
            line += profile.format("it" if len(rejected) == 1 else "them")
        else:
            line += (
                f"; `{repair}` fixes {len(plain)}, and keeps {len(profile_only)} ({_kinds(profile_only)}): "
            )
            line += profile.format("those")
        lines.append(line)
    if normalized:
        it = "it" if len(normalized) == 1 else "them"
        which = f"{len(normalized)} more, which" if rejected else _count(normalized, "problem")
        lines.append(
            f"{which} no provider rejects ({_kinds(normalized)}): `{repair}` normalizes {it}; "
            f"not an error{' on its own' if rejected else ''}"
        )
    return "\n".join(lines)


def _profiled(action: str, provider: str | None, run: Any) -> Any:
    """``run()``, with a profile's refusal (a history with nothing sendable) as one line of bad input."""
    try:
        return run()
    except ValueError as exc:
        if provider is None:
            raise
        raise InputError(f"cannot {action} for {provider}: {exc}") from exc


def _provider_errors(problems: Sequence[Any]) -> str:
    lines = []
    for p in problems:
        where = f"messages[{p.message_index}]" + (
            f".parts[{p.part_index}]" if p.part_index is not None else ""
        )
        lines.append(f"  {where}: {p.provider_error}")
    return "\n".join(lines)


def _check(args: argparse.Namespace) -> int:
    """Exit 1 only for what some provider rejects (with ``--provider``: that one); what repair
    only normalizes (two requests in a row, say) is listed, and alone exits 0."""
    import dataclasses
    import json

    from .._api import check

    provider = provider_name(args.provider)
    last = not args.keep_last_response
    problems = check(_load(args.file), provider=provider, repair_last_response=last)
    rejected = [p for p in problems if p.rejected_by]
    if args.json:
        print(json.dumps([dataclasses.asdict(p) for p in problems], indent=2))
    elif not problems:
        print("valid: no problems found" if provider is None else f"valid for {provider}: nothing it rejects")
    elif provider is None:
        print(_problems_table(problems, rejected_by=True))
        repair = "histfix repair" + ("" if last else " --keep-last-response")
        print(f"\n{_verdict(problems, repair)}")
    else:
        print(_problems_table(problems, rejected_by=False))
        print(f"\nwhat {provider} answers:\n{_provider_errors(problems)}")
        flags = "" if last else " --keep-last-response"
        print(
            f"\n{_count(problems, 'problem')} {provider} rejects; `histfix repair --provider {provider}{flags}` fixes them"
        )
    return EXIT_FOUND if rejected else EXIT_OK


def _repair(args: argparse.Namespace) -> int:
    from .._api import repair, repair_report

    provider = provider_name(args.provider)
    history = _load(args.file)
    last = not args.keep_last_response
    if args.report:
        report = _profiled(
            "repair",
            provider,
            lambda: repair_report(history, repair_last_response=last, provider=provider),
        )
        repaired = report.messages
    else:
        repaired = _profiled(
            "repair", provider, lambda: repair(history, repair_last_response=last, provider=provider)
        )
    written = _emit(args, repaired, unchanged=repaired == history)
    if args.report:
        summary = report.summary()
        print(summary if written else f"{summary}; {args.file} left untouched", file=sys.stderr)
    return EXIT_OK


def _trim(args: argparse.Namespace) -> int:
    from .._api import keep_last_turns, repair_report, trim_to_budget
    from .._records.tokens import BudgetExceededError

    provider = provider_name(args.provider)
    loaded: list[ModelMessage] = _load(args.file)
    history = loaded
    keep = not args.drop_system_prompt
    if args.turns is not None:
        history = keep_last_turns(history, args.turns, keep_system_prompt=keep)
    if args.max_tokens is not None:
        try:
            history = trim_to_budget(history, args.max_tokens, keep_system_prompt=keep)
        except BudgetExceededError as exc:
            raise InputError(str(exc)) from exc
    lines = [_trim_summary(loaded, history)]
    if args.repair:
        report = _profiled("repair", provider, lambda: repair_report(history, provider=provider))
        if report.changes and history is not loaded:  # its indices (also inside its words) are the cut's
            lines.append("then the repair, in the trimmed history's indices:")
        lines.append(report.summary())
        history = report.messages
    written = _emit(args, history, unchanged=history == loaded)
    if args.report:
        summary = "\n".join(lines)
        print(summary if written else f"{summary}; {args.file} left untouched", file=sys.stderr)
    return EXIT_OK


def _trim_usage(args: argparse.Namespace) -> None:
    if args.turns is None and args.max_tokens is None:
        args.parser.error("trim needs --turns N and/or --max-tokens N")
    if args.provider is not None and not args.repair:
        args.parser.error("--provider needs --repair: trim alone only cuts")


def _trim_summary(loaded: Sequence[ModelMessage], trimmed: Sequence[ModelMessage]) -> str:
    """What the cut removed: trimming keeps a suffix, so the count says which messages went."""
    dropped = len(loaded) - len(trimmed)
    if dropped == 0:
        return "nothing to trim"
    line = f"messages[0]-messages[{dropped - 1}]: dropped by the trim ({_count(range(dropped), 'message')})"
    if trimmed and trimmed[0] != loaded[dropped]:
        line += f"; the opening system prompt carried over into messages[{dropped}]"
    return line


def _info(args: argparse.Namespace) -> int:
    from .._release.backend import choose_backend
    from .._release.installed import (
        NEWEST_TESTED,
        import_failure,
        installed_release,
        source_defines,
        unmet_pins,
    )
    from .._release.override import BACKEND_ENV, forced_backend

    distribution, version = installed_release()
    if (
        distribution.endswith("(no distribution metadata)")
        and source_defines("messages", "repair_messages") is None
    ):
        print(f"histfix {__version__}\npydantic-ai: not installed (pip install pydantic-ai-slim)")
        return EXIT_OK
    if unmet_pins():  # only then is the import worth its time: a release that may not import
        try:
            import pydantic_ai.messages  # noqa: F401
        except ImportError as exc:
            raise InputError(import_failure(exc)) from exc
    has_repair = bool(source_defines("messages", "repair_messages"))
    backend, reason = choose_backend(version, has_repair, forced_backend())
    print(f"histfix {__version__}")
    print(f"pydantic-ai: {distribution} {version} (histfix measured up to {NEWEST_TESTED})")
    print(f"repair path: {backend}: {reason}")
    print(f"override: set {BACKEND_ENV}=histfix or =upstream")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from .._api import backend_info, repair_report
    from .render import render

    provider = provider_name(args.provider)
    before = _load(args.file)
    last = not args.keep_last_response
    report = _profiled(
        "repair", provider, lambda: repair_report(before, repair_last_response=last, provider=provider)
    )
    after = report.messages
    if args.report:
        print(report.summary(), file=sys.stderr)
    info = backend_info()
    profile = f", then the {provider} profile" if provider else ""
    print(
        f"histfix {__version__} on {info.distribution} {info.version}: {info.backend} repair{profile} ({info.reason})\n"
    )
    print(render("before", before))
    print()
    print(render("after", after))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from .._compare import environments as compare
    from .._compare.probe import prompt_for
    from .._jsonerrors import describe_json_error
    from .compare_render import Style, as_json, render

    raw = _read(args.file)
    name = "standard input" if args.file == "-" else args.file
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: {describe_json_error(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except RecursionError:
        from .._records.depth import too_deep_text

        raise InputError(f"{name}: {too_deep_text(raw) or 'nested too deep to read'}") from None
    if not isinstance(parsed, list):
        raise InputError(f"{name}: not a history: expected a JSON list of messages")
    if args.find_links is not None and not Path(args.find_links).is_dir():
        raise InputError(f"--find-links {args.find_links}: no such folder")
    try:
        releases = compare.parse_releases(args.releases)
        settings = compare.Settings(
            uv=compare.find_uv(),
            cache=Path(args.cache_dir) if args.cache_dir else compare.default_cache(),
            find_links=Path(args.find_links).resolve() if args.find_links else None,
        )

        def progress(line: str) -> None:
            print(f"histfix compare: {line}", file=sys.stderr, flush=True)

        prompt = prompt_for(parsed, args.prompt)
        observations = compare.compare(raw, releases, prompt, settings, progress)
    except compare.CompareError as exc:
        raise InputError(str(exc)) from exc
    continued = prompt is not None and args.prompt is None
    if args.json:
        print(json.dumps(as_json(name, prompt, observations, continued=continued), indent=2))
    else:
        style = Style(sys.stdout.isatty() and "NO_COLOR" not in os.environ)
        sys.stdout.write(render(name, prompt, observations, style, continued=continued))
    return EXIT_OK


# --- parser -------------------------------------------------------------------------------------------


def _add_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", help="a pydantic-ai JSON history (ModelMessagesTypeAdapter.dump_json), or - for stdin"
    )


def _add_output(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="OUT", help="write here (atomically) instead of stdout")
    where.add_argument(
        "--in-place", action="store_true", help="replace FILE (atomically: never half-written)"
    )


def build_parser() -> argparse.ArgumentParser:
    epilog = "examples:\n  histfix check examples/aborted_mid_tool.json\n  histfix repair history.json -o fixed.json --report\n  histfix check history.json --provider anthropic"
    parser = Parser(
        prog="histfix",
        description="Check, repair and trim stored pydantic-ai message histories, on any pydantic-ai release.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"histfix {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def command(name: str, summary: str, example: str, details: str = "") -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, **described(summary, example, details))
        sub.set_defaults(parser=sub)  # so usage errors found after parsing point to this --help
        return sub

    check = command(
        "check",
        "list the problems: exit 1 if some provider rejects one (each row says which)",
        "histfix check history.json --json",
    )
    _add_input(check)
    check.add_argument("--json", action="store_true", help="print the problems as JSON")
    check.add_argument(
        "--keep-last-response",
        action="store_true",
        help="the last response's calls may still run: not problems (as repair --keep-last-response)",
    )
    add_provider(check, "list exactly what this provider rejects, in its own words")
    check.set_defaults(run=_check)

    commands.add_parser("repair", help=REPAIR_SUMMARY, forms=command_forms("repair"))

    trim = command(
        "trim",
        "keep the last turns, never splitting a tool call from its result",
        "histfix trim history.json --turns 10 -o short.json",
        "trim only cuts: it does not repair, so a history that was broken inside the kept turns\n"
        "(say, an unanswered call) still fails `histfix check`. Add --repair to repair the result.",
    )
    _add_input(trim)
    _add_output(trim)
    trim.add_argument("--turns", type=positive, help="keep the last N user turns")
    trim.add_argument(
        "--max-tokens", type=positive, help="keep the most recent whole turns within N estimated tokens"
    )
    trim.add_argument(
        "--drop-system-prompt", action="store_true", help="do not carry the opening system prompt over"
    )
    trim.add_argument(
        "--repair", action="store_true", help="repair the trimmed history too (trim alone only cuts)"
    )
    trim.add_argument(
        "--report", action="store_true", help="say on stderr what was cut (and, with --repair, changed)"
    )
    add_provider(trim, "with --repair: repair with this provider's profile, so it accepts the result")
    trim.set_defaults(run=_trim, usage=_trim_usage)

    show = command(
        "show", "print the history before and after repair", "histfix show examples/aborted_mid_tool.json"
    )
    _add_input(show)
    show.add_argument(
        "--keep-last-response", action="store_true", help="leave the last response's calls open"
    )
    show.add_argument("--report", action="store_true", help="also list each change on stderr")
    add_provider(show, "show the repair with this provider's profile")
    show.set_defaults(run=_show)

    compare = command(
        "compare",
        "what several pydantic-ai releases do with a history, side by side (needs histfix[compare])",
        "histfix compare history.json --releases 1.107.10,2.9.1,2.68.0",
        "For each release: what plain pydantic-ai sends to the model (or raises) and what\n"
        "histfix.repair returns, judged by a strict provider's pairing rules. Each release gets a\n"
        "virtualenv built once with uv and cached (--cache-dir, default $XDG_CACHE_HOME/histfix/compare).",
    )
    _add_input(compare)
    which = compare.add_mutually_exclusive_group()
    which.add_argument("--releases", metavar="A,B,C", help="pydantic-ai-slim releases to compare")
    which.add_argument(
        "--pinned", action="store_true", help="the releases histfix pins its tests to (the default)"
    )
    compare.add_argument(
        "--prompt",
        help="a new user prompt for the run (default: continue the history; a finished one, "
        "which sends nothing without a prompt, with the neutral prompt 'Continue.')",
    )
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument(
        "--find-links",
        metavar="DIR",
        help="install from the wheels in DIR alone, never the package index (offline)",
    )
    compare.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where the environments live (default: $HISTFIX_COMPARE_CACHE or the user cache)",
    )
    compare.set_defaults(run=_compare)

    info = command(
        "info", "which pydantic-ai is installed and which repair path runs, and why", "histfix info"
    )
    info.set_defaults(run=_info)
    commands.add_parser("scan", help=store_commands.SCAN_SUMMARY, forms=command_forms("scan"))
    commands.add_parser("restore", help=store_commands.RESTORE_SUMMARY, forms=command_forms("restore"))
    conversation_commands.add_migrate(command)
    return parser


#: What ``histfix --help`` lists for ``repair`` (of one history file: the store forms say their own).
REPAIR_SUMMARY = "write the repaired history (the newest pydantic-ai repair)"


def _file_repair_parser() -> Parser:
    """``histfix repair FILE``: one history file."""
    repair = Parser(
        prog="histfix repair",
        **described(REPAIR_SUMMARY, "histfix repair history.json -o fixed.json --report"),
    )
    _add_input(repair)
    _add_output(repair)
    repair.add_argument(
        "--keep-last-response", action="store_true", help="leave the last response's calls open"
    )
    repair.add_argument("--report", action="store_true", help="say on stderr what was changed")
    add_provider(repair, "also make it what this provider accepts (its profile)")
    repair.set_defaults(run=_repair, parser=repair)
    return repair


def _repair_form(targets: list[str]) -> str:
    if conversation_commands.names_a_conversation_store(targets):
        return "conversation"
    return "store" if targets and store_commands.is_store_target(targets[0]) else "file"


def _store_form(targets: list[str]) -> str:
    return "conversation" if conversation_commands.names_a_conversation_store(targets) else "store"


def command_forms(command: str) -> Forms:
    """The forms of ``repair`` (one history file, a store, a ConversationStore), ``scan`` and
    ``restore`` (a store, a ConversationStore): which one runs is decided by the targets."""
    in_conversations = functools.partial(conversation_commands.form_parser, command)
    # An unknown argument to a store repair or a ConversationStore form is named with that form's
    # own --help; the other forms leave it to histfix's, as the history commands do.
    if command == "repair":
        build: dict[str, Callable[[], Parser]] = {
            "file": _file_repair_parser,
            "store": store_commands.repair_parser,
            "conversation": in_conversations,
        }
        return Forms(build, _repair_form, strict=frozenset({"store", "conversation"}))
    store = {"scan": store_commands.scan_parser, "restore": store_commands.restore_parser}[command]
    return Forms(
        {"store": store, "conversation": in_conversations}, _store_form, strict=frozenset({"conversation"})
    )


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (:mod:`.exits`). Ctrl-C and SIGTERM end it without a
    traceback, after the writer has removed its temporary file; a closed stdout (``| head``) ends
    it quietly, as it ends standard tools."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: leave signals to whoever owns them
        previous = None
    try:
        status = _run(argv)
        # Flushed here, so a reader that left before the last output is this command's broken
        # pipe, handled below, and not the interpreter's at exit.
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        stdout_gone()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Terminated:
        return EXIT_TERMINATED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    usage = getattr(args, "usage", None)  # what the parser cannot say: options that go together
    if usage is not None:
        usage(args)
    if getattr(args, "in_place", False) and args.file == "-":
        args.parser.error("--in-place needs a file, not stdin")
    try:
        check_environment(args.command)
        if getattr(args, "in_place", False):
            refuse_in_place(args.file)
        return int(args.run(args))
    except (InputError, ImportError) as exc:
        return fail(str(exc))

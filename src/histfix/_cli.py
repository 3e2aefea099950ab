"""The ``histfix`` command line: check, repair, trim and show stored pydantic-ai histories.

Every command reads pydantic-ai JSON from a file or ``-`` (stdin). Bad input gets one line on
stderr and exit status 2; ``check`` exits 1 when it finds problems. Output files are written to
a temporary file beside the target and renamed over it, so they are never left half-written.
``info``, ``--help`` and ``--version`` never import pydantic-ai, so they answer at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from . import __version__

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["build_parser", "main", "write_atomically"]

EXIT_OK, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2


class InputError(Exception):
    """Input the command cannot use; its message is the one line the user sees."""


# --- reading and writing ------------------------------------------------------------------------------


def _read(source: str) -> bytes:
    if source == "-":
        data = sys.stdin.buffer.read()
        name = "standard input"
    else:
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
    from ._api import load_json

    try:
        return load_json(raw)
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from exc


def _dump(messages: Sequence[ModelMessage]) -> bytes:
    """Indented JSON for people and diffs (any release loads it, through ``histfix.load_json``)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_json(list(messages), indent=2) + b"\n"


def _current_umask() -> int:
    mask = os.umask(0o077)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder and a rename.

    A crash or a full disk leaves the old file (or none) in place, never a truncated one. A file
    that is replaced keeps its mode; a new one gets the mode the umask gives, as with any Unix
    tool (the temporary file itself starts private, 0600).
    """
    folder = target.parent if str(target.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_current_umask()
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _emit(args: argparse.Namespace, messages: Sequence[ModelMessage], *, unchanged: bool) -> bool:
    """Write ``messages`` where the command was told to; False when ``--in-place`` had nothing to do.

    An unchanged history is not written back over its own file: nothing to do leaves the file
    exactly as it was (bytes, formatting, mtime).
    """
    in_place = getattr(args, "in_place", False)
    if in_place and unchanged:
        return False
    target = args.file if in_place else getattr(args, "output", None)
    data = _dump(messages)
    if target in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return True
    try:
        write_atomically(Path(target), data)
    except OSError as exc:
        raise InputError(f"{target}: cannot write it ({exc.strerror})") from exc
    return True


# --- commands -----------------------------------------------------------------------------------------


def _problems_table(problems: Sequence[Any]) -> str:
    rows = [("message", "part", "kind", "tool call", "problem")]
    for p in problems:
        call = f"{p.tool_call_id} ({p.tool_name})" if p.tool_call_id is not None else ""
        rows.append(
            (
                str(p.message_index),
                "" if p.part_index is None else str(p.part_index),
                p.kind,
                call,
                p.description,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths) + "  " + "-" * len("problem"))
    return "\n".join(line.rstrip() for line in lines)


def _provider(args: argparse.Namespace) -> str | None:
    """The ``--provider`` name, checked before anything is loaded (a bad name is bad input)."""
    name: str | None = getattr(args, "provider", None)
    if name is None:
        return None
    from ._profiles.targets import resolve_provider

    try:
        resolve_provider(name)
    except ValueError as exc:
        raise InputError(f"--provider: {exc}") from exc
    return name


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
    import dataclasses

    from ._api import check

    provider = _provider(args)
    problems = check(_load(args.file), provider=provider)
    if args.json:
        rows = [dataclasses.asdict(p) for p in problems]
        if provider is None:  # the record as it always was; rejected_by comes with --provider
            rows = [
                {k: v for k, v in row.items() if k not in ("rejected_by", "provider_error")} for row in rows
            ]
        print(json.dumps(rows, indent=2))
    elif problems:
        print(_problems_table(problems))
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        if provider is None:
            print(f"\n{count}; `histfix repair` fixes what it can")
        else:
            print(f"\nwhat {provider} answers:\n{_provider_errors(problems)}")
            print(f"\n{count} {provider} rejects; `histfix repair --provider {provider}` fixes them")
    else:
        print("valid: no problems found" if provider is None else f"valid for {provider}: nothing it rejects")
    return EXIT_PROBLEMS if problems else EXIT_OK


def _repair(args: argparse.Namespace) -> int:
    from ._api import repair, repair_report

    provider = _provider(args)
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
    from ._api import keep_last_turns, repair, trim_to_budget
    from ._records.tokens import BudgetExceededError

    provider = _provider(args)
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
    if args.repair:
        history = _profiled("repair", provider, lambda: repair(history, provider=provider))
    _emit(args, history, unchanged=history == loaded)
    return EXIT_OK


def _info(args: argparse.Namespace) -> int:
    from ._api import BACKEND_ENV, _forced_backend
    from ._release.backend import choose_backend
    from ._release.installed import NEWEST_TESTED, installed_release, source_defines

    distribution, version = installed_release()
    if (
        distribution.endswith("(no distribution metadata)")
        and source_defines("messages", "repair_messages") is None
    ):
        print(f"histfix {__version__}\npydantic-ai: not installed (pip install pydantic-ai-slim)")
        return EXIT_OK
    has_repair = bool(source_defines("messages", "repair_messages"))
    backend, reason = choose_backend(version, has_repair, _forced_backend())
    print(f"histfix {__version__}")
    print(f"pydantic-ai: {distribution} {version} (histfix measured up to {NEWEST_TESTED})")
    print(f"repair path: {backend}: {reason}")
    print(f"override: set {BACKEND_ENV}=histfix or =upstream")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from ._api import backend_info, repair
    from ._render import render

    provider = _provider(args)
    before = _load(args.file)
    after = _profiled(
        "repair",
        provider,
        lambda: repair(before, repair_last_response=not args.keep_last_response, provider=provider),
    )
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
    from . import _compare as compare
    from ._compare_render import Style, as_json, render
    from ._jsonerrors import describe_json_error

    raw = _read(args.file)
    name = "standard input" if args.file == "-" else args.file
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: {describe_json_error(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
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

        observations = compare.compare(raw, releases, args.prompt, settings, progress)
    except compare.CompareError as exc:
        raise InputError(str(exc)) from exc
    if args.json:
        print(json.dumps(as_json(name, args.prompt, observations), indent=2))
    else:
        style = Style(sys.stdout.isatty() and "NO_COLOR" not in os.environ)
        sys.stdout.write(render(name, args.prompt, observations, style))
    return EXIT_OK


# --- parser -------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, with errors as one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


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


def _add_provider(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--provider",
        metavar="NAME",
        help=f"{what} (a pydantic-ai model-name prefix such as anthropic, openai-chat, "
        "google-gla, bedrock, mistral, a model string such as anthropic:claude-sonnet-4-5, or any)",
    )


def build_parser() -> argparse.ArgumentParser:
    epilog = "examples:\n  histfix check examples/aborted_mid_tool.json\n  histfix repair history.json -o fixed.json --report\n  histfix check history.json --provider anthropic"
    parser = _Parser(
        prog="histfix",
        description="Check, repair and trim stored pydantic-ai message histories, on any pydantic-ai release.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"histfix {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, summary: str, example: str, details: str = "") -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary + (f"\n\n{details}" if details else ""),
            epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(parser=sub)  # so usage errors found after parsing point to this --help
        return sub

    check = command(
        "check",
        "list the problems a strict provider would reject (exit 1 if any)",
        "histfix check history.json --json",
    )
    _add_input(check)
    check.add_argument("--json", action="store_true", help="print the problems as JSON")
    _add_provider(check, "list exactly what this provider rejects, in its own words")
    check.set_defaults(run=_check)

    repair = command(
        "repair",
        "write the repaired history (the newest pydantic-ai repair)",
        "histfix repair history.json -o fixed.json --report",
    )
    _add_input(repair)
    _add_output(repair)
    repair.add_argument(
        "--keep-last-response", action="store_true", help="leave the last response's calls open"
    )
    repair.add_argument("--report", action="store_true", help="say on stderr what was changed")
    _add_provider(repair, "also make it what this provider accepts (its profile)")
    repair.set_defaults(run=_repair)

    trim = command(
        "trim",
        "keep the last turns, never splitting a tool call from its result",
        "histfix trim history.json --turns 10 -o short.json",
        "trim only cuts: it does not repair, so a history that was broken inside the kept turns\n"
        "(say, an unanswered call) still fails `histfix check`. Add --repair to repair the result.",
    )
    _add_input(trim)
    _add_output(trim)
    trim.add_argument("--turns", type=_positive, help="keep the last N user turns")
    trim.add_argument(
        "--max-tokens", type=_positive, help="keep the most recent whole turns within N estimated tokens"
    )
    trim.add_argument(
        "--drop-system-prompt", action="store_true", help="do not carry the opening system prompt over"
    )
    trim.add_argument(
        "--repair", action="store_true", help="repair the trimmed history too (trim alone only cuts)"
    )
    _add_provider(trim, "with --repair: repair with this provider's profile, so it accepts the result")
    trim.set_defaults(run=_trim)

    show = command(
        "show", "print the history before and after repair", "histfix show examples/aborted_mid_tool.json"
    )
    _add_input(show)
    show.add_argument(
        "--keep-last-response", action="store_true", help="leave the last response's calls open"
    )
    _add_provider(show, "show the repair with this provider's profile")
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
    compare.add_argument("--prompt", help="a new user prompt for the run (default: continue the history)")
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
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value}")
    return value


def _check_environment() -> None:
    """Reject a bad ``HISTFIX_BACKEND`` up front, for every command, as bad input."""
    from ._api import _forced_backend

    try:
        _forced_backend()
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    if args.command == "trim" and args.turns is None and args.max_tokens is None:
        args.parser.error("trim needs --turns N and/or --max-tokens N")
    if args.command == "trim" and args.provider is not None and not args.repair:
        args.parser.error("--provider needs --repair: trim alone only cuts")
    if getattr(args, "in_place", False) and args.file == "-":
        args.parser.error("--in-place needs a file, not stdin")
    try:
        _check_environment()
        return int(args.run(args))
    except InputError as exc:
        print(f"histfix: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ImportError as exc:
        print(f"histfix: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT

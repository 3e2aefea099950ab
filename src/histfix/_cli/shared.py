"""What every command of the CLI shares: the one-line input error, the parser that exits 2, the
common options and the environment check (the history commands' :mod:`.commands` and the store
commands' :mod:`.store_commands` both build on it)."""

from __future__ import annotations

import argparse
import os
import sys

from .exits import EXIT_BAD_INPUT, EXIT_TERMINATED

TYPE_CHECKING = False  # typing itself is not imported: every command, --help too, imports this
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn


__all__ = [
    "DASK_CONNECT_TIMEOUT",
    "Forms",
    "InputError",
    "Parser",
    "Terminated",
    "add_provider",
    "check_environment",
    "dask_client",
    "described",
    "fail",
    "positive",
    "provider_name",
    "stdout_gone",
]

#: Seconds ``--dask ADDRESS`` waits for the scheduler to answer (the scan and the upgrade check).
DASK_CONNECT_TIMEOUT = 10


class Terminated(SystemExit):
    """SIGTERM, raised where the process is so that ``finally`` and cleanup code run, and stopped
    at as Ctrl-C is. A SystemExit, because that is what a database driver treats as Ctrl-C
    (psycopg cancels the statement it waits on for KeyboardInterrupt and SystemExit alike, where
    any other exception leaves the statement running while its rollback waits for it); and
    should it escape every handler, the interpreter exits with :data:`.exits.EXIT_TERMINATED`,
    without a traceback."""

    def __init__(self) -> None:
        super().__init__(EXIT_TERMINATED)


def stdout_gone() -> None:
    """Point stdout at /dev/null once its reader has gone, so the interpreter's last flush at exit
    neither fails nor prints ``Exception ignored ... BrokenPipeError``."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (captured, replaced): nothing to flush
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class InputError(Exception):
    """Input the command cannot use; its message is the one line the user sees."""


def fail(message: str) -> int:
    """Say why the command cannot go on, in one line on stderr; the exit status of bad input."""
    print(f"histfix: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


class Parser(argparse.ArgumentParser):
    """argparse, with errors as one line and exit status 2; given ``forms``, the parser of a
    command with several forms, which hands its arguments to the form they name (:class:`Forms`)."""

    def __init__(self, *args: Any, forms: Forms | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.forms = forms

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.forms is None:
            return super().parse_known_args(args, namespace)
        return self.forms.parse(list(sys.argv[1:] if args is None else args), namespace)


class _NotParsed(Exception):
    """What :meth:`Forms.targets`' parser raises instead of exiting."""


class _TargetFinder(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _NotParsed(message)


class Forms:
    """The forms of a command that takes one history file or a store (``repair``), or either
    kind of store (``scan``, ``restore``): each form a parser of its own (its options, ``--help``
    and errors), built when the command runs.

    argparse decides which form runs: the arguments are parsed once with the options of every
    form, so that no option's value (``--batch-size 10``) is ever taken for a target, and
    ``choose`` names the form from the targets (the positional arguments) found. The forms in
    ``strict`` reject an argument they do not know themselves (naming their own ``--help``); the
    others leave it to ``histfix``'s parser, as the history commands do.
    """

    def __init__(
        self,
        build: dict[str, Callable[[], Parser]],
        choose: Callable[[list[str]], str],
        *,
        strict: frozenset[str] = frozenset(),
    ) -> None:
        self._build = build
        self._built: dict[str, Parser] = {}
        self.choose = choose
        self.strict = strict

    def parser(self, name: str) -> Parser:
        """The parser of form ``name``."""
        if name not in self._built:
            self._built[name] = self._build[name]()
        return self._built[name]

    @property
    def names(self) -> list[str]:
        return list(self._build)

    def options(self, name: str) -> dict[str, bool]:
        """Every option string of form ``name``, and whether it takes a value."""
        return {
            option: action.nargs != 0
            for action in self.parser(name)._actions  # argparse's list of what it was told to parse
            for option in action.option_strings
        }

    def targets(self, args: list[str]) -> list[str]:
        """The positional arguments of ``args``, as argparse finds them with every form's options
        (an option's value is left out; so is an unknown option, as the forms treat it)."""
        finder = _TargetFinder(add_help=False, allow_abbrev=False)
        known: set[str] = set()
        flags: set[str] = set()
        for name in self.names:
            for option, takes_value in self.options(name).items():
                if option in known:
                    continue
                known.add(option)
                # a missing value is the chosen form's error to report, not the finder's
                if takes_value:
                    finder.add_argument(option, nargs="?", dest=option)
                else:
                    flags.add(option)
                    finder.add_argument(option, action="store_true", dest=option)
        finder.add_argument("targets", nargs="*")
        try:
            found, _ = finder.parse_known_intermixed_args(args)
        except _NotParsed:  # a flag given a value (--write=x), which the chosen form reports
            without = [arg.partition("=")[0] if arg.partition("=")[0] in flags else arg for arg in args]
            try:
                found, _ = finder.parse_known_intermixed_args(without)
            except _NotParsed:
                return []
        return list(found.targets)

    def form(self, args: list[str]) -> str:
        """The name of the form ``args`` name."""
        return self.choose(self.targets(args))

    def parse(
        self, args: list[str], namespace: argparse.Namespace | None
    ) -> tuple[argparse.Namespace, list[str]]:
        name = self.form(args)
        extras: list[str] = []
        if name in self.strict:
            parsed = self.parser(name).parse_args(args, namespace)
        else:
            parsed, extras = self.parser(name).parse_known_args(args, namespace)
        parsed.form = name
        return parsed, extras


def described(summary: str, example: str, details: str = "") -> dict[str, Any]:
    """What every command's parser is built with: its summary, with details below it, and an example."""
    return {
        "description": summary + (f"\n\n{details}" if details else ""),
        "epilog": f"example:\n  {example}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def add_provider(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--provider",
        metavar="NAME",
        help=f"{what} (a pydantic-ai model-name prefix such as anthropic, openai-chat, "
        "google-gla, bedrock, mistral, a model string such as anthropic:claude-sonnet-4-5, or any)",
    )


def provider_name(name: str | None) -> str | None:
    """The ``--provider`` name resolved (None when not given), checked before anything is read: a
    name histfix does not know, or one without a profile, is bad input in one line."""
    if name is None:
        return None
    from .._profiles.targets import NoProfile, resolve_provider, unknown_provider

    try:
        return resolve_provider(name).name
    except NoProfile as exc:  # a known model class without a profile: its own reason
        raise InputError(f"--provider: {exc}") from exc
    except ValueError as exc:  # a command line cannot pass a Model, so the message offers none
        raise InputError(f"--provider: {unknown_provider(name, models=False)}") from exc


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value}")
    return value


def check_environment(command: str) -> None:
    """Reject a bad ``HISTFIX_BACKEND`` up front, for every command, as bad input: a value that is
    not a path, or ``upstream`` on a release without ``repair_messages`` (read from the installed
    source, so ``info`` stays fast; ``compare`` runs other releases, which judge it themselves)."""
    from .._release.installed import installed_release, source_defines
    from .._release.override import forced_backend

    try:
        forced = forced_backend()
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    if (
        forced == "upstream"
        and command != "compare"
        and source_defines("messages", "repair_messages") is False
    ):
        from .._repair.engine import upstream_missing

        raise InputError(
            f"HISTFIX_BACKEND=upstream cannot be in force: {upstream_missing(installed_release()[1])}; "
            "unset it or set HISTFIX_BACKEND=histfix"
        )


def dask_client(address: str, workers: int | None) -> Any:
    """A client of the Dask scheduler ``--dask`` names (``local``: a new cluster of ``workers``
    processes on this machine); ValueError in one line when it does not answer in time."""
    from ..store import dask as on_dask

    try:
        return on_dask.connect(address, workers=workers, timeout=DASK_CONNECT_TIMEOUT)
    except ValueError as exc:
        raise ValueError(f"--dask {exc}") from None
